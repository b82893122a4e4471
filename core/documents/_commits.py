"""Branches and commits: which commits are visible, what they carry (decrypted once), the Yjs
state at a set of heads (moved forward when it can be, else started from the nearest checkpoint
below them), and sealing a new commit."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

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


class _Commits(_Keys):
    """A document's branches of commits, on top of its keys and root-branch state."""

    # Branches and commits -------------------------------------------------------------------

    def _new_branch(self, identity: Identity, name: str, source: bytes | None,
                    at: list[bytes]) -> bytes:
        branch = self._root_publish(identity, "doc/branch",
                                    {"name": name, "source": source, "at": at})
        key = os.urandom(KEY_SIZE)
        self._add_key(branch.id, 0, key)
        self._seal(identity, branch.id, 0, key, self.editors())
        return branch.id

    def _commits(self, branch: bytes) -> list[Object]:
        return [o for o in self._streams.get(branch, ()) if o.type == "doc/commit"]

    def _root_of(self, commit: Object) -> tuple[bytes, ...] | None:
        """The root-branch heads a commit names: its own, or (when it names none and has
        parents) its first parent's, so unchanged roots cost no bytes. None while a parent
        it depends on is missing."""
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
            if parent is None or parent.type != "doc/commit":
                root = None
                break
            commit = parent
        # Every commit walked gets the answer, "none yet" too: else a long chain above a missing
        # parent is walked again from each of its commits, and opening becomes quadratic.
        for oid in chain:
            roots[oid] = root
        return root

    def _visible(self, commit: Object) -> bool:
        found = self._cache.visible.get(commit.id)
        if found is None:
            root = self._root_of(commit)
            found = self._cache.visible[commit.id] = (
                root is not None and commit.author in self.editors(root)
                and commit.stream in self._branch_ids())
        return found

    def _all_visible(self, branch: bytes, commits: list[Object]) -> bool:
        """Whether every one of the branch's `commits` is visible, found in one light pass: each
        names its root or has its first parent on the branch, and every author was an editor
        in every root they name. False only means: ask each commit (`_visible`)."""
        if branch not in self._branch_ids():
            return False
        objects, authors, roots = self._objects, set(), set()
        for commit in commits:
            named, links = commit.body["root"], commit.links
            if named or not links:
                roots.add(tuple(named))
            elif (parent := objects.get(links[0])) is None or parent.stream != branch:
                return False
            authors.add(commit.author)
        return all(authors <= self.editors(root) for root in roots)

    def _commit(self, commit: str | bytes) -> Object:
        """A visible commit by id (bytes or hex) or by a unique hex prefix."""
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
            if self._all_visible(branch_id, commits):
                self._cache.visible.update(dict.fromkeys((c.id for c in commits), True))
            else:
                commits = [c for c in commits if self._visible(c)]
            later = [c.ts for c in commits if horizon is not None and c.ts > horizon]
            if later:
                commits = [c for c in commits if c.ts <= horizon]  # type: ignore[operator]
            linked = {link for c in commits for link in c.links}
            found = self._cache.heads[branch_id] = (
                tuple(sorted(c.id for c in commits if c.id not in linked)),
                min(later, default=None))
        return [h.hex() for h in found[0]]

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
        """A live document at `heads`. The branch's cached one is reused when it is there
        already, or moved forward when `heads` descend from it (remote commits arriving);
        otherwise a new one (with a new client id) starts from the latest checkpoint below
        `heads` (or from nothing) and replays what came after it."""
        live = self._live.get(branch)
        if live is not None and live.heads == heads:
            return live
        forward, todo = False, None
        if live is not None and self._below(live.heads, heads):
            todo = self._since(heads, branch, live.heads)
            forward = todo is not None
        if not forward:  # another version: built aside, so the branch's state (and undo) stays
            live = _Live.empty()
            start = self._checkpoint(branch, heads)
            if start is not None and (todo := self._since(heads, branch, start[0])) is not None:
                live.absorb(start[1])
            else:
                todo = self._since(heads, branch, frozenset())
        assert todo is not None
        complete = live.complete
        for commit in causal_order(todo):
            update = self._payload(commit)["u"]
            if update:
                live.absorb(update)
        live.heads = heads
        # A state built while an ancestor was missing must not outlive that ancestor's arrival.
        live.complete = complete and all(
            link in self._objects for c in todo for link in c.links)
        if forward or branch not in self._live:
            self._live[branch] = live
        return live

    def _below(self, lower: frozenset[bytes], heads: frozenset[bytes]) -> bool:
        """Whether `lower` may be in the past of `heads` going by dates alone (authors date
        commits after their parents): a guess that saves walking to find out it is not."""
        dated = [self._objects[h].ts for h in lower if h in self._objects]
        return not lower or len(dated) == len(lower) and max(dated) <= max(
            (self._objects[h].ts for h in heads if h in self._objects), default=-1)

    def _since(self, heads: frozenset[bytes], branch: bytes,
               start: frozenset[bytes]) -> list[Object] | None:
        """The visible commits in the past of `heads` that a state at `start` may lack: the
        walk back stops at `start`'s commits. Every commit the state lacks is found (a path to
        it through `start` would put it in `start`'s past) and some it has may be too, which is
        harmless: Yjs updates apply once. None when `start` is not all in the past of `heads`."""
        seen: set[bytes] = set()
        stack = list(heads)
        out, reached = [], set()
        objects = self._objects
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            if oid in start:
                reached.add(oid)
                continue
            obj = objects.get(oid)
            if obj is None or obj.stream != branch:
                continue
            if obj.type == "doc/commit" and self._visible(obj):
                out.append(obj)
            stack.extend(obj.links)
        if len(reached) != len(start) or not all(self._visible(objects[h]) for h in start):
            return None
        return out

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
                kind, merged = payload.get("k", "edit"), tuple(
                    m.hex() for m in payload.get("m", ()))
            except DocumentError:
                kind, merged = "?", ()
            out.append(CommitInfo(commit.hex, branch_id.hex(),
                                  tuple(p.hex() for p in commit.links), commit.author,
                                  commit.ts, kind, merged))
        return out

    def _seal_commit(self, identity: Identity, branch: bytes, parents: Iterable[bytes],
                     payload: dict) -> Object:
        writing = self._writing(identity, branch)
        if writing is None:
            raise DocumentError("you have no key for this branch")
        epoch, key = writing
        self._add_key(branch, epoch, key)
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(key).encrypt(encoding.dumps(payload), nonce).ciphertext
        root = tuple(self._linkable(self._root_heads(), self._now()))
        parents = sorted(parents)
        first = self._objects.get(parents[0]) if parents else None
        same = first is not None and self._root_of(first) == root
        known = self._cache.heads.get(branch)
        obj = self._publish(identity, "doc/commit", branch,
                            {"root": [] if same else list(root), "epoch": epoch,
                             "nonce": nonce, "box": box}, parents)
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
