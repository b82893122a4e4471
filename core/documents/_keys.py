"""Branch keys: sealed to editors (and read only when sealed by someone who is or was one),
refreshed when an editor leaves, shared as capabilities; editors added and removed with them;
published to the whole workspace while the document is workspace-readable.

Workspace keys. For a workspace-readable document every branch key (every epoch) is also
published as a `doc/workspace-key`: the key in a SecretBox whose key is derived from the
workspace secret and the branch id (`workspace_box_key`). Every member holds the secret (it
comes with the invite; app/workspace.py `read_secret`), so every member reads; someone who only
sees the traffic or a bundle file does not. Such keys are for reading only (like a
capability's) and count only from editors (`RootBranch.counts`). A new key (a new branch, a key refresh
when an editor leaves) is published under the secret while the document is workspace-readable.
Making a document private refreshes every branch key, sealed to editors alone, so later commits
are closed to the rest of the workspace; making it workspace-readable publishes the keys held.
Membership epochs (core/membership.py): new keys are published under the newest epoch's secret
(`secret`) and read under any epoch's (`secrets`); removing a member starts a new epoch, and the
app refreshes the keys of the workspace-readable documents its holder edits, so the removed
member reads nothing newer.

Workspace-editable documents (`_root`: every member edits): new keys are sealed to the editors
listed and to their maker only, and published under the workspace secret; members write with
the keys they open there (`writing`), so one who joins later writes as soon as they hold the
secret, and a removed member, who never gets the next epoch's secret, writes nothing that opens.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Container, Iterable
from typing import TYPE_CHECKING

import nacl.exceptions
import nacl.secret

from ..doc_kinds import VISIBILITIES
from ..identity import Identity, IdentityError, seal_to
from ..objects import Object
from ._capability import KEY_SIZE, Capability
from ._records import DocumentError

if TYPE_CHECKING:
    from ._document import Document

WORKSPACE_KEY_CONTEXT = b"hearth-doc-workspace-key"


def workspace_box_key(secret: bytes, branch: bytes) -> bytes:
    """The key that boxes `branch`'s keys for the members of the workspace whose secret this
    is: BLAKE2b keyed with the secret, over a context string and the branch id."""
    return hashlib.blake2b(WORKSPACE_KEY_CONTEXT + branch, key=secret,
                           digest_size=KEY_SIZE).digest()


class BranchKeys:
    """The branch keys this holder has (`doc.branch_keys`) and who holds which: sealed to
    editors, refreshed, shared, published to the workspace; editors added and removed with
    them; visibility changed."""

    def __init__(self, doc: Document, secret: bytes | None, secrets: tuple[bytes, ...]) -> None:
        self.doc = doc
        self.held = doc.held
        self.root = doc.root
        self.root_branch = doc.root_branch
        # The workspace secret (the app hands it in; core reads no files): it opens the
        # branch keys published to the whole workspace (`doc/workspace-key`), and editors
        # publish new keys under it while the document is workspace-readable.
        self.secret = secret
        # Every epoch's secret the holder has (core/membership.py): keys published under an
        # older one still open; new ones are published under `secret`, the newest.
        self.secrets = tuple(dict.fromkeys((*filter(None, [secret]), *secrets)))
        # (branch, epoch) -> keys, for reading; two editors refreshing at once make two keys of
        # one epoch. Which key encrypts new commits is decided by `writing` alone.
        self.by_epoch: dict[tuple[bytes, int], list[bytes]] = {}
        self.unsealed: dict[bytes, bytes | None] = {}  # doc/branch-key id -> its key
        self.pending: list[Object] = []  # keys sealed to this holder, by no editor (yet)
        self.workspace_taken: set[bytes] = set()  # doc/workspace-key ids opened
        # branch -> (epoch, key)s opened from doc/workspace-keys that count: what members
        # write with while the document is workspace-editable (`writing`)
        self.workspace_opened: dict[bytes, list[tuple[int, bytes]]] = {}

    def all(self) -> list[tuple[bytes, int, bytes]]:
        """Every branch key this holder has: (branch id, epoch, key)."""
        return [(branch, epoch, key) for (branch, epoch), keys in self.by_epoch.items()
                for key in keys]

    def add(self, branch: bytes, epoch: int, key: bytes) -> None:
        keys = self.by_epoch.setdefault((branch, epoch), [])
        if key not in keys:
            keys.append(key)
            self.held.forget_unread()

    def open_box(self, branch: bytes, epoch: int, box: bytes, nonce: bytes) -> bytes | None:
        """Decrypt with whichever of the epoch's keys fits; None when none does."""
        keys = self.by_epoch.get((branch, epoch), [])
        for n, key in enumerate(keys):
            try:
                plain = nacl.secret.SecretBox(key).decrypt(box, nonce)
            except nacl.exceptions.CryptoError:
                continue
            if n:  # tried first next time: stray keys of an epoch cost one failure, not many
                keys.insert(0, keys.pop(n))
            return plain
        return None

    def latest_epoch(self, branch: bytes) -> int | None:
        epochs = [epoch for (b, epoch) in self.by_epoch if b == branch]
        return max(epochs) if epochs else None

    # Keys ---------------------------------------------------------------------------------------

    def seal(self, identity: Identity, branch: bytes, epoch: int, key: bytes,
             recipients: Iterable[bytes], *, workspace: bool = True) -> None:
        """Seal a key to `recipients`; a new key (`workspace`) of a workspace-readable
        document is published under the workspace secret too."""
        for recipient in sorted(set(recipients)):
            obj = self.root_branch.publish_root(identity, "doc/branch-key",
                                     {"branch": branch, "epoch": epoch, "recipient": recipient,
                                      "sealed": seal_to(recipient, key)})
            if recipient == identity.public_key:
                self.unsealed[obj.id] = key
        if workspace and self.root_branch.visibility == "workspace":
            self.publish_workspace_key(identity, branch, epoch, key)

    # Keys for the whole workspace -------------------------------------------------------------

    def publish_workspace_key(self, identity: Identity, branch: bytes, epoch: int,
                              key: bytes) -> None:
        if self.secret is None:  # the app always hands the secret in; core alone has none
            return
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(workspace_box_key(self.secret, branch)).encrypt(
            key, nonce).ciphertext
        obj = self.root_branch.publish_root(identity, "doc/workspace-key",
                                 {"branch": branch, "epoch": epoch, "nonce": nonce, "box": box})
        self.workspace_taken.add(obj.id)
        self.workspace_opened.setdefault(branch, []).append((epoch, key))

    def take_workspace_keys(self) -> None:
        """Read the keys published to the workspace by editors (a forged one, by anyone else,
        is never opened; one whose author's editorship has not arrived yet waits for it)."""
        if self.secret is None:
            return
        for obj in self.held.in_root("doc/workspace-key"):
            if obj.id in self.workspace_taken or not self.root_branch.counts(obj):
                continue
            self.workspace_taken.add(obj.id)
            branch = obj.body["branch"]
            for secret in self.secrets:
                try:
                    key = nacl.secret.SecretBox(workspace_box_key(secret, branch)).decrypt(
                        obj.body["box"], obj.body["nonce"])
                except nacl.exceptions.CryptoError:
                    continue  # under another epoch's or workspace's secret, or damaged
                if len(key) == KEY_SIZE:
                    self.add(branch, obj.body["epoch"], key)
                    self.workspace_opened.setdefault(branch, []).append((obj.body["epoch"], key))
                break

    def set_visibility(self, identity: Identity, mode: str) -> None:
        """The creator makes the document readable by the whole workspace, or private again.
        Private refreshes every branch key (sealed to editors alone) so later commits are closed
        to other members; workspace publishes every key the creator holds, so all of history
        reads."""
        self.root_branch.require_creator(identity)
        if mode not in VISIBILITIES:
            raise DocumentError(f"visibility is one of {', '.join(VISIBILITIES)}, not {mode!r}")
        if mode == self.root_branch.visibility:
            raise DocumentError(f"the document is {mode} already")
        if mode == "private" and self.root_branch.editing == "workspace":
            raise DocumentError("every member edits this document, so it stays readable by "
                                "the workspace")
        if mode == "workspace" and self.secret is None:
            raise DocumentError("a workspace-readable document needs the workspace secret")
        self.root_branch.publish_root(identity, "doc/visibility", {"mode": mode})
        if mode == "private":
            for branch in self.root_branch.branch_objects():
                if self.latest_epoch(branch.id) is not None:
                    self.refresh_key(identity, branch.id.hex())
            return
        for branch_id, keys in sorted(self.sealed_to(identity).items()):
            for epoch, key in keys:
                self.publish_workspace_key(identity, branch_id, epoch, key)

    def _unseal(self, identity: Identity, obj: Object) -> bytes | None:
        if obj.id not in self.unsealed:
            try:
                key: bytes | None = identity.unseal(obj.body["sealed"])
            except IdentityError:
                key = None
            self.unsealed[obj.id] = key if key is not None and len(key) == KEY_SIZE else None
        return self.unsealed[obj.id]

    def take_keys(self) -> None:
        """Read keys sealed to this holder by anyone who is or was an editor (whose sealing
        counts for writing is `sealed_to`'s question); a stranger's are never even opened."""
        if not self.pending or self.doc.identity is None:
            return
        ever = set(self.root.body["editors"]).union(
            *(c.body["add"] for c in self.held.in_root("doc/editors")
              if self.root_branch.is_change(c)))
        if any(self.root_branch.is_root_change(c) and c.body["mode"] == "workspace"
               for c in self.held.in_root("doc/editing")):
            ever.update(self.doc.members)  # members were editors while it was workspace-editable
        waiting = []
        for obj in self.pending:
            if obj.author not in ever:
                waiting.append(obj)
            elif (key := self._unseal(self.doc.identity, obj)) is not None:
                self.add(obj.body["branch"], obj.body["epoch"], key)
        self.pending = waiting

    def sealed_to(self, identity: Identity) -> dict[bytes, list[tuple[int, bytes]]]:
        """Branch -> (epoch, key)s sealed to `identity` by objects that count."""
        found = self.held.cache.sealed.get(identity.public_key)
        if found is None:
            found = {}
            for obj in self.held.in_root("doc/branch-key"):
                if obj.body["recipient"] == identity.public_key and self.root_branch.counts(obj):
                    key = self._unseal(identity, obj)
                    if key is not None:
                        found.setdefault(obj.body["branch"], []).append((obj.body["epoch"], key))
            for keys in found.values():
                keys.sort()
            self.held.cache.sealed[identity.public_key] = found
        return found

    def writing(self, identity: Identity, branch: bytes) -> tuple[int, bytes] | None:
        """The (epoch, key) that `identity` encrypts new commits of `branch` with: the newest
        epoch that editors sealed to it (the smallest key of it, as every holder picks)."""
        keys = self.sealed_to(identity).get(branch, [])
        if self.root_branch.editing == "workspace" \
                and identity.public_key in self.root_branch.editors():
            keys = sorted(keys + self.workspace_opened.get(branch, []))
        if not keys:
            return None
        epoch = keys[-1][0]
        return epoch, min(k for e, k in keys if e == epoch)

    def key_since(self, branch: str, *, by: Container[bytes] | None = None) -> int:
        """When `branch`'s newest key was made (ms; the ts of its newest key object that
        counts, of those made `by` these authors when given): a workspace epoch that began
        later calls for a new one. The app asks about the members that remain: a key a removed
        member made before their removal and dated ahead must not pass for a new one."""
        branch_id = self.root_branch.branch(branch)
        return max((o.ts for kind in ("doc/key-refresh", "doc/branch-key")
                    for o in self.held.in_root(kind)
                    if o.body["branch"] == branch_id and self.root_branch.counts(o)
                    and (by is None or o.author in by)), default=0)

    def refresh_key(self, identity: Identity, branch: str, *,
                    without: Iterable[bytes] = ()) -> int:
        """A new key for `branch`, sealed to the current editors (but those `without`: removed
        from the workspace): later commits are closed to anyone who only had the earlier keys.
        Returns the new epoch."""
        self.root_branch.require_editor(identity)
        branch_id = self.root_branch.branch(branch)
        # Above every epoch that counts, the workspace's keys too: members write with those
        # while the document is workspace-editable, so none made earlier may stay the newest.
        epoch = 1 + max((o.body["epoch"] for kind in ("doc/key-refresh", "doc/branch-key",
                                                      "doc/workspace-key")
                         for o in self.held.in_root(kind)
                         if o.body["branch"] == branch_id and self.root_branch.counts(o)),
                        default=0)
        key = os.urandom(KEY_SIZE)
        self.add(branch_id, epoch, key)
        self.root_branch.publish_root(identity, "doc/key-refresh",
                                      {"branch": branch_id, "epoch": epoch})
        self.seal(identity, branch_id, epoch, key,
                  self.recipients(identity) - frozenset(without))
        return epoch

    def recipients(self, identity: Identity) -> frozenset[bytes]:
        """Whom a new key is sealed to: the editors, or while every member edits, the editors
        listed and its maker (the others open it under the workspace secret)."""
        if self.root_branch.editing == "workspace":
            return self.root_branch.listed_editors() | {identity.public_key}
        return self.root_branch.editors()

    def share(self, branch: str) -> Capability:
        """A capability to read `branch` (its keys so far), and nothing else."""
        branch_id = self.root_branch.branch(branch)
        keys = tuple(sorted((e, k) for (b, e), ks in self.by_epoch.items() if b == branch_id
                            for k in ks))
        if not keys:
            raise DocumentError("you cannot read that branch, so you cannot share it")
        return Capability(self.root.id, branch_id, keys)

    def open_capability(self, capability: Capability) -> None:
        if capability.document != self.root.id:
            raise DocumentError("that capability is for another document")
        for epoch, key in capability.keys:
            self.add(capability.branch, epoch, key)

    # Editors come and go with their keys ------------------------------------------------------

    def add_editor(self, identity: Identity, public_key: bytes) -> None:
        """`identity` (the creator) makes `public_key` an editor; it gets every branch key."""
        self.root_branch.require_creator(identity)
        if public_key in self.root_branch.listed_editors():
            raise DocumentError("already an editor")
        self.root_branch.publish_root(identity, "doc/editors", {"add": [public_key], "remove": []})
        # Only keys editors sealed: a key from a capability, or a stranger, is for reading.
        for branch, keys in sorted(self.sealed_to(identity).items()):
            for epoch, key in keys:
                self.seal(identity, branch, epoch, key, [public_key], workspace=False)

    def remove_editor(self, identity: Identity, public_key: bytes) -> None:
        """Remove an editor and refresh every branch key, so later commits are closed to them."""
        self.root_branch.require_creator(identity)
        if public_key not in self.root_branch.listed_editors():
            raise DocumentError("not an editor" if self.root_branch.editing == "listed" else
                                "not one of the editors listed (every member edits)")
        if public_key == self.root.author:
            raise DocumentError("the creator stays an editor")
        self.root_branch.publish_root(identity, "doc/editors", {"add": [], "remove": [public_key]})
        for branch in self.root_branch.branch_objects():
            if self.latest_epoch(branch.id) is not None:
                self.refresh_key(identity, branch.id.hex())
