"""Tests for sync.store over a real SQLite replica (docs/ARCHITECTURE.md "Sync", "Storage").

The reconciled set is every stored id, per stream: a deleted post leaves its stream, its delete
stays in it. `ItemSnapshot` reads one stream from the replica's item index (per-stream and
per-bucket sums kept by ingest); here it must answer exactly as a `VectorStorage` built from
that stream's (ts, id) items, or, newest first, from its (FLIP - ts, id) items, whatever was
deleted and whatever range or bound is asked.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.kinds import CHANNEL_CLASS, GENESIS_STREAM, WORKSPACE_CLASS
from core.objects import MAX_TS, Object
from storage import Replica, Status
from storage.items import BUCKET_SHIFT
from sync.negentropy import INFINITY_BOUND, MAX_TIMESTAMP, Bound, Negentropy, VectorStorage
from sync.session import NEG_BUCKETS, NEG_ID_LIST_THRESHOLD, ReconcileComplete
from sync.store import FLIP, ItemSnapshot, MemoryStore, ReplicaStore
from tests.support import FakeClock

from .conftest import CHANNELS, T0_MS, Chat
from .session_support import T_START, sessions

BUCKET = 1 << BUCKET_SHIFT
BASE = (T0_MS >> BUCKET_SHIFT) << BUCKET_SHIFT  # a bucket's first millisecond
NOW_S = 1_900_000_000.0  # the replicas' clock: nothing built here is dated in the future
BATCH = 400  # ingest below storage's PARALLEL_MIN, so no signature helper process starts
DIRECTIONS = pytest.mark.parametrize("newest_first", [False, True], ids=["oldest", "newest"])

Items = set[tuple[int, bytes]]


# Building a corpus ----------------------------------------------------------------------------


def random_ts(rng: random.Random, used: list[int]) -> int:
    """Dates in 40 buckets with gaps, on bucket edges, and tied with earlier ones."""
    roll = rng.random()
    if used and roll < 0.15:
        return rng.choice(used)  # a tie: ordered by id
    bucket = rng.choice([k for k in range(40) if k < 20 and k % 3 == 0 or k >= 30])
    offset = rng.choice([0, 1, BUCKET - 1]) if roll < 0.35 else rng.randrange(BUCKET)
    return BASE + bucket * BUCKET + offset


def by_stream(objects) -> dict[bytes, Items]:
    """The (ts, id) items of these objects, per stream."""
    out: dict[bytes, Items] = {}
    for obj in objects:
        out.setdefault(obj.stream, set()).add((obj.ts, obj.id))
    return out


class Corpus:
    """Posts in three channels, and deletes of some of them (by their authors, or the root
    admin), each delete in its target's stream."""

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

    @property
    def kept(self) -> list[Object]:
        """What a replica holds: everything but the deleted targets."""
        deleted = {t.id for t in self.targets}
        return [o for o in self.objects if o.id not in deleted]

    def items(self) -> dict[bytes, Items]:
        """The reconciled set, per stream: everything stored, deleted targets left out."""
        return by_stream(self.kept)


def new_replica(path: Path, chat: Chat) -> Replica:
    return Replica.create(path, chat.ws, chat.root.public_key, clock=lambda: NOW_S)


def ingest(replica: Replica, objects: list[Object]) -> None:
    for start in range(0, len(objects), BATCH):
        batch = objects[start:start + BATCH]
        results = replica.ingest(batch)
        assert [r.status for r in results] == [Status.ADDED] * len(batch), results


def keyed(items, newest_first: bool) -> list[tuple[int, bytes]]:
    """Items as a snapshot in that direction holds them (newest first: see sync.store.FLIP)."""
    return [(FLIP - ts if newest_first else ts, oid) for ts, oid in items]


def vector(items, newest_first: bool = False) -> VectorStorage:
    storage = VectorStorage()
    for ts, oid in keyed(items, newest_first):
        storage.insert(ts, oid)
    storage.seal()
    return storage


def snapshot_items(store, stream: bytes, newest_first: bool = False) -> Items:
    """One stream's items as (ts, id), read through a snapshot in that direction."""
    with store.snapshot(stream, newest_first=newest_first) as snap:
        return set(keyed(snap.iterate(0, snap.size()), newest_first))


def stored_items(replica: Replica) -> dict[bytes, Items]:
    """Every stream the replica's store names, with the items its snapshot holds (the same
    both ways)."""
    store = ReplicaStore(replica)
    out = {}
    for stream in store.streams():
        out[stream] = snapshot_items(store, stream)
        assert snapshot_items(store, stream, newest_first=True) == out[stream]
    return out


def union(per_stream: dict[bytes, Items]) -> Items:
    return set().union(*per_stream.values())


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


def bounds_for(rng: random.Random, items: list[tuple[int, bytes]], newest_first: bool
               ) -> list[Bound]:
    """Bounds, in the snapshot's order, that exercise every branch: exact items, id prefixes,
    between and beyond items, bucket edges (first and last millisecond), empty buckets, zero,
    the end of time and infinity. `items` are (ts, id)."""
    times = [BASE, BASE + 5 * BUCKET, BASE + 100 * BUCKET, MAX_TS, 0]
    out = [Bound(0), Bound(FLIP), INFINITY_BOUND, *(Bound(t) for t in times)]
    out += [Bound(FLIP - t) for t in times]
    for _ in range(60):
        ts, oid = rng.choice(items) if items else (BASE, bytes(32))
        first = (ts >> BUCKET_SHIFT) << BUCKET_SHIFT
        found = [(ts, oid), (ts, oid[:rng.randrange(33)]), (ts, b""), (ts + 1, b""),
                 (ts - 1, b""), (ts, b"\xff" * 32), (first, b""), (first + BUCKET - 1, b""),
                 (first + BUCKET, b""), (first - 1, b"\xff" * 32)]
        out += [Bound(t, prefix) for t, prefix in
                keyed([(t, prefix) for t, prefix in found if t >= 0], newest_first)]
    assert all(0 <= b.timestamp <= MAX_TIMESTAMP for b in out)
    return out


def assert_same_storage(snap: ItemSnapshot, items, newest_first: bool, rng: random.Random,
                        ranges: int = 300) -> None:
    """`snap` answers every question as a VectorStorage of `items` ((ts, id)) would."""
    expected = vector(items, newest_first)
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
    for bound in bounds_for(rng, sorted(items), newest_first):
        begin = rng.randint(0, size)
        end = rng.randint(begin, size)
        for lo, hi in ((0, size), (begin, end), (begin, size)):
            assert snap.find_lower_bound(lo, hi, bound) == \
                expected.find_lower_bound(lo, hi, bound), (lo, hi, bound)


def assert_same_storage_of(replica: Replica, per_stream: dict[bytes, Items],
                           seed: int = 0) -> None:
    """Every stream of `per_stream`, both ways, answers as a VectorStorage of its items."""
    store = ReplicaStore(replica)
    for newest_first in (False, True):
        rng = random.Random(seed)
        for stream, items in per_stream.items():
            with store.snapshot(stream, newest_first=newest_first) as snap:
                assert_same_storage(snap, items, newest_first, rng)


@DIRECTIONS
def test_snapshot_answers_like_a_vector_storage(full: Replica, corpus: Corpus, newest_first):
    store = ReplicaStore(full)
    per_stream = corpus.items()
    assert set(per_stream) == {GENESIS_STREAM, *(corpus.chat.channel(c) for c in CHANNELS)}
    rng = random.Random(1)
    for stream, items in per_stream.items():
        with store.snapshot(stream, newest_first=newest_first) as snap:
            assert isinstance(snap, ItemSnapshot)
            assert_same_storage(snap, items, newest_first, rng, ranges=500)
            # Every item's own bound finds it, from the start and from just before it.
            ordered = sorted(keyed(items, newest_first))
            for i, (ts, oid) in enumerate(ordered):
                assert snap.find_lower_bound(0, len(ordered), Bound(ts, oid)) == i
                assert snap.find_lower_bound(max(0, i - 1), i + 1, Bound(ts, oid)) == i
    # A stream the replica never heard of is empty, not an error.
    unknown = corpus.chat.channel("nowhere")
    with store.snapshot(unknown, newest_first=newest_first) as snap:
        assert_same_storage(snap, set(), newest_first, rng)


def test_newest_first_runs_from_the_newest_item_down(full: Replica, corpus: Corpus):
    store = ReplicaStore(full)
    general = corpus.chat.channel("general")
    items = corpus.items()[general]
    with store.snapshot(general, newest_first=True) as snap:
        order = [(FLIP - key, oid) for key, oid in snap.iterate(0, snap.size())]
    assert order == sorted(items, key=lambda item: (-item[0], item[1]))
    assert order[0][0] == max(ts for ts, _ in items)


def test_deleted_targets_leave_the_set_and_their_deletes_stay(full: Replica, corpus: Corpus):
    for target in corpus.targets:
        assert not full.has(target.id) and full.is_deleted(target.id)
    per_stream = stored_items(full)
    items = union(per_stream)
    assert not {(t.ts, t.id) for t in corpus.targets} & items
    for delete in corpus.deletes:  # each in its target's stream
        assert (delete.ts, delete.id) in per_stream[delete.stream]
    assert per_stream == corpus.items()
    assert full.count() == 1 + len(corpus.posts) - len(corpus.targets) + len(corpus.deletes)
    streams = ReplicaStore(full).streams()
    assert {s: info.count for s, info in streams.items()} == \
        {s: len(items) for s, items in corpus.items().items()}


def lanes(oid: bytes) -> tuple[int, ...]:
    return struct.unpack("<8I", oid)


def test_buckets_and_streams_agree_with_the_items_after_deletes_and_repeats(
        full: Replica, corpus: Corpus):
    # Offering deleted targets and deletes again changes nothing.
    again = full.ingest([*corpus.targets[:10], *corpus.deletes[:10], *corpus.posts[:10]])
    assert {r.status for r in again} == {Status.DUPLICATE}
    per_stream = corpus.items()
    buckets: dict[tuple[bytes, int], list[int]] = {}
    streams: dict[bytes, list[int]] = {}
    for stream, items in per_stream.items():
        klass = WORKSPACE_CLASS if stream == GENESIS_STREAM else CHANNEL_CLASS
        streams[stream] = [klass, len(items)] + [0] * 8
        for ts, oid in items:
            acc = buckets.setdefault((stream, ts >> BUCKET_SHIFT), [0] * 9)
            acc[0] += 1
            for k, lane in enumerate(lanes(oid)):
                acc[k + 1] += lane
                streams[stream][k + 2] += lane
    lane_columns = "l0, l1, l2, l3, l4, l5, l6, l7"
    rows = full.conn.execute(
        f"SELECT stream, bucket, count, {lane_columns} FROM item_buckets WHERE count > 0"
    ).fetchall()
    assert {(row[0], row[1]): list(row[2:]) for row in rows} == buckets
    rows = full.conn.execute(
        f"SELECT stream, class, count, {lane_columns}, newest FROM item_streams").fetchall()
    assert {row[0]: list(row[1:-1]) for row in rows} == streams
    for row in rows:  # newest may be a deleted post's: it only orders streams
        assert row[-1] >= max(ts for ts, _ in per_stream[row[0]])
    table = full.conn.execute("SELECT stream, ts, id FROM items").fetchall()
    assert set(table) == {(s, ts, oid) for s, items in per_stream.items() for ts, oid in items}
    summaries = ReplicaStore(full).streams()
    assert {s: (i.klass, i.count, i.fingerprint) for s, i in summaries.items()} == {
        s: (streams[s][0], len(items), vector(items).fingerprint(0, len(items)))
        for s, items in per_stream.items()}
    assert_same_storage_of(full, per_stream)


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
    summaries = [{s: i[:3] for s, i in ReplicaStore(r).streams().items()}
                 for r in (forward, backward)]
    assert summaries[0] == summaries[1]
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
    kept = [o for o in objects if o not in targets]
    memory = MemoryStore(kept, workspace=corpus.chat.ws)
    try:
        assert stored_items(replica) == by_stream(kept)
        assert {s: i[:3] for s, i in ReplicaStore(replica).streams().items()} == \
            {s: i[:3] for s, i in memory.streams().items()}
        assert_same_storage_of(replica, by_stream(kept), seed)
    finally:
        replica.close()


def test_an_empty_index(tmp_path: Path):
    chat = Chat()
    replica = new_replica(tmp_path / "empty.sqlite", chat)
    store = ReplicaStore(replica)
    assert store.streams() == {}
    for newest_first in (False, True):
        for stream in (GENESIS_STREAM, chat.channel("general")):
            with store.snapshot(stream, newest_first=newest_first) as snap:
                assert snap.size() == 0 and snap.iterate(0, 0) == []
                assert snap.fingerprint(0, 0) == vector([]).fingerprint(0, 0)
                for bound in (Bound(0), Bound(BASE), Bound(FLIP - BASE), INFINITY_BOUND):
                    assert snap.find_lower_bound(0, 0, bound) == 0
    replica.close()


def test_objects_dated_at_the_edges_of_time_can_be_reconciled(tmp_path: Path):
    chat = Chat()
    far = chat.post("alice", "general", "from the end of time", ts=MAX_TS)
    near = chat.post("bob", "general", "from now", ts=BASE + 3)
    first = chat.post("carol", "general", "from the start of time", ts=0)
    replica = new_replica(tmp_path / "far.sqlite", chat)
    ingest(replica, [chat.genesis, far, near, first])
    general = chat.channel("general")
    expected = {general: {(far.ts, far.id), (near.ts, near.id), (first.ts, first.id)},
                GENESIS_STREAM: {(chat.genesis.ts, chat.genesis.id)}}
    assert stored_items(replica) == expected
    assert ReplicaStore(replica).streams()[general].newest == MAX_TS
    assert_same_storage_of(replica, expected)
    with ReplicaStore(replica).snapshot(general, newest_first=True) as snap:
        # The newest comes first, the oldest last, at the very top of negentropy's range.
        assert snap.iterate(0, 3) == [(FLIP - MAX_TS, far.id), (FLIP - near.ts, near.id),
                                      (FLIP, first.id)]
        assert snap.find_lower_bound(0, 3, Bound(FLIP)) == 2
        assert snap.find_lower_bound(0, 3, Bound(FLIP, b"\xff" * 32)) == 3
        assert snap.find_lower_bound(0, 3, INFINITY_BOUND) == 3
    replica.close()


# Reconciliation between a replica and a memory store ------------------------------------------


def run_negentropy(client_store, server_store, stream: bytes, newest_first: bool, limit: int,
                   **params) -> tuple[set[bytes], set[bytes]]:
    """A whole reconciliation of one stream, every step over a fresh snapshot (as
    sync._rounds does)."""
    def snapshot(store):
        return store.snapshot(stream, newest_first=newest_first)

    with snapshot(client_store) as storage:
        message = Negentropy(storage, limit, **params).initiate()
    have: list[bytes] = []
    need: list[bytes] = []
    for _ in range(1000):
        with snapshot(server_store) as storage:
            reply = Negentropy(storage, limit, **params).reconcile_server(message)
        with snapshot(client_store) as storage:
            step = Negentropy.resume_client(storage, limit, **params).reconcile_client(reply)
        have += step.have
        need += step.need
        if step.next_message is None:
            return set(have), set(need)
        message = step.next_message
    raise AssertionError("reconciliation did not finish")


def memory_side(corpus: Corpus, rng: random.Random, *,
                extra: int = 6) -> tuple[MemoryStore, dict[bytes, Items]]:
    """A peer holding part of the posts (some deleted targets still among them), part of the
    deletes, and posts the replica never saw (in a channel of their own, and in one the
    replica holds)."""
    store = MemoryStore([corpus.chat.genesis], workspace=corpus.chat.ws)
    store.add([p for p in corpus.posts if rng.random() < 0.7])
    store.add([d for d in corpus.deletes if rng.random() < 0.5])
    store.add([corpus.chat.post("bob", channel, f"only in memory {rng.random()}",
                                ts=random_ts(rng, []))
               for channel in ("random", "elsewhere") for _ in range(extra)])
    return store, by_stream(store.objects.values())


def ids_of(per_stream: dict[bytes, Items], stream: bytes) -> set[bytes]:
    return {oid for _, oid in per_stream.get(stream, ())}


@DIRECTIONS
@pytest.mark.parametrize("limit", [0, 4096])
@pytest.mark.parametrize("params", [{}, {"buckets": NEG_BUCKETS,
                                         "id_list_threshold": NEG_ID_LIST_THRESHOLD}])
def test_replica_and_memory_reconcile_to_the_symmetric_difference(full, corpus, limit, params,
                                                                  newest_first):
    memory, memory_items = memory_side(corpus, random.Random(5))
    replica_items = corpus.items()
    replica = ReplicaStore(full)
    streams = replica.streams().keys() | memory.streams().keys()
    assert streams == replica_items.keys() | memory_items.keys()
    replica_has, memory_has = set(), set()
    for stream in streams:
        mine, theirs = ids_of(replica_items, stream), ids_of(memory_items, stream)
        have, need = run_negentropy(replica, memory, stream, newest_first, limit, **params)
        assert (have, need) == (mine - theirs, theirs - mine)
        have, need = run_negentropy(memory, replica, stream, newest_first, limit, **params)
        assert (have, need) == (theirs - mine, mine - theirs)
        replica_has |= mine - theirs
        memory_has |= theirs - mine
    assert replica_has and memory_has  # both sides have extras
    # The summaries tell exactly which streams differ.
    ours, peers = replica.streams(), memory.streams()
    differ = {s for s in streams if s not in ours or s not in peers
              or ours[s].fingerprint != peers[s].fingerprint}
    assert differ == {s for s in streams if ids_of(replica_items, s) != ids_of(memory_items, s)}


@DIRECTIONS
def test_equal_sets_reconcile_in_one_round_trip(full, corpus, newest_first):
    memory = MemoryStore(corpus.kept, workspace=corpus.chat.ws)
    replica = ReplicaStore(full)
    assert {s: i[:3] for s, i in replica.streams().items()} == \
        {s: i[:3] for s, i in memory.streams().items()}
    for stream in replica.streams():
        with replica.snapshot(stream, newest_first=newest_first) as storage:
            message = Negentropy(storage).initiate()
        with memory.snapshot(stream, newest_first=newest_first) as storage:
            reply = Negentropy(storage).reconcile_server(message)
        with replica.snapshot(stream, newest_first=newest_first) as storage:
            step = Negentropy.resume_client(storage).reconcile_client(reply)
        assert step == (None, [], [])


def test_snapshots_see_writes_from_this_and_other_connections(full, corpus):
    store = ReplicaStore(full)
    dev, general = corpus.chat.channel("dev"), corpus.chat.channel("general")
    before = corpus.items()
    for newest_first in (False, True):  # both directions cached before anything is written
        for stream in (dev, general):
            assert snapshot_items(store, stream, newest_first) == before[stream]
            # Nothing written: the same answers.
            assert snapshot_items(store, stream, newest_first) == before[stream]
    extra = corpus.chat.post("carol", "dev", "written after the first snapshot",
                             ts=BASE + 7 * BUCKET + 5)
    ingest(full, [extra])
    for newest_first in (False, True):
        assert snapshot_items(store, dev, newest_first) == before[dev] | {(extra.ts, extra.id)}
        assert snapshot_items(store, general, newest_first) == before[general]
    other = Replica(full.path, clock=lambda: NOW_S)  # e.g. a `hearth post` in another process
    late = corpus.chat.post("dave", "dev", "written by another connection",
                            ts=BASE + 7 * BUCKET + 6)
    ingest(other, [late])
    other.close()
    expected = before | {dev: before[dev] | {(extra.ts, extra.id), (late.ts, late.id)}}
    for newest_first in (False, True):
        with store.snapshot(dev, newest_first=newest_first) as snap:
            assert_same_storage(snap, expected[dev], newest_first, random.Random(9), ranges=100)
    assert store.streams()[dev].count == len(expected[dev])


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
    m, r, wire = sessions(memory, replica_store, clock, secret=b"k" * 32)  # the memory side dials
    wire.pump()
    assert m.connected and r.connected
    [done] = wire.events(m, ReconcileComplete)
    replica_ids = {oid for _, oid in union(corpus.items())}
    memory_ids = {oid for _, oid in union(memory_items)}
    assert (done.have, done.need) == (len(memory_ids - replica_ids),
                                      len(replica_ids - memory_ids))
    # The memory side now holds everything the replica holds, stream by stream; deleted
    # content is never sent.
    for stream, items in stored_items(full).items():
        for newest_first in (False, True):
            assert items <= snapshot_items(memory, stream, newest_first)
    target_ids = {t.id for t in corpus.targets}
    assert not (set(memory.objects) - had) & target_ids
    extras = {o.id for o in memory.objects.values()} - replica_ids - target_ids
    assert extras and all(full.has(oid) for oid in extras)  # the replica ingested them
    # The replica now holds the stream only the memory side had.
    assert corpus.chat.channel("elsewhere") in replica_store.streams()
    # Deleted posts the memory side still had were dropped on arrival: the replica holds
    # their deletes, so they are what the next round still finds (a MemoryStore does not
    # apply deletes; a replica would drop them too).
    stale = had & target_ids
    assert stale and not any(full.has(oid) for oid in stale)
    m.rounds.reconcile(clock.now)
    wire.pump()
    again = wire.events(m, ReconcileComplete)[-1]
    assert (again.have, again.need) == (len(stale), 0)
