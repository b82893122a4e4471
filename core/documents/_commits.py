"""Branches and commits: which commits are visible, what they carry (decrypted once), the Yjs
state at a set of heads (moved forward when it can be), and sealing a new commit."""

from __future__ import annotations

import os
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

    def _commit(self, commit: str | bytes) -> Object:
        """A visible commit by id (bytes or hex) or by a unique hex prefix."""
        ref = commit.strip().lower() if isinstance(commit, str) else ""
        if isinstance(commit, bytes):
            obj = self._objects.get(commit)
        elif len(ref) == 64 and all(c in "0123456789abcdef" for c in ref):
            obj = self._objects.get(bytes.fromhex(ref))  # a whole id: no scan of every object
        else:
            matches = [o for oid, o in self._objects.items()
                       if o.type == "doc/commit" and oid.hex().startswith(ref)] \
                if len(ref) >= MIN_ID_PREFIX else []
            if len(matches) > 1:
                raise DocumentError(f"{commit!r} matches {len(matches)} commits; give more of it")
            obj = matches[0] if matches else None
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
            commits = [c for c in self._commits(branch_id) if self._visible(c)]
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
        otherwise a new one (with a new client id) replays the causal past."""
        live = self._live.get(branch)
        if live is not None and live.heads == heads:
            return live
        past = {c.id: c for c in self._past(heads, branch)
                if c.type == "doc/commit" and self._visible(c)}
        forward = live is not None and live.heads <= past.keys()
        if forward:
            done = {c.id for c in self._past(live.heads, branch)}
            todo = [c for oid, c in past.items() if oid not in done]
        else:  # another version: built aside, so the branch's state (and undo) stays
            live, todo = _Live.empty(), list(past.values())
        for commit in causal_order(todo):
            update = self._payload(commit)["u"]
            if update:
                live.absorb(update)
        live.heads = heads
        # A state built while an ancestor was missing must not outlive that ancestor's arrival.
        live.complete = all(link in self._objects for c in past.values() for link in c.links)
        if forward or branch not in self._live:
            self._live[branch] = live
        return live

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
        obj = self._publish(identity, "doc/commit", branch,
                            {"root": [] if same else list(root), "epoch": epoch,
                             "nonce": nonce, "box": box}, parents)
        self._payloads[obj.id] = payload
        return obj
