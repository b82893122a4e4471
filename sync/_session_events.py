"""What the sessions of the sync service say, once what came before it is stored
(sync._storing): objects stored (a peer that sent an invalid one is cut off, the new ones are
pushed to the others), and each session's events, handed to the collaborator they concern.
Owned by SyncService (`service.session_events`)."""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

from storage import IngestResult, Status

from ._dialing import duplicate_close
from ._files import ChunkArrived, ChunksLacking, FilesReady
from ._rounds import SyncProgress
from .events import ObjectRejected, SessionEnded, Synced
from .peers import Peer
from .session import (
    Closed,
    Connected,
    PeerReconciled,
    Presence,
    PresenceLeft,
    PrivateTyping,
    ReconcileComplete,
    Typing,
)

if TYPE_CHECKING:
    from .connection import Connection
    from .service import SyncService

log = logging.getLogger("sync.service")  # the service's log, whichever part says it


def moved(connection: Connection) -> tuple[bytes | None, str, int, int]:
    """The peer of a session, its address and the objects moved so far, for events."""
    stats = connection.session.stats
    return (connection.session.peer_key, connection.address, stats.objects_received,
            stats.objects_sent)


class SessionEvents:
    def __init__(self, service: SyncService):
        self.service = service

    def stored(self, frames: list[tuple[Connection, list[bytes]]],
                results: list[IngestResult]) -> None:
        """Objects from peers were stored: a peer that sent an invalid one is cut off, and the
        new ones go to the other peers."""
        service = self.service
        start = 0
        received: dict[int, set[bytes]] = {}  # id(connection) -> the ids it sent
        for connection, raws in frames:
            part = results[start:start + len(raws)]
            start += len(raws)
            received.setdefault(id(connection), set()).update(r.id for r in part)
            bad = [r for r in part if r.status is Status.REJECTED]
            if bad:
                service.on_event(ObjectRejected(str(bad[0].reason)))
                connection.session.protocol_error(
                    f"peer sent an invalid object ({bad[0].reason})")
                connection.wake()
                log.warning("cut off %s: it sent an invalid object: %s", connection.address,
                            bad[0].message)
        service.announce(frames[0][0], received)

    def handle(self, connection: Connection, event: Any) -> None:
        service = self.service
        session = connection.session
        peer = connection.peer if isinstance(connection.peer, Peer) else None
        if isinstance(event, Connected):
            service.gate.connected(connection, event)
        elif isinstance(event, ReconcileComplete):
            elapsed = (time.monotonic() - connection.started) * 1000
            stats = session.stats
            log.debug("round %d with %s done: %d messages, %d have, %d need", event.round,
                      connection.address, event.messages, event.have, event.need)
            if peer is not None:
                peer.last_sync = time.time()
                peer.last_sync_ms = round(elapsed, 1)
                peer.stats = {"rounds": event.round, "bytes_sent": stats.bytes_sent,
                              "bytes_received": stats.bytes_received,
                              "objects_sent": stats.objects_sent,
                              "objects_received": stats.objects_received}
                service.peers.save()
            self._synced(connection, event.have, event.need)
            service.dialer.round_done(connection, event)
        elif isinstance(event, SyncProgress):
            service.history_watch.moved(connection, event)
        elif isinstance(event, PeerReconciled):  # a peer that dialled us has all we had
            self._synced(connection, 0, 0)
        elif isinstance(event, Typing | PrivateTyping | Presence | PresenceLeft):
            service.presence_relay.heard(event)
        elif isinstance(event, ChunkArrived):
            if service.fetcher is not None:
                service.fetcher.arrived(connection, event)
        elif isinstance(event, ChunksLacking):
            if service.fetcher is not None:
                service.fetcher.lacking(connection, event)
        elif isinstance(event, FilesReady):
            if service.fetcher is not None:
                service.fetcher.peer_ready(connection)
        elif isinstance(event, Closed):
            self._closed(connection, event)

    def _closed(self, connection: Connection, event: Closed) -> None:
        service = self.service
        session = connection.session
        service.presence_relay.ended(connection)
        service.history_watch.moved(connection, None)
        if service.fetcher is not None:
            service.fetcher.peer_gone(connection)
        if event.fault:
            service.guard.fault(connection.address.rpartition(":")[0], session.peer_key,
                                time.monotonic())
        stats = session.stats
        who = session.peer_key.hex()[:12] if session.peer_key else "?"
        # A one-off sync says how it ended itself (SyncFailed); a node's log says it here.
        # A duplicate connection closed by design is no problem: debug only.
        loud = event.error and connection.address not in service.dialer.once
        quiet = duplicate_close(event)
        (log.debug if quiet else log.warning if loud else log.info)(
            "sync session with %s (%s): %d rounds, %d B out, %d B in, %d objects out, "
            "%d in, %.0f ms; ended: %s", who, connection.address, stats.rounds,
            stats.bytes_sent, stats.bytes_received, stats.objects_sent,
            stats.objects_received, (time.monotonic() - connection.started) * 1000,
            event.reason)
        if session.peer_key is not None:
            service.on_event(SessionEnded(
                len(service.online()) + 1, stats.rounds,
                stats.bytes_sent + stats.bytes_received,
                stats.objects_sent + stats.objects_received,
                round((time.monotonic() - connection.started) * 1000)))

    def _synced(self, connection: Connection, have: int, need: int) -> None:
        """A round with this peer finished (either side's): everything stored here so far
        has reached it."""
        service = self.service
        service.on_event(Synced(have, need, *moved(connection)))
        service.pushes.delivered_up_to(service.replica.outbox.last_sequence())

