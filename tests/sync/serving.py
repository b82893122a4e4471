"""Helpers of the serving-limits tests (issue #28): a replica filled fast with real signed
posts, and test-driven peers speaking from a chosen 127.x.y.z address (the whole 127/8 is
loopback on Linux, so each stands for another computer on the network)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time

import aiohttp

from app.paths import Paths
from app.workspace import Workspace
from core import kinds
from core.identity import Identity
from core.objects import authored
from sync import connection as conn_mod
from sync._negentropy_wire import Bound, Message, Mode, Range, encode_message
from sync.session import NEG_MAX_RANGES, Session
from sync.store import MemoryStore

from .nodes import CHANNEL, LOCAL, TIMEOUT_S, RawPeer

BATCH = 1000
FLOOD_SEND_S = 0.5  # a flood frame the socket does not take within this: the node is not reading


def fill(paths: Paths, count: int, *, size: int = 200, channel: str = CHANNEL) -> list[bytes]:
    """`count` posts of about `size` bytes by the member of `paths`, in `channel`, stored in
    batches through the one path (no Node running); returns their ids, oldest first."""
    ids: list[bytes] = []
    with Workspace.open(paths) as ws:
        stream = kinds.channel_stream(ws.id, channel)
        heads = ws.replica.heads(stream)
        now_ms = int(time.time() * 1000)
        for start in range(0, count, BATCH):
            objects = []
            for n in range(start, min(count, start + BATCH)):
                text = f"post {n} " + "x" * max(0, size - 12)
                obj = authored(ws.identity, "post/text", stream=stream,
                               body={"channel": channel, "text": text},
                               now_ms=now_ms + n, heads=heads)
                heads = [(obj.id, obj.ts)]
                objects.append(obj)
            ws.add_own(objects)
            ids += [o.id for o in objects]
    return ids


async def raw_peer(port: int, *, secret: bytes, workspace: bytes, identity: Identity,
                   source: str = LOCAL, store: MemoryStore | None = None) -> RawPeer:
    """A RawPeer whose socket speaks from `source`; its http session closes with its socket."""
    http = aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=(source, 0)))
    try:
        ws = await conn_mod.connect(http, LOCAL, port)
    except BaseException:
        await http.close()
        raise
    session = Session(store or MemoryStore(), initiator=True, secret=secret, identity=identity,
                      workspace=workspace, now=time.monotonic(), reconcile_interval=None)
    peer = RawPeer(session, ws)
    peer.http = http  # type: ignore[attr-defined]
    return peer


async def hello(peer: RawPeer) -> None:
    """Drive the handshake until the session is open (or closed: refused)."""
    await peer.pump(lambda: peer.session.connected or peer.session.closed, timeout=TIMEOUT_S)


async def close(peer: RawPeer) -> None:
    await peer.ws.close()
    await peer.http.close()  # type: ignore[attr-defined]


async def until_closed(peer: RawPeer) -> str:
    """Read what the node sends until it closes the session; returns how it ended."""
    await peer.pump(lambda: peer.session.closed, timeout=TIMEOUT_S)
    event = peer.closed_event
    return event.reason if event is not None else "?"


def run(coro):
    return asyncio.run(coro)


def flood_message(first_ts: int, last_ts: int) -> bytes:
    """A negentropy message of NEG_MAX_RANGES fingerprint ranges spread over `first_ts` to
    `last_ts`, each with a fingerprint no replica has (so each is split in the reply)."""
    step = max(1, (last_ts - first_ts) // NEG_MAX_RANGES)
    return encode_message(Message(tuple(
        Range(Bound(first_ts + n * step), Mode.FINGERPRINT, os.urandom(16))
        for n in range(NEG_MAX_RANGES))))


def flood_main(port, secret, workspace, identity_file, stream, first_ts, last_ts, reads,
               connected, stop, sent) -> None:
    """(A process of its own) a member's `neg` flood: frames of NEG_MAX_RANGES ranges as fast
    as the node takes them, until `stop` is set; `reads`: it reads (and drops) the replies,
    else it never reads one."""
    asyncio.run(_flood(port, secret, workspace, Identity.load(identity_file), stream,
                       flood_message(first_ts, last_ts), reads, connected, stop, sent))


async def _drop_replies(peer: RawPeer) -> None:
    while not peer.ws.closed:
        await peer.ws.receive()


async def _flood(port, secret, workspace, identity, stream, message, reads, connected, stop,
                 sent) -> None:
    peer = await raw_peer(port, secret=secret, workspace=workspace, identity=identity)
    reader = None
    try:
        await hello(peer)
        if not peer.session.connected:
            return
        if reads:
            reader = asyncio.ensure_future(_drop_replies(peer))
        connected.set()
        while not stop.is_set() and not peer.session.closed:
            peer.session.send_frame({"t": "neg", "r": 1, "s": stream, "d": 0,
                                      "l": 512 * 1024, "m": message})
            for data in peer.session.data_to_send():
                await asyncio.wait_for(peer.ws.send_bytes(data), FLOOD_SEND_S)
            sent.value += 1
    except (TimeoutError, ConnectionError):
        # The node stopped reading and the socket is full: what TCP holds waits there.
        await asyncio.get_running_loop().run_in_executor(None, stop.wait)
    finally:
        connected.set()
        if reader is not None:
            reader.cancel()
        with contextlib.suppress(TimeoutError):  # a node not reading takes no close either
            await asyncio.wait_for(close(peer), FLOOD_SEND_S)
