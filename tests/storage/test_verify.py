"""Large batches are checked in helper processes (storage._verify), one per core: every check
still happens, each object gets the answer it gets when checked in this process, and a helper
that dies leaves its objects to be checked here."""

from __future__ import annotations

import time
from pathlib import Path

import cbor2
import pytest

from storage import Status, _verify
from storage._accept import VERIFY_TIMEOUT_S
from storage._verify import PARALLEL_MIN, SUB_BATCH
from tests.support import FakeClock

from .conftest import T0, World, identity, new_replica


@pytest.fixture(autouse=True)
def helpers(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("HEARTH_VERIFY_PROCESSES", "2")  # two, even on a one-core machine
    _verify.shutdown()
    yield
    _verify.shutdown()


def _batch(world: World) -> list[bytes]:
    """More than PARALLEL_MIN objects over several sub-batches, with every kind of answer
    among them: invalid objects, a bad signature, duplicates (of a bad one too)."""
    alice, bob = identity("alice"), identity("bob")
    good = [world.text(alice if n % 3 else bob, f"ch{n % 7}", f"message {n}").raw
            for n in range(PARALLEL_MIN + SUB_BATCH)]
    decoded = cbor2.loads(good[5])
    non_canonical = cbor2.dumps(dict(reversed(list(decoded.items()))))
    tampered = good[7].replace(b"message 7", b"massage 7")
    raws = list(good)
    raws[3] = b"\xff\x00garbage"
    raws[SUB_BATCH + 1] = non_canonical
    raws[SUB_BATCH + 2] = tampered
    raws[2 * SUB_BATCH + 3] = tampered  # a second copy of a bad one: a duplicate
    raws[2 * SUB_BATCH + 4] = good[10]  # a duplicate in another sub-batch
    raws[-1] = cbor2.dumps({**decoded, "body": {"channel": "general"}}, canonical=True)
    return raws


def _ingest(path: Path, raws: list[bytes]) -> tuple[list, str]:
    world = World()
    replica = new_replica(path, world, FakeClock(T0))
    try:
        results = replica.ingest(raws)
        again = replica.ingest(raws[:PARALLEL_MIN + 1])  # held now
        assert {r.status for r in again} <= {Status.DUPLICATE, Status.REJECTED}
        return [*results, *again], replica.digest()
    finally:
        replica.close()


def _expected(tmp_path: Path, raws: list[bytes], monkeypatch: pytest.MonkeyPatch):
    with monkeypatch.context() as here:
        here.setenv("HEARTH_VERIFY_PROCESSES", "0")
        found = _ingest(tmp_path / "here.sqlite", raws)
        assert _verify._helper is None  # checked in this process only
        return found


def test_helpers_answer_as_this_process_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    raws = _batch(World())
    expected_results, expected_digest = _expected(tmp_path, raws, monkeypatch)
    statuses = [r.status for r in expected_results[:len(raws)]]
    assert statuses.count(Status.REJECTED) == 4
    assert statuses.count(Status.DUPLICATE) == 2
    assert [r.reason for r in expected_results if r.status is Status.REJECTED][:4] == \
        ["malformed", "non_canonical", "bad_signature", "bad_body"]

    results, digest = _ingest(tmp_path / "helpers.sqlite", raws)
    assert _verify._helper is not None and len(_verify._helper._processes) == 2
    assert results == expected_results
    assert digest == expected_digest


def test_a_helper_that_dies_leaves_its_objects_to_this_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture):
    raws = _batch(World())
    expected = _expected(tmp_path, raws, monkeypatch)
    _verify.start_helper()
    assert _verify._helper is not None
    dead = _verify._helper._processes[1]._proc
    dead.kill()
    dead.wait()
    start = time.monotonic()
    assert _ingest(tmp_path / "killed.sqlite", raws) == expected
    # No sub-batch waits out the helpers' timeout: those sent to a dead one fail at once.
    assert time.monotonic() - start < VERIFY_TIMEOUT_S / 4
    assert "verifying here" in caplog.text


def test_helpers_check_every_rule_not_only_the_signature():
    world, alice = World(), identity("alice")
    good = world.text(alice, "general", "fine").raw
    decoded = cbor2.loads(good)
    non_canonical = cbor2.dumps(dict(reversed(list(decoded.items()))))
    tampered = good.replace(b"fine", b"fire")
    future = _verify.submit([good, non_canonical, tampered, b"\xff", good])
    assert future is not None
    assert future.result(30) == bytes([1, 0, 0, 0, 1])
