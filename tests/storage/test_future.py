"""Posts dated more than 7 days ahead are hidden until then (docs/ARCHITECTURE.md "Objects")."""

from __future__ import annotations

from storage import Status
from tests.support import FakeClock

from .conftest import (
    DAY_MS,
    T0,
    T0_MS,
    WEEK_MS,
    add,
    allow,
    channel_info,
    deny,
    member_keys,
    new_replica,
    texts,
)

AHEAD = T0_MS + 8 * DAY_MS  # visible once the clock reaches T0 + 1 day


def _future_world(world, people):
    alice, bob = people["alice"], people["bob"]
    now = [world.text(alice, "general", "today"), world.topic(alice, "general", "now topic"),
           world.nick(bob, "bob"), world.join(alice, "random")]
    ahead = [
        world.text(bob, "general", "from the future", ts=AHEAD),
        world.topic(bob, "general", "future topic", ts=AHEAD + 1),
        world.nick(bob, "future bob", ts=AHEAD + 2),
        world.join(bob, "random", ts=AHEAD + 3),
        world.leave(alice, "random", ts=AHEAD + 4),
    ]
    return now, ahead


def _shown(replica, people):
    alice, bob = people["alice"], people["bob"]
    return {
        "general": texts(replica, "general"),
        "count": channel_info(replica, "general").messages,
        "general members": member_keys(replica, "general") == {alice.public_key, bob.public_key},
        "random members": member_keys(replica, "random"),
        "topic": replica.topic("general"),
        "nick": replica.nickname(bob.public_key),
        "search": [m.text for m in replica.search("future")],
    }


def test_future_posts_hidden_until_their_time(replica, clock, world, people):
    alice, bob = people["alice"], people["bob"]
    now, ahead = _future_world(world, people)
    add(replica, *now, *ahead)
    before = {
        "general": ["today"], "count": 1, "general members": False,
        "random members": {alice.public_key}, "topic": "now topic", "nick": "bob", "search": [],
    }
    assert _shown(replica, people) == before
    clock.set_ms(AHEAD - WEEK_MS - 1)  # one ms short
    assert _shown(replica, people) == before
    clock.set_ms(AHEAD - WEEK_MS + 4)  # every future post's time has come
    assert _shown(replica, people) == {
        "general": ["today", "from the future"], "count": 2, "general members": True,
        "random members": {bob.public_key}, "topic": "future topic", "nick": "future bob",
        "search": ["from the future"],
    }
    assert [e.kind for e in replica.channel_state("random").history][-2:] == ["join", "leave"]


def test_future_posts_mature_one_by_one(replica, clock, world, people):
    bob = people["bob"]
    now, ahead = _future_world(world, people)
    add(replica, *now, *ahead)
    clock.set_ms(AHEAD - WEEK_MS + 1)  # the text and the topic, not the nick yet
    assert texts(replica, "general")[-1] == "from the future"
    assert replica.topic("general") == "future topic"
    assert replica.nickname(bob.public_key) == "bob"
    clock.set_ms(AHEAD - WEEK_MS + 2)
    assert replica.nickname(bob.public_key) == "future bob"


def test_exactly_seven_days_ahead_is_shown(replica, clock, world, people):
    alice = people["alice"]
    add(replica, world.text(alice, "general", "just in time", ts=T0_MS + WEEK_MS),
        world.text(alice, "general", "too early", ts=T0_MS + WEEK_MS + 1))
    assert texts(replica, "general") == ["just in time"]


def test_late_arrival_after_maturity_is_shown_at_once(tmp_path, world, people):
    now, ahead = _future_world(world, people)
    clock = FakeClock(T0)
    clock.set_ms(AHEAD - WEEK_MS)
    late = new_replica(tmp_path / "late.sqlite", world, clock)
    add(late, *now, *ahead)
    early_clock = FakeClock(T0)
    early = new_replica(tmp_path / "early.sqlite", world, early_clock)
    add(early, *ahead)
    early_clock.set_ms(AHEAD - WEEK_MS)
    add(early, *now)
    assert early.digest() == late.digest()
    assert texts(early, "general") == ["today", "from the future"]
    for rep in (early, late):
        assert rep.integrity_check() == "ok"
        rep.close()


def test_future_post_and_policy_bits_are_independent(replica, clock, world, people):
    bob = people["bob"]
    add(replica, world.policy(world.root, "general", [deny([bob])]),
        world.text(bob, "general", "denied and early", ts=AHEAD))
    clock.set_ms(AHEAD - WEEK_MS)
    assert texts(replica, "general") == []  # matured, but still denied
    assert channel_info(replica, "general").messages == 0
    assert member_keys(replica, "general") == set()
    add(replica, world.policy(world.root, "general", [allow([bob])]))
    assert texts(replica, "general") == ["denied and early"]
    assert channel_info(replica, "general").messages == 1
    assert member_keys(replica, "general") == {bob.public_key}


def test_future_post_can_be_deleted_before_it_shows(replica, clock, world, people):
    bob = people["bob"]
    post = world.text(bob, "general", "never shown", ts=AHEAD)
    add(replica, post)
    add(replica, world.delete(bob, post))
    clock.set_ms(AHEAD)
    assert texts(replica, "general") == []
    assert replica.is_deleted(post.id)
    assert replica.ingest([post])[0].status is Status.DUPLICATE


def test_future_leave_takes_effect_only_when_due(replica, clock, world, people):
    alice = people["alice"]
    add(replica, world.join(alice, "general"), world.leave(alice, "general", ts=AHEAD))
    assert member_keys(replica, "general") == {alice.public_key}
    assert channel_info(replica, "general").members == 1
    clock.set_ms(AHEAD - WEEK_MS)
    assert member_keys(replica, "general") == set()
    assert channel_info(replica, "general").members == 0
