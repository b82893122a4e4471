"""Who the sync service lets in once a handshake proved a peer's key: blocks, faults, admission
(sync._records.Admission), sessions per key and their shares of the outgoing budget, what a
refused peer is handed, and which of two connections to one peer stays. Owned by SyncService
(`service.gate`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ._budget import KEY_RANGES_BURST, KEY_RANGES_PER_S, RangeBudget
from ._dialing import DUPLICATE
from ._guard import GuardedProtocol
from .events import PeerConnected
from .peers import Peer
from .session import MAX_OUTGOING, Connected

if TYPE_CHECKING:
    from .connection import Connection
    from .service import SyncService

# Per member key: sessions open at once (an honest computer holds one or two with us, and one
# identity may run on a few computers), and the objects queued for the socket across them
# (shared equally: each session's Outbox.limit).
MAX_SESSIONS_PER_KEY = 4
KEY_OUTGOING_BYTES = 2 * MAX_OUTGOING
MIN_OUTGOING_BYTES = 1 << 20
MAX_KEY_BUDGETS = 4096  # reconciliation budgets remembered, by key (the least recent go)
# What a refused peer is handed before the close (Admission.tell: a removal and its kept
# lists), at most.
TOLD_MAX_OBJECTS = 256
TOLD_MAX_BYTES = 4 << 20
TOLD_AGAIN_S = 60.0  # ... once per key in this long (a peer that keeps coming back is refused)
MAX_TOLD_KEYS = 1024  # keys remembered as told
TOO_MANY_SESSIONS = f"more than {MAX_SESSIONS_PER_KEY} sessions of one identity"
RETIRED = "this computer was removed from the workspace"
NOT_ADMITTED = "not admitted"


class Gate:
    def __init__(self, service: SyncService):
        self.service = service
        self.blocked: set[bytes] = set()
        self.joining: dict[int, bytes] = {}  # join sessions: id(connection) -> invite tag
        self.accepted: dict[int, bytes] = {}  # id(connection) -> its peer's key, once let in
        self.guarded: dict[int, GuardedProtocol] = {}  # accepted sockets, by id(connection)
        self.key_budgets: dict[bytes, RangeBudget] = {}  # reconciliation budgets by key
        self.told_at: dict[bytes, float] = {}  # key -> when it was last handed objects

    def opened(self, connection: Connection, joining: bytes | None,
               guarded: GuardedProtocol | None) -> None:
        if joining is not None:
            self.joining[id(connection)] = joining
        if guarded is not None:
            self.guarded[id(connection)] = guarded

    def released(self, connection: Connection) -> None:
        """A session ended: what was held for it goes, and its key's others share the budget."""
        self.joining.pop(id(connection), None)
        self.guarded.pop(id(connection), None)
        key = self.accepted.pop(id(connection), None)
        if key is not None:
            self._share_outgoing(key)

    def connected(self, connection: Connection, event: Connected) -> None:
        """A handshake proved the peer's key: let it in, or end the session saying why."""
        service, session, peer = self.service, connection.session, connection.peer
        peer = peer if isinstance(peer, Peer) else None
        if service.retired:
            session.close(RETIRED)
            return
        if event.peer_key in self.blocked:
            session.close("blocked")
            return
        wait = service.guard.key_refused(event.peer_key, time.monotonic())
        if wait:
            session.close(f"refused for {wait:.0f} s after protocol faults")
            return
        tag = self.joining.get(id(connection))
        admission = service.admission
        if tag is not None and admission is not None:
            reason = admission.admit(event.peer_key, tag)
            if reason is not None:
                session.close(f"{NOT_ADMITTED}: {reason}")
                return
        elif admission is not None:
            old = session.handshake.old_epoch or (session.initiator and service.dialer.secret(
                connection.address) != service.secret)
            reason = admission.allow(event.peer_key, old)
            if reason is not None:
                session.refuse(reason, self.told(event.peer_key))
                if session.initiator:  # we dialled it: try it again later and later
                    service.dialer.turned_away.add(connection.address)
                return
        if not self._let_in(connection, event.peer_key):
            return
        if peer is not None:  # even if this turns out a duplicate: the peer answered
            peer.key = event.peer_key.hex()
            peer.succeeded(time.time())
        if self._duplicate(connection, event.peer_key):
            return
        service.announced_connections.add(id(connection))
        service.on_event(PeerConnected(len(service.online()), event.peer_key,
                                       connection.address))

    def _let_in(self, connection: Connection, key: bytes) -> bool:
        """A peer passed admission: it is served within its key's limits (sessions at once,
        objects queued, reconciliation work), and its socket is a member's from now on."""
        if sum(other == key for other in self.accepted.values()) >= MAX_SESSIONS_PER_KEY:
            connection.session.close(TOO_MANY_SESSIONS)
            if connection.session.initiator:
                self.service.dialer.turned_away.add(connection.address)
            return False
        self.accepted[id(connection)] = key
        guarded = self.guarded.get(id(connection))
        if guarded is not None:
            guarded.authenticated()
        budget = self.key_budgets.pop(key, None) or RangeBudget(
            KEY_RANGES_PER_S, KEY_RANGES_BURST, time.monotonic())
        self.key_budgets[key] = budget  # the most recent last
        while len(self.key_budgets) > MAX_KEY_BUDGETS:
            del self.key_budgets[next(iter(self.key_budgets))]
        connection.session.pacing.key_budget = budget
        self._share_outgoing(key)
        connection.session.admitted()
        return True

    def _share_outgoing(self, key: bytes) -> None:
        """Share KEY_OUTGOING_BYTES equally among the key's sessions."""
        connections = self.service.connections
        mine = [connections[n] for n, k in self.accepted.items()
                if k == key and n in connections]
        for connection in mine:
            connection.session.outbox.limit = max(
                MIN_OUTGOING_BYTES, min(MAX_OUTGOING, KEY_OUTGOING_BYTES // len(mine)))

    def _duplicate(self, connection: Connection, peer_key: bytes) -> bool:
        """Two connections to one peer (each side dialled): both sides keep the one dialled
        by the smaller key and close the other. Returns True if `connection` was closed."""
        mine = self.service.identity.public_key
        if peer_key == mine:
            return False  # the same identity on another computer is another peer

        def dialer(c: Connection) -> bytes:
            return mine if c.session.initiator else peer_key

        for other in list(self.service.connections.values()):
            if other is connection or other.session.peer_key != peer_key:
                continue
            if not other.session.connected:
                continue
            if dialer(connection) < dialer(other):
                other.close(DUPLICATE)
            else:
                connection.close(DUPLICATE)
                return True
        return False

    def told(self, key: bytes) -> list[bytes]:
        """The signed objects to hand a refused peer: what `Admission.tell` gives, bounded
        (TOLD_MAX_OBJECTS, TOLD_MAX_BYTES; the first ones, the removal, go first), at most
        once per key per TOLD_AGAIN_S."""
        admission = self.service.admission
        if admission is None:
            return []
        now = time.monotonic()
        if self.told_at.get(key, -TOLD_AGAIN_S) > now - TOLD_AGAIN_S:
            return []  # told a moment ago: a refusal costs no more than the close
        out, size = [], 0
        for raw in admission.tell(key)[:TOLD_MAX_OBJECTS]:
            size += len(raw)
            if size > TOLD_MAX_BYTES:
                break
            out.append(raw)
        if out:
            self.told_at.pop(key, None)
            self.told_at[key] = now
            while len(self.told_at) > MAX_TOLD_KEYS:
                del self.told_at[next(iter(self.told_at))]
        return out
