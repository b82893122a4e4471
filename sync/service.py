"""The sync service of one workspace: server, outgoing connections, discovery, live pushes.

Runs on one asyncio loop (the Node's). Received objects take the one path of data
(Replica.ingest), on a writer thread of their own (sync._storing); whatever becomes new in the
replica, from a peer, from this process or from another process writing the same file, is
pushed to every connected peer. What happens is told to the Node as sync.events.

Its parts are owned collaborators: whom it dials (sync._dialing.Dialer), whom it lets in
(sync._admitting.Gate), what its sessions say (sync._session_events.SessionEvents), what it
pushes live (sync._pushing.Pushes), typing and presence, never stored
(sync._presence.PresenceRelay), how far fetching history has come
(sync._history.HistoryWatch), and the workspace's relays (sync._relaying.Relaying: what they
hand over takes the storing path, what is new here goes to them).

Chunks of attached files (with a chunk store): every session serves the chunks held here to a
peer that asks, and the fetcher (sync.fetcher) asks the connected peers for those of the files
being fetched, reporting FileFetch events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from typing import Any

import aiohttp
from aiohttp import web

from core.identity import Identity
from storage import Replica
from storage.chunks import ChunkStore

from . import connection as conn_mod
from ._admitting import MAX_SESSIONS_PER_KEY as MAX_SESSIONS_PER_KEY
from ._admitting import NOT_ADMITTED as NOT_ADMITTED
from ._admitting import RETIRED, Gate
from ._dialing import Dialer, duplicate_close
from ._files import ChunkArrived, ChunksLacking, FilesReady
from ._guard import Guard, GuardedProtocol
from ._history import HistoryWatch
from ._interest import EVERYTHING
from ._interest import Interest as Interest
from ._presence import PRESENCE_TTL_S as PRESENCE_TTL_S
from ._presence import TYPING_TTL_S as TYPING_TTL_S
from ._presence import PresenceRelay
from ._pushing import Pushes
from ._records import Admission as Admission
from ._records import OnceResult as OnceResult
from ._records import SyncFailed as SyncFailed
from ._relaying import Relaying
from ._rounds import SyncProgress
from ._session_events import SessionEvents
from ._storing import Storing
from .connection import Connection
from .discovery import Discovery
from .events import (
    FileFetch,
    HistoryFetch,
    PeerDisconnected,
    SyncEvent,
)
from .fetcher import Fetcher
from .peers import Peer, PeerBook
from .session import (
    RECONCILE_INTERVAL_S,
    Closed,
    ObjectsReceived,
    Session,
)
from .store import ReplicaStore

log = logging.getLogger(__name__)

# Stopping: connections get their close (connection.CLOSE_TIMEOUT_S) and the mDNS goodbye
# (discovery.CLOSE_TIMEOUT_S) inside this; the Node's STOP_TIMEOUT_S covers all three.
STOP_TIMEOUT_S = 5.0
TAG_HEX = 32  # hex digits of an invite tag in a join path
FILE_EVENTS = (ChunkArrived, ChunksLacking, FilesReady)  # handled at once, behind no object


def join_path(tag: bytes) -> str:
    return conn_mod.JOIN_PATH.format(tag=tag.hex())


class SyncService:
    def __init__(self, replica: Replica, identity: Identity, secret: bytes, *,
                 host: str | list[str] = "0.0.0.0", port: int = 0,
                 interfaces: list[str] | None = None, mdns: bool = True,
                 peers: PeerBook | None = None,
                 on_event: Callable[[SyncEvent], None] | None = None,
                 reconcile_interval: float | None = RECONCILE_INTERVAL_S,
                 guard: Guard | None = None, admission: Admission | None = None,
                 older_secrets: tuple[bytes, ...] = (), chunks: ChunkStore | None = None,
                 interest: Interest = EVERYTHING):
        self.replica = replica
        self.interest = interest
        self._focus: bytes | None = None
        self.on_outside_write: Callable[[], None] | None = None  # another process wrote
        # Objects received, stored on a thread of its own; events after them wait for them.
        self.session_events = SessionEvents(self)
        self.storing = Storing(replica, self.session_events.stored,
                                self.session_events.handle)
        self.chunks = chunks
        self.fetcher = None if chunks is None else Fetcher(
            chunks, lambda: list(self.connections.values()),
            lambda detail: self.on_event(FileFetch(**detail)))
        self.admission = admission
        # Older epochs' secrets (core/membership.py): a responder takes a handshake under any
        # of them; a dialler falls back to them when a peer does not know the newest yet.
        self.older_secrets = tuple(older_secrets)
        self.identity = identity
        self.secret = secret
        self.host = interfaces or host
        self.port = port
        self.interfaces = interfaces
        self.mdns = mdns
        self.peers = peers or PeerBook(None)
        self.on_event: Callable[[SyncEvent], None] = on_event or (lambda event: None)
        self.reconcile_interval = reconcile_interval
        self.store = ReplicaStore(replica)
        self.connections: dict[int, Connection] = {}
        self._tasks: set[asyncio.Task] = set()
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self.guard = guard or Guard()
        self._unupgraded: dict[asyncio.BaseTransport, GuardedProtocol] = {}
        self.http: aiohttp.ClientSession | None = None
        self._discovery: Discovery | None = None
        self.stopped = False  # async_stop has begun
        self._stop_event = asyncio.Event()  # set with `stopped`: the loops' pauses end
        self.announced_connections: set[int] = set()  # ids of connections told as connected
        self.retired = False  # this computer was removed: it dials no one (`retire`)
        self.dialer = Dialer(self)
        self.gate = Gate(self)
        self.presence_relay = PresenceRelay(self)
        self.history_watch = HistoryWatch(self)
        self.pushes = Pushes(self)
        self.relaying = Relaying(self)

    @property
    def blocked(self) -> set[bytes]:
        return self.gate.blocked

    # Lifecycle ------------------------------------------------------------------------------

    async def async_start(self) -> None:
        app = web.Application()
        app.router.add_get(conn_mod.PATH, self._accept)
        app.router.add_get(conn_mod.JOIN_PATH, self._accept_join)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        http = self._runner.server
        assert http is not None
        # Every accepted socket passes the guard before aiohttp sees a byte of it.
        self._server = await asyncio.get_running_loop().create_server(
            lambda: GuardedProtocol(self.guard, http(), self._unupgraded),
            host=self.host, port=self.port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        self.http = aiohttp.ClientSession()
        if self.mdns and not self.retired:  # a removed computer advertises nothing
            self._discovery = Discovery(self.secret, self.port, self.add_discovered,
                                        interfaces=self.interfaces)
            await self._discovery.async_start()
        self.spawn(self.dialer.loop())
        self.spawn(self.pushes.watch_loop())
        log.info("sync listening on port %d%s", self.port, "" if self.mdns else " (no mDNS)")

    async def pause(self, seconds: float) -> None:
        """Wait `seconds`, or less when the service stops (its loops end at once)."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop_event.wait(), seconds)

    def stopping(self) -> None:
        """Stopping is near (from any thread): what arrives from now on is not stored, so the
        loop, which may be waiting for the writer, comes to `async_stop` soon."""
        self.storing.closing = True

    async def async_stop(self) -> None:
        """Close every connection and stop serving (idempotent, bounded)."""
        if self.stopped:
            return
        self.stopped = True
        self._stop_event.set()
        self.stopping()
        if self._server is not None:
            self._server.close()  # no new connections from here on
        for connection in list(self.connections.values()):
            connection.close("shutting down")
        await self.relaying.close()
        await self.storing.async_drain()  # what peers sent is stored before anything stops
        if self.fetcher is not None:
            await self.fetcher.close()
        if self._discovery is not None:
            await self._discovery.async_close()
        tasks = list(self._tasks)
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=STOP_TIMEOUT_S)
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)
        if self.http is not None:
            await self.http.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), STOP_TIMEOUT_S)
        await self.storing.async_drain()
        self.storing.close()
        self.peers.save()

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def async_sync_once(self, host: str, port: int, *, timeout: float,
                              path: str = conn_mod.PATH) -> OnceResult:
        """Reconcile with one peer until a round finds nothing to move, without listening or
        discovering (`hearth sync --once`); the peer is remembered. Raises SyncFailed. A
        newcomer joins with `path` = join_path(tag) and the invite's join key as secret."""
        return await self.dialer.sync_once(host, port, timeout=timeout, path=path)

    def set_secrets(self, newest: bytes, older: tuple[bytes, ...]) -> None:
        """A new epoch (or an older epoch's secret that arrived): sessions from now on use
        `newest`, and take `older` ones too; the advert follows."""
        if (newest, tuple(older)) == (self.secret, self.older_secrets):
            return
        self.secret, self.older_secrets = newest, tuple(older)
        self.dialer.epoch_try.clear()
        if self._discovery is not None:
            self._discovery.set_secrets([newest, *older])
        self.relaying.renew()

    # Peers ----------------------------------------------------------------------------------

    def add_peer(self, host: str, port: int) -> Peer:
        return self.peers.add(host, port, "manual")

    def add_discovered(self, host: str, port: int) -> None:
        if port == self.port and host in (self.interfaces or []) + ["127.0.0.1"]:
            return  # our own advert
        self.peers.add(host, port, "mdns")

    def block(self, keys: set[bytes]) -> None:
        """Refuse sessions with these identities (and end the open ones); `block(set())`
        lifts every block. Used for partitions in tests, and to shut out a misbehaving peer."""
        self.gate.blocked = set(keys)
        for connection in list(self.connections.values()):
            if connection.session.peer_key in self.gate.blocked:
                connection.close("blocked")
        for peer in self.peers.peers.values():
            peer.next_attempt = 0.0

    def end_sessions(self, keys: set[bytes], reason: str) -> None:
        """End the open sessions of these identities (removed members, keys no longer
        listed), with `reason`, handing each what `Admission.tell` gives for it."""
        for connection in list(self.connections.values()):
            key = connection.session.peer_key
            if key is not None and key in keys and not connection.session.closed:
                connection.session.refuse(reason, self.gate.told(key))
                connection.wake()

    def retire(self, reason: str = RETIRED) -> None:
        """This computer was removed from the workspace: it dials no one from now on, stops
        advertising, and its sessions end and new ones are refused (the replica stays
        readable)."""
        self.retired = True
        for connection in list(self.connections.values()):
            connection.close(reason)
        self.spawn(self.relaying.close())
        if self._discovery is not None:  # nor is it advertised to members any more
            discovery, self._discovery = self._discovery, None
            self.spawn(discovery.async_close())

    def set_interest(self, interest: Interest) -> None:
        """Keep the streams `interest` covers from now on: every open session tells its peer,
        stops asking for the others, and reconciles the streams newly kept."""
        self.interest = interest
        now = time.monotonic()
        for connection in self.connections.values():
            connection.session.rounds.set_interest(interest, now)
            connection.wake()

    def focus(self, stream: bytes | None) -> None:
        """The window shows `stream`: its history is reconciled and fetched before others'."""
        self._focus = stream
        now = time.monotonic()
        for connection in self.connections.values():
            connection.session.rounds.focus(stream, now)
            connection.wake()

    def history(self) -> HistoryFetch | None:
        """How far fetching history has come, or None when no round is fetching any."""
        return self.history_watch.now()

    def typing(self, channel: str) -> None:
        """Tell every connected peer that this person is typing in `channel` (each session
        sends at most one frame per channel per interval; peers that went away hear
        nothing, now or later)."""
        self.presence_relay.typing(channel)
        self.relaying.typing(channel)

    def typing_private(self, channel: bytes, readers: frozenset[bytes]) -> None:
        """Tell the connected peers among `readers` (the private channel's current members)
        that this person is typing in private channel `channel` (its id). Never through a
        relay: a relay's signal goes to every member."""
        self.presence_relay.typing_private(channel, readers)

    def presence(self, doc: bytes, branch: str, heads: list[bytes], anchor: int, at: int,
                 readers: frozenset[bytes] | None = None) -> None:
        """Tell the connected peers among `readers` (None: all of them) that this person has
        `doc` open on `branch` with the selection from `anchor` to `at`, codepoints of the text
        at commits `heads`; a peer told before that is no longer a reader is told `left`.
        Each session sends the newest at most once per interval (sync.session)."""
        self.presence_relay.presence(doc, branch, heads, anchor, at, readers)
        self.relaying.presence(doc, branch, heads, anchor, at, readers)

    def presence_left(self, doc: bytes) -> None:
        """Tell the connected peers that were told this person's presence in `doc` that they
        closed it."""
        self.presence_relay.left(doc)
        self.relaying.left(doc)

    def peer_records(self) -> list[dict]:
        """The peer book's records (sync.peers.Peer's fields and `address`), each with
        `connected`, then one for every peer with an open session that dialled us: it is not
        in the book, since the port it listens on is not known here."""
        online = self.lan_online()
        records = [record | {"connected": bool(record["key"])
                             and bytes.fromhex(record["key"]) in online}
                   for record in self.peers.as_records()]
        listed = {record["key"] for record in records if record["key"]}
        for connection in self.connections.values():
            session = connection.session
            if session.initiator or not session.connected or session.peer_key is None:
                continue
            if session.peer_key.hex() in listed:
                continue
            listed.add(session.peer_key.hex())
            host = connection.address.rpartition(":")[0]
            records.append(asdict(Peer(host, 0, "incoming", session.peer_key.hex(),
                                       last_seen=time.time())) | {"address": host,
                                                                  "connected": True})
        return records

    def online(self) -> set[bytes]:
        """The members connected now: on the LAN, or heard through a relay lately."""
        return self.lan_online() | self.relaying.online()

    def lan_online(self) -> set[bytes]:
        return {c.session.peer_key for c in self.connections.values()
                if c.session.connected and c.session.peer_key}

    # Sessions -------------------------------------------------------------------------------

    async def _accept(self, request: web.Request, *, secret: bytes | None = None,
                      joining: bytes | None = None) -> web.StreamResponse:
        if self.stopped:
            return web.Response(status=503, text="shutting down")
        ws = conn_mod.accept_response()
        await ws.prepare(request)
        guarded = self._unupgraded.get(request.transport) if request.transport else None
        if guarded is not None:
            guarded.upgraded()
        await self.serve(ws, initiator=False, address=f"{request.remote}:-", peer=None,
                         secret=secret, joining=joining, guarded=guarded)
        return ws

    async def _accept_join(self, request: web.Request) -> web.StreamResponse:
        """A newcomer's session: the handshake under the invite's join key, then admission
        (`Admission`) before anything else is said."""
        text = request.match_info["tag"]
        key = tag = None
        if self.admission is not None and len(text) == TAG_HEX and text == text.lower():
            with contextlib.suppress(ValueError):
                tag = bytes.fromhex(text)
                key = self.admission.join_key(tag)
        if key is None:
            return web.Response(status=404, text="no such invite")
        return await self._accept(request, secret=key, joining=tag)

    async def serve(self, ws: Any, *, initiator: bool, address: str, peer: Peer | None,
                    secret: bytes | None = None, joining: bytes | None = None,
                    guarded: GuardedProtocol | None = None) -> Closed:
        """Run one session over the websocket `ws` until it ends; how it ended."""
        if self.stopped:
            await ws.close()
            return Closed("shutting down", False)
        session = Session(self.store, initiator=initiator, secret=secret or self.secret,
                          older_secrets=() if joining is not None else self.older_secrets,
                          identity=self.identity, workspace=self.replica.workspace.id,
                          now=time.monotonic(), reconcile_interval=self.reconcile_interval,
                          chunks=self.chunks, interest=self.interest, stores_later=True,
                          gated=True)
        session.rounds.focus(self._focus, time.monotonic())
        connection = Connection(session, ws, self._on_session_event, address=address,
                                peer=peer)
        self.connections[id(connection)] = connection
        self.gate.opened(connection, joining, guarded)
        closed = Closed("connection ended", True)
        try:
            closed = await connection.run()
            await self.storing.async_settled(connection)  # its objects, then Closed
            return closed
        finally:
            del self.connections[id(connection)]
            self.gate.released(connection)
            self.dialer.ended(address, session)
            was_connected = id(connection) in self.announced_connections
            self.announced_connections.discard(id(connection))
            # A one-off sync says itself how a failed handshake ended (SyncFailed).
            once = address in self.dialer.once
            if session.peer_key or (closed.error and not once):
                key = session.peer_key
                refused = self.guard.key_refused(key, time.monotonic()) if key else 0.0
                self.on_event(PeerDisconnected(
                    len(self.online()), key, address, closed.reason, closed.error,
                    closed.fault, round(refused), was_connected, duplicate_close(closed)))

    def _on_session_event(self, connection: Connection, event: Any) -> None:
        if isinstance(event, ObjectsReceived):
            self.storing.objects(connection, event.raws)
        elif isinstance(event, FILE_EVENTS):
            # Chunks wait for no object. Held behind a catch-up's objects, they piled up in
            # memory while the fetcher, seeing them answered, asked for more (450 MB).
            self.session_events.handle(connection, event)
        else:  # after the objects before it are stored: it may say a round is over
            self.storing.event(connection, event, urgent=not isinstance(event, SyncProgress))

    # Live pushes ------------------------------------------------------------------------------

    def announce(self, source: Connection | None = None,
                 received: dict[int, set[bytes]] | None = None) -> None:
        """Push every object stored since the last announcement to every connected peer
        (sync._pushing.Pushes.announce)."""
        self.pushes.announce(source, received)
