"""Finding peers on the local network with mDNS (zeroconf's asyncio API).

Each run advertises `_hearth._tcp.local.` under a random instance name, with TXT records for
the protocol version, the port and a membership tag: a random nonce and a keyed hash of it
under the workspace secret. A member recognises the tag; an outsider sees random bytes that
change every run, so it can tell neither which workspace this is nor that two adverts came
from the same computer.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import socket
from collections.abc import Callable

import ifaddr
from zeroconf import IPVersion, ServiceStateChange
from zeroconf.asyncio import AsyncServiceBrowser, AsyncServiceInfo, AsyncZeroconf

from .session import PROTOCOL_VERSION

log = logging.getLogger(__name__)

SERVICE_TYPE = "_hearth._tcp.local."
RESOLVE_TIMEOUT_MS = 3000
CLOSE_TIMEOUT_S = 3.0
_NONCE = 8
_MAC = 16


def membership_tag(secret: bytes, nonce: bytes | None = None) -> str:
    nonce = nonce if nonce is not None else os.urandom(_NONCE)
    mac = hmac.new(secret, b"hearth-mdns/1" + nonce, hashlib.blake2b).digest()[:_MAC]
    return (nonce + mac).hex()


def is_member_tag(secret: bytes, tag: str) -> bool:
    try:
        raw = bytes.fromhex(tag)
    except ValueError:
        return False
    if len(raw) != _NONCE + _MAC:
        return False
    return hmac.compare_digest(membership_tag(secret, raw[:_NONCE]), tag)


def local_ipv4_addresses() -> list[str]:
    return sorted({ip.ip for adapter in ifaddr.get_adapters() for ip in adapter.ips
                   if isinstance(ip.ip, str) and not ip.ip.startswith("169.254.")})


class Discovery:
    """Advertise this node and report members' adverts through `on_peer(host, port)`."""

    def __init__(self, secret: bytes, port: int, on_peer: Callable[[str, int], None], *,
                 interfaces: list[str] | None = None):
        self._secret = secret
        self._port = port
        self._on_peer = on_peer
        self._interfaces = interfaces
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
        self._zc = AsyncZeroconf(interfaces=self._interfaces or addresses,
                                 ip_version=IPVersion.V4Only)
        self._info = AsyncServiceInfo(
            SERVICE_TYPE, f"{self.instance}.{SERVICE_TYPE}",
            addresses=[socket.inet_aton(a) for a in addresses], port=self._port,
            properties={"v": str(PROTOCOL_VERSION), "port": str(self._port),
                        "tag": membership_tag(self._secret)})
        self._announcing = await self._zc.async_register_service(
            self._info, allow_name_change=True)
        self._browser = AsyncServiceBrowser(self._zc.zeroconf, [SERVICE_TYPE],
                                            handlers=[self._on_change])

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
        props = {k.decode(): (v or b"").decode(errors="replace")
                 for k, v in (info.properties or {}).items()}
        if props.get("v") != str(PROTOCOL_VERSION):
            return
        if not is_member_tag(self._secret, props.get("tag", "")):
            log.debug("ignoring advert %s of another workspace", name)
            return
        for address in info.parsed_addresses(IPVersion.V4Only):
            self._on_peer(address, info.port)

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
