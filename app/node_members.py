"""What a Node does as membership changes (`node.members`), on the Node's thread: who a
session's proven key may be (the library's rule), what a refused removed member is handed
first, a repair rotation, the secrets sessions use, the end of sessions of keys no longer let
in, new keys for private channels and documents after a removal, and this computer's own
removal."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .events import Removed
from .membership import RemovalRecord, session_secrets

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

MAX_TOLD_CACHED = 16  # removed members whose removal objects are kept at hand (tell)
KINDS = frozenset({"member/admit", "member/remove", "member/kept", "workspace/key",
                   "invite/create", "invite/revoke"})  # what a change of mine comes as


class NodeMembers:
    def __init__(self, node: Node):
        self.node = node
        self.removal: RemovalRecord | None = None  # this computer's key was removed
        self._version: tuple[int, int] = (0, 0)
        self._rotating = False
        self._keys_epoch = 0  # the epoch whose document keys this Node saw to
        self._told: tuple[object, dict[bytes, list[bytes]]] | None = None  # see tell

    def started(self) -> None:
        """The Node opened its workspace: where membership stands (removed while away?)."""
        ws = self.node.workspace
        self.removal = ws.members.view().removed.get(ws.key)
        self._version = ws.replica.membership.version()

    def allow(self, key: bytes, old_epoch: bool) -> str | None:
        """Whether a peer whose identity a session's hello proved may stay: the library's rule
        (app.membership.Membership.refusal)."""
        return self.node.workspace.members.refusal(key, old_epoch=old_epoch)

    def tell(self, key: bytes) -> list[bytes]:
        """What a refused peer is handed first: for a removed member, the signed removal and
        its kept lists, so their computer learns it from the objects themselves (never from
        the close's words); nothing for anyone else."""
        ws = self.node.workspace
        view = ws.members.view()
        removal = view.removed.get(key)
        if removal is None:
            return []
        if self._told is not None and self._told[0] is view and key in self._told[1]:
            return self._told[1][key]
        kept = [obj.raw for obj in ws.replica.membership.objects(frozenset({"member/kept"}))
                if obj.body["removal"] == removal.removal and obj.author == removal.by]
        raw = ws.replica.get(removal.removal)
        told = ([raw] if raw is not None else []) + kept
        if self._told is None or self._told[0] is not view:
            self._told = (view, {})
        if len(self._told[1]) < MAX_TOLD_CACHED:
            self._told[1][key] = told
        return told

    def admit(self, key: bytes, tag: bytes) -> str | None:
        """A newcomer proved an invite's code in a join session."""
        reason = self.node.workspace.members.admit(key, tag)
        if reason is None:
            log.info("admitted %s with an invite", key.hex()[:8])
        return reason

    def changed(self) -> None:
        """Membership objects arrived or were made: a repair rotation (admins), the secrets
        sessions use, and the end of the sessions of anyone removed."""
        ws, service = self.node.workspace, self.node.service
        version = ws.replica.membership.version()
        if version == self._version or self._rotating or ws.members.busy:
            return
        self._version = version
        self._rotating = True
        try:
            if ws.members.rotate_if_stale():
                log.info("started a new epoch: the last one reached someone removed since")
        finally:
            self._rotating = False
        removal = ws.members.view().removed.get(ws.key)
        if removal is not None and self.removal is None:
            self._removed(removal)
            return
        service.set_secrets(*session_secrets(ws.members))
        # Sessions of keys that are no longer let in end: the removed (handed their removal),
        # and admissions that stopped counting (an invite used at two computers at once).
        for key in service.online():
            reason = self.allow(key, False)
            if reason is not None:
                service.end_sessions({key}, reason)
        if ws.private.after_removal():
            log.info("new keys for private channels someone left")
        epoch = ws.members.view().epoch
        # Documents I edit get keys the removed never had, published under the new secret
        # (so not before mine has arrived: a rotation's seals may come in one by one).
        if epoch > self._keys_epoch and epoch in ws.members.secrets():
            self._keys_epoch = epoch
            made = ws.documents.refresh_for_epoch()
            if made:
                log.info("new keys for %d document branches after a removal", made)

    def _removed(self, removal: RemovalRecord) -> None:
        """My own replica says my key was removed: stop dialing, end every session, and tell
        the window and `hearth serve` (a Removed event)."""
        self.removal = removal
        self.node.service.retire()
        nick = self.node.workspace.replica.nicknames().get(removal.by)
        log.info("this computer was removed from the workspace by %s", removal.by.hex()[:8])
        self.node.emit(Removed(removal.by, removal.at_ms, removal.reason, nick))
