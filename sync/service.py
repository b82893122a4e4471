"""The sync service of one workspace: server, outgoing connections, discovery, live pushes.

Runs on one asyncio loop (the Node's). Received objects take the one path of data
(Replica.ingest), on a writer thread of their own (sync._storing); whatever becomes new in the
replica, from a peer, from this process or from another process writing the same file, is
pushed to every connected peer.

Typing indicators (`typing`) go to the peers connected now and nowhere else: one that arrives
becomes a "typing" event and is neither stored nor relayed (sync.session says how they are
rate-limited both ways). Presence in documents (`presence`, `left`) goes the same way, to the
peers connected now that may read the document, and becomes "presence" and "presence-left"
events; a session that ends takes its peer's presence with it.

Chunks of attached files (with a chunk store): every session serves the chunks held here to a
peer that asks, and the fetcher (sync.fetcher) asks the connected peers for those of the files
being fetched, reporting "files" events.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import asdict

import aiohttp
from aiohttp import web

from core.identity import Identity
from storage import Replica, Status
from storage.chunks import ChunkStore

from . import connection as conn_mod
from ._budget import KEY_RANGES_BURST, KEY_RANGES_PER_S, RangeBudget
from ._files import ChunkArrived, ChunksLacking, FilesReady
from ._guard import Guard, GuardedProtocol
from ._interest import EVERYTHING, Interest
from ._records import Admission, OnceResult, SyncEvent, SyncFailed, unreachable
from ._rounds import SyncProgress
from ._storing import Storing
from .connection import Connection
from .discovery import Discovery
from .fetcher import Fetcher
from .peers import Peer, PeerBook
from .session import (
    MAX_OUTGOING,
    RECONCILE_INTERVAL_S,
    Closed,
    Connected,
    ObjectsReceived,
    PeerReconciled,
    Presence,
    PresenceLeft,
    ReconcileComplete,
    Session,
    Typing,
)
from .store import ReplicaStore

log = logging.getLogger(__name__)

DIAL_INTERVAL_S = 0.5
WATCH_INTERVAL_S = 0.2  # how often another process's writes are looked for
ANNOUNCE_BATCH = 5000
# Stopping: connections get their close (connection.CLOSE_TIMEOUT_S) and the mDNS goodbye
# (discovery.CLOSE_TIMEOUT_S) inside this; the Node's STOP_TIMEOUT_S covers all three.
STOP_TIMEOUT_S = 5.0
ONCE_ROUNDS = 4  # a one-off sync: a first round moves the differences, the next proves none left
# How long a typing indicator lasts after its last frame: two of the sender's intervals
# (sync.session.TYPING_SEND_INTERVAL_S), so one frame may be late or lost.
TYPING_TTL_S = 6.0
# How long a remote cursor stays after its last frame: two and a half of the window's refresh
# intervals (sync.session.PRESENCE_REFRESH_S), so one frame may be late or lost.
PRESENCE_TTL_S = 5.0
HISTORY_INTERVAL_S = 0.25  # "history" events (fetching history: how far) at most this often


UNREACHABLE = "cannot reach"  # how a failed dial is kept in the peer book (`hearth peers`)
DUPLICATE = "duplicate connection"  # the reason one of two connections to a peer is closed


def _moved(connection: Connection) -> dict:
    """The peer of a session, its address and the objects moved so far, for events."""
    stats = connection.session.stats
    return {"peer": connection.session.peer_key, "address": connection.address,
            "objects_in": stats.objects_received, "objects_out": stats.objects_sent}


def _duplicate_close(closed: Closed) -> bool:
    """Whether a session ended as the duplicate of another (by us, or by the peer's bye)."""
    return closed.reason in (DUPLICATE, f"peer closed: {DUPLICATE}")


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

TAG_HEX = 32  # hex digits of an invite tag in a join path
PEER_CLOSED = "peer closed"  # how sync.session names a session the peer ended (its bye)
NOT_ADMITTED = "not admitted"


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
        self._history: dict[int, SyncProgress] = {}  # id(connection) -> its round's progress
        self._history_told = 0.0  # time.monotonic() of the last "history" event
        self.on_outside_write: Callable[[], None] | None = None  # another process wrote
        # Objects received, stored on a thread of its own; events after them wait for them.
        self._storing = Storing(replica, self._stored, self._handle_event)
        self.chunks = chunks
        self.fetcher = None if chunks is None else Fetcher(
            chunks, lambda: list(self.connections.values()),
            lambda detail: self.on_event(SyncEvent("files", detail)))
        self.admission = admission
        # Older epochs' secrets (core/membership.py): a responder takes a handshake under any
        # of them; a dialler falls back to them when a peer does not know the newest yet.
        self.older_secrets = tuple(older_secrets)
        self._epoch_try: dict[str, int] = {}  # address -> which secret to dial it with
        self._no_hello: set[str] = set()  # addresses whose last session ended before hello
        self._no_round: set[str] = set()  # ... or before a reconciliation round
        self._joining: dict[int, bytes] = {}  # join sessions: id(connection) -> invite tag
        self.identity = identity
        self.secret = secret
        self.host = interfaces or host
        self.port = port
        self.interfaces = interfaces
        self.mdns = mdns
        self.peers = peers or PeerBook(None)
        self.on_event = on_event or (lambda event: None)
        self.reconcile_interval = reconcile_interval
        self.store = ReplicaStore(replica)
        self.connections: dict[int, Connection] = {}
        self._dialing: set[str] = set()
        self._tasks: set[asyncio.Task] = set()
        self._runner: web.AppRunner | None = None
        self._server: asyncio.Server | None = None
        self.guard = guard or Guard()
        self._unupgraded: dict[asyncio.BaseTransport, GuardedProtocol] = {}
        self._http: aiohttp.ClientSession | None = None
        self._discovery: Discovery | None = None
        self._announced = self.replica.outbox.last_sequence()
        self.delivered = self.replica.outbox.delivered_sequence()
        self._data_version = self.replica.data_version()
        self._stopping = False
        self.blocked: set[bytes] = set()
        self._once: dict[str, int | None] = {}  # one-off syncs by address: rounds when done
        self._announced_connections: set[int] = set()  # ids of connections told as connected
        self._accepted: dict[int, bytes] = {}  # id(connection) -> its peer's key, once let in
        self._guarded: dict[int, GuardedProtocol] = {}  # accepted sockets, by id(connection)
        self._key_budgets: dict[bytes, RangeBudget] = {}  # reconciliation budgets by key
        self.retired = False  # this computer was removed: it dials no one (`retire`)
        self._turned_away: set[str] = set()  # addresses whose last session we refused
        self._told_at: dict[bytes, float] = {}  # key -> when it was last handed objects

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
        self._http = aiohttp.ClientSession()
        if self.mdns and not self.retired:  # a removed computer advertises nothing
            self._discovery = Discovery(self.secret, self.port, self.add_discovered,
                                        interfaces=self.interfaces)
            await self._discovery.async_start()
        self._spawn(self._dial_loop())
        self._spawn(self._watch_loop())
        log.info("sync listening on port %d%s", self.port, "" if self.mdns else " (no mDNS)")

    def stopping(self) -> None:
        """Stopping is near (from any thread): what arrives from now on is not stored, so the
        loop, which may be waiting for the writer, comes to `async_stop` soon."""
        self._storing.closing = True

    async def async_stop(self) -> None:
        """Close every connection and stop serving (idempotent, bounded)."""
        if self._stopping:
            return
        self._stopping = True
        self.stopping()
        if self._server is not None:
            self._server.close()  # no new connections from here on
        for connection in list(self.connections.values()):
            connection.close("shutting down")
        await self._storing.async_drain()  # what peers sent is stored before anything stops
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
        if self._http is not None:
            await self._http.close()
        if self._runner is not None:
            await self._runner.cleanup()
        if self._server is not None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._server.wait_closed(), STOP_TIMEOUT_S)
        await self._storing.async_drain()
        self._storing.close()
        self.peers.save()

    def _spawn(self, coro) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def async_sync_once(self, host: str, port: int, *, timeout: float,
                              path: str = conn_mod.PATH) -> OnceResult:
        """Reconcile with one peer until a round finds nothing to move, without listening or
        discovering (`hearth sync --once`); the peer is remembered. Raises SyncFailed. A
        newcomer joins with `path` = join_path(tag) and the invite's join key as secret."""
        peer = self.add_peer(host, port)
        self._once[peer.address] = None
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
                        self._serve(ws, initiator=True, address=peer.address, peer=peer),
                        timeout)
                except TimeoutError:
                    raise SyncFailed(f"timed out after {timeout:g} s syncing with "
                                     f"{peer.address}") from None
            rounds = self._once.get(peer.address)
            if rounds is None:
                if peer.key is None:
                    raise SyncFailed(f"handshake refused by {peer.address}: {closed.reason}")
                raise SyncFailed(f"sync with {peer.address} did not finish: {closed.reason}")
            return OnceResult(bytes.fromhex(peer.key), rounds,
                              peer.stats.get("objects_sent", 0),
                              peer.stats.get("objects_received", 0),
                              (time.monotonic() - started) * 1000)
        finally:
            self._once.pop(peer.address, None)
            self.peers.save()

    def set_secrets(self, newest: bytes, older: tuple[bytes, ...]) -> None:
        """A new epoch (or an older epoch's secret that arrived): sessions from now on use
        `newest`, and take `older` ones too; the advert follows."""
        if (newest, tuple(older)) == (self.secret, self.older_secrets):
            return
        self.secret, self.older_secrets = newest, tuple(older)
        self._epoch_try.clear()
        if self._discovery is not None:
            self._discovery.set_secrets([newest, *older])

    def _dial_secret(self, address: str) -> bytes:
        secrets = [self.secret, *self.older_secrets]
        return secrets[self._epoch_try.get(address, 0) % len(secrets)]

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
        self.blocked = set(keys)
        for connection in list(self.connections.values()):
            if connection.session.peer_key in self.blocked:
                connection.close("blocked")
        for peer in self.peers.peers.values():
            peer.next_attempt = 0.0

    def end_sessions(self, keys: set[bytes], reason: str) -> None:
        """End the open sessions of these identities (removed members, keys no longer
        listed), with `reason`, handing each what `Admission.tell` gives for it."""
        for connection in list(self.connections.values()):
            key = connection.session.peer_key
            if key in keys and not connection.session.closed:
                connection.session.refuse(reason, self._told(key))
                connection.wake()

    def retire(self, reason: str = RETIRED) -> None:
        """This computer was removed from the workspace: it dials no one from now on, stops
        advertising, and its sessions end and new ones are refused (the replica stays
        readable)."""
        self.retired = True
        for connection in list(self.connections.values()):
            connection.close(reason)
        if self._discovery is not None:  # nor is it advertised to members any more
            discovery, self._discovery = self._discovery, None
            self._spawn(discovery.async_close())

    def _told(self, key: bytes) -> list[bytes]:
        """The signed objects to hand a refused peer: what `Admission.tell` gives, bounded
        (TOLD_MAX_OBJECTS, TOLD_MAX_BYTES; the first ones, the removal, go first), at most
        once per key per TOLD_AGAIN_S."""
        if self.admission is None:
            return []
        now = time.monotonic()
        if self._told_at.get(key, -TOLD_AGAIN_S) > now - TOLD_AGAIN_S:
            return []  # told a moment ago: a refusal costs no more than the close
        out, size = [], 0
        for raw in self.admission.tell(key)[:TOLD_MAX_OBJECTS]:
            size += len(raw)
            if size > TOLD_MAX_BYTES:
                break
            out.append(raw)
        if out:
            self._told_at.pop(key, None)
            self._told_at[key] = now
            while len(self._told_at) > MAX_TOLD_KEYS:
                del self._told_at[next(iter(self._told_at))]
        return out

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

    def history(self) -> dict | None:
        """How far fetching history has come (the "history" event's detail), or None when
        no round is fetching any."""
        if not self._history:
            return None
        here = self._kept_count()
        rounds = list(self._history.values())
        total = max([here, *(p.held + p.expected for p in rounds)])
        return {"here": here, "total": total,
                "pending": frozenset().union(*(p.pending for p in rounds)), "done": False}

    def _history_moved(self, connection: Connection, progress: SyncProgress | None) -> None:
        """A round's progress (None: its session ended): told at most every
        HISTORY_INTERVAL_S, and always when the last round fetching history is over."""
        if progress is None or progress.done or progress.expected == 0:
            over = self._history.pop(id(connection), None) is not None and not self._history
        else:
            self._history[id(connection)] = progress
            over = False
        now = time.monotonic()
        if not over and (not self._history or now - self._history_told < HISTORY_INTERVAL_S):
            return
        self._history_told = now
        if over:
            here = self._kept_count()
            detail = {"here": here, "total": here, "pending": frozenset(), "done": True}
        else:
            detail = self.history()
        self.on_event(SyncEvent("history", detail))

    def _kept_count(self) -> int:
        """Objects held in the streams this computer keeps."""
        return sum(info.count for stream, info in self.store.streams().items()
                   if self.interest.covers(stream, info.klass))

    def typing(self, channel: str) -> None:
        """Tell every connected peer that this person is typing in `channel` (each session
        sends at most one frame per channel per interval; peers that went away hear
        nothing, now or later)."""
        now = time.monotonic()
        for connection in list(self.connections.values()):
            if connection.session.signals.send_typing(channel, now):
                connection.wake()

    def presence(self, doc: bytes, branch: str, heads: list[bytes], anchor: int, at: int,
                 readers: frozenset[bytes] | None = None) -> None:
        """Tell the connected peers among `readers` (None: all of them) that this person has
        `doc` open on `branch` with the selection from `anchor` to `at`, codepoints of the text
        at commits `heads`; a peer told before that is no longer a reader is told `left`.
        Each session sends the newest at most once per interval (sync.session)."""
        now = time.monotonic()
        for connection in list(self.connections.values()):
            session = connection.session
            if readers is None or session.peer_key in readers:
                sent = session.signals.send_presence(doc, branch, heads, anchor, at, now)
            else:
                sent = session.signals.send_left(doc)
            if sent:
                connection.wake()

    def presence_left(self, doc: bytes) -> None:
        """Tell the connected peers that were told this person's presence in `doc` that they
        closed it."""
        for connection in list(self.connections.values()):
            if connection.session.signals.send_left(doc):
                connection.wake()

    def peer_records(self) -> list[dict]:
        """The peer book's records (sync.peers.Peer's fields and `address`), each with
        `connected`, then one for every peer with an open session that dialled us: it is not
        in the book, since the port it listens on is not known here."""
        online = self.online()
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
        return {c.session.peer_key for c in self.connections.values()
                if c.session.connected and c.session.peer_key}

    def _connected_to(self, peer: Peer) -> bool:
        return any(c.address == peer.address for c in self.connections.values()) or (
            peer.key is not None and bytes.fromhex(peer.key) in self.online())

    async def _dial_loop(self) -> None:
        while not self._stopping:
            now = time.monotonic()
            for peer in [] if self.retired else self.peers.due(now):
                if peer.address not in self._dialing and not self._connected_to(peer):
                    self._dialing.add(peer.address)
                    self._spawn(self._dial(peer))
            self.peers.forget_dead()
            await asyncio.sleep(DIAL_INTERVAL_S)

    async def _dial(self, peer: Peer) -> None:
        try:
            assert self._http is not None
            try:
                ws = await conn_mod.connect(self._http, peer.host, peer.port)
            except (TimeoutError, OSError, aiohttp.ClientError) as exc:
                now, reason = time.monotonic(), unreachable(exc)
                first = peer.failures == 0 or not (peer.last_error or "").startswith(
                    UNREACHABLE)
                peer.failed(f"{UNREACHABLE}: {reason}", now)
                if first:
                    self.on_event(SyncEvent("unreachable", {
                        "address": peer.address, "reason": reason,
                        "retry_s": round(max(0.0, peer.next_attempt - now))}))
                return
            closed = await self._serve(ws, initiator=True, address=peer.address, peer=peer,
                                       secret=self._dial_secret(peer.address))
            if closed.error and peer.address in self._no_hello and self.older_secrets:
                # Perhaps a member who has not heard of the newest epoch: an older secret next.
                self._epoch_try[peer.address] = self._epoch_try.get(peer.address, 0) + 1
            # A peer that ends the session before a single round (it refuses us: a removed
            # member, say) is tried again later and later, as one that cannot be reached.
            # So is a peer we refused (one the membership view does not list, a removed one).
            turned_away = peer.address in self._turned_away
            self._turned_away.discard(peer.address)
            refused = turned_away or (
                closed.reason.startswith(PEER_CLOSED) and peer.address in self._no_round
                and not _duplicate_close(closed))
            if closed.error or refused:
                peer.failed(closed.reason, time.monotonic())
            else:
                peer.next_attempt = time.monotonic() + 1.0
        finally:
            self._dialing.discard(peer.address)

    async def _accept(self, request: web.Request, *, secret: bytes | None = None,
                      joining: bytes | None = None) -> web.StreamResponse:
        if self._stopping:
            return web.Response(status=503, text="shutting down")
        ws = conn_mod.accept_response()
        await ws.prepare(request)
        guarded = self._unupgraded.get(request.transport) if request.transport else None
        if guarded is not None:
            guarded.upgraded()
        await self._serve(ws, initiator=False, address=f"{request.remote}:-", peer=None,
                          secret=secret, joining=joining, guarded=guarded)
        return ws

    async def _accept_join(self, request: web.Request) -> web.StreamResponse:
        """A newcomer's session: the handshake under the invite's join key, then admission
        (`Admission`) before anything else is said."""
        text = request.match_info["tag"]
        key = None
        if self.admission is not None and len(text) == TAG_HEX and text == text.lower():
            with contextlib.suppress(ValueError):
                tag = bytes.fromhex(text)
                key = self.admission.join_key(tag)
        if key is None:
            return web.Response(status=404, text="no such invite")
        return await self._accept(request, secret=key, joining=tag)

    async def _serve(self, ws, *, initiator: bool, address: str, peer: Peer | None,
                     secret: bytes | None = None, joining: bytes | None = None,
                     guarded: GuardedProtocol | None = None) -> Closed:
        if self._stopping:
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
        if joining is not None:
            self._joining[id(connection)] = joining
        if guarded is not None:
            self._guarded[id(connection)] = guarded
        closed = Closed("connection ended", True)
        try:
            closed = await connection.run()
            await self._storing.async_settled(connection)  # its objects, then Closed
            return closed
        finally:
            del self.connections[id(connection)]
            self._joining.pop(id(connection), None)
            self._guarded.pop(id(connection), None)
            key = self._accepted.pop(id(connection), None)
            if key is not None:
                self._share_outgoing(key)
            (self._no_hello.add if session.peer_key is None else self._no_hello.discard)(
                address)
            (self._no_round.add if session.stats.rounds == 0 else self._no_round.discard)(
                address)
            was_connected = id(connection) in self._announced_connections
            self._announced_connections.discard(id(connection))
            # A one-off sync says itself how a failed handshake ended (SyncFailed).
            once = address in self._once
            if session.peer_key or (closed.error and not once):
                key = session.peer_key
                refused = self.guard.key_refused(key, time.monotonic()) if key else 0.0
                self.on_event(SyncEvent("peers", {
                    "online": len(self.online()), "connected": False, "peer": key,
                    "address": address, "reason": closed.reason, "error": closed.error,
                    "fault": closed.fault, "refused_s": round(refused),
                    "was_connected": was_connected, "duplicate": _duplicate_close(closed)}))

    # Session events -------------------------------------------------------------------------

    def _on_session_event(self, connection: Connection, event) -> None:
        if isinstance(event, ObjectsReceived):
            self._storing.objects(connection, event.raws)
        else:  # after the objects before it are stored: it may say a round is over
            self._storing.event(connection, event, urgent=not isinstance(event, SyncProgress))

    def _stored(self, frames: list[tuple[Connection, list[bytes]]],
                results: list) -> None:
        """Objects from peers were stored: a peer that sent an invalid one is cut off, and the
        new ones go to the other peers."""
        start = 0
        received: dict[int, set[bytes]] = {}  # id(connection) -> the ids it sent
        for connection, raws in frames:
            part = results[start:start + len(raws)]
            start += len(raws)
            received.setdefault(id(connection), set()).update(r.id for r in part)
            bad = [r for r in part if r.status is Status.REJECTED]
            if bad:
                self.on_event(SyncEvent("rejected", {"reason": str(bad[0].reason)}))
                connection.session.protocol_error(
                    f"peer sent an invalid object ({bad[0].reason})")
                connection.wake()
                log.warning("cut off %s: it sent an invalid object: %s", connection.address,
                            bad[0].message)
        self.announce(frames[0][0], received)

    def _handle_event(self, connection: Connection, event) -> None:
        session = connection.session
        peer: Peer | None = connection.peer
        if isinstance(event, Connected):
            if self.retired:
                session.close(RETIRED)
                return
            if event.peer_key in self.blocked:
                session.close("blocked")
                return
            wait = self.guard.key_refused(event.peer_key, time.monotonic())
            if wait:
                session.close(f"refused for {wait:.0f} s after protocol faults")
                return
            tag = self._joining.get(id(connection))
            if tag is not None and self.admission is not None:
                reason = self.admission.admit(event.peer_key, tag)
                if reason is not None:
                    session.close(f"{NOT_ADMITTED}: {reason}")
                    return
            elif self.admission is not None:
                old = session.handshake.old_epoch or (session.initiator and self._dial_secret(
                    connection.address) != self.secret)
                reason = self.admission.allow(event.peer_key, old)
                if reason is not None:
                    session.refuse(reason, self._told(event.peer_key))
                    if session.initiator:  # we dialled it: try it again later and later
                        self._turned_away.add(connection.address)
                    return
            if not self._let_in(connection, event.peer_key):
                return
            if peer is not None:  # even if this turns out a duplicate: the peer answered
                peer.key = event.peer_key.hex()
                peer.succeeded(time.time())
            if self._duplicate(connection, event.peer_key):
                return
            self._announced_connections.add(id(connection))
            self.on_event(SyncEvent("peers", {"online": len(self.online()), "connected": True,
                                              "peer": event.peer_key,
                                              "address": connection.address}))
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
                self.peers.save()
            self._synced(connection, event.have, event.need)
            if connection.address in self._once:
                if event.have == 0 and event.need == 0:
                    self._once[connection.address] = event.round
                    session.close("in sync")
                elif event.round >= ONCE_ROUNDS:
                    session.close("still differing")
                else:
                    session.rounds.reconcile(time.monotonic())
        elif isinstance(event, SyncProgress):
            self._history_moved(connection, event)
        elif isinstance(event, PeerReconciled):  # a peer that dialled us has all we had
            self._synced(connection, 0, 0)
        elif isinstance(event, Typing):
            self.on_event(SyncEvent("typing", {"key": event.key, "channel": event.channel,
                                               "expires": time.monotonic() + TYPING_TTL_S}))
        elif isinstance(event, Presence):
            self.on_event(SyncEvent("presence", {
                "key": event.key, "doc": event.doc, "branch": event.branch,
                "heads": list(event.heads), "anchor": event.anchor, "at": event.at,
                "expires": time.monotonic() + PRESENCE_TTL_S}))
        elif isinstance(event, PresenceLeft):
            self.on_event(SyncEvent("presence-left", {"key": event.key, "doc": event.doc}))
        elif isinstance(event, ChunkArrived):
            if self.fetcher is not None:
                self.fetcher.arrived(connection, event)
        elif isinstance(event, ChunksLacking):
            if self.fetcher is not None:
                self.fetcher.lacking(connection, event)
        elif isinstance(event, FilesReady):
            if self.fetcher is not None:
                self.fetcher.peer_ready(connection)
        elif isinstance(event, Closed):
            self._presence_ended(connection)
            if id(connection) in self._history:
                self._history_moved(connection, None)
            if self.fetcher is not None:
                self.fetcher.peer_gone(connection)
            if event.fault:
                self.guard.fault(connection.address.rpartition(":")[0], session.peer_key,
                                 time.monotonic())
            stats = session.stats
            who = session.peer_key.hex()[:12] if session.peer_key else "?"
            # A one-off sync says how it ended itself (SyncFailed); a node's log says it here.
            # A duplicate connection closed by design is no problem: debug only.
            loud = event.error and connection.address not in self._once
            quiet = _duplicate_close(event)
            (log.debug if quiet else log.warning if loud else log.info)(
                "sync session with %s (%s): %d rounds, %d B out, %d B in, %d objects out, "
                "%d in, %.0f ms; ended: %s", who, connection.address, stats.rounds,
                stats.bytes_sent, stats.bytes_received, stats.objects_sent,
                stats.objects_received, (time.monotonic() - connection.started) * 1000,
                event.reason)
            if session.peer_key is not None:
                self.on_event(SyncEvent("session", {
                    "peers": len(self.online()) + 1, "rounds": stats.rounds,
                    "bytes": stats.bytes_sent + stats.bytes_received,
                    "objects": stats.objects_sent + stats.objects_received,
                    "duration_ms": round((time.monotonic() - connection.started) * 1000)}))

    def _let_in(self, connection: Connection, key: bytes) -> bool:
        """A peer passed admission: it is served within its key's limits (sessions at once,
        objects queued, reconciliation work), and its socket is a member's from now on."""
        if sum(other == key for other in self._accepted.values()) >= MAX_SESSIONS_PER_KEY:
            connection.session.close(TOO_MANY_SESSIONS)
            if connection.session.initiator:
                self._turned_away.add(connection.address)
            return False
        self._accepted[id(connection)] = key
        guarded = self._guarded.get(id(connection))
        if guarded is not None:
            guarded.authenticated()
        budget = self._key_budgets.pop(key, None) or RangeBudget(
            KEY_RANGES_PER_S, KEY_RANGES_BURST, time.monotonic())
        self._key_budgets[key] = budget  # the most recent last
        while len(self._key_budgets) > MAX_KEY_BUDGETS:
            del self._key_budgets[next(iter(self._key_budgets))]
        connection.session.pacing.key_budget = budget
        self._share_outgoing(key)
        connection.session.admitted()
        return True

    def _share_outgoing(self, key: bytes) -> None:
        """Share KEY_OUTGOING_BYTES equally among the key's sessions."""
        mine = [self.connections[n] for n, k in self._accepted.items()
                if k == key and n in self.connections]
        for connection in mine:
            connection.session.outbox.limit = max(
                MIN_OUTGOING_BYTES, min(MAX_OUTGOING, KEY_OUTGOING_BYTES // len(mine)))

    def _presence_ended(self, connection: Connection) -> None:
        """A session ended: its peer's cursors go, unless another open session with the same
        peer still carries them (the one kept of two duplicate connections)."""
        key = connection.session.peer_key
        if key is None or any(other is not connection and other.session.connected
                              and other.session.peer_key == key
                              for other in self.connections.values()):
            return
        for doc in connection.session.signals.presence_docs:
            self.on_event(SyncEvent("presence-left", {"key": key, "doc": doc}))

    def _synced(self, connection: Connection, have: int, need: int) -> None:
        """A round with this peer finished (either side's): everything stored here so far
        has reached it."""
        self.on_event(SyncEvent("synced", {"have": have, "need": need} | _moved(connection)))
        self._delivered(self.replica.outbox.last_sequence())

    def _duplicate(self, connection: Connection, peer_key: bytes) -> bool:
        """Two connections to one peer (each side dialled): both sides keep the one dialled
        by the smaller key and close the other. Returns True if `connection` was closed."""
        if peer_key == self.identity.public_key:
            return False  # the same identity on another computer is another peer

        def dialer(c: Connection) -> bytes:
            return self.identity.public_key if c.session.initiator else peer_key

        for other in list(self.connections.values()):
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

    # Live pushes ------------------------------------------------------------------------------

    def announce(self, source: Connection | None = None,
                 received: dict[int, set[bytes]] | None = None) -> None:
        """Push every object stored since the last announcement to every connected peer;
        `source`: the connection they just arrived on (the objects event names its peer);
        `received`: the ids each connection sent, never pushed back to it (its session's
        memory of what it received may have moved on while they waited to be stored)."""
        while True:
            rows = self.replica.outbox.stored_since(self._announced, ANNOUNCE_BATCH)
            if not rows:
                return
            self._announced = rows[-1][0]
            ids = [row[1] for row in rows]
            # Per connected peer, what it gets: a joiner's catch-up came from its one peer, so
            # no raw object is read back for it.
            pushes = []
            for connection in self.connections.values():
                if not connection.session.connected:
                    continue
                theirs = received.get(id(connection)) if received else None
                keep = [n for n, oid in enumerate(ids) if oid not in theirs] if theirs \
                    else range(len(ids))
                pushes.append((connection, keep))
            wanted = sorted({rows[n][0] for _, keep in pushes for n in keep})
            raws = self.replica.outbox.raws(wanted) if wanted else {}
            for connection, keep in pushes:
                sent = [n for n in keep if rows[n][0] in raws]
                if sent:
                    connection.push([raws[rows[n][0]] for n in sent], [ids[n] for n in sent],
                                    [(rows[n][2], rows[n][3]) for n in sent])
            came = {} if source is None or source.session.peer_key is None else _moved(source)
            self.on_event(SyncEvent("objects", {"ids": ids} | came))
            if pushes:
                self._delivered(self._announced)

    def _delivered(self, sequence: int) -> None:
        """Objects up to `sequence` reached a peer (pushed on a live session, or reconciled)."""
        if sequence > self.delivered:
            self.delivered = sequence
            self.replica.outbox.set_delivered(sequence)
            self.on_event(SyncEvent("delivered", {"sequence": sequence}))

    async def _watch_loop(self) -> None:
        """Notice objects another process wrote to the replica (PRAGMA data_version)."""
        while not self._stopping:
            await asyncio.sleep(WATCH_INTERVAL_S)
            if self._storing.busy:
                continue  # the writer holds the replica; it announces what it stored
            with contextlib.suppress(Exception):
                version = self.replica.data_version()
                if version != self._data_version:
                    self._data_version = version
                    self.announce()
                    if self.on_outside_write is not None:
                        self.on_outside_write()
