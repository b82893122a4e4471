"""The relay's store (relay/store.py): spaces, envelopes, quota and retention."""

from __future__ import annotations

import os
from pathlib import Path

from core.relay_seal import Envelope
from relay.store import ROW_OVERHEAD, RelayStore
from tests.support import FakeClock

SPACE, OTHER = bytes([1]) * 32, bytes([2]) * 32
TOKEN, TOKEN2 = bytes([3]) * 32, bytes([4]) * 32
ADMIN = bytes([5]) * 32


def env(bucket: int, size: int = 100) -> Envelope:
    return Envelope(os.urandom(16), bucket, os.urandom(size))


def test_spaces_hold_their_own_envelopes_and_a_move_drops_the_old_epoch(tmp_path: Path) -> None:
    store = RelayStore(tmp_path / "r.db")
    assert store.space(SPACE) is None and store.put(SPACE, [env(1)]) == []
    store.register(SPACE, TOKEN, 0, [ADMIN])
    store.register(OTHER, TOKEN2, 4, [ADMIN])
    mine = [env(b) for b in (5, 1, 3)]
    assert store.put(SPACE, mine) == mine
    assert store.put(SPACE, mine) == []  # held already
    assert sorted(store.items(SPACE)) == sorted((e.bucket, e.opaque) for e in mine)
    assert store.items(OTHER) == [] and store.get(OTHER, [mine[0].opaque]) == []
    assert set(store.get(SPACE, [e.opaque for e in mine])) == set(mine)
    held = store.space(SPACE)
    assert held is not None and held.count == 3
    assert held.bytes == sum(len(e.box) + ROW_OVERHEAD for e in mine)
    assert store.register(SPACE, TOKEN, 0, [ADMIN, TOKEN2]).count == 3  # owners only
    moved = store.register(SPACE, TOKEN2, 1, [ADMIN])
    assert (moved.epoch, moved.token, moved.count, moved.bytes) == (1, TOKEN2, 0, 0)
    assert store.items(SPACE) == []
    store.close()
    again = RelayStore(tmp_path / "r.db")
    assert again.space(SPACE) == moved and again.space(OTHER) is not None


def test_past_the_quota_the_oldest_go_and_the_floor_rises(tmp_path: Path) -> None:
    store = RelayStore(tmp_path / "r.db", quota=10 * (100 + ROW_OVERHEAD))
    store.register(SPACE, TOKEN, 0, [ADMIN])
    store.register(OTHER, TOKEN2, 0, [ADMIN])
    first = [env(b) for b in range(10, 20)]
    assert store.put(SPACE, first) == first
    newer = [env(30), env(31)]
    assert store.put(SPACE, newer) == newer
    held = store.space(SPACE)
    assert held is not None and held.count == 10 and held.bytes <= held.quota
    assert held.floor == 12
    assert {b for b, _ in store.items(SPACE)} == set(range(12, 20)) | {30, 31}
    assert store.put(SPACE, [env(11)]) == []  # below the floor: would go at once
    assert store.put(OTHER, [env(1)]) != []  # another space's quota is its own


def test_retention_takes_what_was_stored_long_ago(tmp_path: Path) -> None:
    clock = FakeClock(1_000_000.0)
    store = RelayStore(tmp_path / "r.db", retention_s=100, clock=clock)
    store.register(SPACE, TOKEN, 0, [ADMIN])
    old = [env(1), env(2)]
    store.put(SPACE, old)
    assert store.put_chunk(SPACE, bytes(16), b"c" * 50) and not store.put_chunk(
        SPACE, bytes(16), b"c" * 50)
    assert store.chunk(SPACE, bytes(16)) == b"c" * 50 and store.chunk(OTHER, bytes(16)) is None
    clock.now += 60
    new = [env(0)]
    store.put(SPACE, new)
    version, other = store.version(SPACE), store.version(OTHER)
    assert store.prune() == 0
    clock.now += 50
    assert store.prune() == 3 and store.version(SPACE) != version
    assert store.version(OTHER) == other  # another space's snapshot stays good
    assert store.chunk(SPACE, bytes(16)) is None
    assert store.items(SPACE) == [(0, new[0].opaque)]
    held = store.space(SPACE)
    assert held is not None and held.count == 1 and held.bytes == 100 + ROW_OVERHEAD


def test_a_kept_snapshot_is_the_one_read_afresh_after_puts_and_an_eviction(
        tmp_path: Path) -> None:
    from relay.peer import Snapshots

    store = RelayStore(tmp_path / "r.db", quota=20_000)
    store.register(SPACE, TOKEN, 0, [ADMIN])
    kept = Snapshots(store)

    def same() -> None:
        a, b = kept.get(SPACE), Snapshots(store).get(SPACE)
        assert a.size() == b.size() and a.fingerprint(0, a.size()) == b.fingerprint(0, b.size())

    same()
    for batch in ([env(n) for n in range(1, 4)], [env(n) for n in range(10, 110)]):
        before = store.version(SPACE)
        kept.added(SPACE, before, store.put(SPACE, batch))
        same()  # a few inserted in order; a large put appended and sorted
    before = store.version(SPACE)
    kept.added(SPACE, before, store.put(SPACE, [env(n) for n in range(200, 260)]))
    same()  # past the quota: the put evicted too, and the snapshot is read again
