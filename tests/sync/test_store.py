"""Tests for sync.store over a real SQLite replica (docs/ARCHITECTURE.md "Sync", "Storage").

The reconciled set is every stored id: a deleted post leaves it, its delete stays in it.
`ItemSnapshot` reads it from the replica's item index (per-bucket sums kept by ingest); here it
must answer exactly as a `VectorStorage` built from the same (ts, id) set, whatever was deleted
and whatever range or bound is asked.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.objects import MAX_TS, Object
from storage import Replica, Status
from storage.items import BUCKET_SHIFT
from sync.negentropy import INFINITY_BOUND, Bound, Negentropy, VectorStorage
from sync.session import NEG_BUCKETS, NEG_ID_LIST_THRESHOLD, ReconcileComplete
from sync.store import ItemSnapshot, MemoryStore, ReplicaStore
from tests.support import FakeClock

from .conftest import CHANNELS, T0_MS, Chat
from .test_session import T_START, pair

BUCKET = 1 << BUCKET_SHIFT
BASE = (T0_MS >> BUCKET_SHIFT) << BUCKET_SHIFT  # a bucket's first millisecond
NOW_S = 1_900_000_000.0  # the replicas' clock: nothing built here is dated in the future
BATCH = 400  # ingest below storage's PARALLEL_MIN, so no signature helper process starts


# Building a corpus ----------------------------------------------------------------------------


def random_ts(rng: random.Random, used: list[int]) -> int:
    """Dates in 40 buckets with gaps, on bucket edges, and tied with earlier ones."""
    roll = rng.random()
    if used and roll < 0.15:
        return rng.choice(used)  # a tie: ordered by id
    bucket = rng.choice([k for k in range(40) if k < 20 and k % 3 == 0 or k >= 30])
    offset = rng.choice([0, 1, BUCKET - 1]) if roll < 0.35 else rng.randrange(BUCKET)
    return BASE + bucket * BUCKET + offset


class Corpus:
    """Posts, and deletes of some of them (by their authors, or the root admin)."""

    def __init__(self, seed: int, posts: int = 600, deleted: int = 60):
        rng = random.Random(seed)
        self.chat = chat = Chat()
        names = sorted(chat.people)
        used: list[int] = []
        self.posts: list[Object] = []
        for n in range(posts):
            ts = random_ts(rng, used)
            used.append(ts)
            who = names[n % len(names)]
            self.posts.append(chat.post(who, CHANNELS[n % 3], f"post {seed}/{n}", ts=ts))
        self.targets = rng.sample(self.posts, deleted)
        self.deletes = []
        for n, target in enumerate(self.targets):
            who = chat.root if n % 5 == 0 else chat.author_of(target)
            ts = target.ts + rng.choice([0, 1, rng.randrange(3 * BUCKET)])
            self.deletes.append(chat.delete(who, target, ts=ts))

    @property
    def objects(self) -> list[Object]:
        return [self.chat.genesis, *self.posts, *self.deletes]

    def items(self) -> set[tuple[int, bytes]]:
        """The reconciled set: everything stored, deleted targets left out."""
        deleted = {t.id for t in self.targets}
        return {(o.ts, o.id) for o in self.objects if o.id not in deleted}


def new_replica(path: Path, chat: Chat) -> Replica:
    return Replica.create(path, chat.ws, chat.root.public_key, clock=lambda: NOW_S)


def ingest(replica: Replica, objects: list[Object]) -> None:
    for start in range(0, len(objects), BATCH):
        batch = objects[start:start + BATCH]
        results = replica.ingest(batch)
        assert [r.status for r in results] == [Status.ADDED] * len(batch), results


def vector(items) -> VectorStorage:
    storage = VectorStorage()
    for ts, oid in items:
        storage.insert(ts, oid)
    storage.seal()
    return storage


def stored_items(replica: Replica) -> set[tuple[int, bytes]]:
    with ReplicaStore(replica).snapshot() as snap:
        return set(snap.iterate(0, snap.size()))


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return Corpus(seed=11)


@pytest.fixture
def full(tmp_path: Path, corpus: Corpus) -> Replica:
    """A replica holding the corpus: posts, and deletes honoured."""
    replica = new_replica(tmp_path / "full.sqlite", corpus.chat)
    ingest(replica, corpus.objects)
    yield replica
    replica.close()


# Comparing a snapshot with a VectorStorage ----------------------------------------------------


def bounds_for(rng: random.Random, items: list[tuple[int, bytes]]) -> list[Bound]:
    """Bounds that exercise every branch: exact items, id prefixes, between and beyond items,
    bucket edges, empty buckets, zero and infinity."""
    out = [Bound(0), INFINITY_BOUND, Bound(BASE), Bound(BASE + 5 * BUCKET),
           Bound(BASE + 100 * BUCKET), Bound(MAX_TS)]
    for _ in range(60):
        ts, oid = rng.choice(items) if items else (BASE, bytes(32))
        out += [Bound(ts, oid), Bound(ts, oid[:rng.randrange(33)]), Bound(ts),
                Bound(ts + 1), Bound(ts - 1), Bound(ts, b"\xff" * 32),
                Bound((ts >> BUCKET_SHIFT) << BUCKET_SHIFT),
                Bound(((ts >> BUCKET_SHIFT) + 1) << BUCKET_SHIFT)]
    return out


def assert_same_storage(snap: ItemSnapshot, expected: VectorStorage, rng: random.Random,
                        ranges: int = 300) -> None:
    size = expected.size()
    assert snap.size() == size
    everything = expected.iterate(0, size)
    assert snap.iterate(0, size) == everything
    for i in rng.sample(range(size), min(size, 100)):
        assert snap.get_item(i) == expected.get_item(i)
    with pytest.raises(IndexError):
        snap.get_item(size)
    # Prefix and suffix fingerprints cover every position's running sum.
    for i in range(0, size + 1, max(1, size // 200)):
        assert snap.fingerprint(0, i) == expected.fingerprint(0, i)
        assert snap.fingerprint(i, size) == expected.fingerprint(i, size)
    for _ in range(ranges):
        begin = rng.randint(0, size)
        end = rng.randint(begin, size) if rng.random() < 0.7 else min(size, begin + 3)
        assert snap.fingerprint(begin, end) == expected.fingerprint(begin, end), (begin, end)
        assert list(snap.iterate(begin, end)) == expected.iterate(begin, end)
    for bound in bounds_for(rng, everything):
        begin = rng.randint(0, size)
        end = rng.randint(begin, size)
        for lo, hi in ((0, size), (begin, end), (begin, size)):
            assert snap.find_lower_bound(lo, hi, bound) == \
                expected.find_lower_bound(lo, hi, bound), (lo, hi, bound)


def test_snapshot_answers_like_a_vector_storage(full: Replica, corpus: Corpus):
    expected = vector(corpus.items())
    with ReplicaStore(full).snapshot() as snap:
        assert isinstance(snap, ItemSnapshot)
        assert_same_storage(snap, expected, random.Random(1), ranges=1500)
        # Every item's own bound finds it, from the start and from just before it.
        for i, (ts, oid) in enumerate(expected.iterate(0, expected.size())):
            assert snap.find_lower_bound(0, expected.size(), Bound(ts, oid)) == i
            assert snap.find_lower_bound(max(0, i - 1), i + 1, Bound(ts, oid)) == i


def test_deleted_targets_leave_the_set_and_their_deletes_stay(full: Replica, corpus: Corpus):
    for target in corpus.targets:
        assert not full.has(target.id) and full.is_deleted(target.id)
    items = stored_items(full)
    assert not {(t.ts, t.id) for t in corpus.targets} & items
    assert {(d.ts, d.id) for d in corpus.deletes} <= items
    assert items == corpus.items()
    assert full.count() == 1 + len(corpus.posts) - len(corpus.targets) + len(corpus.deletes)


def lanes(oid: bytes) -> tuple[int, ...]:
    return struct.unpack("<8I", oid)


def test_buckets_agree_with_the_items_after_deletes_and_repeats(full: Replica, corpus: Corpus):
    # Offering deleted targets and deletes again changes nothing.
    again = full.ingest([*corpus.targets[:10], *corpus.deletes[:10], *corpus.posts[:10]])
    assert {r.status for r in again} == {Status.DUPLICATE}
    expected: dict[int, list[int]] = {}
    for ts, oid in corpus.items():
        acc = expected.setdefault(ts >> BUCKET_SHIFT, [0] * 9)
        acc[0] += 1
        for k, lane in enumerate(lanes(oid), 1):
            acc[k] += lane
    rows = full.conn.execute(
        "SELECT bucket, count, l0, l1, l2, l3, l4, l5, l6, l7 FROM item_buckets "
        "WHERE count > 0 ORDER BY bucket").fetchall()
    assert {row[0]: list(row[1:]) for row in rows} == expected
    table = set(full.conn.execute("SELECT ts, id FROM items").fetchall())
    assert table == corpus.items()
    assert_same_storage_of(full, corpus.items())


def assert_same_storage_of(replica: Replica, items, seed: int = 0) -> None:
    with ReplicaStore(replica).snapshot() as snap:
        assert_same_storage(snap, vector(items), random.Random(seed))


def test_deletes_before_their_targets_give_the_same_set(tmp_path: Path, corpus: Corpus):
    forward = new_replica(tmp_path / "forward.sqlite", corpus.chat)
    backward = new_replica(tmp_path / "backward.sqlite", corpus.chat)
    ingest(forward, corpus.objects)
    ingest(backward, [corpus.chat.genesis, *corpus.deletes])  # deletes first
    ingest(backward, corpus.posts)
    for target in corpus.targets:
        assert not backward.has(target.id) and backward.is_deleted(target.id)
    expected = corpus.items()
    assert stored_items(forward) == stored_items(backward) == expected
    assert_same_storage_of(backward, expected, seed=3)
    forward.close()
    backward.close()


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), keep=st.floats(0.0, 1.0),
       deleted=st.integers(0, 40))
def test_random_replicas_answer_like_vector_storage(tmp_path_factory, seed, keep, deleted):
    rng = random.Random(seed)
    corpus = Corpus(seed, posts=rng.randint(0, 300), deleted=0)
    posts = [p for p in corpus.posts if rng.random() < keep]
    targets = rng.sample(posts, min(deleted, len(posts)))
    deletes = [corpus.chat.delete(corpus.chat.author_of(t), t, ts=t.ts + rng.randrange(BUCKET))
               for t in targets]
    replica = new_replica(tmp_path_factory.mktemp("rep") / "r.sqlite", corpus.chat)
    objects = [corpus.chat.genesis, *posts, *deletes]
    rng.shuffle(objects)  # arrival order must not matter
    ingest(replica, objects)
    items = {(o.ts, o.id) for o in objects if o not in targets}
    try:
        assert stored_items(replica) == items
        assert_same_storage_of(replica, items, seed)
    finally:
        replica.close()


def test_an_empty_index(tmp_path: Path):
    chat = Chat()
    replica = new_replica(tmp_path / "empty.sqlite", chat)
    with ReplicaStore(replica).snapshot() as snap:
        assert snap.size() == 0 and snap.iterate(0, 0) == []
        assert snap.fingerprint(0, 0) == vector([]).fingerprint(0, 0)
        assert snap.find_lower_bound(0, 0, Bound(BASE)) == 0
    replica.close()


def test_an_object_dated_at_the_largest_ts_can_be_reconciled(tmp_path: Path):
    chat = Chat()
    far = chat.post("alice", "general", "from the end of time", ts=MAX_TS)
    replica = new_replica(tmp_path / "far.sqlite", chat)
    ingest(replica, [chat.genesis, far])
    expected = {(chat.genesis.ts, chat.genesis.id), (far.ts, far.id)}
    with ReplicaStore(replica).snapshot() as snap:
        assert snap.size() == 2
        assert set(snap.iterate(0, 2)) == expected


# Reconciliation between a replica and a memory store ------------------------------------------


def run_negentropy(client_store, server_store, limit: int, **params):
    """A whole reconciliation, every step over a fresh snapshot (as sync.session does)."""
    with client_store.snapshot() as storage:
        message = Negentropy(storage, limit, **params).initiate()
    have: list[bytes] = []
    need: list[bytes] = []
    for _ in range(1000):
        with server_store.snapshot() as storage:
            reply = Negentropy(storage, limit, **params).reconcile_server(message)
        with client_store.snapshot() as storage:
            step = Negentropy.resume_client(storage, limit, **params).reconcile_client(reply)
        have += step.have
        need += step.need
        if step.next_message is None:
            return set(have), set(need)
        message = step.next_message
    raise AssertionError("reconciliation did not finish")


def memory_side(corpus: Corpus, rng: random.Random, *,
                extra: int = 6) -> tuple[MemoryStore, set]:
    """A peer holding part of the posts (some deleted targets still among them), part of the
    deletes, and posts the replica never saw."""
    store = MemoryStore([corpus.chat.genesis])
    store.add([p for p in corpus.posts if rng.random() < 0.7])
    store.add([d for d in corpus.deletes if rng.random() < 0.5])
    store.add([corpus.chat.post("bob", "random", f"only in memory {rng.random()}",
                                ts=random_ts(rng, [])) for _ in range(extra)])
    return store, {(o.ts, o.id) for o in store.objects.values()}


@pytest.mark.parametrize("limit", [0, 4096])
@pytest.mark.parametrize("params", [{}, {"buckets": NEG_BUCKETS,
                                         "id_list_threshold": NEG_ID_LIST_THRESHOLD}])
def test_replica_and_memory_reconcile_to_the_symmetric_difference(full, corpus, limit, params):
    memory, memory_items = memory_side(corpus, random.Random(5))
    replica_items = corpus.items()
    replica_ids = {oid for _, oid in replica_items}
    memory_ids = {oid for _, oid in memory_items}
    assert replica_ids - memory_ids and memory_ids - replica_ids  # both sides have extras
    replica = ReplicaStore(full)
    have, need = run_negentropy(replica, memory, limit, **params)
    assert (have, need) == (replica_ids - memory_ids, memory_ids - replica_ids)
    have, need = run_negentropy(memory, replica, limit, **params)
    assert (have, need) == (memory_ids - replica_ids, replica_ids - memory_ids)


def test_equal_sets_reconcile_in_one_round_trip(full, corpus):
    memory = MemoryStore([o for o in corpus.objects if o.id not in
                          {t.id for t in corpus.targets}])
    replica = ReplicaStore(full)
    with replica.snapshot() as storage:
        message = Negentropy(storage).initiate()
    with memory.snapshot() as storage:
        reply = Negentropy(storage).reconcile_server(message)
    with replica.snapshot() as storage:
        step = Negentropy.resume_client(storage).reconcile_client(reply)
    assert step == (None, [], [])


def test_snapshots_see_writes_from_this_and_other_connections(full, corpus):
    store = ReplicaStore(full)
    before = corpus.items()
    with store.snapshot() as snap:
        assert snap.size() == len(before)
    with store.snapshot() as snap:  # nothing written: the same answers
        assert snap.size() == len(before)
        assert set(snap.iterate(0, snap.size())) == before
    extra = corpus.chat.post("carol", "dev", "written after the first snapshot",
                             ts=BASE + 7 * BUCKET + 5)
    ingest(full, [extra])
    with store.snapshot() as snap:
        assert snap.size() == len(before) + 1
        assert set(snap.iterate(0, snap.size())) == before | {(extra.ts, extra.id)}
    other = Replica(full.path, clock=lambda: NOW_S)  # e.g. a `hearth post` in another process
    late = corpus.chat.post("dave", "dev", "written by another connection",
                            ts=BASE + 7 * BUCKET + 6)
    ingest(other, [late])
    other.close()
    expected = before | {(extra.ts, extra.id), (late.ts, late.id)}
    with store.snapshot() as snap:
        assert set(snap.iterate(0, snap.size())) == expected
        assert_same_storage(snap, vector(expected), random.Random(9), ranges=100)


def test_missing_answers_the_objects_held(full, corpus):
    held_posts = [p for p in corpus.posts if p.id not in {t.id for t in corpus.targets}]
    unknown = [bytes([n]) * 32 for n in range(3)]
    asked = [p.id for p in held_posts[:20]] + [t.id for t in corpus.targets[:7]] + \
        unknown + [corpus.deletes[0].id]
    raws = full.reconciliation.missing(asked)
    assert sorted(raws) == sorted([p.raw for p in held_posts[:20]] + [corpus.deletes[0].raw])
    assert ReplicaStore(full).missing(asked) == raws
    assert full.reconciliation.missing([]) == []
    assert full.reconciliation.missing(unknown) == []


def test_missing_many_ids_returns_each_once(full, corpus):
    asked = [o.id for o in corpus.objects]
    assert len(asked) > 600  # more than one IN (...) query
    raws = full.reconciliation.missing(asked)
    target_ids = {t.id for t in corpus.targets}
    assert len(raws) == len(set(raws)) == len(corpus.objects) - len(target_ids)
    assert sorted(raws) == sorted(o.raw for o in corpus.objects if o.id not in target_ids)


# A session over a replica ---------------------------------------------------------------------


def test_a_session_between_a_replica_and_a_memory_store_converges(full, corpus):
    memory, memory_items = memory_side(corpus, random.Random(8))
    had = set(memory.objects)
    replica_store = ReplicaStore(full)
    clock = FakeClock(T_START)
    m, r, wire = pair(memory, replica_store, clock, secret=b"k" * 32)  # the memory side dials
    wire.pump()
    assert m.connected and r.connected
    [done] = wire.events(m, ReconcileComplete)
    replica_ids = {oid for _, oid in corpus.items()}
    memory_ids = {oid for _, oid in memory_items}
    assert (done.have, done.need) == (len(memory_ids - replica_ids),
                                      len(replica_ids - memory_ids))
    # The memory side now holds everything the replica holds; deleted content is never sent.
    replica_items = stored_items(full)
    with memory.snapshot() as a:
        assert replica_items <= set(a.iterate(0, a.size()))
    target_ids = {t.id for t in corpus.targets}
    assert not (set(memory.objects) - had) & target_ids
    extras = {o.id for o in memory.objects.values()} - replica_ids - target_ids
    assert extras and all(full.has(oid) for oid in extras)  # the replica ingested them
    # Deleted posts the memory side still had were dropped on arrival: the replica holds
    # their deletes, so they are what the next round still finds (a MemoryStore does not
    # apply deletes; a replica would drop them too).
    stale = had & target_ids
    assert stale and not any(full.has(oid) for oid in stale)
    m.reconcile(clock.now)
    wire.pump()
    again = wire.events(m, ReconcileComplete)[-1]
    assert (again.have, again.need) == (len(stale), 0)
