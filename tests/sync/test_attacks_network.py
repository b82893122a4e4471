"""Attacks on a running node over real sockets on the loopback range and real zeroconf on the
loopback interface (issue #12, docs/SECURITY.md): an outsider on the LAN, and a member that keeps
breaking the protocol. Attackers speak from 127.0.0.2, honest peers from 127.0.0.1."""

from __future__ import annotations

import asyncio
import os
import select
import socket
import time

import aiohttp
from zeroconf import IPVersion
from zeroconf.asyncio import AsyncServiceInfo, AsyncZeroconf

from core.identity import Identity
from sync import _guard
from sync.discovery import (
    SERVICE_TYPE,
    TAG_PERIOD_S,
    Discovery,
    advert,
    members_in,
)
from tests.support import node_call, node_post, node_service

from .nodes import CHANNEL, LOCAL, TIMEOUT_S, RawPeer, texts, wait_online, wait_until

ATTACKER = "127.0.0.2"


# 7. Slowloris ---------------------------------------------------------------------------------


def _hung_up(sockets: list[socket.socket], timeout: float) -> set[socket.socket]:
    """The sockets the server closed (readable, and reading gives EOF or a reset)."""
    readable, _, _ = select.select(sockets, [], [], timeout)
    out = set()
    for s in readable:
        try:
            if s.recv(1) == b"":
                out.add(s)
        except ConnectionError:
            out.add(s)
    return out


def test_half_sent_requests_are_closed_and_never_crowd_out_members(cluster, monkeypatch):
    """1,100 half-sent HTTP requests from one outsider exhausted the file descriptors and real
    peers could not connect. Now one address holds at most a few sockets, and a socket that
    is not a WebSocket within the upgrade timeout is closed."""
    monkeypatch.setattr(_guard, "UPGRADE_TIMEOUT_S", 5.0)
    pa, pb = cluster.members(2)
    a = cluster.start(pa)
    slow = []
    for _ in range(_guard.MAX_CONNECTIONS_PER_ADDRESS + 24):
        s = socket.create_connection((LOCAL, a.port), timeout=TIMEOUT_S,
                                     source_address=(ATTACKER, 0))
        s.sendall(b"GET /hearth/1 HTTP/1.1\r\nHost: hearth\r\nUpgrade: websock")
        slow.append(s)
    try:
        refused: set[socket.socket] = set()
        deadline = time.monotonic() + TIMEOUT_S
        while len(refused) < 24 and time.monotonic() < deadline:
            refused |= _hung_up([s for s in slow if s not in refused], 0.2)
        assert len(refused) == 24  # everything past the per-address limit, at once
        held = [s for s in slow if s not in refused]
        assert node_call(a, lambda: dict(node_service(a).guard.open)) == {ATTACKER: len(held)}
        b = cluster.start(pb, peers=[a])  # a member still gets in meanwhile
        wait_online(a, b)
        node_post(b, CHANNEL, "through the crowd")
        wait_until(lambda: "through the crowd" in texts(a), what="b's post to reach a")
        closed: set[socket.socket] = set()
        while len(closed) < len(held) and time.monotonic() < deadline:
            closed |= _hung_up([s for s in held if s not in closed], 0.2)
        assert len(closed) == len(held)  # the upgrade timeout closed the half-sent ones
    finally:
        for s in slow:
            s.close()


# The penalty box ------------------------------------------------------------------------------


async def _garbage_then_reconnect(port: int, secret: bytes, workspace: bytes,
                                  identities: list[Identity], *, source: str) -> list[str]:
    """For each identity: a real handshake, then bytes that fail decryption; returns how each
    session ended, as the attacker saw it."""
    reasons = []
    connector = aiohttp.TCPConnector(local_addr=(source, 0))
    async with aiohttp.ClientSession(connector=connector) as http:
        for identity in identities:
            try:
                peer = await RawPeer.connect(http, port, secret=secret, workspace=workspace,
                                             identity=identity)
            except (OSError, aiohttp.ClientError) as exc:
                reasons.append(f"refused at connect: {exc.__class__.__name__}")
                continue
            await peer.pump(lambda p=peer: p.session.connected or p.session.closed)
            if peer.session.connected:
                await asyncio.sleep(0.05)  # let the node finish its side of the hello
                if not peer.session.closed:
                    await peer.send(os.urandom(300))
            await peer.pump(lambda p=peer: p.session.closed)
            reasons.append(peer.closed_event.reason)
    return reasons


def test_an_identity_that_broke_the_protocol_is_refused_for_a_while(cluster):
    pa, pb, pm = cluster.members(3)
    a = cluster.start(pa)
    mallory = Identity.load(pm.identity)  # a member: anyone else is refused at hello anyway
    first, again = asyncio.run(_garbage_then_reconnect(
        a.port, pa.secret.read_bytes(), a.workspace.id, [mallory, mallory], source=LOCAL))
    assert "refused" not in first  # cut off for the bad bytes
    assert "refused for" in again and "protocol faults" in again
    b = cluster.start(pb, peers=[a])  # another member on the same address is welcome
    wait_online(a, b)


def test_an_address_that_keeps_breaking_the_protocol_is_refused_whatever_identity(cluster):
    """A member cut off for a bad frame reconnected at once with a fresh identity (here,
    other members' identities: a key the view does not list is refused at hello)."""
    pa, pb, *others = cluster.members(2 + _guard.ADDRESS_FAULTS + 1)
    a = cluster.start(pa)
    node_call(a, lambda: setattr(node_service(a).guard, "exempt_loopback", False))  # 127.0.0.2 is "the LAN"
    fresh = [Identity.load(p.identity) for p in others]
    reasons = asyncio.run(_garbage_then_reconnect(
        a.port, pa.secret.read_bytes(), a.workspace.id, fresh, source=ATTACKER))
    assert all("refused" not in r for r in reasons[:-1]), reasons
    assert reasons[-1].startswith("refused at connect"), reasons
    b = cluster.start(pb, peers=[a])  # 127.0.0.1 is another address: still welcome
    wait_online(a, b)


# 8. mDNS adverts --------------------------------------------------------------------------------


NOW = 1_900_000_000.0


def test_an_advert_names_only_what_its_tag_covers():
    secret, other = os.urandom(32), os.urandom(32)
    props = advert(secret, 7654, ["192.0.2.7", "192.0.2.5"], NOW)
    assert members_in(secret, props, NOW) == [("192.0.2.5", 7654), ("192.0.2.7", 7654)]
    assert members_in(secret, props, NOW + TAG_PERIOD_S) != []  # a clock an hour apart
    assert members_in(other, props, NOW) == []
    flipped = props["tag"][:-2] + f"{int(props['tag'][-2:], 16) ^ 1:02x}"  # always differs
    for changed in ({"port": "7655"}, {"a": "192.0.2.66"}, {"a": "192.0.2.5,192.0.2.66"},
                    {"p": str(int(props["p"]) + 1)}, {"tag": flipped},
                    {"port": "x"}, {"tag": "zz"}):
        assert members_in(secret, {**props, **changed}, NOW) == [], changed
    assert members_in(secret, props, NOW + 3 * TAG_PERIOD_S) == []  # replayed hours later
    assert members_in(secret, {k: v for k, v in props.items() if k != "a"}, NOW) == []


async def _replay_adverts(secret: bytes) -> tuple[list[tuple[str, int]], int]:
    """A member's Discovery on 127.0.0.1 beside an outsider who re-advertises a real member's
    advert: at its own port, at another address, and as it was three hours ago."""
    found: list[tuple[str, int]] = []
    member = Discovery(secret, 40001, lambda h, p: found.append((h, p)), interfaces=[LOCAL])
    honest = Discovery(secret, 40002, lambda h, p: None, interfaces=[LOCAL])
    outsider = AsyncZeroconf(interfaces=[LOCAL], ip_version=IPVersion.V4Only)
    genuine = advert(secret, 40002, [LOCAL], time.time())
    stale = advert(secret, 40002, [LOCAL], time.time() - 3 * TAG_PERIOD_S)
    fakes = [({**genuine, "port": "40666"}, 40666), ({**genuine, "a": ATTACKER}, 40002),
             (stale, 40002)]
    infos = [AsyncServiceInfo(SERVICE_TYPE, f"replay{n}.{SERVICE_TYPE}",
                              addresses=[socket.inet_aton(ATTACKER)], port=port,
                              properties=props) for n, (props, port) in enumerate(fakes)]
    try:
        for info in infos:
            await outsider.async_register_service(info)
        await member.async_start()
        await honest.async_start()
        deadline = time.monotonic() + TIMEOUT_S
        while (member.ignored < len(fakes) or (LOCAL, 40002) not in found) \
                and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        return found, member.ignored
    finally:
        await member.async_close()
        await honest.async_close()
        await outsider.async_close()


def test_a_replayed_advert_never_makes_members_dial_the_outsider():
    """The tag was bound to nothing: re-advertised by an outsider, it made members dial the
    outsider's host and port."""
    found, ignored = asyncio.run(_replay_adverts(os.urandom(32)))
    assert (LOCAL, 40002) in found  # the honest member was found
    assert ignored >= 3
    assert all(port == 40002 and host == LOCAL for host, port in found), found
