"""Members syncing through a real relay process on 127.0.0.1 (relay/, sync.relay_client).

A posts while B is offline, B later downloads and ingests; the relay's files never hold a
marker posted in a channel and in a private channel; after a removal and a rotation the
removed member's token is refused; a relay that drops and replays envelopes cannot make a
member accept anything unsigned, and members still converge.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from app import relays
from app.workspace import Workspace, WorkspaceError
from core.encoding import object_id
from core.objects import build, decode
from core.relay_seal import Envelope, EpochKeys, space_id
from relay.server import RelayServer
from relay.store import RelayStore
from storage import Status
from sync.relay_client import RelayAddress
from tests.support import channels, make_members, two_members

from .hostile_relay import HostileStore, hostile_server
from .relaying import relay_files_contain, relay_process, sync_through

MARKER = "quokka-marker-5c1e"


def test_a_posts_while_b_is_offline_and_b_reads_it_later(tmp_path: Path) -> None:
    pa, pb = two_members(tmp_path)
    with relay_process(tmp_path / "relay") as relay, Workspace.open(pa) as a:
        with Workspace.open(pb) as b0, pytest.raises(WorkspaceError):  # not an admin
            relays.add_relay(b0, f"127.0.0.1:{relay.port}", relay.key.hex())
        relays.add_relay(a, f"127.0.0.1:{relay.port}", relay.key.hex())
        assert [r.address for r in relays.relays(a.replica)] == [relay.address]
        channels(a, "general")
        public = a.post("general", f"in the open {MARKER}")
        private = a.private.post(a.private.create("secrets", [b_key(pb)]),
                                 f"in private {MARKER}")
        state = sync_through(a, relay.address)
        assert state.last_sync and state.uploaded >= a.replica.count() and not state.error
        held_a, port = items(a), relay.port

    # A is offline now; B starts, knowing only what a personal code told it.
    with relay_process(tmp_path / "relay", port=port) as relay, Workspace.open(pb) as b:
        assert not b.replica.has(public.id)
        assert relays.relays(b.replica) == []  # the code told it the relay (not yet here)
        state = sync_through(b, relay.address, addresses=lambda: [relay.address])
        assert state.last_sync and state.downloaded > 0, state
        assert b.replica.has(public.id) and b.replica.has(private.id)
        assert any(m.text == f"in the open {MARKER}" for m in b.replica.messages("general"))
        assert [r.address for r in relays.relays(b.replica)] == [relay.address]  # learnt
        assert held_a <= items(b)
        found = relay_files_contain(relay.folder, MARKER.encode())
        assert found == [], found
    assert relay_files_contain(tmp_path / "relay", MARKER.encode()) == []
    names = {p.name for p in (tmp_path / "relay").iterdir()}
    assert {"relay.db", "relay.key", "relay.log"} <= names


def b_key(paths) -> bytes:
    with Workspace.open(paths) as ws:
        return ws.key


def items(ws: Workspace) -> set[bytes]:
    return {row[0] for row in ws.replica.conn.execute("SELECT id FROM items")}


def test_a_removed_members_token_is_refused_after_the_rotation(tmp_path: Path) -> None:
    pa, pb = two_members(tmp_path)
    with relay_process(tmp_path / "relay") as relay, Workspace.open(pa) as a, \
            Workspace.open(pb) as b:
        relays.add_relay(a, f"127.0.0.1:{relay.port}", relay.key.hex())
        assert sync_through(a, relay.address).last_sync
        assert sync_through(b, relay.address, addresses=lambda: [relay.address]).last_sync
        a.members.remove(b.key, "left the team")
        assert a.members.newest_secret()[0] == 1
        assert sync_through(a, relay.address).last_sync  # the admin moves the space
        state = sync_through(b, relay.address, addresses=lambda: [relay.address], timeout=10)
        assert state.error and "refused" in state.error and not state.connected
        store = RelayStore(relay.folder / "relay.db")
        [space] = store.spaces()
        assert space.epoch == 1 and space.space == space_id(a.id)
        store.close()


def test_a_relay_that_drops_and_replays_cannot_make_a_member_accept_anything(
        tmp_path: Path) -> None:
    pa, pb = two_members(tmp_path)

    async def run(a: Workspace, b: Workspace) -> None:
        (tmp_path / "hostile").mkdir()
        server = hostile_server(tmp_path / "hostile", [])
        hostile = server.store
        assert isinstance(hostile, HostileStore)
        port = await server.start("127.0.0.1", 0)
        address = RelayAddress("127.0.0.1", port, server.key)
        keys = EpochKeys.derive(*a.members.newest_secret())
        forged = build(a.identity, "post/text", stream=decode(public_raw).stream,
                       body={"channel": "general", "text": "forged"}, ts=decode(public_raw).ts)
        at = forged.raw.index(b"\x63sig\x58\x40") + 6
        unsigned = forged.raw[:at] + bytes(64) + forged.raw[at + 64:]  # a signature of zeros
        hostile.extra = [keys.seal(unsigned, 0), Envelope(os.urandom(16), 1, os.urandom(90))]
        results: list = []
        try:
            link_a = relays.link_for(a, lambda: [address])
            await link_a.start()
            assert await link_a.wait_synced(address, 0, 30)
            await link_a.close()

            def ingest(raws: list[bytes]) -> None:
                results.extend(b.replica.ingest(raws))
            for _ in range(10):  # each round asks again for what was dropped
                link_b = relays.link_for(b, lambda: [address], on_objects=ingest)
                start = time.time()
                await link_b.start()
                assert await link_b.wait_synced(address, start, 30)
                await link_b.close()
                if items(a) <= items(b):
                    break
        finally:
            await server.close()
        rejected = [r for r in results if r.status == Status.REJECTED]
        assert rejected, "the unsigned object reached ingest and was turned away"
        assert not b.replica.has(object_id(unsigned))

    with Workspace.open(pa) as a, Workspace.open(pb) as b:
        channels(a, "general")
        sent = [a.post("general", f"m{n}").raw for n in range(40)]
        public_raw = sent[0]
        asyncio.run(run(a, b))
        assert all(b.replica.has(decode(r).id) for r in sent)
        assert items(a) <= items(b)  # nothing of A's is missing once the rounds are over


def test_new_objects_are_pushed_live_to_connected_members(tmp_path: Path) -> None:
    pa, pb = two_members(tmp_path)

    async def run(a: Workspace, b: Workspace) -> float:
        server = RelayServer(tmp_path / "relay")
        port = await server.start("127.0.0.1", 0)
        address = RelayAddress("127.0.0.1", port, server.key)
        arrived = asyncio.Event()
        posted: list[bytes] = []

        def ingest(raws: list[bytes]) -> None:
            b.replica.ingest(raws)
            link_b.offer(raws)  # as the service offers whatever it stores: not sent back
            if posted and b.replica.has(posted[0]):
                arrived.set()
        link_a = relays.link_for(a, lambda: [address])
        link_b = relays.link_for(b, lambda: [address], on_objects=ingest)
        try:
            await link_a.start()
            assert await link_a.wait_synced(address, 0, 30)
            await link_b.start()
            assert await link_b.wait_synced(address, 0, 30)
            assert server.connected(space_id(a.id)) == 2
            sent = link_b.states[address].bytes_sent
            obj = a.post("general", "live through the relay")
            posted.append(obj.id)
            start = time.monotonic()
            link_a.offer([obj.raw])
            await asyncio.wait_for(arrived.wait(), 10)
            took = time.monotonic() - start
            await asyncio.sleep(0.2)
            assert link_b.states[address].bytes_sent == sent  # nothing went back
            return took
        finally:
            await link_a.close()
            await link_b.close()
            await server.close()

    with Workspace.open(pa) as a, Workspace.open(pb) as b:
        channels(a, "general")
        took = asyncio.run(run(a, b))
        assert took < 5.0  # pushed, not waiting for the next round (RECONCILE_INTERVAL_S)


def test_with_two_relays_losing_one_loses_nothing(tmp_path: Path) -> None:
    pa, pb = two_members(tmp_path)

    with relay_process(tmp_path / "relay") as relay, Workspace.open(pa) as a, \
            Workspace.open(pb) as b:
        down = RelayAddress("127.0.0.1", 9, relay.key)  # nothing listens there
        channels(a, "general")
        obj = a.post("general", "through whichever relay is up")
        states = relays.sync_once(a, [down, relay.address], timeout=20)
        assert [bool(s.last_sync) for s in states] == [False, True]
        assert states[0].error and "reach" in states[0].error
        unusable = RelayAddress(relay.host, relay.port, bytes(32))  # a key no relay can have
        states = relays.sync_once(b, [relay.address, down, unusable], timeout=20)
        assert states[0].last_sync and b.replica.has(obj.id)
        assert states[2].error and "not a usable relay key" in states[2].error


def test_an_attached_file_arrives_through_the_relay_identical(tmp_path: Path) -> None:
    import hashlib

    pa, pb = two_members(tmp_path)
    source = tmp_path / "report.bin"
    source.write_bytes(os.urandom(700_000))  # three chunks and a list

    async def run(a: Workspace, b: Workspace, message: bytes, chunk_ids: list[bytes]) -> None:
        server = RelayServer(tmp_path / "relay")
        port = await server.start("127.0.0.1", 0)
        address = RelayAddress("127.0.0.1", port, server.key)
        link_a = relays.link_for(a, lambda: [address])
        link_b = relays.link_for(b, lambda: [address])
        try:
            await link_a.start()
            assert await link_a.wait_synced(address, 0, 30)
            assert await link_a.share_chunks(chunk_ids, a.files.chunks.read) == 4
            # Shared again (the app does every minute): the relay is not even asked.
            state = link_a.states[address]
            before = state.bytes_sent
            assert await link_a.share_chunks(chunk_ids, a.files.chunks.read) == 0
            assert state.bytes_sent == before
            await link_a.close()  # A goes offline
            await link_b.start()
            assert await link_b.wait_synced(address, 0, 30)
            assert b.replica.has(message)
            got = await link_b.fetch_chunks(chunk_ids, timeout=10)
            assert set(got) == set(chunk_ids)
            for cid, data in got.items():
                b.files.chunks.put(cid, data)
            assert await link_b.fetch_chunks([bytes(32)], timeout=5) == {}
        finally:
            await link_b.close()
            await server.close()

    with Workspace.open(pa) as a, Workspace.open(pb) as b:
        channels(a, "general")
        post = a.files.attach("general", [source], "the report")
        list_id = post.body["files"][0]["list"]
        chunk_ids = [list_id, *(a.files.chunk_ids(list_id) or [])]
        assert len(chunk_ids) == 4
        asyncio.run(run(a, b, post.id, chunk_ids))
        saved = b.files.save(post.id, 0, tmp_path / "out")
    assert hashlib.sha256(saved.read_bytes()).digest() == \
        hashlib.sha256(source.read_bytes()).digest()


def test_a_member_who_missed_the_rotation_comes_back_through_the_relay(tmp_path: Path) -> None:
    """A removes C and rotates while B is away; B, reaching only the relay, proves the old
    epoch's token, gets the new epoch's seals handed over, and syncs on under the new epoch;
    C gets the same handover and opens nothing of it."""
    pa, pb, pc = make_members(tmp_path, 3)
    with relay_process(tmp_path / "relay") as relay, Workspace.open(pa) as a, \
            Workspace.open(pb) as b, Workspace.open(pc) as c:
        relays.add_relay(a, f"127.0.0.1:{relay.port}", relay.key.hex())
        channels(a, "general")
        for ws in (a, b, c):
            assert sync_through(ws, relay.address, addresses=lambda: [relay.address]).last_sync
        a.members.remove(c.key, "left the team")
        after = a.post("general", f"after the rotation {MARKER}")
        assert sync_through(a, relay.address).last_sync  # moves the space, leaves the handover
        assert b.members.newest_secret()[0] == 0
        state = sync_through(b, relay.address, addresses=lambda: [relay.address])
        assert state.last_sync and not state.error, state
        assert b.members.newest_secret()[0] == 1 and b.replica.has(after.id)
        refused = sync_through(c, relay.address, addresses=lambda: [relay.address], timeout=10)
        assert refused.error and "refused" in refused.error
        assert c.members.newest_secret()[0] == 0 and not c.replica.has(after.id)
