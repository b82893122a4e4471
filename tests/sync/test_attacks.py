"""Attacks by a member (holding the workspace secret, with an identity of its own) on the sync
protocol, through real sessions wired in memory over real replicas (issue #12; docs/SECURITY.md).

Each test is the attack as it was reported, and fails on the code before the fix.
"""

from __future__ import annotations

import pytest

from core.objects import build
from storage import Replica, Status
from sync.negentropy import Bound, Message, Mode, Range, encode_message
from sync.session import (
    MAX_OUTGOING,
    MAX_QUEUED_WANTS,
    NEG_MAX_RANGES,
    OBJECTS_FRAME_BYTES,
    WANT_BATCH,
    Closed,
    ReconcileComplete,
)
from sync.store import MemoryStore, ReplicaStore
from tests.support import FakeClock

from .conftest import Chat, identity
from .session_support import T_START, connected, frame, inject, sessions

NOW_S = 1_900_000_000.0
MALLORY = identity("attacker-mallory")


def replica(tmp_path, chat: Chat, objects, name: str) -> ReplicaStore:
    rep = Replica.create(tmp_path / f"{name}.sqlite", chat.ws, chat.root.public_key,
                         clock=lambda: NOW_S)
    for start in range(0, len(objects) + 1, 5000):
        results = rep.ingest([chat.genesis, *objects[start:start + 5000]])
        assert not [r for r in results if r.status is Status.REJECTED], results[:3]
    return ReplicaStore(rep)


def ids_held(store: ReplicaStore) -> set[bytes]:
    return {row[0] for row in store.replica.conn.execute("SELECT id FROM objects")}


def sync(a: ReplicaStore, b: ReplicaStore, secret: bytes, **kw):
    """A dials b; one round, then a second that must find nothing left to move."""
    x, y, wire, clock = connected(a, b, secret=secret, **kw)
    x.rounds.reconcile(clock.now)
    wire.pump()
    return x, y, wire


# 1. Censorship by forged deletion claims ------------------------------------------------------


def test_a_deletion_claim_is_not_taken_on_a_peers_word(tmp_path, secret):
    """Mallory tells Alice's node that the admin's post was deleted: version 1 tombstoned it
    and never fetched it again. Now the claim closes Mallory's session and changes nothing."""
    chat = Chat()
    post = chat.post(chat.root, "general", "the admin's announcement")
    alice = replica(tmp_path, chat, [], "alice")
    mallory = replica(tmp_path, chat, [], "mallory")
    a, evil, wire, clock = connected(alice, mallory, secret=secret, a_initiates=False,
                                     ident_a=identity("alice"), ident_b=MALLORY)
    inject(evil, a, [frame({"t": "gone", "items": [[post.ts, post.id]]})], clock.now)
    wire.drain(a)
    [closed] = wire.events(a, Closed)
    assert closed.error and "unknown frame type 'gone'" in closed.reason
    assert not alice.replica.is_deleted(post.id)
    admin = replica(tmp_path, chat, [post], "admin")
    sync(alice, admin, secret)
    assert alice.replica.has(post.id)
    assert [m.text for m in alice.replica.messages("general")] == ["the admin's announcement"]


def test_a_forged_delete_object_censors_nothing_whatever_arrives_first(tmp_path, secret):
    """Mallory signs a delete of the admin's post. A new member that gets Mallory's delete first still fetches and shows the post, reports
    in sync with the admin only once it holds it, and passes nothing forged on to a third."""
    chat = Chat()
    post = chat.post(chat.root, "general", "pinned: the rules")
    reply = chat.post("bob", "general", "thanks")
    forged = chat.delete(MALLORY, post)
    mallory = replica(tmp_path, chat, [forged], "mallory")
    admin = replica(tmp_path, chat, [post, reply], "admin")
    newcomer = replica(tmp_path, chat, [], "newcomer")
    third = replica(tmp_path, chat, [], "third")
    sync(newcomer, mallory, secret)
    assert newcomer.replica.has(forged.id) and not newcomer.replica.is_deleted(post.id)
    x, _, wire = sync(newcomer, admin, secret)
    second = wire.events(x, ReconcileComplete)[-1]
    assert (second.have, second.need) == (0, 0)
    assert [m.text for m in newcomer.replica.messages("general")] == [
        "pinned: the rules", "thanks"]
    sync(third, newcomer, secret)
    assert third.replica.has(post.id) and not third.replica.is_deleted(post.id)
    assert third.replica.digest() == newcomer.replica.digest()


# 5. Many deletions reach a new member ---------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("old_dials", [True, False])
def test_a_workspace_with_25_000_deletions_syncs_to_a_new_member(tmp_path, secret, old_dials):
    """Version 1 sent every deleted id a peer lacked in one "gone" frame: past ~23,800 it was
    over 1 MiB, refused, and the round died every time. Deletes now travel as objects."""
    chat = Chat()
    posts = [chat.post("alice", "general", f"note {n}", step_ms=1) for n in range(25_100)]
    deletes = [chat.publish(chat.people["alice"], "post/delete", chat.channel("general"),
                            {"targets": [p.id for p in posts[n:n + 64]]}, step_ms=1)
               for n in range(0, 25_000, 64)]
    old = replica(tmp_path, chat, [*posts, *deletes], "old")
    assert old.replica.conn.execute("SELECT COUNT(*) FROM tombstones").fetchone()[0] == 25_024
    new = replica(tmp_path, chat, [], "new")
    x, y, wire = sync(old, new, secret) if old_dials else sync(new, old, secret)
    assert not wire.events(x, Closed) and not wire.events(y, Closed)
    rounds = wire.events(x, ReconcileComplete)
    assert (rounds[-1].have, rounds[-1].need) == (0, 0)
    assert ids_held(new) == ids_held(old)
    assert len(new.replica.messages("general", limit=500)) == 25_100 - 25_024
    assert new.replica.digest() == old.replica.digest()


# 6. Memory amplification through wants --------------------------------------------------------


def large_objects(count: int) -> list:
    """Objects of a kind this version does not know (stored and relayed as they are), as big
    as an object may be: the largest answers a member can ask for."""
    return [build(MALLORY, "x/blob", stream=bytes(32), body={"n": n, "pad": bytes(60_000)},
                  ts=1_700_000_000_000 + n) for n in range(count)]


def test_a_peer_that_asks_and_never_reads_gets_a_bounded_answer_then_is_cut_off(secret):
    """Version 1 put every object a want asked for in the output at once (2,048 objects of up
    to 64 KiB each, per want, per connection): a node grew by 1.5 GB. Now an answer is read
    from the store only as the output drains, and a peer piling up wants is cut off."""
    blobs = large_objects(200)
    responder_store = MemoryStore(blobs)
    clock = FakeClock(T_START)
    evil, responder, wire = sessions(MemoryStore(), responder_store, clock, secret=secret,
                                     reconcile_interval=None)
    wire.pump()
    assert responder.connected
    ids = [b.id for b in blobs]
    assert len(ids) <= WANT_BATCH
    inject(evil, responder, [frame({"t": "want", "ids": ids})], clock.now)
    out = responder.data_to_send()
    assert sum(map(len, out)) <= MAX_OUTGOING + OBJECTS_FRAME_BYTES + 64 * 1024
    assert responder.has_output  # the rest waits for the socket to take this
    for _ in range(MAX_QUEUED_WANTS):
        inject(evil, responder, [frame({"t": "want", "ids": ids})], clock.now)
    wire.drain(responder)
    [closed] = wire.events(responder, Closed)
    assert closed.error and "without reading" in closed.reason


def test_an_honest_large_answer_arrives_whole_in_bounded_pieces(secret):
    blobs = large_objects(200)
    a, b, wire, clock = connected(MemoryStore(), MemoryStore(blobs), secret=secret)
    assert set(a.store.objects) == {o.id for o in blobs}
    [done] = wire.events(a, ReconcileComplete)
    assert done.need == len(blobs)
    biggest = max(len(data) for side, data in wire.sent if side is b)
    assert biggest <= 65535


# 13. Reconciliation messages that cost the event loop -----------------------------------------


def test_a_reconciliation_message_of_too_many_ranges_is_refused(secret):
    """One 1 MiB message of ranges cost 1.6 s of the event loop for a 1-byte answer; an honest
    peer never sends more than NEG_MAX_RANGES ranges, so more is refused before it is read."""
    a, evil, wire, clock = connected(MemoryStore(), MemoryStore(), secret=secret,
                                     a_initiates=False)
    ranges = tuple(Range(Bound(1_000 + n), Mode.SKIP) for n in range(NEG_MAX_RANGES + 1))
    inject(evil, a, [frame({"t": "neg", "r": 1, "s": bytes(32), "d": 0, "l": 4096,
                             "m": encode_message(Message(ranges))})],
           clock.now)
    wire.drain(a)
    [closed] = wire.events(a, Closed)
    assert closed.error and f"more than {NEG_MAX_RANGES} ranges" in closed.reason
