"""Reconciliation per stream (sync._rounds): newest first, interests, resuming.

Two sessions wired in memory (tests/sync/test_session.py's Wire) over MemoryStores of real
signed objects: what the joiner receives, in which order, and what it never receives.
"""

from __future__ import annotations

import pytest

from core import kinds
from core.encoding import object_id
from core.objects import Object, decode
from sync._interest import Interest
from sync._rounds import NEED_HIGH, SyncProgress
from sync.session import Closed, ObjectsReceived, ReconcileComplete, Session
from sync.store import MemoryStore
from tests.support import FakeClock

from .conftest import Chat
from .session_support import ALICE, BOB, T_START, Wire, frame, inject, sessions

PER_CHANNEL = 400
CHANNELS = ("general", "random", "dev")


@pytest.fixture(scope="module")
def world() -> tuple[Chat, list[Object]]:
    chat = Chat()
    objects = [chat.genesis]
    for person in ("alice", "bob"):
        who = chat.people[person]
        objects.append(chat.publish(who, "post/info", kinds.profile_stream(who.public_key),
                                    {"name": person}))
    for n in range(PER_CHANNEL):
        for channel in CHANNELS:
            objects.append(chat.post("alice" if n % 2 else "bob", channel, f"{channel} {n}"))
    return chat, objects


def joiner(chat: Chat, objects: list[Object], *, keep: set[str] | None = None, **kw):
    """An empty store dialling one that holds `objects`."""
    held = MemoryStore(objects, workspace=chat.ws)
    empty = MemoryStore(workspace=chat.ws)
    interest = Interest() if keep is None else Interest(frozenset(chat.channel(c) for c in keep))
    clock = FakeClock(T_START)
    new, old, wire = sessions(empty, held, clock, secret=b"s" * 32, ws=chat.ws, **kw)
    new.rounds.interest = interest
    return new, old, wire, empty


class Trickle:
    """Moves a wire's messages one at a time each way, so a test can act between them."""

    def __init__(self, wire):
        self.wire = wire
        self.queued = {id(wire.a): [], id(wire.b): []}

    def step(self) -> bool:
        moved = False
        wire = self.wire
        for src, dst in ((wire.a, wire.b), (wire.b, wire.a)):
            queue = self.queued[id(src)]
            queue.extend(src.data_to_send())
            if queue:
                dst.receive(queue.pop(0), wire.clock.now)
                wire.drain(dst)
                moved = True
            wire.drain(src)
        return moved


def received(wire, side) -> list[Object]:
    return [decode(raw) for e in wire.events(side, ObjectsReceived) for raw in e.raws]


def test_the_newest_posts_of_every_channel_come_first(world):
    chat, objects = world
    new, _, wire, empty = joiner(chat, objects)
    wire.pump()
    assert set(empty.objects) == {o.id for o in objects}
    got = [o for o in received(wire, new) if o.type == "post/text"]
    # Every channel's newest tenth arrives before any channel's older half.
    position = {o.id: n for n, o in enumerate(got)}
    newest_last, older_first = 0, len(got)
    for channel in CHANNELS:
        posts = sorted((o for o in objects if o.stream == chat.channel(channel)),
                       key=lambda o: -o.ts)
        newest_last = max(newest_last, *(position[o.id] for o in posts[:PER_CHANNEL // 10]))
        older_first = min(older_first, *(position[o.id] for o in posts[PER_CHANNEL // 2:]))
    assert newest_last < older_first
    # Workspace-level objects (the workspace's stream, profiles) before any post.
    kinds_in_order = [o.type for o in received(wire, new)]
    assert kinds_in_order.index("post/text") > max(
        kinds_in_order.index("workspace/genesis"), kinds_in_order.index("post/info"))
    # And each channel arrives newest first.
    for channel in CHANNELS:
        times = [o.ts for o in got if o.stream == chat.channel(channel)]
        assert times == sorted(times, reverse=True)


def test_a_focused_channel_comes_before_the_others(world):
    chat, objects = world
    new, _, wire, _ = joiner(chat, objects)
    new.rounds.focus(chat.channel("dev"), T_START)
    wire.pump()
    posts = [o for o in received(wire, new) if o.type == "post/text"]
    assert {o.stream for o in posts[:PER_CHANNEL]} == {chat.channel("dev")}


def test_a_member_keeping_one_channel_never_receives_the_others(world):
    chat, objects = world
    new, old, wire, empty = joiner(chat, objects, keep={"general"})
    wire.pump()
    streams = {o.stream for o in received(wire, new)}
    assert chat.channel("random") not in streams and chat.channel("dev") not in streams
    wanted = {o.id for o in objects if o.stream == chat.channel("general")
              or o.type in ("workspace/genesis", "post/info")}
    assert set(empty.objects) == wanted
    # A live post in a channel it does not keep is not pushed to it either.
    elsewhere = chat.post("alice", "random", "not for the laptop")
    here = chat.post("alice", "general", "for the laptop")
    old.store.add([elsewhere, here])
    old.outbox.push([elsewhere.raw, here.raw], [elsewhere.id, here.id],
             [(elsewhere.stream, kinds.CHANNEL_CLASS), (here.stream, kinds.CHANNEL_CLASS)])
    wire.pump()
    assert here.id in empty.objects and elsewhere.id not in empty.objects


def test_keeping_a_channel_later_fetches_its_history(world):
    chat, objects = world
    new, _, wire, empty = joiner(chat, objects, keep={"general"})
    wire.pump()
    assert not any(o.stream == chat.channel("dev") for o in empty.objects.values())
    new.rounds.set_interest(Interest(frozenset({chat.channel("general"), chat.channel("dev")})),
                     wire.clock.now)
    wire.pump()
    dev = {o.id for o in objects if o.stream == chat.channel("dev")}
    assert dev <= set(empty.objects)
    assert not any(o.stream == chat.channel("random") for o in empty.objects.values())
    assert len(wire.events(new, ReconcileComplete)) == 2


def test_dropping_a_channel_while_it_syncs_stops_asking_for_it(world):
    chat, objects = world
    new, _, wire, empty = joiner(chat, objects)
    new.rounds.want_batch_size = 64  # small wants: most ids are still to ask for when it drops
    # Up to the first objects: negotiation under way, some ids asked for.
    trickle = Trickle(wire)
    while not wire.events(new, ObjectsReceived):
        assert trickle.step()
    for side in (new, wire.b):  # what is still on its way arrives
        for data in trickle.queued[id(side)]:
            (wire.b if side is new else new).receive(data, wire.clock.now)
    before = {o.id for o in received(wire, new)}
    new.rounds.set_interest(Interest(frozenset({chat.channel("general")})), wire.clock.now)
    wire.pump()
    later = [o for o in received(wire, new) if o.id not in before]
    # At most what was already asked for arrives for the dropped channels; nothing asked after.
    dropped = [o for o in later if o.stream in (chat.channel("random"), chat.channel("dev"))]
    assert len(dropped) <= 2 * new.rounds.want_batch_size
    general = {o.id for o in objects if o.stream == chat.channel("general")}
    assert general <= set(empty.objects)
    held_elsewhere = sum(1 for o in empty.objects.values()
                         if o.stream in (chat.channel("random"), chat.channel("dev")))
    assert held_elsewhere <= 4 * new.rounds.want_batch_size
    done = [e for e in wire.events(new, SyncProgress) if e.done][-1]
    assert done.received == done.expected


def test_a_joiner_killed_midway_resumes_without_fetching_anything_twice(world):
    chat, objects = world
    new, old, wire, empty = joiner(chat, objects)
    # Cut the connection once about half the objects are here.
    trickle = Trickle(wire)
    while len(empty.objects) < len(objects) // 2:
        assert trickle.step()
    first = wire.received_ids(new)
    assert 0 < len(empty.objects) < len(objects)
    new.connection_lost("killed")
    # A new session from what was stored: only the rest comes.
    clock = FakeClock(T_START + 100)
    again, _, wire2 = sessions(empty, old.store, clock, secret=b"s" * 32, ws=chat.ws)
    wire2.pump()
    second = wire2.received_ids(again)
    assert set(empty.objects) == {o.id for o in objects}
    assert not set(first) & set(second)
    assert len(second) == len(set(second)) == len(objects) - len(set(first))


def test_progress_counts_up_to_what_the_peer_holds(world):
    chat, objects = world
    new, _, wire, _ = joiner(chat, objects)
    wire.pump()
    progress = wire.events(new, SyncProgress)
    assert progress[0].expected == len(objects) and progress[0].held == 0
    assert [p.received for p in progress] == sorted(p.received for p in progress)
    assert progress[-1].received == progress[-1].expected == len(objects)
    assert not progress[-1].pending and progress[-1].done
    assert not any(p.done for p in progress[:-1])
    assert {chat.channel(c) for c in CHANNELS} <= set(progress[1].pending)


def test_a_large_stream_waits_for_its_ids_to_be_asked(world):
    chat, _ = world
    posts = [chat.post("alice", "general", f"bulk {n}") for n in range(3 * NEED_HIGH // 2)]
    new, _, wire, empty = joiner(chat, [chat.genesis, *posts])
    wire.pump()
    assert set(empty.objects) == {chat.genesis.id, *(p.id for p in posts)}
    assert len(wire.received_ids(new)) == len(posts) + 1
    assert all(object_id(o.raw) == o.id for o in empty.objects.values())


def stores_later(chat: Chat, objects: list[Object], lacking: int):
    """A dialler holding `objects` and a responder lacking the last `lacking` of them, whose
    host stores what it receives only when the test says (sync._storing's writer thread)."""
    clock = FakeClock(T_START)
    dialler = Session(MemoryStore(objects, workspace=chat.ws), initiator=True, secret=b"s" * 32,
                      identity=ALICE, workspace=chat.ws, now=clock.now)
    responder = Session(MemoryStore(objects[:-lacking], workspace=chat.ws), initiator=False,
                        secret=b"s" * 32, identity=BOB, workspace=chat.ws, now=clock.now,
                        stores_later=True)
    wire = Wire(dialler, responder, clock)
    wire.later = responder
    return dialler, responder, wire


def test_a_round_waits_for_the_objects_the_peer_sent_in_the_last_to_be_stored(world):
    # A one-off sync (hearth sync --once) runs rounds until one finds nothing to move: a
    # second round answered before the first one's objects were stored found them missing.
    chat, objects = world
    dialler, responder, wire = stores_later(chat, objects, 5)
    wire.pump()
    [first] = wire.events(dialler, ReconcileComplete)
    assert (first.have, first.need) == (5, 0) and len(wire.pending) == 5

    dialler.rounds.reconcile(wire.clock.now)
    wire.pump()
    assert len(wire.events(dialler, ReconcileComplete)) == 1  # the sums wait

    wire.store_pending()
    wire.pump()
    second = wire.events(dialler, ReconcileComplete)[1]
    assert (second.round, second.have, second.need) == (2, 0, 0)
    assert not wire.pending and dialler.stats.objects_sent == 5


def second_round_held(chat: Chat, objects: list[Object]):
    """stores_later's pair once the first round gave the responder 5 objects (not stored yet)
    and the dialler began a second round, whose sums wait."""
    dialler, responder, wire = stores_later(chat, objects, 5)
    wire.pump()
    dialler.rounds.reconcile(wire.clock.now)
    wire.pump()
    return dialler, responder, wire


def test_a_round_waits_only_for_the_objects_that_came_before_it(world):
    # Live pushes that keep coming while the writer catches up do not put the answer off.
    chat, objects = world
    dialler, _, wire = second_round_held(chat, objects)
    live = [chat.post("alice", "general", f"live {n}") for n in range(3)]
    dialler.store.add([o.raw for o in live])
    dialler.outbox.push([o.raw for o in live], [o.id for o in live])
    wire.pump()
    assert len(wire.pending) == 8 and len(wire.events(dialler, ReconcileComplete)) == 1
    wire.store_pending(5)  # the round's five, not the live three
    wire.pump()
    assert len(wire.events(dialler, ReconcileComplete)) == 2


def test_a_round_begun_while_the_last_is_unanswered_is_a_fault(world):
    chat, objects = world
    dialler, responder, wire = second_round_held(chat, objects)
    inject(dialler, responder, [frame({"t": "sums", "r": 3, "ss": []})], wire.clock.now)
    wire.drain(responder)
    [ended] = wire.events(responder, Closed)
    assert ended.fault and "sums before the last was answered" in ended.reason
