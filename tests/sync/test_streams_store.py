"""Tests for the per-stream reconciliation index (docs/ARCHITECTURE.md "Sync": "Reconciliation",
"Interests"; storage/items.py; sync/store.py).

`ReplicaStore.streams()` over a real replica file must answer as `MemoryStore.streams()` over the
objects it holds (deleted targets left out, refused ids kept in): the same streams, classes,
counts, fingerprints and newest dates, whatever arrived in what order; the migration to version
13 must build the index ingest builds; and two replicas must reconcile stream by stream, newest
first, to exactly their symmetric difference.
"""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import pytest

from core import kinds
from core.encoding import derive_id
from core.kinds import CHANNEL_CLASS, GENESIS_STREAM, WORKSPACE_CLASS
from core.objects import Object
from storage import Replica, Status
from storage._schema import SCHEMA_VERSION
from storage.migrations import v13
from sync.session import NEG_BUCKETS, NEG_ID_LIST_THRESHOLD, ReconcileComplete
from sync.store import MemoryStore, ReplicaStore, StreamInfo
from tests.storage.test_migrations import as_version_12
from tests.support import FakeClock

from .conftest import CHANNELS, Chat, identity
from .session_support import T_START, sessions
from .test_store import NOW_S, ingest, new_replica, run_negentropy, snapshot_items, vector

ELSEWHERE = derive_id("test", b"a stream of a kind this version does not know")
MALLORY = identity("streams-mallory")  # the member a replica blocks


class Workspace:
    """Objects of one workspace in every class of stream: the workspace's own streams, profiles,
    a stream of an unknown kind, three channels; deletes, some honoured and some not; and
    objects of MALLORY's, whom no delete names."""

    def __init__(self, posts: int = 240):
        self.chat = chat = Chat()
        alice, bob, carol, dave = (chat.people[n] for n in ("alice", "bob", "carol", "dave"))
        self.grant = chat.publish(chat.root, "workspace/admin-grant", chat.ws,
                                  {"key": alice.public_key})
        self.nicks = [chat.publish(who, "post/info", kinds.profile_stream(who.public_key),
                                   {"name": name}) for who, name in ((alice, "Alice"), (bob, "Bob"))]
        self.unknown = chat.publish(bob, "future/thing", ELSEWHERE, {"x": 1})
        self.topic = chat.publish(carol, "post/topic", chat.channel("general"),
                                  {"channel": "general", "topic": "all things"})
        self.join = chat.publish(dave, "post/join", chat.channel("dev"), {"channel": "dev"})
        names = sorted(chat.people)
        self.posts = [chat.post(names[n % 4], CHANNELS[n % 3], f"post {n}", step_ms=400_000)
                      for n in range(posts)]
        # Honoured: by the author, or by an admin (alice was granted); not: by another member.
        self.honoured = self.posts[3:40:6]
        self.deletes = [chat.delete(alice if n % 2 else chat.author_of(t), t)
                        for n, t in enumerate(self.honoured)]
        self.survivor = next(p for p in self.posts[50:] if p.author != carol.public_key)
        self.deletes.append(chat.delete(carol, self.survivor))
        self.mallorys = [chat.publish(MALLORY, "post/info", kinds.profile_stream(
            MALLORY.public_key), {"name": "Mallory"})]
        self.mallorys += [chat.post(MALLORY, channel, f"from mallory in {channel}")
                          for channel in ("general", "random")]

    @property
    def objects(self) -> list[Object]:
        """Everything but the deletes."""
        return [self.chat.genesis, self.grant, *self.nicks, self.unknown, self.topic,
                self.join, *self.posts, *self.mallorys]

    @property
    def kept(self) -> list[Object]:
        """What a replica that also took the deletes holds."""
        gone = {t.id for t in self.honoured}
        return [o for o in [*self.objects, *self.deletes] if o.id not in gone]

    def memory(self, objects) -> MemoryStore:
        return MemoryStore(objects, workspace=self.chat.ws)


@pytest.fixture(scope="module")
def ws() -> Workspace:
    return Workspace()


def replica_of(path: Path, ws: Workspace, objects) -> ReplicaStore:
    replica = new_replica(path, ws.chat)
    ingest(replica, list(objects))
    return ReplicaStore(replica)


def summaries(store) -> dict[bytes, tuple[int, int, bytes]]:
    """Per stream: class, count and fingerprint (not the newest date)."""
    return {stream: info[:3] for stream, info in store.streams().items()}


def ids_in(store, stream: bytes) -> set[bytes]:
    return {oid for _, oid in snapshot_items(store, stream, newest_first=True)}


# The summaries --------------------------------------------------------------------------------


def test_a_replicas_streams_are_a_memory_stores_for_the_same_objects(tmp_path, ws):
    store = replica_of(tmp_path / "r.sqlite", ws, ws.objects)
    streams = store.streams()
    assert streams == ws.memory(ws.objects).streams()
    chat = ws.chat
    profiles = [kinds.profile_stream(n.author) for n in (*ws.nicks, ws.mallorys[0])]
    assert {s: info.klass for s, info in streams.items()} == {
        GENESIS_STREAM: WORKSPACE_CLASS, chat.ws: WORKSPACE_CLASS, ELSEWHERE: WORKSPACE_CLASS,
        **{p: WORKSPACE_CLASS for p in profiles},
        **{chat.channel(c): CHANNEL_CLASS for c in CHANNELS}}
    # Each summary is its stream's: the count, negentropy's fingerprint of the whole stream,
    # the newest date.
    for stream, info in streams.items():
        held = [o for o in ws.objects if o.stream == stream]
        items = {(o.ts, o.id) for o in held}
        assert info == StreamInfo(info.klass, len(items),
                                  vector(items).fingerprint(0, len(items)),
                                  max(o.ts for o in held))
    store.replica.close()


def test_an_honoured_delete_takes_its_target_out_of_its_streams_summary(tmp_path, ws):
    store = replica_of(tmp_path / "r.sqlite", ws, ws.objects)
    before = store.streams()
    ingest(store.replica, ws.deletes)
    after = store.streams()
    assert after == ws.memory(ws.kept).streams()
    for stream in before.keys() | after.keys():
        gone = sum(t.stream == stream for t in ws.honoured)
        deletes = sum(d.stream == stream for d in ws.deletes)
        assert after[stream].count == before[stream].count - gone + deletes
        assert (after[stream].fingerprint == before[stream].fingerprint) == (deletes == 0)
        held = ids_in(store, stream)
        assert not held & {t.id for t in ws.honoured}
        assert {d.id for d in ws.deletes if d.stream == stream} <= held
    # A delete that is not honoured is in the set; its target too.
    assert ws.survivor.id in ids_in(store, ws.survivor.stream)
    assert ws.deletes[-1].id in ids_in(store, ws.survivor.stream)
    store.replica.close()


@pytest.mark.parametrize("order", ["info first", "post first", "one batch", "one batch, info first"])
def test_a_stream_is_workspace_level_once_any_of_its_objects_says_so(tmp_path, order):
    """A post/info in a channel's stream (valid, stored, ignored by the views) makes the
    stream workspace-level, whichever arrives first; a later channel post does not undo it."""
    chat = Chat()
    random_ = chat.channel("random")
    stray = chat.publish(chat.people["bob"], "post/info", random_, {"name": "Bob"})
    post = chat.post("alice", "random", "a post")
    replica = new_replica(tmp_path / "r.sqlite", chat)
    ingest(replica, [chat.genesis])
    store = ReplicaStore(replica)
    held = [chat.genesis]
    batches = {"info first": [[stray], [post]], "post first": [[post], [stray]],
               "one batch": [[post, stray]], "one batch, info first": [[stray, post]]}[order]
    for batch in batches:
        ingest(replica, batch)
        held += batch
        assert store.streams() == MemoryStore(held, workspace=chat.ws).streams()
    assert store.streams()[random_].klass == WORKSPACE_CLASS
    replica.close()


def test_refused_ids_count_in_their_stream(tmp_path, ws):
    """What a block refused stays in the set (so peers stop offering it), in its own stream."""
    store = replica_of(tmp_path / "r.sqlite", ws, [ws.chat.genesis])
    assert store.replica.moderation.block(MALLORY.public_key)
    results = store.replica.ingest(ws.objects[1:])
    assert {r.id for r in results if r.status is Status.REFUSED} == {o.id for o in ws.mallorys}
    assert not any(store.replica.has(o.id) for o in ws.mallorys)
    assert store.streams() == ws.memory(ws.objects).streams()
    assert store.replica.moderation.unblock(MALLORY.public_key)  # sync is to bring them now
    # They leave the set (a stream's newest date stays: it only orders streams).
    assert summaries(store) == summaries(ws.memory(
        [o for o in ws.objects if o not in ws.mallorys]))
    store.replica.close()


# The migration --------------------------------------------------------------------------------


def test_a_version_12_file_gets_the_index_ingest_builds(tmp_path, ws):
    path = tmp_path / "v12.sqlite"
    store = replica_of(path, ws, [ws.chat.genesis])
    store.replica.moderation.block(MALLORY.public_key)
    store.replica.ingest([*ws.objects[1:], *ws.deletes])
    assert not any(store.replica.has(o.id) for o in ws.mallorys)  # in the set, not held
    before = store.streams()
    assert before == ws.memory(ws.kept).streams()
    store.replica.close()
    as_version_12(path)

    with Replica(path, clock=lambda: NOW_S) as upgraded:
        conn = upgraded.conn
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        store = ReplicaStore(upgraded)
        # Ids refused before knew no stream: they leave the set; everything held is as ingest
        # indexes it, stream by stream, both ways.
        held = [o for o in ws.kept if o not in ws.mallorys]
        assert store.streams() == ws.memory(held).streams()
        for stream in store.streams():
            items = {(o.ts, o.id) for o in held if o.stream == stream}
            assert snapshot_items(store, stream) == items
            assert snapshot_items(store, stream, newest_first=True) == items
        assert {r[1] for r in conn.execute("PRAGMA table_info(refused)")} >= {"stream", "class"}
        # When sync brings them again the block refuses them again, with their stream.
        again = upgraded.ingest(ws.mallorys)
        assert {r.status for r in again} == {Status.REFUSED}
        assert store.streams() == before


def test_rebuilding_the_index_of_a_current_file_changes_nothing(tmp_path, ws):
    """Version 13's rebuild, run again on a file ingest kept (refused ids with their stream
    now), gives back the same index."""
    path = tmp_path / "v13.sqlite"
    store = replica_of(path, ws, [ws.chat.genesis])
    store.replica.moderation.block(MALLORY.public_key)
    store.replica.ingest([*ws.objects[1:], *ws.deletes])
    before = store.streams()
    items = {stream: snapshot_items(store, stream) for stream in before}
    store.replica.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN IMMEDIATE")
    v13.migrate(conn)
    conn.execute("COMMIT")
    conn.close()
    with Replica(path, clock=lambda: NOW_S) as again:
        store = ReplicaStore(again)
        assert store.streams() == before == ws.memory(ws.kept).streams()
        assert {stream: snapshot_items(store, stream) for stream in before} == items


# Reconciling two replicas ---------------------------------------------------------------------


def split(ws: Workspace, seed: int) -> tuple[list[Object], list[Object]]:
    """Two overlapping shares of the workspace, with streams only one side holds, and deletes
    one side holds of posts only the other still has."""
    rng = random.Random(seed)
    a, b = [ws.chat.genesis], [ws.chat.genesis]
    for obj in [*ws.objects[1:], *ws.deletes]:
        roll = rng.random()
        if obj is ws.unknown or obj is ws.nicks[0]:
            a.append(obj)
        elif obj is ws.nicks[1]:
            b.append(obj)
        elif obj in ws.deletes:
            (a if roll < 0.5 else b).append(obj)
        else:
            if roll < 0.8:
                a.append(obj)
            if roll > 0.2:
                b.append(obj)
    return a, b


@pytest.mark.parametrize("limit", [0, 4096])
@pytest.mark.parametrize("params", [{}, {"buckets": NEG_BUCKETS,
                                         "id_list_threshold": NEG_ID_LIST_THRESHOLD}])
def test_two_replicas_reconcile_each_stream_newest_first_to_the_difference(tmp_path, ws, limit,
                                                                           params):
    objects_a, objects_b = split(ws, 3)
    a = replica_of(tmp_path / "a.sqlite", ws, objects_a)
    b = replica_of(tmp_path / "b.sqlite", ws, objects_b)
    streams = a.streams().keys() | b.streams().keys()
    assert a.streams().keys() - b.streams().keys() and b.streams().keys() - a.streams().keys()
    a_has, b_has = set(), set()
    for stream in streams:
        mine, theirs = ids_in(a, stream), ids_in(b, stream)
        assert (mine == theirs) == (a.streams().get(stream) == b.streams().get(stream))
        have, need = run_negentropy(a, b, stream, True, limit, **params)
        assert (have, need) == (mine - theirs, theirs - mine)
        a_has |= have
        b_has |= need
    assert a_has and b_has
    # Each side takes what it lacks: the sets converge, deletes honoured on both sides.
    b.replica.ingest(a.missing(sorted(a_has)))
    a.replica.ingest(b.missing(sorted(b_has)))
    assert a.streams() == b.streams()
    assert summaries(a) == summaries(ws.memory(ws.kept))
    for stream in streams:
        assert run_negentropy(a, b, stream, True, limit, **params) == (set(), set())
    assert a.replica.digest() == b.replica.digest()
    a.replica.close()
    b.replica.close()


def test_a_session_between_two_replicas_converges_stream_by_stream(tmp_path, ws, secret):
    objects_a, objects_b = split(ws, 8)
    a = replica_of(tmp_path / "a.sqlite", ws, objects_a)
    b = replica_of(tmp_path / "b.sqlite", ws, objects_b)
    clock = FakeClock(T_START)
    sa, sb, wire = sessions(a, b, clock, secret=secret)
    wire.pump()
    [first] = wire.events(sa, ReconcileComplete)
    assert first.have and first.need
    assert a.streams() == b.streams()
    assert summaries(a) == summaries(ws.memory(ws.kept))
    assert a.replica.digest() == b.replica.digest()
    sa.rounds.reconcile(clock.now)
    wire.pump()
    second = wire.events(sa, ReconcileComplete)[-1]
    assert (second.have, second.need) == (0, 0)
    a.replica.close()
    b.replica.close()
