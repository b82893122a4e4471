"""The thin asyncio layer: move one Session's bytes over an aiohttp WebSocket.

It reads messages, feeds the session, hands its events to a callback, and writes what the
session wants sent; nothing else. Every wait has a timeout, and whatever happens the socket is
closed and the session told, so no waiter is left hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
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
    """A Session bound to a WebSocket. `wake()` makes it send what was queued by `push`."""

    def __init__(self, session: Session, ws: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                 on_event: EventHandler, *, address: str, peer: object = None):
        self.session = session
        self.ws = ws
        self.address = address
        self.peer = peer  # the peer-book entry this connection was dialled for, if any
        self._on_event = on_event
        self._wakeup = asyncio.Event()
        self.started = time.monotonic()
        self.result: Closed | None = None

    def wake(self) -> None:
        self._wakeup.set()

    def push(self, raws: list[bytes], ids: list[bytes]) -> None:
        self.session.push(raws, ids)
        self.wake()

    def close(self, reason: str = "closing") -> None:
        self.session.close(reason)
        self.wake()

    async def run(self) -> Closed:
        """Serve the session until it closes; returns how it ended."""
        receiver: asyncio.Task | None = None
        try:
            await self._flush()
            while not self.session.closed:
                if receiver is None:
                    receiver = asyncio.ensure_future(self.ws.receive())
                waker = asyncio.ensure_future(self._wakeup.wait())
                timer = self.session.get_timer()
                timeout = None if timer is None else max(0.0, timer - time.monotonic())
                done, _ = await asyncio.wait({receiver, waker}, timeout=timeout,
                                             return_when=asyncio.FIRST_COMPLETED)
                waker.cancel()
                self._wakeup.clear()
                if receiver in done:
                    self._received(receiver.result())
                    receiver = None
                self.session.handle_timer(time.monotonic())
                self._drain_events()
                await self._flush()
        except (TimeoutError, ConnectionError, aiohttp.ClientError) as exc:
            self.session.connection_lost(f"connection lost: {exc!r}")
            self._drain_events()
        finally:
            if receiver is not None:
                receiver.cancel()
            with contextlib.suppress(Exception):  # a bye queued as the session closed
                for data in self.session.data_to_send():
                    await asyncio.wait_for(self.ws.send_bytes(data), CLOSE_TIMEOUT_S)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.ws.close(), CLOSE_TIMEOUT_S)
            if not self.session.closed:
                self.session.connection_lost("connection closed")
            self._drain_events()
        return self.result or Closed("closed", False)

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
        not at the next timer."""
        for data in self.session.data_to_send():
            await asyncio.wait_for(self.ws.send_bytes(data), SEND_TIMEOUT_S)
        self._drain_events()
        if self.session.has_output or self.session.has_frames:
            self._wakeup.set()


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
