"""Who may hold a connection to this node, and for how long, before any byte is trusted.

`Guard` is pure bookkeeping (addresses, keys and `now` in; verdicts out): how many sockets one
address and everyone together may hold, how long a socket may take to become a WebSocket, and a
penalty box for identities and addresses whose sessions broke the protocol, so a member cut off
for a bad frame cannot come straight back, not even with a fresh identity from the same host.
`GuardedProtocol` applies it to aiohttp's protocol for each accepted socket.

A socket is *pending* from accept until the sync service accepts its peer's `hello` (a member's
session: `authenticated`). Pending sockets are what an outsider can hold, so they are bounded
per address, per network (/24 for IPv4, /64 for IPv6) and in all (a share of the whole, so
members' sessions keep the rest). A socket that would pass a network's or the pool's bound
takes the place of the oldest pending socket of the address that holds the most there, when
that address holds more than the newcomer's would: an outsider's slow sockets make room for a
member's new one (whose handshake takes milliseconds) instead of shutting it out.
"""

from __future__ import annotations

import asyncio
import ipaddress
import time
from collections import Counter
from dataclasses import dataclass
from typing import cast

# An honest peer holds one or two sockets to us (each side may dial); several Hearth nodes can
# share one host (tests, several data folders). A host past this many pending sockets is refused
# at accept.
MAX_CONNECTIONS_PER_ADDRESS = 16
MAX_PENDING_PER_NETWORK = 32  # pending sockets of one /24 (IPv4) or /64 (IPv6) network
MAX_CONNECTIONS = 256  # well under the usual 1,024 file descriptors
MAX_PENDING = MAX_CONNECTIONS // 2  # pending sockets in all: members' sessions keep the rest
IPV4_PREFIX = 24
IPV6_PREFIX = 64
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


def network(host: str) -> str:
    """The network an address is in, as far as limits go: its /24 (IPv4) or /64 (IPv6)."""
    try:
        address = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    prefix = IPV4_PREFIX if address.version == 4 else IPV6_PREFIX
    return str(ipaddress.ip_network(f"{address}/{prefix}", strict=False))


@dataclass(frozen=True)
class Admitted:
    """The verdict on a new socket: `refused` says why (then it is not counted), `evict` are
    pending sockets (the tokens given to `admit`) to close to make room for it."""

    refused: str | None
    evict: tuple = ()


class Guard:
    """With `exempt_loopback` (the default), faults never refuse a loopback address: other
    processes of this computer share it, and whoever runs code here can read the replica."""

    def __init__(self, *, exempt_loopback: bool = True) -> None:
        self.exempt_loopback = exempt_loopback
        self.open: Counter[str] = Counter()  # every socket, by address
        self._pending: dict[str, dict[object, None]] = {}  # address -> its tokens, oldest first
        self._keys: dict[bytes, _Record] = {}
        self._addresses: dict[str, _Record] = {}

    def pending(self, host: str | None = None) -> int:
        """Pending sockets of `host` (None: of everyone)."""
        if host is not None:
            return len(self._pending.get(host, ()))
        return sum(map(len, self._pending.values()))

    def admit(self, host: str, now: float, token: object = None) -> Admitted:
        """Count a new pending socket from `host` (`token` names it in later calls and
        evictions), or say why it is refused."""
        wait = self.refused_for(self._addresses.get(host), now)
        if wait:
            return Admitted(f"address refused for {wait:.0f} s after protocol faults")
        if self.pending(host) >= MAX_CONNECTIONS_PER_ADDRESS:
            return Admitted(f"more than {MAX_CONNECTIONS_PER_ADDRESS} connections from one "
                            "address")
        evict: list = []
        net = network(host)
        same = [h for h in self._pending if network(h) == net]
        if sum(self.pending(h) for h in same) >= MAX_PENDING_PER_NETWORK:
            victim = self._victim(same, host, evict)
            if victim is None:
                return Admitted(f"more than {MAX_PENDING_PER_NETWORK} connections from one "
                                "network")
            evict.append(victim)
        if self.pending() - len(evict) >= MAX_PENDING \
                or sum(self.open.values()) - len(evict) >= MAX_CONNECTIONS:
            victim = self._victim(list(self._pending), host, evict)
            if victim is None:
                return Admitted(f"more than {MAX_PENDING} connections waiting")
            evict.append(victim)
        if token is None:
            token = object()
        self.open[host] += 1
        self._pending.setdefault(host, {})[token] = None
        for victim in evict:
            self._forget(victim)
        return Admitted(None, tuple(evict))

    def _victim(self, hosts: list[str], newcomer: str, taken: list) -> object | None:
        """The oldest pending socket of the address among `hosts` holding the most, if it
        holds more than `newcomer` would (else None: the newcomer is refused)."""
        counts = {h: self.pending(h) - sum(t in self._pending.get(h, ()) for t in taken)
                  for h in hosts}
        busiest = max(counts, key=lambda h: counts[h], default=None)
        if busiest is None or counts[busiest] <= self.pending(newcomer) + 1:
            return None
        return next(t for t in self._pending[busiest] if t not in taken)

    def _forget(self, token: object) -> None:
        for tokens in self._pending.values():
            tokens.pop(token, None)

    def authenticated(self, host: str, token: object) -> None:
        """The socket's peer is a member whose session was accepted: no longer pending."""
        tokens = self._pending.get(host)
        if tokens is not None:
            tokens.pop(token, None)
            if not tokens:
                del self._pending[host]

    def release(self, host: str, token: object = None) -> None:
        self.authenticated(host, token)
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
        self._transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        peer = transport.get_extra_info("peername")
        host = str(peer[0]) if peer else "?"
        loop = asyncio.get_running_loop()
        verdict = self._guard.admit(host, time.monotonic(), self)
        if verdict.refused is not None:
            # Before aiohttp reads a byte: nothing to log, nothing held.
            cast(asyncio.Transport, transport).abort()
            return
        for victim in verdict.evict:  # pending sockets that make room for this one
            victim.evicted()
        # A listening socket's transports are asyncio.Transports (BaseTransport lacks abort).
        self._host, self._transport = host, cast(asyncio.Transport, transport)
        self._pending[transport] = self
        self._timer = loop.call_later(UPGRADE_TIMEOUT_S, self._expire)
        self._inner.connection_made(transport)

    def upgraded(self) -> None:
        """The socket became a sync WebSocket: the session's own timeouts take over."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._transport is not None:
            self._pending.pop(self._transport, None)

    def authenticated(self) -> None:
        """A member's session was accepted on this socket (sync.service)."""
        if self._host is not None:
            self._guard.authenticated(self._host, self)

    def evicted(self) -> None:
        """The guard gave this pending socket's place to a newer one."""
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()

    def _expire(self) -> None:
        self._timer = None
        if self._transport is not None and not self._transport.is_closing():
            self._transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._host is None:
            return  # refused at accept
        self.upgraded()
        self._guard.release(self._host, self)
        self._host = None
        self._inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self._inner.eof_received()

    def pause_writing(self) -> None:
        self._inner.pause_writing()

    def resume_writing(self) -> None:
        self._inner.resume_writing()
