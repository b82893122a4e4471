"""Framing of sync sessions: hostile, oversized, non-canonical and out-of-order frames and hellos
close a session as a protocol fault (sync.session)."""



import pytest

from core.encoding import dumps
from sync.session import (
    CHUNK,
    MAX_FRAME,
    MAX_NOISE_MESSAGE,
    Closed,
    Connected,
    ObjectsReceived,
    Session,
)
from sync.store import MemoryStore
from tests.support import FakeClock

from .session_support import (
    BOB,
    T_START,
    closed,
    connected,
    drain_all,
    frame,
    held,
    ids,
    inject,
    rewrite,
    sessions,
)

# Framing --------------------------------------------------------------------------------------


def test_frames_over_64_kib_are_chunked_and_arrive_whole(chat, secret):
    a, b, wire, clock = connected(secret=secret)
    big = [chat.post("bob", "dev", f"{n:04d}" + "y" * 4000) for n in range(75)]
    total = sum(len(o.raw) for o in big)
    assert total > 300_000
    a.store.add(big)
    a.outbox.push([o.raw for o in big], [o.id for o in big])
    out = a.data_to_send()
    assert all(len(data) <= MAX_NOISE_MESSAGE for data in out)
    assert max(len(data) for data in out) == MAX_NOISE_MESSAGE  # full chunks
    for data in out:
        b.receive(data, clock.now)
    wire.drain(b)
    batches = wire.events(b, ObjectsReceived)
    assert sum(len(e.raws) for e in batches) == len(big)
    assert max(sum(map(len, e.raws)) for e in batches) > 64 * 1024  # one frame of > 64 KiB
    assert [r for e in batches for r in e.raws] == [o.raw for o in big]  # in order, intact
    assert held(b.store) >= ids(big)
    assert not b.closed


def test_a_frame_over_the_limit_closes_the_session(secret):
    assert MAX_FRAME == 1 << 20  # 1 MiB of reassembled chunks
    a, evil, wire, clock = connected(secret=secret)
    chunk = b"\x00" + b"z" * CHUNK  # "more chunks follow", never a last one
    count = MAX_FRAME // CHUNK  # just under the limit: still open
    inject(evil, a, [chunk] * count, clock.now)
    assert not a.closed
    inject(evil, a, [chunk], clock.now)
    wire.drain(a)
    verdict = closed(wire, a)
    assert verdict.error and "1048576 bytes" in verdict.reason and "larger" in verdict.reason


def _bad_canonical_frame() -> bytes:
    # {"t": "ping"} with a non-shortest length header: CBOR, but not canonical.
    return b"\x01\xa1\x61t\x78\x04ping"


HOSTILE = {
    "malformed CBOR": ([b"\x01\xff\xfe\x00"], "malformed frame"),
    "non-canonical CBOR": ([_bad_canonical_frame()], "malformed frame"),
    "not a map": ([frame([1, 2, 3])], "malformed frame: no type"),
    "type not text": ([frame({"t": 7})], "malformed frame: no type"),
    "unknown type": ([frame({"t": "launch"})], "unknown frame type 'launch'"),
    "hello twice": ([frame({"t": "hello", "v": 1, "key": bytes(32), "sig": bytes(64),
                            "ws": b"W" * 32})], "hello twice"),
    "bad chunk flag": ([b"\x02" + dumps({"t": "ping"})], "chunk flag"),
    "empty chunk": ([b""], "chunk flag"),
    "neg fields": ([frame({"t": "neg", "r": "1", "m": b"a"})], "neg fields"),
    "want ids": ([frame({"t": "want", "ids": [b"short"]})], "want ids"),
    "want fields": ([frame({"t": "want", "ids": [], "x": 1})], "want fields"),
    "objs raws": ([frame({"t": "objs", "raws": ["text"]})], "raws"),
    # Version 1's deletion claims: a peer's word is no longer taken for anything.
    "gone claim": ([frame({"t": "gone", "items": [[1, bytes(32)]]})],
                   "unknown frame type 'gone'"),
    "done nobody asked for": ([frame({"t": "done"})], "done without a want"),
    "neg reply nobody asked for": ([frame({"t": "neg", "r": 9, "s": bytes(32), "d": 0, "l": 4096, "m": b"\x61"})],
                                   "unexpected reconciliation reply"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_hostile_frames_close_with_a_readable_reason(secret, case):
    plaintexts, expected = HOSTILE[case]
    a, evil, wire, clock = connected(secret=secret)
    inject(evil, a, plaintexts, clock.now)
    wire.drain(a)
    verdict = closed(wire, a)
    assert verdict.error and expected in verdict.reason, verdict
    a.receive(evil.handshake.noise.encrypt(frame({"t": "ping"})), clock.now)  # ignored once closed
    assert a.data_to_send() == [] and drain_all(a) == []


def test_a_frame_type_naming_an_internal_method_is_unknown(secret):
    a, evil, wire, clock = connected(secret=secret)
    inject(evil, a, [frame({"t": "frame"})], clock.now)
    wire.drain(a)
    assert closed(wire, a) == Closed("unknown frame type 'frame'", True, fault=True)


def test_garbage_negentropy_message_closes_the_responder(secret):
    evil, b, wire, clock = connected(secret=secret)  # evil dials; b answers rounds
    inject(evil, b, [frame({"t": "neg", "r": 5, "s": bytes(32), "d": 0, "l": 4096, "m": b"\x61\x05"})], clock.now)
    wire.drain(b)
    verdict = closed(wire, b)
    assert verdict.error and "bad reconciliation message" in verdict.reason


def test_a_websocket_message_larger_than_a_noise_message_is_refused(secret):
    a, evil, wire, clock = connected(secret=secret)
    a.receive(b"\x00" * (MAX_NOISE_MESSAGE + 1), clock.now)
    wire.drain(a)
    assert closed(wire, a).error and "Noise message" in closed(wire, a).reason


def test_oversize_handshake_message_is_refused(secret):
    clock = FakeClock(T_START)
    b = Session(MemoryStore(), initiator=False, secret=secret, identity=BOB,
                workspace=b"W" * 32, now=clock.now)
    b.receive(b"\x00" * 5000, clock.now)
    [verdict] = drain_all(b)
    assert verdict.error and "handshake message too large" in verdict.reason


@pytest.mark.parametrize("frame_t", ["ping", "neg", "objs"])
def test_a_frame_before_hello_is_refused(secret, frame_t):
    clock = FakeClock(T_START)
    a, b, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    replacement = {"ping": {"t": "ping"}, "neg": {"t": "neg", "r": 1, "s": bytes(32), "d": 0, "l": 4096, "m": b"\x61"},
                   "objs": {"t": "objs", "raws": []}}[frame_t]
    rewrite(a, lambda f: replacement if f["t"] == "hello" else f)
    wire.pump()
    verdict = closed(wire, b)
    assert verdict == Closed(f"malformed frame: {frame_t} before hello", True, fault=True)
    assert not wire.events(b, Connected)


HELLOS = {
    "extra field": (lambda f: {**f, "x": 1}, "hello fields"),
    "missing sig": (lambda f: {k: v for k, v in f.items() if k != "sig"}, "hello fields"),
    "short key": (lambda f: {**f, "key": f["key"][:31]}, "hello key"),
    "key as text": (lambda f: {**f, "key": f["key"].hex()}, "hello key"),
    "short sig": (lambda f: {**f, "sig": f["sig"][:10]}, "hello sig"),
    "other version": (lambda f: {**f, "v": 1}, "sync protocol 1"),
    "other workspace": (lambda f: {**f, "ws": b"V" * 32}, "another workspace"),
}


@pytest.mark.parametrize("case", list(HELLOS))
def test_a_hello_with_wrong_fields_is_refused(secret, case):
    change, expected = HELLOS[case]
    clock = FakeClock(T_START)
    a, b, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    rewrite(b, lambda f: change(f) if f["t"] == "hello" else f)
    wire.pump()
    verdict = closed(wire, a)
    assert verdict.error and expected in verdict.reason, verdict
    # Another version or workspace is refused but not counted against the peer.
    assert verdict.fault == (case not in ("other version", "other workspace")), verdict
    assert not wire.events(a, Connected)


def test_a_peer_in_another_workspace_is_refused_by_both(secret):
    clock = FakeClock(T_START)
    a, b, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret, ws_b=b"V" * 32)
    wire.pump()
    assert closed(wire, a).error and closed(wire, b).error
    assert "another workspace" in closed(wire, b).reason  # b read a's hello first


def test_protocol_error_closes_on_the_peers_account(secret):
    a, b, wire, clock = connected(secret=secret)
    a.protocol_error("unexpected TEXT message")
    assert drain_all(a) == [Closed("unexpected TEXT message", True, fault=True)]
    assert a.closed and not a.connected and a.get_timer() is None
    a.protocol_error("again")
    a.close()
    assert drain_all(a) == []
