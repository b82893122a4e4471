"""Who may hold a connection to this node, and for how long, before any byte is trusted.

`Guard` is pure bookkeeping (addresses, keys and `now` in; verdicts out): how many sockets one
address and everyone together may hold, how long a socket may take to become a WebSocket, and a
penalty box for identities and addresses whose sessions broke the protocol, so a member cut off
for a bad frame cannot come straight back, not even with a fresh identity from the same host.
`GuardedProtocol` applies it to aiohttp's protocol for each accepted socket.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections import Counter
from dataclasses import dataclass

# An honest peer holds one or two sockets to us (each side may dial); several Hearth nodes can
# share one host (tests, several data folders). A host past this is refused at accept.
MAX_CONNECTIONS_PER_ADDRESS = 16
MAX_CONNECTIONS = 256  # well under the usual 1,024 file descriptors
# From accept to the WebSocket upgrade: a half-sent request is closed after this.
UPGRADE_TIMEOUT_S = 10.0
# A protocol fault (not a timeout) refuses the identity for this long, doubling with each
# further fault up to PENALTY_MAX_S; an address is refused once it caused ADDRESS_FAULTS faults
# within FAULT_WINDOW_S (whatever identities it used), for the same doubling periods.
PENALTY_FIRST_S = 30.0
PENALTY_MAX_S = 3600.0
ADDRESS_FAULTS = 3
FAULT_WINDOW_S = 600.0


@dataclass
class _Record:
    faults: list[float]
    until: float = 0.0
    periods: int = 0


def is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%")[0]).is_loopback
    except ValueError:
        return False


class Guard:
    """With `exempt_loopback` (the default), faults never refuse a loopback address: other
    processes of this computer share it, and whoever runs code here can read the replica."""

    def __init__(self, *, exempt_loopback: bool = True) -> None:
        self.exempt_loopback = exempt_loopback
        self.open: Counter[str] = Counter()
        self._keys: dict[bytes, _Record] = {}
        self._addresses: dict[str, _Record] = {}

    def admit(self, host: str, now: float) -> str | None:
        """Count a new socket from `host`, or say why it is refused (then it is not counted)."""
        wait = self.refused_for(self._addresses.get(host), now)
        if wait:
            return f"address refused for {wait:.0f} s after protocol faults"
        if self.open[host] >= MAX_CONNECTIONS_PER_ADDRESS:
            return f"more than {MAX_CONNECTIONS_PER_ADDRESS} connections from one address"
        if sum(self.open.values()) >= MAX_CONNECTIONS:
            return f"more than {MAX_CONNECTIONS} connections"
        self.open[host] += 1
        return None

    def release(self, host: str) -> None:
        self.open[host] -= 1
        if self.open[host] <= 0:
            del self.open[host]

    def key_refused(self, key: bytes, now: float) -> float:
        """Seconds this identity is still refused for (0 when it is welcome)."""
        return self.refused_for(self._keys.get(key), now)

    def fault(self, host: str | None, key: bytes | None, now: float) -> None:
        """A session from `host` (as `key`, once known) broke the protocol."""
        if key is not None:
            record = self._keys.setdefault(key, _Record([]))
            record.faults.append(now)
            self._penalize(record, now)
        if host is not None and not (self.exempt_loopback and is_loopback(host)):
            record = self._addresses.setdefault(host, _Record([]))
            record.faults = [t for t in record.faults if t > now - FAULT_WINDOW_S] + [now]
            if len(record.faults) >= ADDRESS_FAULTS:
                record.faults.clear()
                self._penalize(record, now)

    @staticmethod
    def _penalize(record: _Record, now: float) -> None:
        record.until = now + min(PENALTY_MAX_S, PENALTY_FIRST_S * 2 ** record.periods)
        record.periods += 1

    @staticmethod
    def refused_for(record: _Record | None, now: float) -> float:
        return max(0.0, record.until - now) if record is not None else 0.0


class GuardedProtocol(asyncio.Protocol):
    """Wraps the protocol aiohttp made for one accepted socket: refuses it at once when the
    guard says so, and closes it if it has not become a WebSocket within UPGRADE_TIMEOUT_S."""

    def __init__(self, guard: Guard, inner: asyncio.Protocol,
                 pending: dict[asyncio.BaseTransport, GuardedProtocol]):
        self._guard = guard
        self._inner = inner
        self._pending = pending
        self._host: str | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._transport: asyncio.BaseTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        host = str(peer[0]) if peer else "?"
        loop = asyncio.get_running_loop()
        if self._guard.admit(host, time.monotonic()) is not None:
            transport.abort()  # before aiohttp reads a byte: nothing to log, nothing held
            return
        self._host, self._transport = host, transport
        self._pending[transport] = self
        self._timer = loop.call_later(UPGRADE_TIMEOUT_S, self._expire)
        self._inner.connection_made(transport)

    def upgraded(self) -> None:
        """The socket became a sync WebSocket: the session's own timeouts take over."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self._pending.pop(self._transport, None)

    def _expire(self) -> None:
        self._timer = None
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._host is None:
            return  # refused at accept
        self.upgraded()
        self._guard.release(self._host)
        self._host = None
        self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)  # type: ignore[attr-defined]

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()  # type: ignore[attr-defined]

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()
