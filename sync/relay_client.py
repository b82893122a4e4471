"""The thin asyncio layer over sync.relay_member: a Node's links to the workspace's relays.

`RelayLink` is the one class a Node's sync service owns (docs/ARCHITECTURE.md "Relays"):

    link = RelayLink(replica, identity, secrets, on_objects, relays=..., registration=...)
    await link.start()         # one task per relay: dial, prove, reconcile, stay for pushes
    link.offer(raws)           # objects just stored here (typed, or from a LAN peer): put live
    link.send_signal(body)     # typing/presence to members connected now (never stored)
    await link.share_chunks(ids, read)  # files attached here: what the relays lack
    await link.fetch_chunks(ids)  # chunks no LAN peer had, from the relays
    await link.close()

- `secrets()` answers the newest epoch whose secret this computer holds, and that secret
  (app.membership's `newest_secret`), or None while it holds none (joining); a link whose
  epoch is no longer the newest reconnects under the new one.
- `on_objects(raws)` takes what opened to the one ingest path (the service's storing path, or
  `Replica.ingest`); signatures are checked there as for any peer's objects.
- `relays()` answers the relays to dial (app.relays' `active_relays` of the workspace
  objects); read again at each dial, so one added or removed by sync is taken up.
- `on_signal(sender, body)` (optional) takes other members' typing and presence.
- `registration()` answers, on an admin's computer, the admins' keys (the space's owners):
  the link then registers the space, or moves it to the newest epoch; None elsewhere.
- `on_knock(tag, blob)` (optional) answers a newcomer's knock (core.relay_knock), or None.
- `handovers()` (an admin's) answers, per older epoch held, (epoch, its secret, the objects a
  member still of that epoch needs to come to the newest: its seals); the link leaves them
  for that epoch's token at each registration (docs/relay.md "Members, epochs and removal").

Every wait has a timeout; a relay that refuses, drops or lies costs a reconnection with
backoff, never an object: nothing reaches the replica but through `on_objects`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any

import aiohttp
from aiohttp import WSMsgType

from core.encoding import object_id
from core.identity import Identity
from core.objects import decode_trusted
from core.relay_seal import EpochKeys, space_id
from storage import Replica

from ._relay_held import HeldEnvelopes as HeldEnvelopes
from .relay_member import (
    Answered,
    Authorized,
    ChunkArrived,
    ChunksHeld,
    ChunksLacking,
    Ended,
    KnockReceived,
    Opened,
    Reconciled,
    Registration,
    RelayKnocker,
    RelayMember,
    SignalReceived,
)
from .relay_wire import MAX_MESSAGE, PATH

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
IDLE_TIMEOUT_S = 90.0
PING_INTERVAL_S = 30.0
RECONCILE_INTERVAL_S = 60.0
BACKOFF_S = (1.0, 5.0, 15.0, 60.0, 300.0)
KNOWN_MEMORY = 50_000  # object ids remembered per connection as held by the relay
# Chunk ids remembered per connection as held by the relay (16 GiB of files), so sharing every
# minute asks only about chunks not yet known there.
CHUNKS_KNOWN_MEMORY = 65_536


@dataclass(frozen=True)
class RelayAddress:
    host: str
    port: int
    key: bytes  # the relay's static key, pinned

    @property
    def hostport(self) -> str:
        return f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        return f"ws://{self.hostport}{PATH}"


@dataclass
class RelayState:
    """What the window and `hearth sync status` may show of one relay."""

    address: RelayAddress
    connected: bool = False
    last_sync: float | None = None  # time.time() of the last finished round
    error: str | None = None
    uploaded: int = 0
    downloaded: int = 0
    rounds: int = 0
    bytes_sent: int = 0  # WebSocket payload bytes, both ways, over every connection
    bytes_received: int = 0


class _Connection:
    """One relay session: the socket, the member state machine and the lock that keeps its
    Noise messages in order."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse, member: RelayMember,
                 held: HeldEnvelopes, state: RelayState):
        self.ws = ws
        self.state = state
        self.member = member
        self.held = held
        self.lock = asyncio.Lock()
        self.round_at = 0.0  # time.monotonic() of the last round begun
        self.held_waiters: list[asyncio.Future[frozenset[bytes]]] = []  # share_chunks'
        self._held_parts: set[bytes] = set()
        # Ids of objects this relay is known to hold (it handed them over, or took them), so
        # what came from it is not offered back when the service stores it.
        self._known: OrderedDict[bytes, None] = OrderedDict()
        self.chunks_known: OrderedDict[bytes, None] = OrderedDict()

    def knows(self, oids: list[bytes]) -> None:
        _remember(self._known, oids, KNOWN_MEMORY)

    def knows_chunks(self, cids: Iterable[bytes]) -> None:
        _remember(self.chunks_known, cids, CHUNKS_KNOWN_MEMORY)

    def chunks_held(self, event: ChunksHeld) -> None:
        """One `held` answer; once none is pending, every waiter gets what was held of all
        that was asked (each keeps what it asked about)."""
        self._held_parts |= event.held
        if self.member.held_pending == 0:
            for waiter in self.held_waiters:
                if not waiter.done():
                    waiter.set_result(frozenset(self._held_parts))
            self.held_waiters, self._held_parts = [], set()

    def unknown(self, raws: list[bytes]) -> list[bytes]:
        return [raw for raw in raws if object_id(raw) not in self._known]

    async def flush(self) -> None:
        async with self.lock:
            for data in self.member.data_to_send():
                await asyncio.wait_for(self.ws.send_bytes(data), SEND_TIMEOUT_S)
                self.state.bytes_sent += len(data)


class RelayLink:
    """A Node's links to its workspace's relays (see the module's docstring)."""

    def __init__(self, replica: Replica, identity: Identity,
                 secrets: Callable[[], tuple[int, bytes] | None],
                 on_objects: Callable[[list[bytes]], None], *,
                 relays: Callable[[], list[RelayAddress]],
                 registration: Callable[[], tuple[bytes, ...] | None] = lambda: None,
                 on_signal: Callable[[bytes, bytes], None] | None = None,
                 handovers: Callable[[], list[tuple[int, bytes, list[bytes]]]] = lambda: [],
                 on_knock: Callable[[bytes, bytes], bytes | None] | None = None,
                 reconcile_interval: float = RECONCILE_INTERVAL_S):
        self.replica = replica
        self.identity = identity
        self._secrets = secrets
        self._on_objects = on_objects
        self._relays = relays
        self._registration = registration
        self._interval = reconcile_interval
        self._on_signal = on_signal
        self._handovers = handovers
        self._on_knock = on_knock
        self._held: HeldEnvelopes | None = None  # the newest epoch's, across connections
        self.space = space_id(replica.workspace.id)
        self.states: dict[RelayAddress, RelayState] = {}
        self._connections: dict[RelayAddress, _Connection] = {}
        self._tasks: dict[RelayAddress, asyncio.Task] = {}
        self._http: aiohttp.ClientSession | None = None
        self._watcher: asyncio.Task | None = None
        self._flushes: set[asyncio.Task] = set()  # held until done (the loop keeps weak refs)
        self._synced = asyncio.Condition()
        # Chunk id -> the futures of fetches waiting for it (None: the relay lacks it).
        self._chunk_waiters: dict[bytes, list[asyncio.Future[bytes | None]]] = {}

    async def start(self) -> None:
        self._http = aiohttp.ClientSession()
        self._watcher = asyncio.ensure_future(self._watch())

    async def close(self) -> None:
        tasks = [t for t in (self._watcher, *self._tasks.values(), *self._flushes)
                 if t is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        if self._http is not None:
            await self._http.close()

    def offer(self, raws: list[bytes]) -> None:
        """Objects just stored here: sealed and put to every relay connected now (the others
        get them at their next round)."""
        for conn in list(self._connections.values()):
            fresh = conn.unknown(raws)
            if fresh and conn.member.authorized and not conn.member.closed:
                conn.member.upload([conn.held.keys.seal(raw, decode_trusted(raw).ts)
                                    for raw in fresh])
                conn.knows([object_id(raw) for raw in fresh])
                self._spawn_flush(conn)

    def _held_for(self, keys: EpochKeys) -> HeldEnvelopes:
        held = self._held
        if held is None or held.keys.epoch != keys.epoch or held.keys.token_key != keys.token_key:
            held = self._held = HeldEnvelopes(self.replica, keys)
        return held

    def prepare(self) -> None:
        """Work out this computer's side of the newest epoch's set now (a Node does once it
        has started), so a round with a relay only moves what differs."""
        secrets = self._secrets()
        if secrets is not None:
            self._held_for(EpochKeys.derive(*secrets)).storage()

    def renew(self) -> None:
        """A new epoch is held here: leave the relays now under the old one (each link dials
        again at once, proving or registering the new epoch), rather than at the next tick."""
        held = self._secrets()
        for conn in list(self._connections.values()):
            if held is not None and held[0] != conn.member.keys.epoch and not conn.member.closed:
                conn.member.close("a new epoch")
                self._spawn(conn.ws.close())

    def send_signal(self, body: bytes) -> None:
        """Typing or presence (the body is the service's to define) to the members connected
        to any relay now; they get `on_signal(sender_key, body)`. Never stored."""
        for conn in list(self._connections.values()):
            if conn.member.authorized and not conn.member.closed:
                conn.member.signal(self.identity, body)
                self._spawn_flush(conn)

    async def share_chunks(self, cids: list[bytes], read: Callable[[bytes], bytes | None],
                           timeout: float = 30.0) -> int:
        """Put to each relay connected now the chunks of `cids` it lacks (`read` gives their
        bytes), and wait for each relay to acknowledge them; how many were sent. A relay is
        asked only about chunks this connection has not yet seen it hold."""
        sent = 0
        loop = asyncio.get_running_loop()
        for conn in list(self._connections.values()):
            asking = [cid for cid in dict.fromkeys(cids) if cid not in conn.chunks_known]
            if not conn.member.authorized or conn.member.closed or not asking:
                continue
            answer: asyncio.Future[frozenset[bytes]] = loop.create_future()
            conn.held_waiters.append(answer)
            conn.member.ask_held(asking)
            self._spawn_flush(conn)
            try:
                held = await asyncio.wait_for(answer, timeout)
            except TimeoutError:
                continue
            conn.knows_chunks(held)
            put = []
            for cid in asking:
                data = None if cid in held else read(cid)
                if data is not None:
                    conn.member.put_chunk(cid, data)
                    put.append(cid)
                    await self._flush(conn)  # one chunk at a time: bounded memory
            sent += len(put)
            deadline = loop.time() + timeout
            while conn.member.puts_pending and not conn.member.closed \
                    and loop.time() < deadline:
                await asyncio.sleep(0.02)
            if not conn.member.puts_pending and not conn.member.closed:
                conn.knows_chunks(put)  # acknowledged
        return sent

    async def fetch_chunks(self, cids: list[bytes], timeout: float = 30.0
                           ) -> dict[bytes, bytes]:
        """Chunks from the relays connected now, each relay in turn asked for what the ones
        before lacked; what arrived (checked against its id), by id."""
        found: dict[bytes, bytes] = {}
        loop = asyncio.get_running_loop()
        for conn in list(self._connections.values()):
            wanted = [cid for cid in dict.fromkeys(cids) if cid not in found]
            if not wanted:
                break
            if not conn.member.authorized or conn.member.closed:
                continue
            futures = {cid: loop.create_future() for cid in wanted}
            for cid, future in futures.items():
                self._chunk_waiters.setdefault(cid, []).append(future)
            conn.member.get_chunks(wanted)
            self._spawn_flush(conn)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*futures.values()), timeout)
            for cid, future in futures.items():
                data = future.result() if future.done() else None
                if data is not None:
                    found[cid] = data
                waiting = self._chunk_waiters.get(cid, [])
                if future in waiting:
                    waiting.remove(future)
                if not waiting:
                    self._chunk_waiters.pop(cid, None)
        return found

    def _spawn_flush(self, conn: _Connection) -> None:
        self._spawn(self._flush(conn))

    def _spawn(self, work: Coroutine[Any, Any, Any]) -> None:
        """Run `work` on the loop, held until done (the loop keeps weak references)."""
        task = asyncio.ensure_future(work)
        self._flushes.add(task)
        task.add_done_callback(self._flushes.discard)

    def _chunk_answer(self, cid: bytes, data: bytes | None) -> None:
        for future in self._chunk_waiters.pop(cid, []):
            if not future.done():
                future.set_result(data)

    async def wait_synced(self, address: RelayAddress, after: float, timeout: float) -> bool:
        """Wait until a round with `address` finished after `after` (time.time())."""
        def done() -> bool:
            state = self.states.get(address)
            return bool(state and state.last_sync and state.last_sync > after)
        async with self._synced:
            try:
                await asyncio.wait_for(self._synced.wait_for(done), timeout)
            except TimeoutError:
                return False
        return True

    # The relays ---------------------------------------------------------------------------------

    async def _watch(self) -> None:
        """Dial each relay listed; stop the links to relays no longer listed."""
        while True:
            try:
                wanted = set(self._relays())
            except Exception:  # the list is read from the replica: keep the links as they are
                log.exception("reading the workspace's relays failed")
                wanted = set(self._tasks)
            for address in wanted - self._tasks.keys():
                self.states.setdefault(address, RelayState(address))
                self._tasks[address] = asyncio.ensure_future(self._run(address))
            for address in self._tasks.keys() - wanted:
                self._tasks.pop(address).cancel()
                self.states.pop(address, None)
            await asyncio.sleep(5.0)

    async def _run(self, address: RelayAddress) -> None:
        failures = 0
        while True:
            state = self.states[address]
            try:
                if await self._session(address):
                    failures = 0
            except (OSError, aiohttp.ClientError, TimeoutError) as exc:
                state.error = f"cannot reach the relay: {exc!r}"
            except Exception as exc:  # a bug (in on_objects, say) must not end the link for good
                log.exception("the link to relay %s failed", address.hostport)
                state.error = f"internal error: {exc!r}"
            finally:
                state.connected = False
                self._connections.pop(address, None)
            if state.error:
                log.info("relay %s:%d: %s", address.host, address.port, state.error)
            await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
            failures += 1

    async def _session(self, address: RelayAddress) -> bool:
        """One connection, until it ends; whether the relay took our token."""
        assert self._http is not None
        held = self._secrets()
        if held is None:
            self.states[address].error = "this computer does not hold the workspace secret yet"
            return False
        keys = EpochKeys.derive(*held)
        envelopes = self._held_for(keys)
        owners = self._registration()
        registration = Registration(self.identity, owners) if owners is not None else None
        try:
            member = RelayMember(address.key, keys, self.space, envelopes.seal,
                                 registration=registration)
        except ValueError as exc:
            self.states[address].error = str(exc)
            return False
        ws = await asyncio.wait_for(self._http.ws_connect(
            address.url, max_msg_size=MAX_MESSAGE, compress=0, autoping=True,
            timeout=aiohttp.ClientWSTimeout(ws_close=2.0)), CONNECT_TIMEOUT_S)
        conn = _Connection(ws, member, envelopes, self.states[address])
        self._connections[address] = conn
        ticker = asyncio.ensure_future(self._tick(conn, address))
        try:
            await conn.flush()
            while not member.closed:
                msg = await ws.receive(timeout=IDLE_TIMEOUT_S)
                if msg.type != WSMsgType.BINARY:
                    member.close("the relay closed the connection")
                    break
                conn.state.bytes_received += len(msg.data)
                member.receive(msg.data)
                await self._events(conn, address)
                await conn.flush()
        finally:
            ticker.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await ticker
            await self._events(conn, address)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)
        return member.authorized

    async def _tick(self, conn: _Connection, address: RelayAddress) -> None:
        """Ping, reconcile every interval, and leave once a newer epoch is held."""
        while not conn.member.closed:
            await asyncio.sleep(min(PING_INTERVAL_S, self._interval))
            held = self._secrets()
            if held is None or held[0] != conn.member.keys.epoch:
                conn.member.close("a new epoch")
                await conn.ws.close()
                return
            conn.member.ping()
            if time.monotonic() - conn.round_at >= self._interval:
                conn.round_at = time.monotonic()
                conn.member.reconcile(conn.held.items(), conn.held.deleted(),
                                      conn.held.storage())
            await self._flush(conn)

    def _hand_over(self, conn: _Connection) -> None:
        """(An admin's link, registered) leave for each older epoch's token the objects its
        members need to come to this one (`handovers`: the new epochs' seals)."""
        for epoch, secret, raws in self._handovers():
            if epoch < conn.member.keys.epoch and raws:
                older = EpochKeys.derive(epoch, secret)
                conn.member.hand_over(older, [older.seal(raw, decode_trusted(raw).ts)
                                              for raw in raws])

    async def _flush(self, conn: _Connection) -> None:
        try:
            await conn.flush()
        except (OSError, aiohttp.ClientError, TimeoutError, ConnectionError):
            conn.member.close("connection lost")
            with contextlib.suppress(Exception):
                await conn.ws.close()

    async def _events(self, conn: _Connection, address: RelayAddress) -> None:
        state = self.states[address]
        while (event := conn.member.next_event()) is not None:
            if isinstance(event, Authorized):
                state.connected, state.error = True, None
                if conn.member.registering:
                    self._hand_over(conn)
                conn.round_at = time.monotonic()
                conn.member.reconcile(conn.held.items(), conn.held.deleted(),
                                      conn.held.storage())
            elif isinstance(event, Opened):
                conn.knows([object_id(raw) for raw in event.raws])
                self._on_objects(list(event.raws))
            elif isinstance(event, ChunkArrived):
                self._chunk_answer(event.cid, event.data)
            elif isinstance(event, ChunksHeld):
                conn.chunks_held(event)
            elif isinstance(event, ChunksLacking):
                for cid in event.cids:
                    self._chunk_answer(cid, None)
            elif isinstance(event, KnockReceived):
                answer = self._on_knock(event.tag, event.blob) if self._on_knock else None
                if answer is not None:
                    conn.member.answer(event.knock, answer)
            elif isinstance(event, SignalReceived):
                if self._on_signal is not None and event.sender != self.identity.public_key:
                    self._on_signal(event.sender, event.body)
            elif isinstance(event, Reconciled):
                state.last_sync = time.time()
                state.rounds += 1
                state.uploaded += event.uploaded
                state.downloaded += event.downloaded
                async with self._synced:
                    self._synced.notify_all()
            elif isinstance(event, Ended):
                state.connected = False
                if event.refused or event.reason != "closing":
                    state.error = event.reason


async def knock(address: RelayAddress, space: bytes, tag: bytes, blob: bytes, *,
                timeout: float = 40.0) -> bytes:
    """A newcomer's knock on `space` at the relay `address`: a member's answer, or
    ConnectionError with the relay's reason (no member connected, refused)."""
    knocker = RelayKnocker(address.key, space, tag, blob)
    async with aiohttp.ClientSession() as http:
        ws = await asyncio.wait_for(http.ws_connect(
            address.url, max_msg_size=MAX_MESSAGE, compress=0), CONNECT_TIMEOUT_S)
        try:
            deadline = time.monotonic() + timeout
            while not knocker.closed:
                for data in knocker.data_to_send():
                    await asyncio.wait_for(ws.send_bytes(data), SEND_TIMEOUT_S)
                msg = await ws.receive(timeout=max(0.1, deadline - time.monotonic()))
                if msg.type != WSMsgType.BINARY:
                    break
                knocker.receive(msg.data)
                while (event := knocker.next_event()) is not None:
                    if isinstance(event, Answered):
                        return event.blob
                    if isinstance(event, Ended):
                        raise ConnectionError(event.reason)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)
    raise ConnectionError("the relay closed the connection")


def _remember(known: OrderedDict[bytes, None], ids: Iterable[bytes], limit: int) -> None:
    for key in ids:
        known[key] = None
        known.move_to_end(key)
    while len(known) > limit:
        known.popitem(last=False)
