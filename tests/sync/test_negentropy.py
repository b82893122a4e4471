"""Tests for sync.negentropy: reference vectors, properties, malformed input, the harness."""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sync.negentropy import (
    ID_SIZE,
    INFINITY_BOUND,
    MAX_TIMESTAMP,
    PROTOCOL_VERSION,
    Bound,
    Message,
    Mode,
    Negentropy,
    NegentropyError,
    NegentropyStorage,
    Range,
    UnsupportedVersionError,
    VectorStorage,
    decode_message,
    encode_message,
    encode_varint,
    fingerprint_from_sum,
    id_to_int,
)

REPO = Path(__file__).resolve().parents[2]
VECTORS = REPO.parent / "shared" / "data" / "negentropy-v1-vectors.json.gz"
MAX_ROUNDS = 200
FRAME_LIMIT = 4096

Scenario = dict[str, Any]


def _load_scenarios() -> list[Scenario]:
    if not VECTORS.exists():
        return []
    with gzip.open(VECTORS, "rt") as f:
        return json.load(f)["scenarios"]


SCENARIOS = _load_scenarios()
_MISSING = pytest.param(None, marks=pytest.mark.skip(reason=f"reference vectors absent: {VECTORS}"))


def scenarios(*names: str) -> Any:
    """Parametrize over the reference scenarios (all, or those named); skip if absent."""
    chosen = [s for s in SCENARIOS if not names or s["name"] in names]
    params = [pytest.param(s, id=s["name"]) for s in chosen]
    return pytest.mark.parametrize("scenario", params or [_MISSING])


def make_storage(items: Any) -> VectorStorage:
    """A sealed VectorStorage from (timestamp, id bytes or hex) pairs."""
    storage = VectorStorage()
    for timestamp, item_id in items:
        storage.insert(timestamp, bytes.fromhex(item_id) if isinstance(item_id, str) else item_id)
    storage.seal()
    return storage


def messages_of(scenario: Scenario) -> list[bytes]:
    return [bytes.fromhex(m["hex"]) for m in scenario["messages"]]


def reconcile(
    client_storage: NegentropyStorage,
    server_storage: NegentropyStorage,
    frame_size_limit: int = 0,
    **params: int,
) -> tuple[list[bytes], list[bytes], list[bytes]]:
    """Run a whole reconciliation; returns (transcript, have, need)."""
    client = Negentropy(client_storage, frame_size_limit, **params)
    server = Negentropy(server_storage, frame_size_limit, **params)
    message: bytes | None = client.initiate()
    transcript: list[bytes] = []
    have: list[bytes] = []
    need: list[bytes] = []
    for _ in range(MAX_ROUNDS):
        assert message is not None
        transcript.append(message)
        reply = server.reconcile_server(message)
        transcript.append(reply)
        message, step_have, step_need = client.reconcile_client(reply)
        have += step_have
        need += step_need
        if message is None:
            return transcript, have, need
    raise AssertionError(f"no convergence in {MAX_ROUNDS} rounds")


def hexes(ids: list[bytes]) -> list[str]:
    return sorted(i.hex() for i in ids)


# --- (1) fingerprints ------------------------------------------------------------------------


@scenarios()
def test_full_fingerprint_matches_reference(scenario: Scenario) -> None:
    storage = make_storage(scenario["client_items"])
    assert storage.fingerprint(0, storage.size()).hex() == scenario["client_full_fingerprint"]


def test_fingerprint_helper_matches_storage() -> None:
    rng = random.Random(7)
    items = [(rng.randrange(1000), rng.randbytes(ID_SIZE)) for _ in range(300)]
    storage = make_storage(items)
    assert isinstance(storage, NegentropyStorage)
    ids = [item_id for _, item_id in storage.iterate(0, storage.size())]
    for begin, end in [(0, 300), (0, 0), (17, 18), (5, 250), (299, 300)]:
        total = sum(id_to_int(i) for i in ids[begin:end])
        assert storage.fingerprint(begin, end) == fingerprint_from_sum(total, end - begin)


def test_empty_set_fingerprint() -> None:
    # SHA-256 of 32 zero bytes and varint(0), truncated: the reference's empty fingerprint.
    assert fingerprint_from_sum(0, 0).hex() == "7f9c9e31ac8256ca2f258583df262dbc"


# --- (2) message model -----------------------------------------------------------------------


@scenarios()
def test_reference_messages_decode_and_reencode(scenario: Scenario) -> None:
    for message in messages_of(scenario):
        decoded = decode_message(message)
        assert decoded.version == PROTOCOL_VERSION
        assert encode_message(decoded) == message


def test_message_model_example() -> None:
    fingerprint = bytes(range(16))
    message = Message(
        (
            Range(Bound(5), Mode.SKIP),
            Range(Bound(5, b"\xab"), Mode.FINGERPRINT, fingerprint),
            Range(Bound(2**64 - 2, bytes(ID_SIZE)), Mode.ID_LIST, (b"\x01" * ID_SIZE,)),
            Range(INFINITY_BOUND, Mode.ID_LIST, ()),
        )
    )
    encoded = encode_message(message)
    assert encoded[:4] == bytes([0x61, 0x06, 0x00, 0x00])  # ts 5 -> varint 6, empty prefix, skip
    assert encoded[4:7] == bytes([0x01, 0x01, 0xAB])  # same ts -> delta 0 -> varint 1
    assert encoded.endswith(bytes([0x00, 0x00, 0x02, 0x00]))  # infinity, no prefix, empty list
    assert decode_message(encoded) == message


def test_initiate_uses_minimal_bounds() -> None:
    """Buckets end at the shortest bound separating neighbours (32 items -> 16 buckets of 2)."""

    def bounds(items: list[tuple[int, bytes]]) -> list[Bound]:
        ranges = decode_message(Negentropy(make_storage(items)).initiate()).ranges
        assert all(r.mode == Mode.FINGERPRINT for r in ranges)
        return [r.bound for r in ranges]

    shared = b"abc"
    tied = [(7, shared + bytes([k]) + bytes(28)) for k in range(32)]
    assert bounds(tied) == [Bound(7, shared + bytes([k])) for k in range(2, 32, 2)] + [
        INFINITY_BOUND
    ]
    spread = [(10 * k, bytes([255 - k]) * ID_SIZE) for k in range(32)]
    assert bounds(spread) == [Bound(10 * k) for k in range(2, 32, 2)] + [INFINITY_BOUND]
    assert Negentropy(make_storage(tied)).initiate()[1:6] == bytes([8, 4]) + shared


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8100"),
        (16383, "ff7f"),
        (16384, "818000"),
        (2**64 - 1, "81ffffffffffffffff7f"),
    ],
)
def test_varint_encoding(value: int, encoded: str) -> None:
    assert encode_varint(value).hex() == encoded


# --- (3) byte-for-byte against the reference ------------------------------------------------


@scenarios()
def test_reproduces_reference_transcript(scenario: Scenario) -> None:
    transcript, have, need = reconcile(
        make_storage(scenario["client_items"]),
        make_storage(scenario["server_items"]),
        scenario["frame_size_limit"],
    )
    expected = messages_of(scenario)
    assert len(transcript) == len(expected)
    for index, (ours, theirs) in enumerate(zip(transcript, expected, strict=True)):
        assert ours.hex() == theirs.hex(), f"message {index} differs"
    assert hexes(have) == sorted(scenario["client_have"])
    assert hexes(need) == sorted(scenario["client_need"])


@scenarios()
def test_answers_each_reference_message_like_the_reference(scenario: Scenario) -> None:
    """Each side, fed the other side's reference messages, answers with the reference's."""
    limit = scenario["frame_size_limit"]
    messages = messages_of(scenario)
    server = Negentropy(make_storage(scenario["server_items"]), limit)
    client = Negentropy(make_storage(scenario["client_items"]), limit)
    assert client.initiate() == messages[0]
    for index in range(0, len(messages), 2):
        assert server.reconcile_server(messages[index]) == messages[index + 1]
        following = messages[index + 2] if index + 2 < len(messages) else None
        assert client.reconcile_client(messages[index + 1]).next_message == following


@scenarios("one-missing-server", "frame-limit-4096")
def test_client_can_be_rebuilt_for_each_message(scenario: Scenario) -> None:
    """V1 keeps no state between messages: resume_client answers like the original client."""
    limit = scenario["frame_size_limit"]
    storage = make_storage(scenario["client_items"])
    messages = messages_of(scenario)
    have: list[bytes] = []
    for index in range(1, len(messages), 2):
        step = Negentropy.resume_client(storage, limit).reconcile_client(messages[index])
        assert step.next_message == (messages[index + 1] if index + 1 < len(messages) else None)
        have += step.have
    assert hexes(have) == sorted(scenario["client_have"])


def test_unsupported_version_gets_version_byte_reply() -> None:
    # As the reference: a server answers any other 0x6X version with a bare 0x61.
    server = Negentropy(make_storage([(12345, b"\xee" * ID_SIZE)]))
    assert server.reconcile_server(bytes.fromhex("62aabbccddeeff")) == b"\x61"
    assert server.reconcile_server(bytes.fromhex("6000000200")) == b"\x61"
    client = Negentropy(make_storage([]))
    client.initiate()
    with pytest.raises(UnsupportedVersionError) as excinfo:
        client.reconcile_client(b"\x62")
    assert excinfo.value.version == 0x62
    assert client.reconcile_client(b"\x61").next_message is None  # bare reply: nothing to do


# --- (4) properties --------------------------------------------------------------------------

timestamps = st.one_of(
    st.integers(0, 3),  # many ties: bounds need id prefixes
    st.integers(0, MAX_TIMESTAMP - 1),
    st.integers(MAX_TIMESTAMP - 3, MAX_TIMESTAMP - 1),  # 64-bit extremes
)
ids = st.one_of(
    st.binary(min_size=ID_SIZE, max_size=ID_SIZE),
    st.binary(min_size=1, max_size=3).map(
        lambda tail: tail.rjust(ID_SIZE, b"\x00")
    ),  # long prefixes
)
sides = st.sampled_from(["client", "server", "both"])
items_ = st.tuples(timestamps, ids, sides)
item_sets = st.one_of(  # hypothesis favours short lists; the second branch forces range splits
    st.lists(items_, max_size=40, unique_by=lambda t: t[1]),
    st.lists(items_, min_size=40, max_size=400, unique_by=lambda t: t[1]),
)


def split_sides(items: list[tuple[int, bytes, str]]) -> tuple[VectorStorage, VectorStorage]:
    client = make_storage((ts, i) for ts, i, side in items if side != "server")
    server = make_storage((ts, i) for ts, i, side in items if side != "client")
    return client, server


def check_symmetric_difference(items: list[tuple[int, bytes, str]], limit: int, **params: int):
    client, server = split_sides(items)
    transcript, have, need = reconcile(client, server, limit, **params)
    assert set(have) == {i for _, i, side in items if side == "client"}
    assert set(need) == {i for _, i, side in items if side == "server"}
    if limit:
        assert max(map(len, transcript)) <= limit
    else:
        assert len(have) == len(set(have)) and len(need) == len(set(need))


@pytest.mark.parametrize("limit", [0, FRAME_LIMIT])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(items=item_sets)
def test_random_sets_reconcile_to_symmetric_difference(
    limit: int, items: list[tuple[int, bytes, str]]
) -> None:
    check_symmetric_difference(items, limit)


@pytest.mark.parametrize("limit", [0, FRAME_LIMIT])
@settings(max_examples=15, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    size=st.one_of(st.sampled_from([0, 1, 31, 32, 33, 512]), st.integers(1000, 4000)),
    diff=st.sampled_from([0.0, 0.01, 0.2, 1.0]),
    spread=st.sampled_from([10, 2**32, 2**64 - 1]),
)
def test_large_random_sets_reconcile(
    limit: int, seed: int, size: int, diff: float, spread: int
) -> None:
    rng = random.Random(seed)
    items = [
        (
            rng.randrange(spread),
            rng.randbytes(ID_SIZE),
            rng.choice(["client", "server"]) if rng.random() < diff else "both",
        )
        for _ in range(size)
    ]
    check_symmetric_difference(items, limit)


@settings(max_examples=25, deadline=None)
@given(items=item_sets, buckets=st.integers(2, 8), extra=st.integers(0, 8))
def test_tuned_parameters_reconcile(
    items: list[tuple[int, bytes, str]], buckets: int, extra: int
) -> None:
    check_symmetric_difference(items, 0, buckets=buckets, id_list_threshold=buckets + extra)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32), size=st.integers(1000, 6000),
       diff=st.sampled_from([0.05, 0.5, 1.0]), limit=st.sampled_from([0, FRAME_LIMIT]))
def test_a_range_cap_bounds_every_message_and_still_converges(
    seed: int, size: int, diff: float, limit: int
) -> None:
    rng = random.Random(seed)
    items = [(rng.randrange(2**40), rng.randbytes(ID_SIZE),
              rng.choice(["client", "server"]) if rng.random() < diff else "both")
             for _ in range(size)]
    client, server = split_sides(items)
    transcript, have, need = reconcile(client, server, limit, buckets=12,
                                       id_list_threshold=24, max_ranges=64)
    assert set(have) == {i for _, i, side in items if side == "client"}
    assert set(need) == {i for _, i, side in items if side == "server"}
    assert max(len(decode_message(m).ranges) for m in transcript) <= 64


def test_a_message_of_more_ranges_than_the_cap_is_refused_unread() -> None:
    """A peer's message of many cheap ranges (each an index look-up here) is refused at the
    cap instead of costing the event loop in proportion to its size (issue #12, item 13)."""
    storage = make_storage((1000 + n, bytes([n % 256]) * ID_SIZE) for n in range(200))
    message = encode_message(Message(tuple(Range(Bound(1000 + n), Mode.SKIP)
                                           for n in range(1, 100))))
    server = Negentropy(storage, max_ranges=64)
    with pytest.raises(NegentropyError, match="more than 64 ranges"):
        server.reconcile_server(message)
    assert Negentropy(storage).reconcile_server(message)


@settings(max_examples=100, deadline=None)
@given(
    items=st.lists(st.tuples(st.integers(0, 5), ids), max_size=40, unique_by=lambda t: t[1]),
    bound_ts=st.integers(0, 6),
    prefix=st.binary(max_size=ID_SIZE),
)
def test_find_lower_bound_matches_brute_force(
    items: list[tuple[int, bytes]], bound_ts: int, prefix: bytes
) -> None:
    storage = make_storage(items)
    ordered = sorted(items)
    expected = sum(1 for item in ordered if item < (bound_ts, prefix))
    assert storage.find_lower_bound(0, storage.size(), Bound(bound_ts, prefix)) == expected
    assert storage.find_lower_bound(0, storage.size(), INFINITY_BOUND) == len(items)


def test_few_differences_in_many_items_take_few_rounds() -> None:
    rng = random.Random(3)
    items = [
        (1_700_000_000_000 + rng.randrange(10**10), rng.randbytes(ID_SIZE)) for _ in range(100_000)
    ]
    full = make_storage(items)
    transcript, have, need = reconcile(full, full)
    assert len(transcript) == 2 and transcript[1] == bytes([PROTOCOL_VERSION])
    transcript, have, need = reconcile(make_storage(items[1:]), full)
    assert need == [items[0][1]] and have == []
    assert len(transcript) // 2 <= 3


@pytest.mark.slow
def test_million_items_identical_and_one_difference() -> None:
    rng = random.Random(4)
    items = [
        (1_700_000_000_000 + rng.randrange(10**10), rng.randbytes(ID_SIZE))
        for _ in range(1_000_000)
    ]
    full = make_storage(items)
    transcript, _, _ = reconcile(full, full)
    # One round trip of a few hundred bytes (how fast it is: bench/reconcile.py, not a test).
    assert len(transcript) == 2 and sum(map(len, transcript)) < 512
    transcript, have, need = reconcile(full, make_storage(items[:-1]))
    assert have == [items[-1][1]] and need == []
    assert len(transcript) // 2 <= 3


# --- (5) malformed input ---------------------------------------------------------------------

SMALL_ITEMS = [(1000 + i // 3, bytes([i]) * ID_SIZE) for i in range(80)]


def small_transcript() -> list[bytes]:
    client = make_storage(SMALL_ITEMS[::2])
    server = make_storage(SMALL_ITEMS[1::3])
    transcript, _, _ = reconcile(client, server)
    return transcript


def feed_both_sides(data: bytes) -> None:
    """Give data to a server and to a client; only NegentropyError may escape."""
    server = Negentropy(make_storage(SMALL_ITEMS))
    client = Negentropy(make_storage(SMALL_ITEMS[::2]))
    client.initiate()
    for call in (server.reconcile_server, client.reconcile_client):
        with contextlib.suppress(NegentropyError):
            call(data)


@settings(max_examples=300, deadline=None)
@given(data=st.one_of(st.binary(max_size=300), st.binary(max_size=300).map(lambda b: b"\x61" + b)))
def test_random_bytes_raise_only_negentropy_error(data: bytes) -> None:
    feed_both_sides(data)
    with contextlib.suppress(NegentropyError):
        decode_message(data)


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_mutated_messages_raise_only_negentropy_error(data: st.DataObject) -> None:
    message = bytearray(data.draw(st.sampled_from(small_transcript())))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(message) - 1))
        message[position] = data.draw(st.integers(0, 255))
    feed_both_sides(bytes(message))


def cut_points(message: bytes) -> list[int]:
    """Every cut of a short message; for a long one, a stride plus the last 40 bytes."""
    if len(message) <= 400:
        return list(range(len(message)))
    return sorted(set(range(0, len(message), 17)) | set(range(len(message) - 40, len(message))))


def test_truncated_messages_raise_only_negentropy_error() -> None:
    messages = small_transcript()
    for scenario in SCENARIOS:
        messages += messages_of(scenario)[:4]
    for message in messages:
        for cut in cut_points(message):
            with contextlib.suppress(NegentropyError):
                decode_message(message[:cut])
    for cut in cut_points(messages[1]):
        feed_both_sides(messages[1][:cut])


@pytest.mark.parametrize(
    ("hex_message", "reason"),
    [
        ("", "empty"),
        ("5f", "version"),
        ("70", "version"),
        ("6180", "truncated varint"),
        ("6101", "truncated varint"),
        ("61000007", "mode"),
        ("610021" + "00" * 33 + "00", "prefix too long"),
        ("6100000210", "exceeds"),
        ("6100000280808080808080808080" + "00", "longer than 10"),
        ("61" + "82808080808080808000" + "0000", "64 bits"),
        ("61000001" + "00" * 15, "prematurely"),
    ],
)
def test_specific_malformed_messages(hex_message: str, reason: str) -> None:
    with pytest.raises(NegentropyError, match=reason):
        decode_message(bytes.fromhex(hex_message))
    feed_both_sides(bytes.fromhex(hex_message))


def test_api_misuse_is_runtime_error() -> None:
    storage = make_storage(SMALL_ITEMS)
    negentropy = Negentropy(storage)
    with pytest.raises(RuntimeError):
        negentropy.reconcile_client(b"\x61")
    negentropy.initiate()
    with pytest.raises(RuntimeError):
        negentropy.initiate()
    with pytest.raises(RuntimeError):
        negentropy.reconcile_server(b"\x61")
    with pytest.raises(ValueError):
        Negentropy(storage, frame_size_limit=100)
    unsealed = VectorStorage()
    unsealed.insert(1, bytes(ID_SIZE))
    with pytest.raises(RuntimeError):
        unsealed.size()
    unsealed.insert(1, bytes(ID_SIZE))
    with pytest.raises(ValueError, match="duplicate"):
        unsealed.seal()
    with pytest.raises(ValueError):
        VectorStorage().insert(MAX_TIMESTAMP, bytes(ID_SIZE))


# --- (6) the stdio harness -------------------------------------------------------------------


def run_harness(lines: list[str], frame_size_limit: int = 0) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, FRAMESIZELIMIT=str(frame_size_limit))
    return subprocess.run(
        [sys.executable, "-m", "sync.negentropy_harness"],
        input="".join(line + "\n" for line in lines),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
        check=False,
    )


@scenarios("one-missing-server", "clustered-recent", "frame-limit-4096")
def test_harness_reproduces_client_side(scenario: Scenario) -> None:
    messages = scenario["messages"]
    lines = [f"item,{ts},{item_id}" for ts, item_id in scenario["client_items"]]
    lines += ["seal", "initiate"]
    lines += [f"msg,{m['hex']}" for m in messages if m["from"] == "server"]
    result = run_harness(lines, scenario["frame_size_limit"])
    assert result.returncode == 0, result.stderr
    output = result.stdout.splitlines()
    assert [line[4:] for line in output if line.startswith("msg,")] == [
        m["hex"] for m in messages if m["from"] == "client"
    ]
    assert sorted(line[5:] for line in output if line.startswith("have,")) == sorted(
        scenario["client_have"]
    )
    assert sorted(line[5:] for line in output if line.startswith("need,")) == sorted(
        scenario["client_need"]
    )
    assert output[-1] == "done"


@scenarios("uniform-50-50")
def test_harness_reproduces_server_side(scenario: Scenario) -> None:
    lines = [f"item,{ts},{item_id}" for ts, item_id in scenario["server_items"]] + ["seal"]
    lines += [f"msg,{m['hex']}" for m in scenario["messages"] if m["from"] == "client"]
    result = run_harness(lines)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        f"msg,{m['hex']}" for m in scenario["messages"] if m["from"] == "server"
    ]


@pytest.mark.parametrize(
    "lines",
    [["item,1,zz"], ["bogus"], ["item,1"], ["initiate"], ["seal", "msg,5f"], ["seal", "msg,6180"]],
)
def test_harness_rejects_bad_input(lines: list[str]) -> None:
    result = run_harness(lines)
    assert result.returncode != 0
    assert len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
