"""Reviewing: versions across branches, what changed between two of them and who changed it, and
merges that carry their conflicts' resolutions.

A version is a set of commits, on one branch or on several. Its past reaches across branches:
a branch's first commits (those with no parents) come after the commits its fork started at
(`doc/branch` `at`), and a merge commit comes after the source heads it took in (`m` in its
payload). So two branches' common past (their merge base) is found in both directions: after
`alt` was merged into `main`, and after `main` was merged back into `alt`. The text at a version
is the union of the Yjs updates in its past, so it depends on that set alone.

Who changed what (`changes`): the commits in the newer version's past that the older one lacks
are replayed onto the older state in causal order, each author's consecutive commits as one
transaction, and the text's delta attributes each inserted and removed run to that author.
Measured on a 100,000-character document, this costs what the commits changed, not the length
of the text (bench/doc_review.py).

A merge commit may also carry edits (how the app resolved the conflicts it found) applied in
the same transaction as what the target lacked, so every member reads the same merged text;
its payload says how each conflict was resolved (`c`: a list of "ours", "theirs", "both").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..causal import causal_order
from ..identity import Identity
from ..objects import Object
from ._edits import MAX_COMMIT_BYTES, _check_edits, _chunk_updates
from ._held import _Cache
from ._live import _Live, _merge
from ._records import DocumentError, Edit

if TYPE_CHECKING:
    from ._document import Document

RESOLUTIONS = ("ours", "theirs", "both")
REACHES_KEPT = 8  # pasts of versions kept (`_reach`): a preview's two branches and their base
MERGE_ORIGIN = "merge"  # resolution edits: not this holder's typing, so undo leaves them alone


@dataclass(frozen=True)
class Run:
    """A run of a version's text: inserted by `author` since the older version, or (author
    None) already there, starting at codepoint `base` of the older text."""

    text: str
    author: bytes | None
    base: int | None


@dataclass(frozen=True)
class Removal:
    """Codepoints [start, end) of the older text, removed by `author`."""

    start: int
    end: int
    author: bytes


@dataclass(frozen=True)
class Changes:
    """What the commits between an older version and a newer one did to the text: the newer
    text as runs, and what was removed from the older one."""

    runs: tuple[Run, ...]
    removed: tuple[Removal, ...]

    @property
    def text(self) -> str:
        return "".join(r.text for r in self.runs)


class Review:
    """Versions across branches, changes with their authors, and merges (`doc.review`), on
    top of branches and commits."""

    def __init__(self, doc: Document) -> None:
        self.held = doc.held
        self.root_branch = doc.root_branch
        self.commits = doc.commits
        self.states = doc.states
        # Pasts walked across branches: (the cache and object count they were walked with,
        # heads -> commit -> parents); None until one is asked for.
        self._reaches: tuple[_Cache, int, dict[frozenset[bytes], dict[bytes, list[bytes]]]] \
            | None = None

    # Versions across branches ---------------------------------------------------------------

    def _parents(self, commit: Object, forks: dict[bytes, Object]) -> list[bytes]:
        """A commit's parents across branches: its links; for a branch's first commits, the
        commits its fork started at; for a merge, the source heads it took in."""
        parents = list(commit.links)
        if not parents and (fork := forks.get(commit.stream)) is not None:
            parents.extend(fork.body["at"])
        try:
            payload = self.commits.payload(commit)
        except DocumentError:  # no key: what it merged is not known here
            return parents
        if payload.get("k") == "merge" and isinstance(merged := payload.get("m"), list):
            parents.extend(m for m in merged if isinstance(m, bytes))
        return parents

    def _reach(self, heads: Iterable[bytes]) -> dict[bytes, list[bytes]]:
        """The visible commits in the past of `heads` (inclusive) across branches, each with its
        parents (`_parents`). The past of a set of commits changes only as objects arrive (a
        missing ancestor, an editor's change): the last few walked are kept until any does,
        so a preview walks each branch's history once."""
        key = frozenset(heads)
        found = self._reached().get(key)
        if found is None:
            found = self._keep_reach(key, self._walk(key))
        return found

    def _reached(self) -> dict[frozenset[bytes], dict[bytes, list[bytes]]]:
        """The pasts kept, while the objects and caches are those they were walked with."""
        kept = self._reaches
        if kept is None or kept[0] is not self.held.cache or kept[1] != len(self.held.objects):
            kept = self._reaches = (self.held.cache, len(self.held.objects), {})
        return kept[2]

    def _keep_reach(self, heads: frozenset[bytes],
                    reach: dict[bytes, list[bytes]]) -> dict[bytes, list[bytes]]:
        kept = self._reached()
        kept[heads] = reach
        while len(kept) > REACHES_KEPT:
            del kept[next(iter(kept))]
        return reach

    def _walk(self, heads: frozenset[bytes]) -> dict[bytes, list[bytes]]:
        forks = {b.id: b for b in self.root_branch.branch_objects()}
        out: dict[bytes, list[bytes]] = {}
        stack = list(heads)
        objects = self.held.objects
        while stack:
            oid = stack.pop()
            if oid in out:
                continue
            obj = objects.get(oid)
            if obj is None or obj.type != "doc/commit" or not self.commits.visible(obj):
                continue
            out[oid] = parents = self._parents(obj, forks)
            stack.extend(parents)
        return out

    def _order(self, reach: dict[bytes, list[bytes]], ids: Iterable[bytes]) -> list[Object]:
        """Commits `ids` (all in `reach`) in causal order across branches, the earliest
        (ts, id) first among those ready."""
        return causal_order((self.held.objects[c] for c in set(ids)), lambda c: reach[c.id])

    @staticmethod
    def _tops(reach: dict[bytes, list[bytes]]) -> set[bytes]:
        """The commits of a past that no other commit of it comes after."""
        below = {p for parents in reach.values() for p in parents}
        return set(reach) - below

    def _ids(self, commits: Iterable[str | bytes]) -> frozenset[bytes]:
        return frozenset(self.commits.find(c).id for c in commits)

    def common(self, a: Iterable[str], b: Iterable[str]) -> list[str]:
        """The latest commits (hex, sorted) in the past of both versions `a` and `b`: the
        version they both started from. Empty when they share none."""
        ra, rb = self._reach(self._ids(a)), self._reach(self._ids(b))
        both = {c: ra[c] for c in ra.keys() & rb.keys()}
        tops = self._tops(both)
        self._keep_reach(frozenset(tops), both)  # the past of the common version: walked
        return sorted(c.hex() for c in tops)

    def branch_of(self, commit: str) -> str:
        """The id (hex) of the branch a commit (id or unique prefix) is on."""
        return self.commits.find(commit).stream.hex()

    def merge_base(self, source: str, target: str) -> list[str]:
        """The common past of two branches that can be merged (`common` of their heads)."""
        self._mergeable(source, target)
        return self.common(self.commits.heads(source), self.commits.heads(target))

    def _scratch(self, ids: frozenset[bytes]) -> _Live:
        """A new live state at version `ids` (commits on any branches), free to change: the
        union of each branch's state at the version's commits on it."""
        live = _Live.empty()
        by_branch: dict[bytes, set[bytes]] = {}
        for c in ids:
            by_branch.setdefault(self.held.objects[c].stream, set()).add(c)
        for branch, heads in sorted(by_branch.items()):
            live.absorb(self.states.at(branch, frozenset(heads)).doc.get_update())
        live.heads = ids
        return live

    def version_text(self, commits: Iterable[str]) -> str:
        """The text at a set of commits on any branches (the union of their pasts); the empty
        set is the empty document."""
        ids = self._ids(commits)
        branches = {self.held.objects[c].stream for c in ids}
        if not ids:
            return ""
        if len(branches) == 1:
            return self.states.at(branches.pop(), ids).value()
        return self._scratch(ids).value()

    # Who changed what -------------------------------------------------------------------------

    def changes(self, older: Iterable[str], newer: Iterable[str]) -> Changes:
        """What the commits in the past of version `newer` that `older` lacks did to the text,
        and who made each change. `older` must be in the past of `newer` (a version and a
        later one, or `common` of two versions and either)."""
        old_ids, new_ids = self._ids(older), self._ids(newer)
        old_reach, new_reach = self._reach(old_ids), self._reach(new_ids)
        if not old_reach.keys() <= new_reach.keys():
            raise DocumentError("the older version is not in the past of the newer one")
        live = self._scratch(old_ids)
        text = live.value()
        runs = _Runs(text)
        todo = self._order(new_reach, new_reach.keys() - old_reach.keys())
        deltas: list[list[dict]] = []

        def collect(event: Any) -> None:  # pycrdt's TextEvent declares `delta` in slots only
            deltas.append(event.delta)

        subscription = live.text.observe(collect)
        try:
            for author, updates in self._by_author(todo):
                live.doc.apply_update(_merge(updates))
                for delta in deltas:
                    runs.apply(delta, author)
                deltas.clear()
        finally:
            live.text.unobserve(subscription)
        return runs.changes()

    def _by_author(self, commits: list[Object]) -> list[tuple[bytes, list[bytes]]]:
        """Consecutive commits by one author, as (author, their non-empty updates); commits
        this holder cannot read are left out (a fork's or merge's copy then carries them)."""
        groups: list[tuple[bytes, list[bytes]]] = []
        for commit in commits:
            try:
                update = self.commits.payload(commit)["u"]
            except DocumentError:
                continue
            if not update:
                continue
            if groups and groups[-1][0] == commit.author:
                groups[-1][1].append(update)
            else:
                groups.append((commit.author, [update]))
        return groups

    # Merging ----------------------------------------------------------------------------------

    def _lineage(self, branch: bytes) -> list[bytes]:
        """The branch and the branches it was forked from, nearest first."""
        chain = []
        forks = {b.id: b for b in self.root_branch.branch_objects()}
        while branch in forks and branch not in chain:
            chain.append(branch)
            branch = forks[branch].body["source"]
        return chain

    def _mergeable(self, source: str, target: str) -> tuple[bytes, bytes]:
        """The two branches' ids, if `source` can be merged into `target`."""
        source_id, target_id = self.root_branch.branch(source), self.root_branch.branch(target)
        if source_id == target_id:
            raise DocumentError("a branch cannot be merged into itself")
        if not set(self._lineage(source_id)) & set(self._lineage(target_id)):
            raise DocumentError("those branches share no history")
        return source_id, target_id

    def merged_text(self, source: str, target: str) -> str:
        """What `merge` without edits would make `target` read: its text joined with
        `source`'s by the CRDT alone."""
        return self.version_text(self.commits.heads(source) + self.commits.heads(target))

    def merge(self, identity: Identity, source: str, target: str, *,
              edits: Iterable[Edit] = (), resolutions: Iterable[str] = ()) -> str:
        """A commit on `target` that acknowledges `source`'s heads and carries the changes
        `target` lacked, then `edits` (positions in the merged text, `merged_text`) in the same
        commit: the conflicts' resolutions, one of RESOLUTIONS each, recorded in the payload.
        Changes too large for one object (branches that went apart for long) become a chain of
        merge commits, the last carrying the resolutions. Returns the (last) commit id."""
        self.root_branch.require_editor(identity)
        source_id, target_id = self._mergeable(source, target)
        resolutions = list(resolutions)
        if any(r not in RESOLUTIONS for r in resolutions):
            raise DocumentError(f"a conflict is resolved by one of {', '.join(RESOLUTIONS)}")
        edits = list(edits)
        source_heads = [bytes.fromhex(h) for h in self.commits.heads(source_id.hex())]
        target_heads = frozenset(bytes.fromhex(h) for h in self.commits.heads(target_id.hex()))
        live = self.states.at(target_id, target_heads)
        theirs = self.states.at(source_id, frozenset(source_heads))
        update = theirs.doc.get_update(live.doc.get_state())
        payload: dict = {"k": "merge", "m": source_heads}
        if resolutions:
            payload["c"] = resolutions
        parts = [update] if len(update) <= MAX_COMMIT_BYTES else self._lacked(
            frozenset(source_heads), target_heads)
        try:
            live.absorb(update)
            if edits:
                _check_edits(live._length(), edits)
                parts = _chunk_updates([*parts, live.apply(edits, track_undo=False,
                                                                  origin=MERGE_ORIGIN)])
            parents = target_heads
            for n, part in enumerate(parts):
                last = n == len(parts) - 1
                obj = self.commits.seal(identity, target_id, parents,
                                        {"u": part, **(payload if last else {"k": "merge",
                                                                             "m": source_heads})})
                parents = frozenset([obj.id])
        except BaseException:
            self.states.drop(target_id, live)  # the live text ran ahead of what was committed
            raise
        live.advance(obj.id)
        self.states.use(target_id, live, own=True)
        return obj.hex

    def _lacked(self, source: frozenset[bytes], target: frozenset[bytes]) -> list[bytes]:
        """The updates of the commits in the past of `source` and not of `target`, in causal
        order, merged into as few as fit in a commit each: what a merge carries, cut up."""
        ahead, behind = self._reach(source), self._reach(target)
        order = self._order(ahead, ahead.keys() - behind.keys())
        return _chunk_updates([u for c in order if (u := self.commits.payload(c)["u"])])

    def resolutions(self, commit: str) -> list[str]:
        """How a merge commit resolved the conflicts it found (empty: it found none)."""
        found = self.commits.payload(self.commits.find(commit)).get("c")
        return [r for r in found if r in RESOLUTIONS] if isinstance(found, list) else []


class _Runs:
    """The text as runs of (text, UTF-8 length, author, codepoint in the older text), changed
    by Yjs text deltas (whose counts are UTF-8 bytes), and what was removed from the older
    text."""

    def __init__(self, text: str):
        self.runs: list[list] = [[text, len(text.encode()), None, 0]] if text else []
        self.removed: list[tuple[int, int, bytes]] = []

    @staticmethod
    def _cut(run: list, at: int) -> tuple[list, list]:
        text, size, author, base = run
        left = text[:at] if len(text) == size else text.encode()[:at].decode()
        right = text[len(left):]
        return ([left, at, author, base],
                [right, size - at, author, None if base is None else base + len(left)])

    def apply(self, delta: list[dict], author: bytes) -> None:
        runs = self.runs
        i = offset = 0  # the run the delta is at, and how far into it (bytes)
        for op in delta:
            if "retain" in op:
                n = op["retain"]
                while n:
                    room = runs[i][1] - offset
                    if n < room:
                        offset += n
                        n = 0
                    else:
                        n -= room
                        i += 1
                        offset = 0
                continue
            if offset:  # an insert or delete inside a run: split it there
                runs[i:i + 1] = self._cut(runs[i], offset)
                i += 1
                offset = 0
            if "insert" in op:
                text = op["insert"]
                if isinstance(text, str) and text:
                    runs.insert(i, [text, len(text.encode()), author, None])
                    i += 1
            elif "delete" in op:
                n = op["delete"]
                while n:
                    run = runs[i]
                    if run[1] > n:
                        run, runs[i] = self._cut(run, n)
                    else:
                        del runs[i]
                    n -= run[1]
                    if run[3] is not None:
                        self.removed.append((run[3], run[3] + len(run[0]), author))

    def changes(self) -> Changes:
        joined: list[list] = []  # [texts, author, base, length]: runs that continue each other
        for text, _, author, base in self.runs:
            last = joined[-1] if joined else None
            if last is not None and last[1] == author and (
                    author is not None or last[2] + last[3] == base):
                last[0].append(text)
                last[3] += len(text)
            else:
                joined.append([[text], author, base, len(text)])
        removed: list[Removal] = []
        for start, end, author in sorted(self.removed):
            if removed and removed[-1].author == author and removed[-1].end == start:
                removed[-1] = Removal(removed[-1].start, end, author)
            else:
                removed.append(Removal(start, end, author))
        return Changes(tuple(Run("".join(texts), author, base)
                             for texts, author, base, _ in joined), tuple(removed))
