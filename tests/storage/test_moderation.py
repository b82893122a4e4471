"""Moderation in the replica: moderators per channel, hides and unhides, the log, and local
blocks (storage/_moderation.py; docs/ARCHITECTURE.md "Who may do what")."""

from __future__ import annotations

import sqlite3

import pytest

from core.encoding import dumps
from core.errors import InvalidObject, Reason
from core.identity import Identity
from core.kinds import MAX_REASON
from core.objects import Object, build
from storage import Replica, Status
from storage._schema import SCHEMA_VERSION
from tests.support import FakeClock

from .conftest import (
    DAY_MS,
    T0,
    WEEK_MS,
    World,
    add,
    assert_healthy,
    channel_info,
    member_keys,
    new_replica,
    texts,
)


def role(world: World, who: Identity, channel: str, member: Identity, value: str = "moderator",
         **kw) -> Object:
    body = {"channel": channel, "key": member.public_key, "role": value, "reason": "trusted"}
    return world.publish(who, "mod/role", kw.pop("stream", None) or world.ws, body, **kw)


def hide(world: World, who: Identity, channel: str, target: Object | Identity, *,
         hidden: bool = True, reason: str = "spam", **kw) -> Object:
    named = target.id if isinstance(target, Object) else target.public_key
    body = {"channel": channel, "target": named, "hidden": hidden, "reason": reason}
    stream = kw.pop("stream", None) or world.channel(channel)
    return world.publish(who, "mod/hide", stream, body, **kw)


def marked(replica: Replica, channel: str) -> list[tuple[str, bool]]:
    """What a moderator's read shows: (text, hidden) of each message."""
    return [(m.text, m.hidden) for m in replica.messages(channel, hidden=True)]


@pytest.fixture
def chat(replica, world, people):
    """alice and bob posted in #general and #random; carol moderates #general."""
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    posts = {
        "hello": world.text(alice, "general", "hello"),
        "spam": world.text(bob, "general", "buy now"),
        "later": world.text(bob, "general", "more from bob"),
        "random": world.text(bob, "random", "bob in random"),
    }
    add(replica, world.join(bob, "general"), *posts.values(),
        role(world, world.root, "general", carol))
    replica.posts = posts  # the test's handles on them
    return replica


def test_a_moderators_hide_hides_the_post_for_everyone_but_moderators(chat, world, people):
    carol = people["carol"]
    add(chat, hide(world, carol, "general", chat.posts["spam"]))
    assert texts(chat, "general") == ["hello", "more from bob"]
    assert marked(chat, "general") == [("hello", False), ("buy now", True),
                                       ("more from bob", False)]
    assert channel_info(chat, "general").messages == 2
    assert chat.search("buy") == []
    assert chat.moderation.hidden("general", chat.posts["spam"].id)
    assert chat.thread(chat.posts["spam"].id) == []
    assert [m.hidden for m in chat.thread(chat.posts["spam"].id, hidden=True)] == [True]
    # Showing it again is an action too; the latest counting one decides.
    add(chat, hide(world, carol, "general", chat.posts["spam"], hidden=False, reason="ok"))
    assert texts(chat, "general") == ["hello", "buy now", "more from bob"]
    assert channel_info(chat, "general").messages == 3
    assert [m.text for m in chat.search("buy")] == ["buy now"]


def test_a_non_moderators_hide_counts_for_nothing(chat, world, people):
    bob, dave = people["bob"], people["dave"]
    add(chat, hide(world, dave, "general", chat.posts["hello"]),
        hide(world, bob, "general", people["alice"]))
    assert texts(chat, "general") == ["hello", "buy now", "more from bob"]
    assert not chat.moderation.hidden("general", chat.posts["hello"].id)
    assert chat.moderation.log("general")[-1].action == "moderator"  # theirs are not listed


def test_a_moderators_hide_outside_their_channel_counts_for_nothing(chat, world, people):
    carol = people["carol"]
    post = chat.posts["random"]
    add(chat,
        hide(world, carol, "random", post),  # a channel carol does not moderate
        hide(world, carol, "general", post),  # names #general, but the post is in #random
        hide(world, carol, "general", post, stream=world.channel("random")))  # wrong stream
    assert texts(chat, "random") == ["bob in random"]
    assert marked(chat, "random") == [("bob in random", False)]


def test_a_removed_moderators_actions_count_for_nothing(chat, world, people, clock):
    carol = people["carol"]
    before = hide(world, carol, "general", chat.posts["spam"])
    add(chat, before)
    assert texts(chat, "general") == ["hello", "more from bob"]
    removal = role(world, world.root, "general", carol, "none")
    add(chat, removal)
    # Her actions count while she is a moderator (as in cable): the earlier hide too.
    assert texts(chat, "general") == ["hello", "buy now", "more from bob"]
    # A later hide, or one dated before her removal, counts for nothing either.
    add(chat, hide(world, carol, "general", chat.posts["later"]),
        hide(world, carol, "general", chat.posts["hello"], ts=before.ts + 1, links=[]))
    assert texts(chat, "general") == ["hello", "buy now", "more from bob"]
    assert [a.counts for a in chat.moderation.log("general") if a.author == carol.public_key] \
        == [False, False, False]
    # Made a moderator again, all of hers count again.
    add(chat, role(world, world.root, "general", carol))
    assert texts(chat, "general") == []


def test_admins_hide_anywhere_and_their_roles_count_from_their_grant(chat, world, people):
    alice, dave = people["alice"], people["dave"]
    add(chat, hide(world, world.root, "random", chat.posts["random"], reason="off topic"))
    assert texts(chat, "random") == []
    # A role given by someone who is not an admin counts from the moment they become one.
    add(chat, role(world, alice, "general", dave), hide(world, dave, "general", chat.posts["hello"]))
    assert texts(chat, "general") == ["hello", "buy now", "more from bob"]
    add(chat, world.grant(world.root, alice))
    assert texts(chat, "general") == ["buy now", "more from bob"]
    assert chat.moderation.moderators("general") == sorted(
        [people["carol"].public_key, dave.public_key])
    assert chat.moderation.is_moderator("GENERAL", dave.public_key)
    assert chat.moderation.is_moderator("random", alice.public_key)  # an admin now
    assert not chat.moderation.is_moderator("random", dave.public_key)


def test_hiding_a_member_hides_everything_of_theirs_in_that_channel(chat, world, people):
    bob, carol = people["bob"], people["carol"]
    add(chat, world.topic(bob, "general", "bob's topic"))
    assert bob.public_key in member_keys(chat, "general")
    add(chat, hide(world, carol, "general", bob, reason="flooding"))
    assert texts(chat, "general") == ["hello"]
    assert bob.public_key not in member_keys(chat, "general")
    assert chat.topic("general") is None
    assert texts(chat, "random") == ["bob in random"]  # another channel
    # What he posts later is hidden as it arrives.
    add(chat, world.text(bob, "general", "still here"))
    assert texts(chat, "general") == ["hello"]
    assert channel_info(chat, "general").messages == 1
    assert marked(chat, "general")[-1] == ("still here", True)
    add(chat, hide(world, carol, "general", bob, hidden=False, reason="calmed down"))
    assert texts(chat, "general") == ["hello", "buy now", "more from bob", "still here"]
    assert chat.topic("general") == "bob's topic"
    assert bob.public_key in member_keys(chat, "general")


def test_a_hide_that_arrives_before_its_post_or_role_still_counts(tmp_path, world, people):
    alice, carol = people["alice"], people["carol"]
    post = world.text(alice, "general", "arrives last")
    grant = role(world, world.root, "general", carol)
    action = hide(world, carol, "general", post)
    replica = new_replica(tmp_path / "r.sqlite", world)
    add(replica, action)
    add(replica, post)
    assert texts(replica, "general") == ["arrives last"]  # no role yet
    add(replica, grant)
    assert texts(replica, "general") == []
    assert_healthy(replica)
    replica.close()


def test_the_latest_counting_action_decides(chat, world, people):
    carol, dave = people["carol"], people["dave"]
    add(chat, role(world, world.root, "general", dave))
    spam = chat.posts["spam"]
    first = hide(world, carol, "general", spam)
    second = hide(world, dave, "general", spam, hidden=False, reason="not spam",
                  ts=first.ts + 10, links=[])
    add(chat, second, first)
    assert "buy now" in texts(chat, "general")
    # Concurrent actions tied in time: the larger id wins, on every replica.
    tie = [hide(world, who, "general", chat.posts["hello"], hidden=value, ts=second.ts + 10,
                links=[], track=False) for who, value in ((carol, True), (dave, False))]
    add(chat, *tie)
    winner = max(tie, key=lambda o: o.id)
    assert ("hello" not in texts(chat, "general")) == winner.body["hidden"]


def test_a_hide_dated_beyond_the_horizon_waits_for_its_time(chat, world, people, clock):
    carol = people["carol"]
    add(chat, hide(world, carol, "general", chat.posts["spam"], ts=clock.now * 1000 + WEEK_MS
                   + DAY_MS))
    assert "buy now" in texts(chat, "general")
    clock.advance_ms(2 * DAY_MS)
    assert "buy now" not in texts(chat, "general")


def test_the_log_lists_roles_and_actions_with_their_reasons(chat, world, people):
    carol, bob = people["carol"], people["bob"]
    add(chat, hide(world, carol, "general", chat.posts["spam"], reason="selling things"),
        hide(world, carol, "general", bob, reason="flooding"),
        hide(world, world.root, "random", chat.posts["random"], hidden=False, reason="fine"))
    log = chat.moderation.log()
    assert [(a.channel, a.action, a.reason, a.post, a.counts) for a in log] == [
        ("general", "moderator", "trusted", False, True),
        ("general", "hide", "selling things", True, True),
        ("general", "hide", "flooding", False, True),
        ("random", "unhide", "fine", True, True)]
    assert [a.action for a in chat.moderation.log("general", limit=2)] == ["hide", "hide"]
    assert chat.moderation.log("nowhere") == []


def _signed(who: Identity, kind: str, stream: bytes, body: dict, ts: int) -> bytes:
    """An object signed as build() signs one, without build()'s own validity check."""
    fields = {"v": 1, "type": kind, "author": who.public_key, "ts": ts, "stream": stream,
              "links": [], "body": body}
    return dumps({**fields, "sig": who.sign(dumps(fields))})


def test_reasons_are_bounded(chat, world, people):
    carol = people["carol"]
    post = chat.posts["spam"]
    ok = {"channel": "general", "target": post.id, "hidden": True, "reason": "x" * MAX_REASON}
    for reason in ("", "x" * (MAX_REASON + 1), "two\nlines", 5):
        body = {**ok, "reason": reason}
        with pytest.raises(InvalidObject) as info:
            build(carol, "mod/hide", stream=world.channel("general"), body=body, ts=T0 * 1000)
        assert info.value.reason is Reason.BAD_BODY
        raw = _signed(carol, "mod/hide", world.channel("general"), body, T0 * 1000)
        [result] = chat.ingest([raw])
        assert (result.status, result.reason) == (Status.REJECTED, "bad_body")
    assert "buy now" in texts(chat, "general")
    add(chat, hide(world, carol, "general", post, reason="x" * MAX_REASON))
    assert "buy now" not in texts(chat, "general")
    assert chat.moderation.log()[-1].reason == "x" * MAX_REASON


def test_a_blocked_members_posts_are_neither_shown_nor_stored(chat, world, people):
    bob = people["bob"]
    assert chat.moderation.block(bob.public_key)
    assert not chat.moderation.block(bob.public_key)  # already
    assert texts(chat, "general") == ["hello"]
    assert texts(chat, "random") == []
    assert bob.public_key not in member_keys(chat, "general")
    assert channel_info(chat, "general").messages == 1
    assert marked(chat, "general") == [("hello", False)]  # moderators do not see them either
    new = world.text(bob, "general", "let me in")
    [result] = chat.ingest([new])
    assert (result.status, result.reason) == (Status.REFUSED, "blocked")
    assert not chat.has(new.id)
    assert [b.key for b in chat.moderation.blocked()] == [bob.public_key]
    assert chat.moderation.unblock(bob.public_key)
    assert texts(chat, "general") == ["hello", "buy now", "more from bob"]
    assert texts(chat, "random") == ["bob in random"]
    add(chat, new)  # stored again once unblocked
    assert texts(chat, "general")[-1] == "let me in"
    assert chat.moderation.blocked() == []


def test_blocking_and_moderation_bits_are_independent(chat, world, people):
    bob, carol = people["bob"], people["carol"]
    add(chat, hide(world, carol, "general", chat.posts["spam"]))
    chat.moderation.block(bob.public_key)
    chat.moderation.unblock(bob.public_key)
    assert marked(chat, "general") == [("hello", False), ("buy now", True),
                                       ("more from bob", False)]


def test_deleting_a_hidden_post_keeps_the_views_whole(chat, world, people):
    bob, carol = people["bob"], people["carol"]
    add(chat, hide(world, carol, "general", chat.posts["spam"]))
    add(chat, world.delete(bob, chat.posts["spam"]))
    assert marked(chat, "general") == [("hello", False), ("more from bob", False)]
    assert channel_info(chat, "general").messages == 2


def test_version_8_file_indexes_the_moderation_objects_it_held(tmp_path, world, people):
    """A version-8 Hearth stored roles and hides from newer peers without reading them."""
    alice, carol = people["alice"], people["carol"]
    path = tmp_path / "v8.sqlite"
    rep = new_replica(path, world)
    post = world.text(alice, "general", "hidden after the upgrade")
    add(rep, post, world.text(alice, "general", "kept"), role(world, world.root, "general", carol),
        hide(world, carol, "general", post))
    rep.close()
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE messages SET hidden = 0")
    conn.execute("UPDATE channels SET messages = 2")
    for table in ("mod_roles", "mod_actions", "mod_hidden", "blocked"):
        conn.execute(f"DROP TABLE {table}")
    conn.execute("PRAGMA user_version = 8")
    conn.close()

    with Replica(path, clock=FakeClock(T0)) as upgraded:
        assert upgraded.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert texts(upgraded, "general") == ["kept"]
        assert [a.action for a in upgraded.moderation.log()] == ["moderator", "hide"]
        assert_healthy(upgraded)


def test_a_moderators_read_pages_through_hidden_and_shown_alike(replica, world, people):
    alice, carol = people["alice"], people["carol"]
    posts = [world.text(alice, "general", f"post {n}") for n in range(30)]
    add(replica, *posts, role(world, world.root, "general", carol))
    add(replica, *(hide(world, carol, "general", post) for post in posts[::3]))
    pages, before = [], None
    while True:
        page = replica.messages("general", limit=7, before=before, hidden=True)
        if not page:
            break
        pages[:0] = page
        before = page[0].cursor
    assert [(m.text, m.hidden) for m in pages] == [(f"post {n}", n % 3 == 0) for n in range(30)]
    assert [m.text for m in replica.messages("general", limit=7, hidden=True)] == \
        [f"post {n}" for n in range(23, 30)]
    assert texts(replica, "general", limit=7) == \
        [f"post {n}" for n in range(30) if n % 3][-7:]
    assert replica.messages("general", limit=0, hidden=True) == []
    # A page larger than what there is holds all of it.
    assert len(replica.messages("general", limit=40, hidden=True)) == 30
    assert len(replica.messages("general", limit=25)) == 20
