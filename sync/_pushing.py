"""What the sync service pushes live: every object new in the replica (from a peer, made here,
or written by another process, noticed by PRAGMA data_version) goes to every connected peer
but the one it came from, and is told as an ObjectsStored event; what reached a peer is told
as Delivered. Owned by SyncService (`service.pushes`)."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING

from ._session_events import moved
from .events import Delivered, ObjectsStored

if TYPE_CHECKING:
    from .connection import Connection
    from .service import SyncService

WATCH_INTERVAL_S = 0.2  # how often another process's writes are looked for
ANNOUNCE_BATCH = 5000


class Pushes:
    def __init__(self, service: SyncService):
        self.service = service
        replica = service.replica
        self._announced = replica.outbox.last_sequence()
        self.delivered = replica.outbox.delivered_sequence()
        self._data_version = replica.data_version()

    def announce(self, source: Connection | None = None,
                 received: dict[int, set[bytes]] | None = None) -> None:
        """Push every object stored since the last announcement to every connected peer;
        `source`: the connection they just arrived on (the event names its peer);
        `received`: the ids each connection sent, never pushed back to it (its session's
        memory of what it received may have moved on while they waited to be stored)."""
        service = self.service
        outbox = service.replica.outbox
        while True:
            rows = outbox.stored_since(self._announced, ANNOUNCE_BATCH)
            if not rows:
                return
            self._announced = rows[-1][0]
            ids = [row[1] for row in rows]
            # Per connected peer, what it gets: a joiner's catch-up came from its one peer, so
            # no raw object is read back for it.
            pushes = []
            for connection in service.connections.values():
                if not connection.session.connected:
                    continue
                theirs = received.get(id(connection)) if received else None
                keep = [n for n, oid in enumerate(ids) if oid not in theirs] if theirs \
                    else range(len(ids))
                pushes.append((connection, keep))
            relayed = service.relaying.connected  # the relays get every new object
            wanted = [row[0] for row in rows] if relayed else sorted(
                {rows[n][0] for _, keep in pushes for n in keep})
            raws = outbox.raws(wanted) if wanted else {}
            # Delivered once a relay holds them for the members, as once a peer has them.
            offered = relayed and service.relaying.offer([raws[row[0]] for row in rows
                                                          if row[0] in raws])
            for connection, keep in pushes:
                sent = [n for n in keep if rows[n][0] in raws]
                if sent:
                    connection.push([raws[rows[n][0]] for n in sent], [ids[n] for n in sent],
                                    [(rows[n][2], rows[n][3]) for n in sent])
            if source is None or source.session.peer_key is None:
                service.on_event(ObjectsStored(tuple(ids)))
            else:
                service.on_event(ObjectsStored(tuple(ids), *moved(source)))
            if pushes or offered:
                self.delivered_up_to(self._announced)

    def delivered_up_to(self, sequence: int) -> None:
        """Objects up to `sequence` reached a peer (pushed on a live session, or reconciled)."""
        if sequence > self.delivered:
            self.delivered = sequence
            self.service.replica.outbox.set_delivered(sequence)
            self.service.on_event(Delivered(sequence))

    async def watch_loop(self) -> None:
        """Notice objects another process wrote to the replica (PRAGMA data_version)."""
        service = self.service
        while not service.stopped:
            await service.pause(WATCH_INTERVAL_S)
            if service.stopped:
                return
            if service.storing.busy:
                continue  # the writer holds the replica; it announces what it stored
            with contextlib.suppress(Exception):
                version = service.replica.data_version()
                if version != self._data_version:
                    self._data_version = version
                    service.announce()
                    if service.on_outside_write is not None:
                        service.on_outside_write()
