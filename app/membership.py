"""Members, invites and removals: a workspace's `ws.members` (issue #18; docs/ARCHITECTURE.md
"Members and invites").

The rules (who is a member, which invite admits, what a removed member's objects count for,
which secret each epoch has) are core.membership.MembershipView's, a function of the
membership objects held. This module acts on them: it makes invites (a code, and a signed half
holding the join key under the secret of the newest epoch), admits those who prove a code in a
join session (their admission, and every epoch's secret sealed to them), makes personal codes,
and removes members: the removal, the ids of their objects held here (`member/kept`: those
still count, the causal past of the removal), then a new epoch whose secret is sealed to each
member who remains.

Secrets: epoch 0's is the file `secret.key` (0600), from the workspace's creation or a personal
code, or kept from the seal a member's node made in a join session; later epochs' stay sealed
to my identity in the replica (itself 0600) and are opened when needed (`secrets`).
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import nacl.exceptions
import nacl.secret

from core import kinds
from core.identity import IdentityError, seal_to
from core.membership import (
    SECRET_SIZE,
    SEED_SIZE,
    InviteRecord,
    MemberRecord,
    MembershipView,
    RemovalRecord,
    invite_tag,
    join_key,
    secret_check,
)
from core.objects import Object, authored, decode_trusted

from .errors import WorkspaceError
from .invite import Invite, InviteError
from .relay_list import code_relays

if TYPE_CHECKING:
    from core.identity import Identity
    from storage import Replica

    from .workspace import Workspace

__all__ = ["InviteRecord", "MemberRecord", "Membership", "MembershipView", "RemovalRecord",
           "invite_tag", "join_key"]

_BOX_CONTEXT = b"hearth-invite-box"
# Why a session is refused at its hello (Membership.refusal), in words for the peer.
REMOVED = "removed from this workspace"
NOT_LISTED = "not a member here (no admission of this key has reached this computer)"
USED_UP = "this invite was already used up by someone else"
OLD_EPOCH = "not a member here (an older epoch's secret)"


def _box_key(secret: bytes, tag: bytes) -> bytes:
    return hashlib.blake2b(_BOX_CONTEXT + tag, key=secret,
                           digest_size=nacl.secret.SecretBox.KEY_SIZE).digest()


class Membership:
    """A workspace's members (`ws.members`): who is in, invites, admissions, removals and the
    secret of each epoch. It publishes through the workspace, whose secret (epoch 0's, None
    on a computer still joining) and identity it uses."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.replica: Replica = ws.replica
        self.identity: Identity = ws.identity
        self._cache: tuple[tuple, MembershipView] | None = None
        self._unlisted: tuple[MembershipView, dict[bytes, str]] | None = None
        self.busy = False  # a removal is publishing its objects (app.node sees it whole)

    def view(self) -> MembershipView:
        """The view of the membership objects held now (recomputed when they change)."""
        store = self.replica.membership
        version = store.version()
        cached = self._cache
        if cached is not None and cached[0] == version:
            return cached[1]
        view = MembershipView.compute(store.objects(), self.replica.workspace.root,
                                      _genesis_ts(self.replica.get(self.ws.id)))
        self._cache = (version, view)
        return view

    def all(self) -> list[MemberRecord]:
        """Every member, oldest first, with their nickname."""
        names = self.replica.nicknames()
        return [replace(m, nick=names.get(m.key))
                for m in sorted(self.view().members.values(),
                                key=lambda m: (m.since_ms, m.key))]

    def removed(self) -> list[RemovalRecord]:
        """Everyone removed (and not admitted again), newest removal first."""
        names = self.replica.nicknames()
        return [replace(r, nick=names.get(r.key), kept=frozenset())
                for r in sorted(self.view().removed.values(),
                                key=lambda r: (r.at_ms, r.key), reverse=True)]

    def has(self, key: bytes) -> bool:
        return key in self.view().members

    def refusal(self, key: bytes, *, old_epoch: bool = False) -> str | None:
        """Why a session whose hello proved `key` is not served here (None: it is): only a
        member the view lists, never a removed one. A computer whose own view does not list
        it yet (it joined with a personal code and has not synced) has nothing to go by but
        the secret: it lets in whoever holds the newest one (`old_epoch` False)."""
        view = self.view()
        if key in view.removed:
            return REMOVED
        if key in view.members:
            return None
        if old_epoch:
            return OLD_EPOCH
        if self.ws.key not in view.members:
            return None
        return self._not_listed(view).get(key, NOT_LISTED)

    def _not_listed(self, view: MembershipView) -> dict[bytes, str]:
        """Why keys with an admission held here are not members, by key (an admission that
        did not count: the invite was used up by someone else first, revoked, expired, or
        made by someone who was not a member); worked out once per view."""
        if self._unlisted is not None and self._unlisted[0] is view:  # views are remade
            return self._unlisted[1]
        reasons: dict[bytes, str] = {}
        for obj in self.replica.membership.objects(frozenset({"member/admit"})):
            key = obj.body["key"]
            if key in view.members or key in view.removed:
                continue
            invite = view.invites.get(obj.body["invite"] or b"")
            if invite is not None and invite.uses and invite.used >= invite.uses:
                reasons[key] = USED_UP
            else:
                reason = invite.refusal(obj.ts) if invite is not None else None
                reasons.setdefault(key, f"your admission does not count here: {reason}"
                                   if reason else "your admission does not count here")
        self._unlisted = (view, reasons)
        return reasons

    # Secrets by epoch -------------------------------------------------------------------------

    def secrets(self) -> dict[int, bytes]:
        """Every epoch's secret I hold (epoch 0's from its file, later ones opened from the
        seals to me whose check matches), by epoch."""
        held: dict[int, bytes] = {}
        first = self.ws.secret()
        if first is not None:
            held[0] = first
        view = self.view()
        for (epoch, recipient), sealed in view.sealed.items():
            if recipient != self.ws.key or epoch in held:
                continue
            opened = self._open(sealed)
            if opened is not None and (epoch == 0 or secret_check(opened) == view.checks[epoch]):
                held[epoch] = opened
        return held

    def newest_secret(self) -> tuple[int, bytes]:
        """The newest epoch whose secret I hold, and that secret: what my sessions use."""
        held = self.secrets()
        if not held:
            raise WorkspaceError("this computer does not hold the workspace secret yet")
        epoch = max(held)
        return epoch, held[epoch]

    def my_secret(self) -> bytes | None:
        """Epoch 0's secret as a member sealed it to me (joining by invite), opened."""
        sealed = self.view().sealed.get((0, self.ws.key))
        return self._open(sealed) if sealed is not None else None

    def _open(self, sealed: bytes) -> bytes | None:
        try:
            opened = self.identity.unseal(sealed)
        except IdentityError:
            return None
        return opened if len(opened) == SECRET_SIZE else None

    def _seal_epochs(self, key: bytes, *, newest_only: bool = False) -> None:
        """Seal to `key` every epoch's secret I hold that no seal to them has yet."""
        view = self.view()
        held = self.secrets()
        for epoch in sorted(held)[-1:] if newest_only else sorted(held):
            if (epoch, key) in view.sealed:
                continue
            if epoch == 0 and view.members.get(key, MemberRecord(b"", 0)).admitted_by != self.ws.key:
                continue  # epoch 0 counts only from whoever admitted them
            self.ws.publish("workspace/key", self.ws.id, {
                "epoch": epoch, "check": secret_check(held[epoch]), "recipient": key,
                "sealed": seal_to(key, held[epoch])})

    # Invites ------------------------------------------------------------------------------

    def invite(self, *, uses: int = 0, expires_ms: int = 0) -> tuple[str, bytes]:
        """A new invite: its code (for the person invited) and its signed half's id."""
        if uses < 0 or expires_ms < 0:
            raise WorkspaceError("an invite's uses and expiry cannot be negative")
        self._must_be_member()
        seed = os.urandom(SEED_SIZE)
        tag = invite_tag(seed)
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(_box_key(self.newest_secret()[1], tag)).encrypt(
            join_key(seed), nonce).ciphertext
        obj = self.ws.publish("invite/create", self.ws.id, {"tag": tag, "uses": uses,
                                                      "expires": expires_ms, "nonce": nonce,
                                                      "box": box})
        return Invite(self.ws.id, self.replica.workspace.root, seed=seed,
                      relays=code_relays(self.replica)).encode(), obj.id

    def invites(self) -> list[InviteRecord]:
        """Every invite held, newest first."""
        return sorted(self.view().invites.values(),
                      key=lambda i: (i.created_ms, i.id), reverse=True)

    def revoke_invite(self, ref: str) -> Object:
        """Revoke the invite a code or an id (prefix) names: it admits no one from now on."""
        invite = self._find_invite(ref)
        if invite.creator != self.ws.key and not self.replica.is_admin(self.ws.key):
            raise WorkspaceError("only the invite's creator or an admin may revoke it")
        if invite.revoked_ms is not None:
            raise WorkspaceError("that invite is revoked already")
        return self.ws.publish("invite/revoke", self.ws.id, {"invite": invite.id})

    def _find_invite(self, ref: str) -> InviteRecord:
        view = self.view()
        ref = ref.strip()
        if ref.lower().startswith("hearth-"):
            try:
                code = Invite.decode(ref)
            except InviteError as exc:
                raise WorkspaceError(str(exc)) from None
            if code.seed is None or code.workspace != self.ws.id:
                raise WorkspaceError("that code is not an invite of this workspace")
            invite_id = view.by_tag.get(invite_tag(code.seed))
            if invite_id is None:
                raise WorkspaceError("no invite here matches that code (not synced yet?)")
            return view.invites[invite_id]
        invite_id = self.ws.resolve_id(ref, "invite")
        if invite_id not in view.invites:
            raise WorkspaceError(f"{ref} is not an invite")
        return view.invites[invite_id]

    def invite_for(self, key: bytes) -> str:
        """A personal code for `key`: epoch 0's secret sealed to it (its `secret.key`), its
        admission signed now, and later epochs' secrets sealed to it in the replica (they
        reach it at its first sync with me). It admits that person alone, with no member's
        node online."""
        self._must_be_member()
        try:
            sealed = seal_to(key, self.secrets()[0])
        except KeyError:
            raise WorkspaceError("this computer does not hold the workspace secret") from None
        except IdentityError as exc:
            raise WorkspaceError(f"cannot invite that key: {exc}") from None
        if not self.has(key):
            self.ws.publish("member/admit", self.ws.id, {"key": key, "invite": None})
        self._seal_epochs(key)
        return Invite(self.ws.id, self.replica.workspace.root, sealed=sealed,
                      relays=code_relays(self.replica)).encode()

    # Admitting (on a member's node, for a join session) -------------------------------------

    def join_key_for(self, tag: bytes) -> bytes | None:
        """The join session key of the invite `tag` names (None: refuse the session before
        anything is said)."""
        view = self.view()
        invite = view.invites.get(view.by_tag.get(tag, b""))
        if invite is None or not self.has(self.ws.key):
            return None
        obj = self.replica.object(invite.id)
        for secret in self.secrets().values():
            try:
                return nacl.secret.SecretBox(_box_key(secret, tag)).decrypt(
                    obj.body["box"], obj.body["nonce"])
            except (nacl.exceptions.CryptoError, ValueError):
                continue
        return None

    def admit(self, key: bytes, tag: bytes) -> str | None:
        """Admit `key`, who proved the code of the invite `tag` names: its admission and every
        epoch's secret sealed to it. None when admitted (or a member already), else why not."""
        view = self.view()
        invite = view.invites.get(view.by_tag.get(tag, b""))
        if invite is None:
            return "no such invite"
        if key in view.removed and invite.created_ms < view.removed[key].at_ms:
            return "you were removed from this workspace; ask for a new invite"
        if key not in view.members:
            reason = invite.refusal(self.replica.now_ms())
            if reason is not None:
                return reason
            self.ws.publish("member/admit", self.ws.id, {"key": key, "invite": invite.id})
        self._seal_epochs(key)
        return None

    # Removing (admins) ------------------------------------------------------------------------

    def remove(self, key: bytes, reason: str = "") -> Object:
        """Remove `key` from the workspace: the removal, the ids of their objects held here
        (those still count), then a new epoch's secret for everyone who remains."""
        if not self.replica.is_admin(self.ws.key):
            raise WorkspaceError("only admins may remove members")
        if key == self.replica.workspace.root:
            raise WorkspaceError("the workspace's creator cannot be removed")
        if key == self.ws.key:
            raise WorkspaceError("you cannot remove yourself; leave the workspace instead")
        if key in self.view().removed:
            raise WorkspaceError("they are removed already")
        if not self.has(key) and not self.replica.ids_by(key):
            raise WorkspaceError("they are not a member (or their admission has not arrived "
                                 "here yet)")
        if reason:
            kinds.check_reason(reason)
        self.busy = True  # one change of many objects: see it whole (app.node)
        try:
            # The removal and its kept lists in one batch: storage never sees the removal
            # without what it keeps (and so never hides, then shows again, all of theirs).
            removal = authored(self.identity, "member/remove", stream=self.ws.id,
                               body={"key": key, "reason": reason},
                               now_ms=int(self.ws.clock() * 1000),
                               heads=self.replica.heads(self.ws.id))
            held = self.replica.ids_by(key)
            self._publish_all("member/kept", [
                {"removal": removal.id, "ids": held[start:start + kinds.MAX_KEPT]}
                for start in range(0, len(held), kinds.MAX_KEPT)], first=[removal])
            self.rotate()
        finally:
            self.busy = False
        self.ws.documents.refresh_for_epoch()
        self.ws.private.after_removal()
        return removal

    def grant_admin(self, key: bytes) -> Object:
        """Make `key` an admin (the root only)."""
        if self.ws.key != self.replica.workspace.root:
            raise WorkspaceError("only the workspace's creator (the root admin) can grant admin")
        if self.replica.is_admin(key):
            raise WorkspaceError(f"{key.hex()} is already an admin")
        return self.ws.publish("workspace/admin-grant", self.ws.id, {"key": key})

    def revoke_admin(self, key: bytes) -> Object:
        """Take `key`'s admin grant back (the root only): the revocation and the ids of their
        objects held here, which keep counting as an admin's; nothing they do after does."""
        root = self.replica.workspace.root
        if self.ws.key != root:
            raise WorkspaceError("only the workspace's creator (the root admin) can revoke admin")
        if key == root:
            raise WorkspaceError("the workspace's creator is always an admin")
        if key not in self.view().admins:
            raise WorkspaceError("they are not an admin")
        self.busy = True
        try:
            revocation = authored(self.identity, "workspace/admin-revoke", stream=self.ws.id,
                                  body={"key": key}, now_ms=int(self.ws.clock() * 1000),
                                  heads=self.replica.heads(self.ws.id))
            held = self.replica.ids_by(key)
            self._publish_all("member/kept", [
                {"removal": revocation.id, "ids": held[start:start + kinds.MAX_KEPT]}
                for start in range(0, len(held), kinds.MAX_KEPT)], first=[revocation])
        finally:
            self.busy = False
        return revocation

    def rotate(self) -> int:
        """Start a new epoch: a new secret sealed to every member (admins); returns it."""
        if not self.replica.is_admin(self.ws.key):
            raise WorkspaceError("only admins start a new epoch")
        view = self.view()
        epoch = view.epoch + 1
        secret = os.urandom(SECRET_SIZE)
        check = secret_check(secret)
        self._publish_all("workspace/key", [
            {"epoch": epoch, "check": check, "recipient": member,
             "sealed": seal_to(member, secret)} for member in sorted(view.members)])
        return epoch

    def _publish_all(self, kind: str, bodies: list[dict], *,
                     first: Sequence[Object] = ()) -> None:
        """Sign one object per body in the workspace stream, each linking to the one before
        (after `first`, signed already), and store them all in one batch (so the views are
        worked out once, not per object)."""
        objects = list(first)
        heads = ([(objects[-1].id, objects[-1].ts)] if objects
                 else self.replica.heads(self.ws.id))
        for body in bodies:
            obj = authored(self.identity, kind, stream=self.ws.id, body=body,
                           now_ms=int(self.ws.clock() * 1000), heads=heads)
            objects.append(obj)
            heads = [(obj.id, obj.ts)]
        self.ws.add_own(objects)

    def rotate_if_stale(self) -> bool:
        """Rotate again when the newest epoch went to someone removed since (two removals at
        once); only admins do. Whether it rotated."""
        if self.replica.is_admin(self.ws.key) and self.view().stale():
            self.rotate()
            return True
        return False

    def _must_be_member(self) -> None:
        if not self.has(self.ws.key):
            raise WorkspaceError("only members may invite; your own admission has not "
                                 "arrived here yet (sync first)")


def session_secrets(members: Membership) -> tuple[bytes, tuple[bytes, ...]]:
    """What a node's sessions use: the newest epoch's secret, then the older ones, newest
    first (a responder takes any of them; a dialler falls back to them)."""
    held = members.secrets()
    if not held:
        raise WorkspaceError("this computer does not hold the workspace secret yet")
    order = sorted(held, reverse=True)
    return held[order[0]], tuple(held[epoch] for epoch in order[1:])


def _genesis_ts(raw: bytes | None) -> int:
    """When the workspace was made: when its root became a member (0 until the genesis has
    arrived on a computer that joined)."""
    return decode_trusted(raw).ts if raw is not None else 0
