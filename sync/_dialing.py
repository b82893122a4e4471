"""Whom the sync service dials, and how: the dial loop over the peer book, which epoch's secret
to try an address with, when a peer that refused us is tried again, and one-off syncs
(`hearth sync --once`). Owned by SyncService (`service.dialer`)."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

import aiohttp

from . import connection as conn_mod
from ._records import OnceResult, SyncFailed, unreachable
from .events import PeerUnreachable
from .peers import Peer
from .session import Closed, ReconcileComplete, Session

if TYPE_CHECKING:
    from .connection import Connection
    from .service import SyncService

DIAL_INTERVAL_S = 0.5
ONCE_ROUNDS = 4  # a one-off sync: a first round moves the differences, the next proves none left
UNREACHABLE = "cannot reach"  # how a failed dial is kept in the peer book (`hearth peers`)
DUPLICATE = "duplicate connection"  # the reason one of two connections to a peer is closed
PEER_CLOSED = "peer closed"  # how sync.session names a session the peer ended (its bye)


def duplicate_close(closed: Closed) -> bool:
    """Whether a session ended as the duplicate of another (by us, or by the peer's bye)."""
    return closed.reason in (DUPLICATE, f"{PEER_CLOSED}: {DUPLICATE}")


class Dialer:
    def __init__(self, service: SyncService):
        self.service = service
        self.dialing: set[str] = set()
        self.epoch_try: dict[str, int] = {}  # address -> which secret to dial it with
        self.no_hello: set[str] = set()  # addresses whose last session ended before hello
        self.no_round: set[str] = set()  # ... or before a reconciliation round
        self.turned_away: set[str] = set()  # addresses whose last session we refused
        self.once: dict[str, int | None] = {}  # one-off syncs by address: rounds when done

    def secret(self, address: str) -> bytes:
        """The session secret to dial `address` with (an older epoch's after a failed hello)."""
        service = self.service
        secrets = [service.secret, *service.older_secrets]
        return secrets[self.epoch_try.get(address, 0) % len(secrets)]

    def ended(self, address: str, session: Session) -> None:
        """A session with `address` ended: whether it got as far as hello, and a round."""
        (self.no_hello.add if session.peer_key is None else self.no_hello.discard)(address)
        (self.no_round.add if session.stats.rounds == 0 else self.no_round.discard)(address)

    def round_done(self, connection: Connection, event: ReconcileComplete) -> None:
        """A one-off sync ends once a round finds nothing to move, or after ONCE_ROUNDS."""
        if connection.address not in self.once:
            return
        session = connection.session
        if event.have == 0 and event.need == 0:
            self.once[connection.address] = event.round
            session.close("in sync")
        elif event.round >= ONCE_ROUNDS:
            session.close("still differing")
        else:
            session.rounds.reconcile(time.monotonic())

    async def sync_once(self, host: str, port: int, *, timeout: float,
                        path: str = conn_mod.PATH) -> OnceResult:
        """SyncService.async_sync_once."""
        service = self.service
        peer = service.add_peer(host, port)
        self.once[peer.address] = None
        started = time.monotonic()
        try:
            async with aiohttp.ClientSession() as http:
                try:
                    ws = await conn_mod.connect(http, host, port, path=path)
                except aiohttp.WSServerHandshakeError as exc:
                    if exc.status == 404 and path != conn_mod.PATH:
                        raise SyncFailed(f"{peer.address} knows no such invite (revoked long "
                                         "ago, not synced there yet, or of another "
                                         "workspace)") from None
                    raise SyncFailed(f"cannot reach {peer.address}: {unreachable(exc)}") from None
                except (TimeoutError, OSError, aiohttp.ClientError) as exc:
                    raise SyncFailed(f"cannot reach {peer.address}: {unreachable(exc)}") from None
                try:
                    closed = await asyncio.wait_for(
                        service.serve(ws, initiator=True, address=peer.address, peer=peer),
                        timeout)
                except TimeoutError:
                    raise SyncFailed(f"timed out after {timeout:g} s syncing with "
                                     f"{peer.address}") from None
            rounds = self.once.get(peer.address)
            if rounds is None or peer.key is None:
                if peer.key is None:
                    raise SyncFailed(f"handshake refused by {peer.address}: {closed.reason}")
                raise SyncFailed(f"sync with {peer.address} did not finish: {closed.reason}")
            return OnceResult(bytes.fromhex(peer.key), rounds,
                              peer.stats.get("objects_sent", 0),
                              peer.stats.get("objects_received", 0),
                              (time.monotonic() - started) * 1000)
        finally:
            self.once.pop(peer.address, None)
            service.peers.save()

    def _connected_to(self, peer: Peer) -> bool:
        service = self.service
        return any(c.address == peer.address for c in service.connections.values()) or (
            peer.key is not None and bytes.fromhex(peer.key) in service.lan_online())

    async def loop(self) -> None:
        service = self.service
        while not service.stopped:
            now = time.monotonic()
            for peer in [] if service.retired else service.peers.due(now):
                if peer.address not in self.dialing and not self._connected_to(peer):
                    self.dialing.add(peer.address)
                    service.spawn(self._dial(peer))
            service.peers.forget_dead()
            await service.pause(DIAL_INTERVAL_S)

    async def _dial(self, peer: Peer) -> None:
        service = self.service
        try:
            http = service.http
            assert http is not None
            try:
                ws = await conn_mod.connect(http, peer.host, peer.port)
            except (TimeoutError, OSError, aiohttp.ClientError) as exc:
                now, reason = time.monotonic(), unreachable(exc)
                first = peer.failures == 0 or not (peer.last_error or "").startswith(
                    UNREACHABLE)
                peer.failed(f"{UNREACHABLE}: {reason}", now)
                if first:
                    service.on_event(PeerUnreachable(
                        peer.address, reason, round(max(0.0, peer.next_attempt - now))))
                return
            closed = await service.serve(ws, initiator=True, address=peer.address, peer=peer,
                                         secret=self.secret(peer.address))
            if closed.error and peer.address in self.no_hello and service.older_secrets:
                # Perhaps a member who has not heard of the newest epoch: an older secret next.
                self.epoch_try[peer.address] = self.epoch_try.get(peer.address, 0) + 1
            # A peer that ends the session before a single round (it refuses us: a removed
            # member, say) is tried again later and later, as one that cannot be reached.
            # So is a peer we refused (one the membership view does not list, a removed one).
            turned_away = peer.address in self.turned_away
            self.turned_away.discard(peer.address)
            refused = turned_away or (
                closed.reason.startswith(PEER_CLOSED) and peer.address in self.no_round
                and not duplicate_close(closed))
            if closed.error or refused:
                peer.failed(closed.reason, time.monotonic())
            else:
                peer.next_attempt = time.monotonic() + 1.0
        finally:
            self.dialing.discard(peer.address)
