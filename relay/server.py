"""The relay process: an aiohttp WebSocket server moving relay.peer's bytes, with its limits.

Every network read is bounded: in size (aiohttp refuses a message over sync.relay_wire's
MAX_MESSAGE; a frame is at most MAX_FRAME), in time (the handshake and the proof within
AUTH_TIMEOUT_S, then silence for at most IDLE_TIMEOUT_S; every send within SEND_TIMEOUT_S)
and per peer (at most MAX_PER_ADDRESS connections from one address, MAX_CONNECTIONS in all,
and at most RATE_BYTES_S read from one connection per second: beyond it the relay stops
reading and the bytes wait in the socket). Envelopes a member stores are pushed at once to
the space's other connected members. The static key is the relay's identity; it lives in
`relay.key` (0600) beside the database and is printed at start for members to pin.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from aiohttp import WSMsgType, web

from sync.relay_wire import KNOCK_ID_SIZE, MAX_MESSAGE, PATH, relay_public_key

from .peer import (
    Answered,
    Ended,
    Joined,
    Knocked,
    RelayPeer,
    Signalled,
    Snapshots,
    Stored,
)
from .store import DEFAULT_QUOTA, DEFAULT_RETENTION_S, RelayStore

log = logging.getLogger(__name__)

KEY_FILE = "relay.key"
DB_FILE = "relay.db"
CONNECTED_FILE = "connected.json"  # members connected per space, for `hearth relay status`
AUTH_TIMEOUT_S = 10.0
IDLE_TIMEOUT_S = 120.0
SEND_TIMEOUT_S = 30.0
MAX_PER_ADDRESS = 16
MAX_CONNECTIONS = 1024
MAX_SPACES = 1000
KNOCK_WAIT_S = 30.0  # how long a newcomer's knock waits for a member's answer
MAX_KNOCKS = 16  # knocks waiting on one space at once; more are refused
MAX_KNOCKED = 8  # members a knock is forwarded to (the first connected)
RATE_BYTES_S = 8 << 20
PRUNE_INTERVAL_S = 3600.0


def load_or_create_key(folder: Path) -> bytes:
    """The relay's static private key (X25519), made on first start (0600)."""
    path = folder / KEY_FILE
    if path.exists():
        data = path.read_bytes()
        if len(data) != 32 or os.stat(path).st_mode & 0o077:
            raise OSError(f"{path} is damaged or readable by others (chmod 600 it)")
        return data
    folder.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        key = os.urandom(32)
        os.write(fd, key)
    finally:
        os.close(fd)
    return key


@dataclass(frozen=True)
class Limits:
    auth_timeout_s: float = AUTH_TIMEOUT_S
    idle_timeout_s: float = IDLE_TIMEOUT_S
    per_address: int = MAX_PER_ADDRESS
    connections: int = MAX_CONNECTIONS
    spaces: int = MAX_SPACES
    rate_bytes_s: int = RATE_BYTES_S


class RelayServer:
    def __init__(self, folder: str | Path, *, quota: int = DEFAULT_QUOTA,
                 retention_s: int = DEFAULT_RETENTION_S, limits: Limits = Limits()):
        self.folder = Path(folder)
        self._private = load_or_create_key(self.folder)
        self.key = relay_public_key(self._private)
        self.store = RelayStore(self.folder / DB_FILE, quota=quota, retention_s=retention_s)
        self.limits = limits
        self._snapshots = Snapshots(self.store)
        self._members: dict[bytes, set[RelayPeer]] = defaultdict(set)
        # Each connection's socket and the lock that keeps its Noise messages in order.
        self._sockets: dict[RelayPeer, tuple[web.WebSocketResponse, asyncio.Lock]] = {}
        self._per_address: dict[str, int] = defaultdict(int)
        self._connections = 0
        self._runner: web.AppRunner | None = None
        self._pruner: asyncio.Task | None = None
        self._pushes: set[asyncio.Task] = set()  # held until done (the loop keeps weak refs)
        self._knocks: dict[bytes, RelayPeer] = {}  # knock id -> the newcomer's connection

        self.port = 0

    def connected(self, space: bytes) -> int:
        return len(self._members.get(space, ()))

    async def start(self, host: str = "0.0.0.0", port: int = 0) -> int:  # noqa: S104
        app = web.Application()
        app.router.add_get(PATH, self._accept)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, host, port)
        await site.start()
        addresses = self._runner.addresses
        self.port = addresses[0][1] if addresses else port
        self.store.prune()
        self._pruner = asyncio.ensure_future(self._prune_forever())
        return self.port

    async def close(self) -> None:
        if self._pruner is not None:
            self._pruner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pruner
        if self._runner is not None:
            await self._runner.cleanup()
        self._members.clear()
        self._write_connected()
        self.store.close()

    async def _prune_forever(self) -> None:
        while True:
            await asyncio.sleep(PRUNE_INTERVAL_S)
            gone = self.store.prune()
            if gone:
                log.info("retention: %d envelopes went", gone)

    async def _accept(self, request: web.Request) -> web.StreamResponse:
        address = request.remote or "?"
        if self._connections >= self.limits.connections or \
                self._per_address[address] >= self.limits.per_address:
            return web.Response(status=503, text="busy")
        ws = web.WebSocketResponse(max_msg_size=MAX_MESSAGE, compress=False, autoping=True,
                                   heartbeat=30.0)
        await ws.prepare(request)
        self._connections += 1
        self._per_address[address] += 1
        peer = RelayPeer(self.store, self._snapshots, self._private,
                         max_spaces=self.limits.spaces)
        self._sockets[peer] = (ws, asyncio.Lock())
        try:
            await self._serve(ws, peer)
        except (TimeoutError, ConnectionError) as exc:
            peer.close(f"connection lost: {exc!r}", tell=False)
        finally:
            del self._sockets[peer]
            self._connections -= 1
            self._per_address[address] -= 1
            if not self._per_address[address]:
                del self._per_address[address]
            if peer.space is not None:
                self._members[peer.space].discard(peer)
                if not self._members[peer.space]:
                    del self._members[peer.space]
                self._write_connected()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(ws.close(), 2.0)
        return ws

    async def _serve(self, ws: web.WebSocketResponse, peer: RelayPeer) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.limits.auth_timeout_s
        window_start, window_bytes = time.monotonic(), 0
        while not peer.closed:
            if peer.knocking is not None and deadline < loop.time() + KNOCK_WAIT_S / 2:
                deadline = loop.time() + KNOCK_WAIT_S  # once: a knock waits for an answer
            timeout = (deadline - loop.time()) if not peer.joined else self.limits.idle_timeout_s
            if timeout <= 0:
                peer.close("timed out")
                break
            try:
                msg = await ws.receive(timeout=timeout)
            except TimeoutError:
                peer.close("timed out")
                break
            if msg.type != WSMsgType.BINARY:
                peer.close("closed", tell=msg.type not in (
                    WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED, WSMsgType.ERROR))
                break
            peer.receive(msg.data)
            await self._flush(ws, peer)
            window_bytes += len(msg.data)
            elapsed = time.monotonic() - window_start
            if elapsed >= 1.0:
                window_start, window_bytes = time.monotonic(), 0
            elif window_bytes > self.limits.rate_bytes_s:
                await asyncio.sleep(1.0 - elapsed)  # the rest waits in the socket
        await self._flush(ws, peer)

    async def _flush(self, ws: web.WebSocketResponse, peer: RelayPeer) -> None:
        lock = self._sockets[peer][1]
        async with lock:
            while True:
                for data in peer.data_to_send():
                    await asyncio.wait_for(ws.send_bytes(data), SEND_TIMEOUT_S)
                self._events(peer)
                if not peer.has_output:
                    return

    def _events(self, peer: RelayPeer) -> None:
        while (event := peer.next_event()) is not None:
            if isinstance(event, Joined):
                for other in list(self._members.get(event.space, ())):
                    if other.epoch < event.epoch:  # moved on: a removed member is cut off now
                        other.close("refused")
                        self._schedule_push(other)
                self._members[event.space].add(peer)
                self._write_connected()
            elif isinstance(event, Stored):
                for other in list(self._members.get(event.space, ())):
                    if other is not peer:
                        other.deliver(list(event.envelopes))
                        self._schedule_push(other)
            elif isinstance(event, Signalled):
                for other in list(self._members.get(event.space, ())):
                    if other is not peer:
                        other.forward_signal(event.blob)
                        self._schedule_push(other)
            elif isinstance(event, Knocked):
                self._knocked(peer, event)
            elif isinstance(event, Answered):
                knocker = self._knocks.pop(event.knock, None)
                if knocker is not None and knocker.knocking == event.space:
                    knocker.answered(event.blob)
                    self._schedule_push(knocker)
            elif isinstance(event, Ended):
                for knock in [k for k, p in self._knocks.items() if p is peer]:
                    del self._knocks[knock]
                if event.fault:
                    log.info("a connection ended: %s", event.reason)

    def _knocked(self, peer: RelayPeer, event: Knocked) -> None:
        """Forward a newcomer's knock to the space's members connected now (a few), and
        remember whom to answer; with none connected, or too many waiting, it is refused."""
        members = list(self._members.get(event.space, ()))[:MAX_KNOCKED]
        waiting = sum(1 for p in self._knocks.values() if p.knocking == event.space)
        if not members or waiting >= MAX_KNOCKS:
            peer.close("no member is connected to admit you" if not members else "busy")
            return
        knock = os.urandom(KNOCK_ID_SIZE)
        self._knocks[knock] = peer
        for member in members:
            member.forward_knock(knock, event.tag, event.blob)
            self._schedule_push(member)

    def _write_connected(self) -> None:
        counts = {space.hex(): len(peers) for space, peers in self._members.items()}
        tmp = self.folder / (CONNECTED_FILE + ".tmp")
        try:
            tmp.write_text(json.dumps(counts))
            tmp.replace(self.folder / CONNECTED_FILE)
        except OSError as exc:
            log.warning("cannot write %s: %s", CONNECTED_FILE, exc)

    def _schedule_push(self, peer: RelayPeer) -> None:
        task = asyncio.ensure_future(self._push(peer))
        self._pushes.add(task)
        task.add_done_callback(self._pushes.discard)

    async def _push(self, peer: RelayPeer) -> None:
        # The other connection's own loop may be waiting for a read: its pushes go from here.
        held = self._sockets.get(peer)
        if held is None or held[0].closed:
            return
        try:
            await self._flush(held[0], peer)
            if peer.closed:
                await held[0].close()
        except (TimeoutError, ConnectionError) as exc:
            peer.close(f"connection lost: {exc!r}", tell=False)
