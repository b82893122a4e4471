"""Branches and commits: which commits are visible, what they carry (decrypted once), the Yjs
state at a set of heads (moved forward when it can be, else started from the nearest checkpoint
below them), and sealing a new commit."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Container, Iterable
from itertools import chain, compress
from operator import attrgetter, itemgetter, not_

import nacl.secret

from .. import encoding
from ..causal import causal_order
from ..identity import Identity
from ..objects import MIN_ID_PREFIX, Object
from ._capability import KEY_SIZE
from ._keys import _Keys
from ._live import _Live
from ._records import BranchInfo, CommitInfo, DocumentError

_HEX = re.compile("[0-9a-f]*")
SHORT_WALK = 64  # commits a state is first asked to lack at most, before any walk is longer
_ID, _BODY, _LINKS = attrgetter("id"), attrgetter("body"), attrgetter("links")
_AUTHOR = attrgetter("author")
_ROOT = itemgetter("root")


class _Commits(_Keys):
    """A document's branches of commits, on top of its keys and root-branch state."""

    # Branches and commits -------------------------------------------------------------------

    def _new_branch(self, identity: Identity, name: str, source: bytes | None,
                    at: list[bytes]) -> bytes:
        branch = self._root_publish(identity, "doc/branch",
                                    {"name": name, "source": source, "at": at})
        key = os.urandom(KEY_SIZE)
        self._add_key(branch.id, 0, key)
        self._seal(identity, branch.id, 0, key, self._recipients(identity))
        return branch.id

    def _commits(self, branch: bytes) -> list[Object]:
        return [o for o in self._streams.get(branch, ()) if o.type == "doc/commit"]

    def _root_of(self, commit: Object) -> tuple[bytes, ...] | None:
        """The root-branch heads a commit names: its own, or (when it names none and has
        parents) its first parent's, so unchanged roots cost no bytes. None while a parent
        it depends on is missing, and for good when that parent is on another branch (only
        crafted commits have one: heads move per branch)."""
        roots = self._cache.roots
        chain = []
        root: tuple[bytes, ...] | None
        while True:
            if commit.id in roots:
                root = roots[commit.id]
                break
            chain.append(commit.id)
            if commit.body["root"] or not commit.links:
                root = tuple(commit.body["root"])
                break
            parent = self._objects.get(commit.links[0])
            if parent is None or parent.type != "doc/commit" or parent.stream != commit.stream:
                if parent is None:
                    self._cache.waiting.add(commit.links[0])
                root = None
                break
            commit = parent
        # Every commit walked gets the answer, "none yet" too: else a long chain above a missing
        # parent is walked again from each of its commits, and opening becomes quadratic.
        for oid in chain:
            roots[oid] = root
        if root is None:
            self._cache.rootless = True
        return root

    def _visible(self, commit: Object) -> bool:
        if commit.id in self._cache.all_visible.get(commit.stream, ()):
            return True
        found = self._cache.visible.get(commit.id)
        if found is None:
            root = self._root_of(commit)
            found = self._cache.visible[commit.id] = (
                root is not None and commit.author in self.editors(root)
                and commit.stream in self._branch_ids())
            if not found and root is not None:  # root heads not held yet may make it count
                self._cache.waiting.update(h for h in root if h not in self._objects)
        return found

    def _all_visible(self, branch: bytes, commits: list[Object], ids: set[bytes],
                     linked: set[bytes]) -> bool:
        """Whether every one of the branch's `commits` (whose ids are `ids`, linking to
        `linked`) is visible, found in one light pass: each links only to commits of the
        branch (so a commit that names no root has its first parent's), and every author was
        an editor in every root named (by commits that name one or have no parents). False
        only means: ask each commit (`_visible`). Written with map and sets: a document's whole
        history passes here when it opens."""
        if branch not in self._branch_ids() or not linked <= ids:
            return False
        named = set(map(tuple, filter(None, map(_ROOT, map(_BODY, commits)))))
        for commit in compress(commits, map(not_, map(_LINKS, commits))):
            named.add(tuple(commit.body["root"]))
        authors = set(map(_AUTHOR, commits))
        return all(authors <= self.editors(root) for root in named)

    def _commit(self, commit: str | bytes) -> Object:
        """A visible commit by id (bytes or hex) or by a unique hex prefix."""
        obj = None
        if isinstance(commit, str) and len(commit) == 64 and commit.isalnum():
            with contextlib.suppress(ValueError):  # a whole id, as the app hands them: no scan
                obj = self._objects.get(bytes.fromhex(commit))
            if obj is not None and obj.type == "doc/commit" and self._visible(obj):
                return obj
        ref = commit.strip().lower() if isinstance(commit, str) else ""
        if isinstance(commit, bytes):
            obj = self._objects.get(commit)
        elif len(ref) == 64 and _HEX.fullmatch(ref):
            obj = self._objects.get(bytes.fromhex(ref))  # a whole id: no scan of every object
        else:
            matches = self._with_prefix(ref) if len(ref) >= MIN_ID_PREFIX else []
            if len(matches) > 1:
                raise DocumentError(f"{commit!r} matches {len(matches)} commits; give more of it")
            obj = self._objects[matches[0]] if matches else None
        if obj is None or obj.type != "doc/commit" or not self._visible(obj):
            shown = commit.hex()[:16] if isinstance(commit, bytes) else repr(commit)
            raise DocumentError(f"no commit {shown} in this document")
        return obj

    def commit_id(self, commit: str) -> str:
        """The whole id (hex) of a visible commit given by id or unique prefix."""
        return self._commit(commit).hex

    def heads(self, branch: str = "main") -> list[str]:
        """The branch's visible commits that no other links to; a commit dated beyond the
        horizon is left out until its time comes (and new commits do not build on it)."""
        branch_id = self._branch(branch)
        horizon = self._horizon()
        found = self._cache.heads.get(branch_id)
        if found is None or (found[1] is not None and horizon is not None
                             and found[1] <= horizon):
            commits = self._commits(branch_id)
            ids = {c.id for c in commits}
            linked = self._linked.get(branch_id)
            if linked is None:
                linked = self._linked[branch_id] = set(
                    chain.from_iterable(map(_LINKS, commits)))
            every = self._all_visible(branch_id, commits, ids, linked)
            if every:
                self._cache.all_visible[branch_id] = ids
            else:
                commits = [c for c in commits if self._visible(c)]
                ids = {c.id for c in commits}
            later = [] if horizon is None or not commits or max(
                c.ts for c in commits) <= horizon else [c.ts for c in commits if c.ts > horizon]
            if later:
                commits = [c for c in commits if c.ts <= horizon]  # type: ignore[operator]
                ids = {c.id for c in commits}
            if later or not every:
                unlinked = set(ids)
                unlinked.difference_update(chain.from_iterable([c.links for c in commits]))
            else:  # every commit held counts: what any of them links to is what they link to
                unlinked = ids.difference(linked)
            found = self._cache.heads[branch_id] = (tuple(sorted(unlinked)),
                                                    min(later, default=None))
        return [h.hex() for h in found[0]]

    # Heads recorded in snapshots --------------------------------------------------------------

    def _held(self, stream: bytes) -> bytes:
        """A digest of the objects of `stream` held: their count and the sum of their ids."""
        objects = self._streams.get(stream, ())
        total = sum(map(int.from_bytes, map(_ID, objects))) % (1 << 256)
        return len(objects).to_bytes(8, "big") + total.to_bytes(32, "big")

    def _heads_record(self, branch: bytes) -> dict:
        """What a snapshot records of the branch's heads: the heads, the roots they name (a
        function of the commits alone), and while no commit is beyond the horizon, digests of
        the objects of the branch and of the root branch, so that a document loaded from the
        same objects takes the heads as they were instead of working them out again."""
        found = self._cache.heads.get(branch)
        if found is None:
            self.heads(branch.hex())
            found = self._cache.heads[branch]
        roots = [[h, list(root)] for h in found[0]
                 if (root := self._root_of(self._objects[h])) is not None]
        record: dict = {"heads": list(found[0]), "roots": roots}
        if found[1] is None:
            record["held"] = self._held(branch) + self._held(self.root.id)
        return record

    def _heads_cached(self, branch: bytes, field: bytes,
                      digests: dict[bytes, bytes]) -> frozenset[bytes] | None:
        """The heads a snapshot names (`_heads_record`; before it, a list of them), or None
        when it cannot be read. The roots it names are taken in; the heads too, when the
        objects held are those it was taken from (`digests`: the branches' `_held` found so
        far, as several snapshots of a branch are read at once)."""
        try:
            record = encoding.loads(field)
            if isinstance(record, list):
                record = {"heads": record}
            heads = frozenset(record["heads"])
            commits = [self._objects.get(h) for h in heads]
            if not all(c is not None and c.stream == branch and c.type == "doc/commit"
                       for c in commits):
                return heads  # a checkpoint of commits not held: `_restore` passes it by
            for head, root in record.get("roots", ()):
                if head in heads and all(isinstance(r, bytes) for r in root):
                    self._cache.roots.setdefault(head, tuple(root))
        except (encoding.EncodingError, KeyError, TypeError, ValueError):
            return None  # a damaged cache is only a slower open
        held = record.get("held")
        if held is not None and branch not in self._cache.heads:
            for stream in (branch, self.root.id):
                if stream not in digests:
                    digests[stream] = self._held(stream)
            if held == digests[branch] + digests[self.root.id]:
                self._cache.heads[branch] = (tuple(sorted(heads)), None)
        return heads

    def _took_commits(self, commits: list[Object], early: set[bytes]) -> None:
        """Bring what is derived from the objects up to date after only `commits` arrived
        (else everything is recomputed): their branches' heads move by them, so a remote
        keystroke costs what it brings, not the history. `early`: those of them that commits
        held before already linked to."""
        cache = self._cache
        if cache.rootless:  # an arrival may be a missing parent: roots and visibility change
            cache.roots = {k: v for k, v in cache.roots.items() if v is not None}
            cache.visible = {k: v for k, v in cache.visible.items() if v}
            cache.rootless = False
        horizon = self._horizon()
        for commit in causal_order(commits):
            branch = commit.stream
            known = cache.heads.pop(branch, None)
            # Worked out from the branch when next asked: also when a commit linking to this
            # one came first (whether that one counts is not known here).
            if known is None or known[1] is not None or commit.id in early or (
                    branch not in self._linked) or not self._visible(commit) or (
                    horizon is not None and commit.ts > horizon):
                continue  # (no `_linked`: heads taken from a snapshot, early ones unknown)
            heads = set(known[0]).difference(commit.links)
            heads.add(commit.id)
            cache.heads[branch] = (tuple(sorted(heads)), None)

    def branches(self) -> list[BranchInfo]:
        main = self._main()
        return [BranchInfo(b.id.hex(), b.body["name"],
                           b.body["source"].hex() if b.body["source"] else None,
                           tuple(c.hex() for c in b.body["at"]), tuple(self.heads(b.id.hex())),
                           b.id == main, self._latest_epoch(b.id) is not None)
                for b in self._branch_objects()]

    def tag(self, identity: Identity, name: str, commit: str) -> None:
        """Point the tag `name` at `commit` (moving it if it exists: the latest wins)."""
        self._require_editor(identity)
        target = self._commit(commit)
        self._root_publish(identity, "doc/tag", {"name": name, "commit": target.id})

    def _payload(self, commit: Object) -> dict:
        if self._payloads.get(commit.id) is None:
            if not self._keys.get((commit.stream, commit.body["epoch"])):
                self._payloads[commit.id] = None
                raise DocumentError("you have no read key for this branch (an editor can give "
                                    "you one with `hearth doc share`)")
            plain = self._open_box(commit.stream, commit.body["epoch"], commit.body["box"],
                                   commit.body["nonce"])
            try:
                payload = encoding.loads(plain) if plain is not None else None
                if not isinstance(payload, dict) or not isinstance(payload.get("u"), bytes):
                    raise ValueError
            except (encoding.EncodingError, ValueError):
                raise DocumentError(f"commit {commit.id.hex()[:16]} cannot be read") from None
            self._payloads[commit.id] = payload
        return self._payloads[commit.id]  # type: ignore[return-value]

    def _state(self, branch: bytes, heads: frozenset[bytes]) -> _Live:
        """A live document at `heads`. Of the states kept for the branch (its own, then the
        others: `_use`), one already there is returned; else the one in the past of `heads`
        that lacks the fewest commits is moved forward (never copied: Yjs states only grow);
        else a new one (with a new client id) starts from the latest checkpoint below `heads`
        (or from nothing) and replays what came after it. The branch's own state stays its
        own when moved, so undo follows it."""
        own = self._live.get(branch)
        states = ([own] if own is not None else []) + self._others.get(branch, [])
        for state in states:
            if state.heads == heads:
                if state is not own:
                    self._use(branch, state)
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
            for state in order:
                most = budget if best is None else len(best[1])
                if state is None:
                    since = self._since(heads, branch, start[0], most)  # type: ignore[index]
                    found = None if since is None else (since, None)
                else:
                    found = self._lacking(branch, heads, state, most)
                if found is not None and (best is None or len(found[0]) < len(best[1])):
                    best = (state, *found)
            if best is not None:
                break
        if best is not None and best[0] is not None:
            live, todo, walked = best  # type: ignore[assignment]
        else:
            live, walked = _Live.empty(), []
            if best is not None:
                live.absorb(start[1])  # type: ignore[index]  # what it holds is not known
                todo = best[1]
            else:
                live.absorbed = set()
                todo, walked = self._lacking(branch, heads, live, None)  # type: ignore[misc]
        complete = live.complete
        for commit in causal_order(todo):
            update = self._payload(commit)["u"]
            if update:
                live.absorb(update)
        live.heads = heads
        if live.absorbed is not None and walked is not None:
            live.absorbed.update(walked)
        # A state built while an ancestor was missing must not outlive that ancestor's arrival.
        live.complete = complete and all(
            link in self._objects for c in todo for link in c.links)
        if live is not own:
            self._use(branch, live, own=own is None)
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
            past = state.absorbed = {o.id for o in self._past(state.heads, branch)}
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
        objects = self._objects
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
            if obj.type == "doc/commit" and self._visible(obj):
                todo.append(obj)
                if most is not None and len(todo) >= most:
                    return None
            stack.extend(obj.links)
        return todo, walked, met

    def _below(self, lower: frozenset[bytes], heads: frozenset[bytes]) -> bool:
        """Whether `lower` may be in the past of `heads` going by dates alone (authors date
        commits after their parents): a guess that saves walking to find out it is not."""
        dated = [self._objects[h].ts for h in lower if h in self._objects]
        return not lower or len(dated) == len(lower) and max(dated) <= max(
            (self._objects[h].ts for h in heads if h in self._objects), default=-1)

    def _since(self, heads: frozenset[bytes], branch: bytes, start: frozenset[bytes],
               most: int | None = None) -> list[Object] | None:
        """The visible commits in the past of `heads` that a state at `start` may lack: the
        walk back stops at `start`'s commits. Every commit the state lacks is found (a path to
        it through `start` would put it in `start`'s past) and some it has may be too, which is
        harmless: Yjs updates apply once. None when `start` is not all in the past of `heads`,
        or when that takes `most` commits or more."""
        found = self._walk_back(heads, branch, start, most)
        if found is None or len(found[2]) != len(start) or not all(
                self._visible(self._objects[h]) for h in start):
            return None
        return found[0]

    def _checkpoint(self, branch: bytes,
                    heads: frozenset[bytes]) -> tuple[frozenset[bytes], bytes] | None:
        """Of the branch's checkpoints, the latest that may be in the past of `heads`."""
        found = [cp for kept in (self._checkpoints, self._recent)
                 for cp in kept.get(branch, ()) if self._below(cp[0], heads)]
        if not found:
            return None
        return max(found, key=lambda cp: max((self._objects[h].ts, h) for h in cp[0]))

    def _heads_of(self, heads: Iterable[str]) -> tuple[bytes, frozenset[bytes]]:
        commits = [self._commit(h) for h in heads]
        branches = {c.stream for c in commits}
        if len(branches) > 1:
            raise DocumentError("those commits are on different branches")
        return (branches.pop() if branches else b""), frozenset(c.id for c in commits)

    def text(self, heads: Iterable[str]) -> str:
        """The text at that set of commits (an empty set: the empty document)."""
        branch, ids = self._heads_of(heads)
        if not ids:
            return ""
        return self._state(branch, ids).value()

    def latest(self, branch: str = "main") -> str:
        """The branch's newest head (by time, then id)."""
        heads = [self._commit(h) for h in self.heads(branch)]
        if not heads:
            raise DocumentError("that branch has no commits yet")
        return max(heads, key=lambda c: (c.ts, c.id)).hex

    def history(self, branch: str = "main") -> list[CommitInfo]:
        """The branch's visible commits in causal order."""
        branch_id = self._branch(branch)
        out = []
        for commit in causal_order(c for c in self._commits(branch_id) if self._visible(c)):
            try:
                payload = self._payload(commit)
                kind = payload.get("k", "edit")
                kind = kind if isinstance(kind, str) else "?"
                merged = tuple(
                    m.hex() for m in payload.get("m", ()) if isinstance(m, bytes))
                restores = payload.get("r")
            except DocumentError:
                kind, merged, restores = "?", (), None
            out.append(CommitInfo(commit.hex, branch_id.hex(),
                                  tuple(p.hex() for p in commit.links), commit.author,
                                  commit.ts, kind, merged,
                                  restores.hex() if isinstance(restores, bytes) else None))
        return out

    def _seal_commit(self, identity: Identity, branch: bytes, parents: Iterable[bytes],
                     payload: dict) -> Object:
        writing = self._writing(identity, branch)
        if writing is None:
            raise DocumentError("you have no key for this branch")
        epoch, key = writing
        self._add_key(branch, epoch, key)
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        plain = (encoding.dumps_ordered if payload.keys() == {"u"} else encoding.dumps)(payload)
        box = nacl.secret.SecretBox(key).encrypt(plain, nonce).ciphertext
        root = tuple(self._linkable(self._root_heads(), self._now()))
        parents = sorted(parents)
        first = self._objects.get(parents[0]) if parents else None
        same = first is not None and self._root_of(first) == root
        known = self._cache.heads.get(branch)
        obj = self._publish(identity, "doc/commit", branch,
                            {"box": box, "root": [] if same else list(root), "epoch": epoch,
                             "nonce": nonce}, parents)  # in canonical order: built faster
        self._payloads[obj.id] = payload
        self._moved(branch, known, obj)
        return obj

    def _moved(self, branch: bytes, known: tuple[tuple[bytes, ...], int | None] | None,
               obj: Object) -> None:
        """The branch's heads after its new commit `obj`, from those known before it (nothing
        links to a commit just made), so that asking for them after each commit walks nothing."""
        horizon = self._horizon()
        if known is None or not self._visible(obj) or (horizon is not None
                                                       and obj.ts > horizon):
            return  # worked out from the branch when next asked
        heads = set(known[0]).difference(obj.links)
        heads.add(obj.id)
        self._cache.heads[branch] = (tuple(sorted(heads)), known[1])
