"""The Yjs states kept per branch: the branch's own (commits and undo continue from it) and a
few others, each moved forward to other heads by the commits it lacks (never copied: Yjs states
only grow), else started from the nearest checkpoint below the heads asked for."""

from __future__ import annotations

from collections import deque
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING

from ..causal import causal_order
from ..objects import Object
from ._live import _Live

if TYPE_CHECKING:
    from ._document import Document

CHECKPOINT_EVERY = 256  # commits made here between the states kept in memory
CHECKPOINTS_KEPT = 8
# Live states kept per branch besides the branch's own: one per line of work that commits
# continue from (each author's, when several commit at once), moved forward, never copied.
STATES_KEPT = 6
SHORT_WALK = 64  # commits a state is first asked to lack at most, before any walk is longer


class States:
    """The live states of a document's branches (`doc.states`) and the checkpoints they start
    from."""

    def __init__(self, doc: Document) -> None:
        self.held = doc.held
        self.commits = doc.commits
        self.live: dict[bytes, _Live] = {}  # branch -> its own state
        self.others: dict[bytes, list[_Live]] = {}  # branch -> STATES_KEPT, latest used first
        # branch -> (heads, Yjs state there) from snapshots taken in: where states at other
        # heads start from, so that reading an old commit replays only what came after one.
        self.checkpoints: dict[bytes, list[tuple[frozenset[bytes], bytes]]] = {}
        # The same, taken here every CHECKPOINT_EVERY commits (the latest few): where a commit
        # on parents that are not the live state (someone else's commit came first) starts.
        self.recent: dict[bytes, deque[tuple[frozenset[bytes], bytes]]] = {}
        self.made: dict[bytes, int] = {}  # branch -> commits made here

    def reset(self) -> None:
        """Drop every state (a kept one may have passed over a commit that counts now)."""
        self.live, self.others = {}, {}

    def keep_complete(self) -> None:
        """Drop the states built while an ancestor was missing (objects arrived)."""
        self.live = {b: live for b, live in self.live.items() if live.complete}
        self.others = {b: [s for s in states if s.complete] for b, states in self.others.items()}

    def use(self, branch: bytes, live: _Live, *, own: bool = False) -> None:
        """Keep `live` among the branch's states, as the branch's own (commits and undo
        continue from it) when `own`; the state it displaces is kept among the others."""
        others = [s for s in self.others.get(branch, ()) if s is not live]
        displaced: _Live | None = live
        if own:
            displaced = self.live.get(branch)
            self.live[branch] = live
        if displaced is not None and displaced is not self.live.get(branch):
            others.insert(0, displaced)
        self.others[branch] = others[:STATES_KEPT]

    def drop(self, branch: bytes, live: _Live) -> None:
        if self.live.get(branch) is live:
            del self.live[branch]
        self.others[branch] = [s for s in self.others.get(branch, ()) if s is not live]

    def keep(self, branch: bytes, live: _Live) -> None:
        """Count a commit made here on `branch`; every so many, keep the state it left."""
        made = self.made[branch] = self.made.get(branch, 0) + 1
        if made % CHECKPOINT_EVERY == 0 and live.complete and live.heads:
            self.recent.setdefault(branch, deque(maxlen=CHECKPOINTS_KEPT)).append(
                (live.heads, live.doc.get_update()))

    def at(self, branch: bytes, heads: frozenset[bytes]) -> _Live:
        """A live document at `heads`. Of the states kept for the branch (its own, then the
        others: `use`), one already there is returned; else the one in the past of `heads`
        that lacks the fewest commits is moved forward (never copied: Yjs states only grow);
        else a new one (with a new client id) starts from the latest checkpoint below `heads`
        (or from nothing) and replays what came after it. The branch's own state stays its
        own when moved, so undo follows it."""
        own = self.live.get(branch)
        states = ([own] if own is not None else []) + self.others.get(branch, [])
        for state in states:
            if state.heads == heads:
                if state is not own:
                    self.use(branch, state)
                return state
        # The candidates (the states kept; None: the checkpoint) are asked first for a short
        # walk, then for any: states whose past is known, the others (whose past is found by
        # a walk over it, once), then the checkpoint. Each walk stops once it would cost more
        # than the best found, so a far-off candidate costs little.
        start = self._checkpoint(branch, heads)
        known = [s for s in states if s.past() is not None]
        rest = [s for s in states if s.absorbed is None]
        checkpoint: list[_Live | None] = [None] if start is not None else []
        best: tuple[_Live | None, list[Object], list[bytes] | None] | None = None
        for budget, order in ((SHORT_WALK, [*states, *checkpoint]),
                              (None, [*known, *rest, *checkpoint])):
            for candidate in order:
                most = budget if best is None else len(best[1])
                found: tuple[list[Object], list[bytes] | None] | None
                if candidate is None:
                    since = None if start is None else self._since(heads, branch, start[0], most)
                    found = None if since is None else (since, None)
                else:
                    found = self._lacking(branch, heads, candidate, most)
                if found is not None and (best is None or len(found[0]) < len(best[1])):
                    best = (candidate, *found)
            if best is not None:
                break
        live: _Live
        todo: list[Object]
        walked: list[bytes] | None
        if best is not None and best[0] is not None:
            live, todo, walked = best[0], best[1], best[2]
        else:
            live, walked = _Live.empty(), []
            if best is not None and start is not None:
                live.absorb(start[1])  # what it holds is not known
                todo = best[1]
            else:
                live.absorbed = set()
                lacking = self._lacking(branch, heads, live, None)
                assert lacking is not None  # nothing is lacked in vain by an empty state
                todo, walked = lacking
        complete = live.complete
        for commit in causal_order(todo):
            update = self.commits.payload(commit)["u"]
            if update:
                live.absorb(update)
        live.heads = heads
        if live.absorbed is not None and walked is not None:
            live.absorbed.update(walked)
        # A state built while an ancestor was missing must not outlive that ancestor's arrival.
        live.complete = complete and all(
            link in self.held.objects for c in todo for link in c.links)
        if live is not own:
            self.use(branch, live, own=own is None)
        return live

    def _lacking(self, branch: bytes, heads: frozenset[bytes], state: _Live,
                 most: int | None) -> tuple[list[Object], list[bytes] | None] | None:
        """When `state` is in the past of `heads`: the visible commits it lacks, and the ids
        of every branch object it lacks (to add to its `absorbed`; None when that is not
        known). The walk back from `heads` stops at what the state has, so it costs what the
        state lacks; None also when it would take `most` commits or more. A state whose past
        is not known is first walked to from `heads` as far as `most`; failing that, its past
        is found once (a walk over it) when no limit is set."""
        past = state.past()
        if past is None:
            if not self._below(state.heads, heads):
                return None
            if (todo := self._since(heads, branch, state.heads, most or SHORT_WALK)) is not None:
                return todo, None
            if most is not None:
                return None
            past = state.absorbed = {o.id for o in self.held.past(state.heads, branch)}
        found = self._walk_back(heads, branch, past, most)
        if found is None or not state.heads <= found[2]:
            return None
        return found[0], found[1]

    def _walk_back(self, heads: Iterable[bytes], branch: bytes, stop: Container[bytes],
                   most: int | None) -> tuple[list[Object], list[bytes], set[bytes]] | None:
        """Back from `heads` through the branch's objects, not past those in `stop`: the
        visible commits met, the ids of every branch object met, and the ids of `stop` met;
        None once the commits met reach `most`."""
        seen: set[bytes] = set()
        stack = list(heads)
        todo, walked, met = [], [], set()
        objects = self.held.objects
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            if oid in stop:
                met.add(oid)
                continue
            obj = objects.get(oid)
            if obj is None or obj.stream != branch:
                continue
            walked.append(oid)
            if obj.type == "doc/commit" and self.commits.visible(obj):
                todo.append(obj)
                if most is not None and len(todo) >= most:
                    return None
            stack.extend(obj.links)
        return todo, walked, met

    def _below(self, lower: frozenset[bytes], heads: frozenset[bytes]) -> bool:
        """Whether `lower` may be in the past of `heads` going by dates alone (authors date
        commits after their parents): a guess that saves walking to find out it is not."""
        dated = [self.held.objects[h].ts for h in lower if h in self.held.objects]
        return not lower or len(dated) == len(lower) and max(dated) <= max(
            (self.held.objects[h].ts for h in heads if h in self.held.objects), default=-1)

    def _since(self, heads: frozenset[bytes], branch: bytes, start: frozenset[bytes],
               most: int | None = None) -> list[Object] | None:
        """The visible commits in the past of `heads` that a state at `start` may lack: the
        walk back stops at `start`'s commits. Every commit the state lacks is found (a path to
        it through `start` would put it in `start`'s past) and some it has may be too, which is
        harmless: Yjs updates apply once. None when `start` is not all in the past of `heads`,
        or when that takes `most` commits or more."""
        found = self._walk_back(heads, branch, start, most)
        if found is None or len(found[2]) != len(start) or not all(
                self.commits.visible(self.held.objects[h]) for h in start):
            return None
        return found[0]

    def _checkpoint(self, branch: bytes,
                    heads: frozenset[bytes]) -> tuple[frozenset[bytes], bytes] | None:
        """Of the branch's checkpoints, the latest that may be in the past of `heads`."""
        found = [cp for kept in (self.checkpoints, self.recent)
                 for cp in kept.get(branch, ()) if self._below(cp[0], heads)]
        if not found:
            return None
        return max(found, key=lambda cp: max((self.held.objects[h].ts, h) for h in cp[0]))

