"""The relay process's limits over real sockets (relay/server.py): an outsider gets only a
refusal, a silent peer is dropped, one address cannot hold every connection."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import aiohttp
import pytest

from core.relay_seal import EpochKeys, space_id
from relay.server import Limits, RelayServer, load_or_create_key
from sync.relay_wire import MAX_MESSAGE, PATH, Channel


async def _server(tmp_path: Path, **limits: float) -> tuple[RelayServer, str]:
    server = RelayServer(tmp_path / "relay", limits=Limits(**limits))  # type: ignore[arg-type]
    port = await server.start("127.0.0.1", 0)
    return server, f"ws://127.0.0.1:{port}{PATH}"


def test_an_outsider_gets_a_refusal_and_nothing_else(tmp_path: Path) -> None:
    async def run() -> list:
        server, url = await _server(tmp_path)
        try:
            async with aiohttp.ClientSession() as http, \
                    http.ws_connect(url, max_msg_size=MAX_MESSAGE) as ws:
                channel = Channel(initiator=True, remote_key=server.key)
                await ws.send_bytes(channel.first_message())
                channel.handshake((await ws.receive(timeout=5)).data)
                keys = EpochKeys.derive(0, os.urandom(32))
                for data in channel.encode({"t": "auth", "space": space_id(os.urandom(32)),
                                            "proof": keys.prove(channel.handshake_hash)}):
                    await ws.send_bytes(data)
                frames = []
                while (msg := await ws.receive(timeout=5)).type == aiohttp.WSMsgType.BINARY:
                    frames.append(channel.decode(msg.data))
                return frames
        finally:
            await server.close()
    assert asyncio.run(run()) == [{"t": "bye", "reason": "refused"}]


def test_a_peer_with_the_wrong_key_or_no_proof_is_dropped(tmp_path: Path) -> None:
    async def run() -> tuple[float, aiohttp.WSMsgType]:
        server, url = await _server(tmp_path, auth_timeout_s=0.5)
        try:
            async with aiohttp.ClientSession() as http:
                async with http.ws_connect(url, max_msg_size=MAX_MESSAGE) as ws:
                    wrong = Channel(initiator=True, remote_key=os.urandom(32))
                    await ws.send_bytes(wrong.first_message())
                    garbage = (await ws.receive(timeout=5)).type
                async with http.ws_connect(url, max_msg_size=MAX_MESSAGE) as ws:
                    start = time.monotonic()
                    silent = await ws.receive(timeout=5)  # says nothing: closed at the deadline
                    assert silent.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
                    return time.monotonic() - start, garbage
        finally:
            await server.close()
    waited, garbage = asyncio.run(run())
    assert garbage in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED)
    assert 0.3 < waited < 3.0


def test_one_address_holds_at_most_its_share_of_connections(tmp_path: Path) -> None:
    async def run() -> None:
        server, url = await _server(tmp_path, per_address=2)
        try:
            async with aiohttp.ClientSession() as http:
                first = await http.ws_connect(url)
                second = await http.ws_connect(url)
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await http.ws_connect(url)
                assert refused.value.status == 503
                await first.close()
                await asyncio.sleep(0.2)
                third = await http.ws_connect(url)
                await second.close()
                await third.close()
        finally:
            await server.close()
    asyncio.run(run())


def test_the_key_file_is_private_and_kept(tmp_path: Path) -> None:
    key = load_or_create_key(tmp_path / "r")
    assert load_or_create_key(tmp_path / "r") == key
    assert (tmp_path / "r" / "relay.key").stat().st_mode & 0o077 == 0
    os.chmod(tmp_path / "r" / "relay.key", 0o644)
    with pytest.raises(OSError):
        load_or_create_key(tmp_path / "r")
