"""The thin asyncio layer: move one Session's bytes over an aiohttp WebSocket.

It reads messages, feeds the session, hands its events to a callback, and writes what the
session wants sent; nothing else. Every wait has a timeout, and whatever happens the socket is
closed and the session told, so no waiter is left hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import time
from collections.abc import Callable

import aiohttp
from aiohttp import WSMsgType, web

from .session import MAX_NOISE_MESSAGE, Closed, Event, Session

log = logging.getLogger(__name__)

PATH = "/hearth/1"
JOIN_PATH = PATH + "/join/{tag}"  # a newcomer's session: tag names the invite (hex)
CONNECT_TIMEOUT_S = 5.0
SEND_TIMEOUT_S = 30.0
CLOSE_TIMEOUT_S = 2.0
# aiohttp refuses larger WebSocket messages itself (a Noise message is at most 65,535 bytes).
MAX_MESSAGE = MAX_NOISE_MESSAGE + 64

EventHandler = Callable[["Connection", Event], None]


class Connection:
    """A Session bound to a WebSocket. `wake()` makes it send what was queued by `push`.

    Two loops share the session: `_read` takes messages as they come and feeds them in, and
    `run` sends what the session has whenever it is woken (by a message read, a `push` or the
    session's timer). Both stay up for the whole session, so a message costs no task of its
    own and the answer to one leaves while the next is being read."""

    def __init__(self, session: Session, ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                 on_event: EventHandler, *, address: str, peer: object = None):
        self.session = session
        self.ws = ws
        self.address = address
        self.peer = peer  # the peer-book entry this connection was dialled for, if any
        self._on_event = on_event
        self._woken = False
        self._waiter: asyncio.Future | None = None
        self.started = time.monotonic()
        self.result: Closed | None = None
        self._readable = asyncio.Event()  # set when bytes were written (sync._pacing)

    def wake(self) -> None:
        self._woken = True
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def push(self, raws: list[bytes], ids: list[bytes],
             streams: list[tuple[bytes, int]] | None = None) -> None:
        self.session.outbox.push(raws, ids, streams)
        if raws:
            self.session.files.chat_moved(time.monotonic())
        self.wake()

    def close(self, reason: str = "closing") -> None:
        self.session.close(reason)
        self.wake()
        self._readable.set()

    async def run(self) -> Closed:
        """Serve the session until it closes; returns how it ended."""
        reader = asyncio.ensure_future(self._read())
        reader.add_done_callback(lambda _: self.wake())
        try:
            await self._flush()
            while not self.session.closed:
                await self._sleep()
                if reader.done():
                    reader.result()  # a bug while reading: raised here, as it would be
                self.session.handle_timer(time.monotonic())
                self._drain_events()
                await self._flush()
        except (TimeoutError, ConnectionError, aiohttp.ClientError) as exc:
            self.session.connection_lost(f"connection lost: {exc!r}")
            self._drain_events()
        finally:
            reader.cancel()
            with contextlib.suppress(Exception):  # a bye queued as the session closed
                for data in self.session.data_to_send():
                    await asyncio.wait_for(self.ws.send_bytes(data), CLOSE_TIMEOUT_S)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(), CLOSE_TIMEOUT_S)
            await asyncio.wait({reader})
            failure = None if reader.cancelled() else reader.exception()
            if failure is not None and failure is not sys.exc_info()[1]:  # not raised above
                log.error("reading a sync session failed", exc_info=failure)
            if not self.session.closed:
                self.session.connection_lost("connection closed")
            self._drain_events()
        return self.result or Closed("closed", False)

    async def _sleep(self) -> None:
        """Wait for `wake()` or the session's timer, whichever comes first."""
        if self._woken:
            self._woken = False
            # Let whatever else is ready on the loop run first (a post being made, another
            # session's frames): a file's chunks go one at a time between them.
            await asyncio.sleep(0)
            return
        loop = asyncio.get_running_loop()
        self._waiter = waiter = loop.create_future()
        timer = self.session.get_timer()
        handle = None if timer is None else loop.call_later(
            max(0.0, timer - time.monotonic()), _set_done, waiter)
        try:
            await waiter
        finally:
            self._waiter = None
            self._woken = False
            if handle is not None:
                handle.cancel()

    async def _read(self) -> None:
        """Feed the session every message as it arrives, and wake the sender after each (the
        session may owe an answer, or have closed)."""
        try:
            while not self.session.closed:
                await self._paced()
                if self.session.closed:
                    break
                self._received(await self.ws.receive())
                if self.session.mid_frame and not self.session.closed:
                    continue  # a piece of a frame (a chunk is five): nothing to answer yet
                self._drain_events()
                self.wake()
        except (TimeoutError, ConnectionError, aiohttp.ClientError) as exc:
            self.session.connection_lost(f"connection lost: {exc!r}")
            self._drain_events()
            self.wake()

    async def _paced(self) -> None:
        """Wait while the session says not to read (its peer is over its reconciliation
        budget, or leaves its replies unread): the peer's frames wait in the socket."""
        while not self.session.closed:
            until = self.session.pacing.read_wait(time.monotonic())
            if until is None:
                return
            self._readable.clear()
            timeout = None if until == float("inf") else max(0.0, until - time.monotonic())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._readable.wait(), timeout)

    def _received(self, msg: aiohttp.WSMessage) -> None:
        if msg.type == WSMsgType.BINARY:
            self.session.receive(msg.data, time.monotonic())
        elif msg.type in (WSMsgType.CLOSE, WSMsgType.CLOSING, WSMsgType.CLOSED):
            self.session.connection_lost("the peer closed the connection")
        elif msg.type == WSMsgType.ERROR:
            self.session.connection_lost(f"connection error: {self.ws.exception()!r}")
        else:
            self.session.protocol_error(f"unexpected {msg.type.name} message")

    def _drain_events(self) -> None:
        while (event := self.session.next_event()) is not None:
            if isinstance(event, Closed):
                self.result = event
            try:
                self._on_event(self, event)
            except Exception:  # a bug in a handler must not leave the peer hanging
                log.exception("sync event handler failed on %s", type(event).__name__)
                self.session.protocol_error("internal error")

    async def _flush(self) -> None:
        """Send what the session has now; it produces at most about MAX_OUTGOING bytes at a
        time, so if it still owes objects, come round again (after reading the socket). What
        the event handlers queue meanwhile (a one-off sync's next round, a bye) goes at once,
        not at the next timer. Each message may take SEND_TIMEOUT_S to be accepted: one
        timeout for the lot, pushed back as they go (most go without waiting at all)."""
        out = self.session.data_to_send(time.monotonic())
        if out:
            loop = asyncio.get_running_loop()
            pushed = loop.time()
            async with asyncio.timeout_at(pushed + SEND_TIMEOUT_S) as limit:
                for data in out:
                    await self.ws.send_bytes(data)
                    self.session.pacing.written(len(data))
                    self._readable.set()
                    # Pushed back at most once a second: a new timer for every message cost
                    # the sender a sixth of its loop's time during a file.
                    if loop.time() - pushed >= 1.0:
                        pushed = loop.time()
                        limit.reschedule(pushed + SEND_TIMEOUT_S)
        self._drain_events()
        if self.session.has_output or self.session.has_frames:
            self._woken = True


def _set_done(waiter: asyncio.Future) -> None:
    if not waiter.done():
        waiter.set_result(None)


async def connect(http: aiohttp.ClientSession, host: str, port: int, *,
                  path: str = PATH) -> aiohttp.ClientWebSocketResponse:
    """Open a WebSocket to a peer; raises OSError/aiohttp.ClientError/TimeoutError."""
    url = f"ws://{host}:{port}{path}" if ":" not in host else f"ws://[{host}]:{port}{path}"
    return await asyncio.wait_for(
        http.ws_connect(url, max_msg_size=MAX_MESSAGE, autoping=True, compress=0,
                        timeout=aiohttp.ClientWSTimeout(ws_close=CLOSE_TIMEOUT_S)),
        CONNECT_TIMEOUT_S)


def accept_response() -> web.WebSocketResponse:
    return web.WebSocketResponse(max_msg_size=MAX_MESSAGE, compress=False, autoping=True)
