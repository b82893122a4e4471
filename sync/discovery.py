"""Finding peers on the local network with mDNS (zeroconf's asyncio API).

Each run advertises `_hearth._tcp.local.` under a random instance name, with TXT records for
the protocol version, the port, the addresses to dial, the hour, and a membership tag: a random
nonce and a keyed hash, under the workspace secret, of the nonce, the port, the addresses and
the hour. A member recognises the tag and dials only the addresses and port it covers; an
outsider sees random bytes that change every run, so it can tell neither which workspace this
is nor that two adverts came from the same computer, and an advert it replays can only point
at the member that made it, for an hour or two.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import ipaddress
import logging
import os
import socket
import time
from collections.abc import Callable

import ifaddr
from zeroconf import IPVersion, ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from .session import PROTOCOL_VERSION

log = logging.getLogger(__name__)

SERVICE_TYPE = "_hearth._tcp.local."
RESOLVE_TIMEOUT_MS = 3000
CLOSE_TIMEOUT_S = 3.0
TAG_PERIOD_S = 3600  # an advert names its hour; members accept the hour before and after too
REFRESH_S = TAG_PERIOD_S / 2
MAX_ADVERT_ADDRESSES = 16
_NONCE = 8
_MAC = 16


def _signed(port: int, addresses: list[str], period: int) -> bytes:
    return f"{port}|{','.join(addresses)}|{period}".encode()


def membership_tag(secret: bytes, port: int, addresses: list[str], period: int,
                   nonce: bytes | None = None) -> str:
    nonce = nonce if nonce is not None else os.urandom(_NONCE)
    mac = hmac.new(secret, b"hearth-mdns/2" + nonce + _signed(port, addresses, period),
                   hashlib.blake2b).digest()[:_MAC]
    return (nonce + mac).hex()


def advert(secret: bytes, port: int, addresses: list[str], now: float) -> dict[str, str]:
    """The TXT properties of this node's advert at wall-clock time `now`."""
    addresses = sorted(addresses)[:MAX_ADVERT_ADDRESSES]
    period = int(now // TAG_PERIOD_S)
    return {"v": str(PROTOCOL_VERSION), "port": str(port), "a": ",".join(addresses),
            "p": str(period), "tag": membership_tag(secret, port, addresses, period)}


def members_in(secret: bytes, props: dict[str, str], now: float) -> list[tuple[str, int]]:
    """The (address, port) pairs a member's advert asks to be dialled at; [] for an advert
    of another workspace, a forged or altered one, or one replayed after its hours."""
    try:
        raw = bytes.fromhex(props["tag"])
        port, period = int(props["port"]), int(props["p"])
        addresses = props["a"].split(",") if props["a"] else []
    except (KeyError, ValueError):
        return []
    if (len(raw) != _NONCE + _MAC or not 0 < port < 65536
            or abs(period - int(now // TAG_PERIOD_S)) > 1
            or len(addresses) > MAX_ADVERT_ADDRESSES or addresses != sorted(addresses)):
        return []
    expected = membership_tag(secret, port, addresses, period, raw[:_NONCE])
    if not hmac.compare_digest(expected, props["tag"]):
        return []
    return [(address, port) for address in addresses]


def local_ipv4_addresses() -> list[str]:
    return sorted({ip.ip for adapter in ifaddr.get_adapters() for ip in adapter.ips
                   if isinstance(ip.ip, str) and not ip.ip.startswith("169.254.")})


class Discovery:
    """Advertise this node and report members' adverts through `on_peer(host, port)`."""

    def __init__(self, secret: bytes, port: int, on_peer: Callable[[str, int], None], *,
                 interfaces: list[str] | None = None,
                 clock: Callable[[], float] = time.time):
        self._secrets = [secret]  # the newest epoch's first (advertised), then older ones
        self._port = port
        self._on_peer = on_peer
        self._interfaces = interfaces
        self._clock = clock
        self._addresses: list[str] = []
        self.ignored = 0  # adverts seen and not taken (another workspace, forged, replayed)
        self.instance = os.urandom(8).hex()
        self._zc: AsyncZeroconf | None = None
        self._browser: AsyncServiceBrowser | None = None
        self._info: AsyncServiceInfo | None = None
        self._tasks: set[asyncio.Task] = set()
        self._announcing: asyncio.Future | None = None
        self._closed = False

    async def async_start(self) -> None:
        addresses = self._interfaces or [a for a in local_ipv4_addresses()
                                         if a != "127.0.0.1"] or ["127.0.0.1"]
        self._addresses = addresses
        self._zc = AsyncZeroconf(interfaces=self._interfaces or addresses,
                                 ip_version=IPVersion.V4Only)
        self._info = self._service_info()
        # zeroconf hands back its announcing task (typed as an Awaitable): cancelled on close.
        self._announcing = asyncio.ensure_future(await self._zc.async_register_service(
            self._info, allow_name_change=True))
        self._browser = AsyncServiceBrowser(self._zc.zeroconf, [SERVICE_TYPE],
                                            handlers=[self._on_change])
        refresh = asyncio.ensure_future(self._refresh_loop())
        self._tasks.add(refresh)
        refresh.add_done_callback(self._tasks.discard)

    def _service_info(self, name: str | None = None) -> AsyncServiceInfo:
        return AsyncServiceInfo(
            SERVICE_TYPE, name or f"{self.instance}.{SERVICE_TYPE}",
            addresses=[socket.inet_aton(a) for a in self._addresses], port=self._port,
            properties=advert(self._secrets[0], self._port, self._addresses, self._clock()))

    def set_secrets(self, secrets: list[bytes]) -> None:
        """Advertise under the newest epoch's secret (the first) from now on, and recognise
        members' adverts under any of them (a member who has not heard of the newest yet)."""
        if secrets == self._secrets:
            return
        self._secrets = list(secrets)
        if self._zc is not None and self._info is not None and not self._closed:
            self._info = self._service_info(self._info.name)
            task = asyncio.ensure_future(self._zc.async_update_service(self._info))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _refresh_loop(self) -> None:
        """A new tag before the hour the last one names is over."""
        while not self._closed:
            await asyncio.sleep(REFRESH_S)
            if self._zc is not None and self._info is not None:
                self._info = self._service_info(self._info.name)
                with contextlib.suppress(Exception):
                    await self._zc.async_update_service(self._info)

    def _on_change(self, zeroconf, service_type: str, name: str,
                   state_change: ServiceStateChange) -> None:
        if self._closed or state_change is ServiceStateChange.Removed:
            return
        if self._info is not None and name == self._info.name:
            return
        task = asyncio.ensure_future(self._resolve(service_type, name))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _resolve(self, service_type: str, name: str) -> None:
        if self._zc is None:
            return
        info = AsyncServiceInfo(service_type, name)
        if not await info.async_request(self._zc.zeroconf, RESOLVE_TIMEOUT_MS):
            return
        props = {k.decode(errors="replace"): (v or b"").decode(errors="replace")
                 for k, v in (info.properties or {}).items()}
        if props.get("v") != str(PROTOCOL_VERSION):
            return
        found = next((hit for secret in self._secrets
                      if (hit := members_in(secret, props, self._clock()))), [])
        if not found:
            self.ignored += 1
            log.debug("ignoring advert %s of another workspace (or forged, or replayed)", name)
            return
        for address, port in found:
            self._on_peer(address, port)

    async def async_close(self) -> None:
        """Withdraw the advert and stop browsing (idempotent, bounded)."""
        if self._closed:
            return
        self._closed = True
        for task in [*self._tasks, *filter(None, [self._announcing])]:
            task.cancel()
        if self._zc is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._close_zeroconf(), CLOSE_TIMEOUT_S)

    async def _close_zeroconf(self) -> None:
        assert self._zc is not None
        if self._browser is not None:
            await self._browser.async_cancel()
        if self._info is not None:
            goodbye = await self._zc.async_unregister_service(self._info)
            await goodbye  # the goodbye broadcast, so peers drop us now
        await self._zc.async_close()


BROWSE_S = 3.0  # how long a newcomer listens for adverts before trying the members found


async def async_browse(seconds: float = BROWSE_S, *,
                       interfaces: list[str] | None = None) -> list[tuple[str, int]]:
    """Every (address, port) that a Hearth advert on this network asks to be dialled at,
    whatever its workspace: what a newcomer holding an invite code tries, since the code
    holds no secret to recognise members' tags with (the join session is the proof)."""
    addresses = interfaces or [a for a in local_ipv4_addresses() if a != "127.0.0.1"] \
        or ["127.0.0.1"]
    zc = AsyncZeroconf(interfaces=addresses, ip_version=IPVersion.V4Only)
    names: list[str] = []
    found: list[tuple[str, int]] = []

    def seen(zeroconf, service_type: str, name: str, state_change: ServiceStateChange) -> None:
        if state_change is not ServiceStateChange.Removed and name not in names:
            names.append(name)

    browser = AsyncServiceBrowser(zc.zeroconf, [SERVICE_TYPE], handlers=[seen])
    try:
        await asyncio.sleep(seconds)
        for name in names:
            info = AsyncServiceInfo(SERVICE_TYPE, name)
            if not await info.async_request(zc.zeroconf, RESOLVE_TIMEOUT_MS):
                continue
            props = {k.decode(errors="replace"): (v or b"").decode(errors="replace")
                     for k, v in (info.properties or {}).items()}
            try:
                port = int(props.get("port", ""))
            except ValueError:
                continue
            for address in props.get("a", "").split(",")[:MAX_ADVERT_ADDRESSES]:
                with contextlib.suppress(ValueError):  # an address, never a name to look up
                    address = str(ipaddress.IPv4Address(address))
                    if 0 < port < 65536 and (address, port) not in found:
                        found.append((address, port))
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(browser.async_cancel(), CLOSE_TIMEOUT_S)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(zc.async_close(), CLOSE_TIMEOUT_S)
    return found
