"""Branch keys: sealed to editors (and read only when sealed by someone who is or was one),
refreshed when an editor leaves, shared as capabilities; editors added and removed with them."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..identity import Identity, IdentityError, seal_to
from ..objects import Object
from ._capability import KEY_SIZE, Capability
from ._records import DocumentError
from ._root import _RootBranch


class _Keys(_RootBranch):
    """Who holds which branch key, on top of the root-branch state."""

    # Keys ---------------------------------------------------------------------------------------

    def _seal(self, identity: Identity, branch: bytes, epoch: int, key: bytes,
              recipients: Iterable[bytes]) -> None:
        for recipient in sorted(set(recipients)):
            obj = self._root_publish(identity, "doc/branch-key",
                                     {"branch": branch, "epoch": epoch, "recipient": recipient,
                                      "sealed": seal_to(recipient, key)})
            if recipient == identity.public_key:
                self._unsealed[obj.id] = key

    def _unseal(self, identity: Identity, obj: Object) -> bytes | None:
        if obj.id not in self._unsealed:
            try:
                key: bytes | None = identity.unseal(obj.body["sealed"])
            except IdentityError:
                key = None
            self._unsealed[obj.id] = key if key is not None and len(key) == KEY_SIZE else None
        return self._unsealed[obj.id]

    def _take_keys(self) -> None:
        """Read keys sealed to this holder by anyone who is or was an editor (whose sealing
        counts for writing is `_sealed_to`'s question); a stranger's are never even opened."""
        if not self._pending or self.identity is None:
            return
        ever = set(self.root.body["editors"]).union(
            *(c.body["add"] for c in self._in_root("doc/editors") if self._is_change(c)))
        waiting = []
        for obj in self._pending:
            if obj.author not in ever:
                waiting.append(obj)
            elif (key := self._unseal(self.identity, obj)) is not None:
                self._add_key(obj.body["branch"], obj.body["epoch"], key)
        self._pending = waiting

    def _sealed_to(self, identity: Identity) -> dict[bytes, list[tuple[int, bytes]]]:
        """Branch -> (epoch, key)s sealed to `identity` by objects that count."""
        found = self._cache.sealed.get(identity.public_key)
        if found is None:
            found = {}
            for obj in self._in_root("doc/branch-key"):
                if obj.body["recipient"] == identity.public_key and self._counts(obj):
                    key = self._unseal(identity, obj)
                    if key is not None:
                        found.setdefault(obj.body["branch"], []).append((obj.body["epoch"], key))
            for keys in found.values():
                keys.sort()
            self._cache.sealed[identity.public_key] = found
        return found

    def _writing(self, identity: Identity, branch: bytes) -> tuple[int, bytes] | None:
        """The (epoch, key) that `identity` encrypts new commits of `branch` with: the newest
        epoch that editors sealed to it (the smallest key of it, as every holder picks)."""
        keys = self._sealed_to(identity).get(branch)
        if not keys:
            return None
        epoch = keys[-1][0]
        return epoch, min(k for e, k in keys if e == epoch)

    def refresh_key(self, identity: Identity, branch: str) -> int:
        """A new key for `branch`, sealed to the current editors: later commits are closed to
        anyone who only had the earlier keys. Returns the new epoch."""
        self._require_editor(identity)
        branch_id = self._branch(branch)
        epoch = 1 + max((o.body["epoch"] for kind in ("doc/key-refresh", "doc/branch-key")
                         for o in self._in_root(kind)
                         if o.body["branch"] == branch_id and self._counts(o)), default=0)
        key = os.urandom(KEY_SIZE)
        self._add_key(branch_id, epoch, key)
        self._root_publish(identity, "doc/key-refresh", {"branch": branch_id, "epoch": epoch})
        self._seal(identity, branch_id, epoch, key, self.editors())
        return epoch

    def share(self, branch: str) -> Capability:
        """A capability to read `branch` (its keys so far), and nothing else."""
        branch_id = self._branch(branch)
        keys = tuple(sorted((e, k) for (b, e), ks in self._keys.items() if b == branch_id
                            for k in ks))
        if not keys:
            raise DocumentError("you cannot read that branch, so you cannot share it")
        return Capability(self.root.id, branch_id, keys)

    def open_capability(self, capability: Capability) -> None:
        if capability.document != self.root.id:
            raise DocumentError("that capability is for another document")
        for epoch, key in capability.keys:
            self._add_key(capability.branch, epoch, key)

    # Editors come and go with their keys ------------------------------------------------------

    def add_editor(self, identity: Identity, public_key: bytes) -> None:
        """`identity` (the creator) makes `public_key` an editor; it gets every branch key."""
        self._require_creator(identity)
        if public_key in self.editors():
            raise DocumentError("already an editor")
        self._root_publish(identity, "doc/editors", {"add": [public_key], "remove": []})
        # Only keys editors sealed: a key from a capability, or a stranger, is for reading.
        for branch, keys in sorted(self._sealed_to(identity).items()):
            for epoch, key in keys:
                self._seal(identity, branch, epoch, key, [public_key])

    def remove_editor(self, identity: Identity, public_key: bytes) -> None:
        """Remove an editor and refresh every branch key, so later commits are closed to them."""
        self._require_creator(identity)
        if public_key not in self.editors():
            raise DocumentError("not an editor")
        if public_key == self.root.author:
            raise DocumentError("the creator stays an editor")
        self._root_publish(identity, "doc/editors", {"add": [], "remove": [public_key]})
        for branch in self._branch_objects():
            if self._latest_epoch(branch.id) is not None:
                self.refresh_key(identity, branch.id.hex())
