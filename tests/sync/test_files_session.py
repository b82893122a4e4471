"""Chunks of attached files on a sync session (sync/_files.py): two sans-I/O sessions wired in
memory (tests/sync/test_session.py's Wire), each over a real ChunkStore holding real chunks made
by core.attachments."""

from __future__ import annotations

import io
import os

import pytest

from core.attachments import MAX_CHUNK, chunk_id, chunks_of, encode_list, file_key
from core.encoding import dumps
from storage.chunks import ChunkStore
from sync._files import (
    CHAT_FIRST_S,
    CHUNK_REPLY_TIMEOUT_S,
    FILES,
    FILES_OUTGOING,
    FILES_PER_CALL,
    MAX_GET_IDS,
    MAX_HOLD_S,
    MAX_QUEUED_GETS,
    ChunkArrived,
    ChunksLacking,
    FilesReady,
    encode_frame,
    split_chunk_frame,
)
from sync.session import ObjectsReceived, Session
from sync.store import MemoryStore
from tests.support import FakeClock

from .session_support import ALICE, BOB, T_START, Wire, closed, connected, inject, rewrite, tap


def make_file(store: ChunkStore, size: int, seed: bytes = b"f") -> tuple[bytes, list[bytes]]:
    """A file of `size` random bytes made into chunks in `store`: (list id, chunk ids)."""
    data = os.urandom(size)
    key = file_key(seed * 32, b"scope")
    ids = []
    for cid, chunk in chunks_of(io.BytesIO(data), key):
        store.put(cid, chunk)
        ids.append(cid)
    listing = encode_list(ids)
    list_id = chunk_id(listing)
    store.put(list_id, listing)
    return list_id, ids


@pytest.fixture
def stores(tmp_path):
    return ChunkStore(tmp_path / "a"), ChunkStore(tmp_path / "b")


def _connected(a_chunks, b_chunks, secret, **kw):
    """Two connected sessions, each over its chunk store (`a` dialled)."""
    clock = FakeClock(T_START)
    a = Session(MemoryStore(), initiator=True, secret=secret, identity=ALICE,
                workspace=b"W" * 32, now=clock.now, chunks=a_chunks, **kw)
    b = Session(MemoryStore(), initiator=False, secret=secret, identity=BOB,
                workspace=b"W" * 32, now=clock.now, chunks=b_chunks, **kw)
    wire = Wire(a, b, clock)
    wire.pump()
    assert a.connected and b.connected
    return a, b, wire, clock


def test_chunks_asked_arrive_checked_and_the_rest_are_said_lacking(stores, secret):
    a_chunks, b_chunks = stores
    list_id, ids = make_file(b_chunks, 3 * 256 * 1024 + 100)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    assert wire.events(a, FilesReady) and wire.events(b, FilesReady)
    assert a.files.ready and FILES in a.peer_caps
    absent = os.urandom(32)
    asked = a.files.request_chunks([list_id, *ids, absent, ids[0]], clock.now)
    assert asked == [list_id, *ids, absent]  # each once
    assert a.files.in_flight == len(asked)
    wire.pump()
    arrived = wire.events(a, ChunkArrived)
    assert [e.id for e in arrived] == [list_id, *ids]
    assert all(e.data == b_chunks.read(e.id) for e in arrived)
    assert wire.events(a, ChunksLacking) == [ChunksLacking((absent,))]
    assert a.files.in_flight == 0 and a.get_timer() is not None
    assert a.connected and b.connected
    # The session only reports: nothing is stored on the asking side by it.
    assert not a_chunks.has(ids[0])


def test_a_peer_without_a_chunk_store_is_never_asked(stores, secret):
    a, b, wire, clock = connected(secret=secret)
    assert not a.files.ready and FILES not in a.peer_caps
    assert a.files.request_chunks([os.urandom(32)], clock.now) == []
    assert wire.events(a, FilesReady) == []


def _flipping_a_bit_of(cid: bytes):
    """A frame rewrite: the chunk `cid` arrives with its last bit flipped."""
    def corrupt(frame):
        if frame.get("t") == "chunk" and frame["id"] == cid:
            return frame | {"data": frame["data"][:-1] + bytes([frame["data"][-1] ^ 1])}
        return frame
    return corrupt


def test_a_chunk_that_does_not_hash_to_its_id_cuts_the_peer_off(stores, secret):
    a_chunks, b_chunks = stores
    list_id, ids = make_file(b_chunks, 600 * 1024)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)

    rewrite(b, _flipping_a_bit_of(ids[1]))
    a.files.request_chunks(ids, clock.now)
    wire.pump()
    ended = closed(wire, a)
    assert ended.fault and "does not hash" in ended.reason
    assert [e.id for e in wire.events(a, ChunkArrived)] == ids[:1]  # the bad one never


def test_a_session_that_leaves_the_hash_to_its_fetcher_marks_chunks_unchecked(stores, secret):
    a_chunks, b_chunks = stores
    list_id, ids = make_file(b_chunks, 600 * 1024)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)

    rewrite(b, _flipping_a_bit_of(ids[1]))
    a.files.check_chunks = False  # what the fetcher does: it hashes each in its store thread
    a.files.request_chunks(ids, clock.now)
    wire.pump()
    arrived = wire.events(a, ChunkArrived)
    assert [e.id for e in arrived] == ids and a.connected
    assert not any(e.checked for e in arrived)  # so whoever takes them must hash them
    assert chunk_id(arrived[1].data) != ids[1]


@pytest.mark.parametrize("bad", [
    {"t": "chunk", "id": b"x" * 31, "data": b""},
    {"t": "chunk", "id": b"x" * 32},
    {"t": "chunk", "id": b"x" * 32, "data": "text"},
    {"t": "chunk", "id": b"x" * 32, "data": b"", "more": 1},
    {"t": "nochunk", "ids": []},
    {"t": "nochunk", "ids": [b"x" * 32] * (MAX_GET_IDS + 1)},
    {"t": "get", "ids": [b"x" * 33]},
    {"t": "get", "ids": [b"x" * 32] * (MAX_GET_IDS + 1)},
    {"t": "get", "ids": b"x" * 32},
])
def test_malformed_chunk_frames_are_faults(stores, secret, bad):
    a, b, wire, clock = _connected(*stores, secret)
    inject(b, a, [b"\x01" + dumps(bad)], clock.now)
    wire.drain(a)
    ended = closed(wire, a)
    assert ended.fault and "malformed frame" in ended.reason


def test_an_answer_nobody_asked_for_is_a_fault(stores, secret):
    a_chunks, b_chunks = stores
    _, ids = make_file(b_chunks, 1000)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    data = b_chunks.read(ids[0])
    inject(b, a, [b"\x01" + dumps({"t": "chunk", "id": ids[0], "data": data})], clock.now)
    wire.drain(a)
    assert closed(wire, a).fault


def test_a_get_to_a_peer_without_files_is_a_fault(secret):
    a, b, wire, clock = connected(secret=secret)
    inject(a, b, [b"\x01" + dumps({"t": "get", "ids": [b"x" * 32]})], clock.now)
    wire.drain(b)
    assert closed(wire, b).fault


def test_a_request_flood_is_cut_off(stores, secret):
    a, b, wire, clock = _connected(*stores, secret)
    get = b"\x01" + dumps({"t": "get", "ids": [os.urandom(32)]})
    inject(a, b, [get] * MAX_QUEUED_GETS, clock.now)
    wire.drain(b)
    assert b.connected  # as many as it may queue
    inject(a, b, [get], clock.now)
    wire.drain(b)
    ended = closed(wire, b)
    assert ended.fault and "without reading" in ended.reason


def test_a_peer_that_asks_and_never_reads_costs_bounded_memory(stores, secret):
    a_chunks, b_chunks = stores
    _, ids = make_file(b_chunks, 40 * 256 * 1024)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    a.files.request_chunks(ids[:MAX_GET_IDS], clock.now)
    for data in a.data_to_send():
        b.receive(data, clock.now)
    # b reads chunks only as its output drains: each batch stays under the budget.
    sent = [sum(len(m) for m in b.data_to_send()) for _ in range(3)]
    assert all(0 < size <= FILES_OUTGOING + MAX_CHUNK + 4096 for size in sent), sent
    assert b.has_output  # more owed, produced only when asked again


def test_objects_go_before_chunks_still_owed(stores, secret, chat):
    a_chunks, b_chunks = stores
    _, ids = make_file(b_chunks, 24 * 256 * 1024)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    frames = tap(a)
    a.files.request_chunks(ids[:16], clock.now)
    for data in a.data_to_send():
        b.receive(data, clock.now)
    first = b.data_to_send()  # the first FILES_OUTGOING bytes of chunks
    post = chat.post("alice", "general", "while a file moves")
    b.outbox.push([post.raw], [post.id])
    for data in first + b.data_to_send():
        a.receive(data, clock.now)
        wire.drain(a)
    wire.pump()
    kinds = [f["t"] for f in frames]
    objs_at = kinds.index("objs")
    assert 0 < kinds[:objs_at].count("chunk") < 16  # some chunks went before the push...
    assert kinds.count("chunk") == 16  # ...and the rest after it
    assert [e.raws for e in wire.events(a, ObjectsReceived)] == [[post.raw]]


def test_asks_left_unanswered_time_out_without_a_fault(stores, secret):
    a_chunks, b_chunks = stores
    _, ids = make_file(b_chunks, 1000)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    wire.silence = b
    a.files.request_chunks(ids, clock.now)
    wire.run_until(clock.now + CHUNK_REPLY_TIMEOUT_S + 1)
    ended = closed(wire, a)
    assert not ended.fault and "chunks" in ended.reason


def test_closing_forgets_what_the_peer_asked(stores, secret):
    a_chunks, b_chunks = stores
    _, ids = make_file(b_chunks, 8 * 256 * 1024)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    a.files.request_chunks(ids, clock.now)
    for data in a.data_to_send():
        b.receive(data, clock.now)
    assert b.has_output
    b.close("bye")
    assert not b.has_output and b.data_to_send()  # the bye, and no chunk after it
    assert b.files.chunks_sent == 0


@pytest.mark.parametrize("size", [0, 23, 24, 255, 256, 65535, 65536, MAX_CHUNK])
def test_a_chunk_frame_is_read_in_place_as_cbor2_reads_it(size):
    import cbor2

    frame = {"t": "chunk", "id": os.urandom(32), "data": os.urandom(size)}
    encoded = bytearray(encode_frame(frame))
    assert bytes(encoded) == dumps(frame) and cbor2.loads(encoded) == frame
    cid, data = split_chunk_frame(encoded)
    assert (cid, bytes(data)) == (frame["id"], frame["data"])
    # Not a chunk frame, or not canonical (a longer head than the size needs): decoded the
    # usual way, which refuses what is not canonical.
    assert split_chunk_frame(dumps({"t": "get", "ids": [frame["id"]]})) is None
    head = len(encoded) - size - (1 if size < 24 else 2 if size < 256 else 3 if size < 65536
                                  else 5)
    if size >= 65536:
        longer = encoded[:head] + bytes([0x5b]) + size.to_bytes(8, "big") + frame["data"]
    else:
        longer = encoded[:head] + bytes([0x5a]) + size.to_bytes(4, "big") + frame["data"]
    assert cbor2.loads(longer) == frame and split_chunk_frame(longer) is None


def _asked_of_b(stores, secret, count):
    a_chunks, b_chunks = stores
    _, ids = make_file(b_chunks, count * 256 * 1024)
    a, b, wire, clock = _connected(a_chunks, b_chunks, secret)
    a.files.request_chunks(ids, clock.now)
    for data in a.data_to_send():
        b.receive(data, clock.now)
    return a, b, clock


def test_a_send_makes_one_chunk_so_other_work_waits_for_one_at_most(stores, secret):
    a, b, clock = _asked_of_b(stores, secret, 6)
    for turn in range(1, 4):
        b.data_to_send(clock.now)
        assert b.files.chunks_sent == turn * FILES_PER_CALL
        assert b.has_output  # the rest go on the next turns


def test_chunks_wait_while_objects_move_either_way_and_one_still_goes_now_and_then(
        stores, secret, chat):
    a, b, clock = _asked_of_b(stores, secret, 16)
    frames = tap(a)

    def b_sends(now=clock.now):  # every message reaches a, in order
        for data in b.data_to_send(now):
            a.receive(data, clock.now)

    b_sends(clock.now)
    assert b.files.chunks_sent == 1
    # A post pushed: it goes, and no chunk for CHAT_FIRST_S after it.
    post = chat.post("bob", "general", "while a file moves")
    b.outbox.push([post.raw], [post.id])
    b.files.chat_moved(clock.now)
    b_sends(clock.now)
    assert [f["t"] for f in frames] == ["chunk", "objs"] and b.files.chunks_sent == 1
    assert not b.has_output  # nothing to send now: the timer says when
    assert b.get_timer() == pytest.approx(clock.now + CHAT_FIRST_S)
    clock.advance(CHAT_FIRST_S / 2)
    b_sends(clock.now)
    assert b.files.chunks_sent == 1
    clock.advance(CHAT_FIRST_S / 2)
    b_sends(clock.now)
    assert b.files.chunks_sent == 2 and b.has_output
    # Objects from the peer hold them too; endless chat still lets one go every MAX_HOLD_S.
    sent_at = clock.now
    reply = chat.post("alice", "general", "a reply")
    a.outbox.push([reply.raw], [reply.id])
    while clock.now < sent_at + MAX_HOLD_S:
        for data in a.data_to_send():
            b.receive(data, clock.now)
        b_sends(clock.now)
        assert b.files.chunks_sent == 2, clock.now - sent_at
        clock.advance(CHAT_FIRST_S / 4)
        again = chat.post("alice", "general", f"more at {clock.now}")
        a.outbox.push([again.raw], [again.id])
    for data in a.data_to_send():
        b.receive(data, clock.now)
    b_sends(clock.now)
    assert b.files.chunks_sent == 3
    # With no clock given (the sans-I/O tests' wire), nothing is held.
    b.files.chat_moved(clock.now)
    b_sends(None)
    assert b.files.chunks_sent == 4
    assert a.connected and b.connected
    assert a.stats.objects_received == 1 and frames.count(None) == 0
