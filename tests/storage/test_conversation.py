"""Edits, reactions and threads in the replica (storage._conversation), by example and against
the containers they are (core.containers: an LWW register per message, an OR-set of reactions)."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from core.containers import Add, AuthorizedKeys, LWWRegister, ORSet, Remove, Update
from core.kinds import MAX_EMOJI_PER_MEMBER

from .conftest import World, add, identity, new_replica


def only(replica, channel="general"):
    [message] = replica.messages(channel)
    return message


def reacted(message) -> dict[str, tuple[bytes, ...]]:
    return {r.emoji: r.by for r in message.reactions}


def test_the_authors_latest_edit_is_the_text_and_search_finds_it(tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    hello = world.text(alice, "general", "helo wrld")
    first = world.edit(alice, hello, "hello wrld")
    second = world.edit(alice, hello, "hello world")
    forged = world.edit(bob, hello, "bob was here")  # not the author: never counts
    add(rep, second, forged, hello)  # edits may arrive before their message
    assert (only(rep).text, only(rep).edited) == ("hello world", True)
    add(rep, first)  # an older edit arriving late changes nothing
    assert only(rep).text == "hello world"
    assert [v.text for v in rep.versions(hello.id)] == ["helo wrld", "hello wrld",
                                                            "hello world"]
    assert [m.text for m in rep.search("world")] == ["hello world"]
    assert rep.search("wrld") == [] and rep.search("bob") == []
    add(rep, world.delete(alice, second))  # the winning edit is taken back: the one before wins
    assert (only(rep).text, [m.text for m in rep.search("wrld")]) == ("hello wrld", ["hello wrld"])
    add(rep, world.delete(alice, first))
    assert (only(rep).text, only(rep).edited) == ("helo wrld", False)


def test_an_edit_of_a_deleted_message_does_nothing(tmp_path, world, people):
    alice = people["alice"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    gone = world.text(alice, "general", "oops")
    add(rep, gone, world.delete(alice, gone), world.edit(alice, gone, "still oops"))
    assert rep.messages("general") == [] and rep.versions(gone.id) == []
    assert rep.search("oops") == []


def test_an_edit_in_another_channel_does_not_count(tmp_path, world, people):
    alice = people["alice"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    hello = world.text(alice, "general", "hello")
    body = {"channel": "random", "target": hello.id, "text": "moved"}
    elsewhere = world.publish(alice, "post/edit", world.channel("random"), body)
    add(rep, hello, elsewhere)
    assert (only(rep).text, only(rep).edited) == ("hello", False)


def test_reactions_count_each_member_once_and_a_removal_takes_only_what_it_saw(
        tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    hello = world.text(alice, "general", "hello")
    thumbs = world.react(bob, hello, "👍")
    again = world.react(bob, hello, "👍", ts=thumbs.ts + 1, links=[], track=False)  # concurrent
    party = world.react(alice, hello, "🎉")
    add(rep, hello, thumbs, again, party, world.react(alice, hello, "👍"))
    assert reacted(only(rep)) == {"👍": (bob.public_key, alice.public_key),
                                  "🎉": (alice.public_key,)}
    add(rep, world.delete(bob, thumbs))  # bob's removal named one add; the concurrent one stays
    assert reacted(only(rep))["👍"] == (bob.public_key, alice.public_key)
    add(rep, world.delete(bob, again))
    assert reacted(only(rep)) == {"👍": (alice.public_key,), "🎉": (alice.public_key,)}
    add(rep, world.delete(alice, party))
    assert reacted(only(rep)) == {"👍": (alice.public_key,)}


def test_a_member_counts_for_at_most_twenty_distinct_emoji_per_message(tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    hello = world.text(alice, "general", "hello")
    flood = [world.react(bob, hello, f"e{n}") for n in range(MAX_EMOJI_PER_MEMBER + 2)]
    add(rep, hello, *reversed(flood))
    assert list(reacted(only(rep))) == [f"e{n}" for n in range(MAX_EMOJI_PER_MEMBER)]
    add(rep, world.delete(bob, flood[3]))  # one taken back: the next in line counts
    assert list(reacted(only(rep))) == [f"e{n}" for n in range(MAX_EMOJI_PER_MEMBER + 1)
                                        if n != 3]
    add(rep, world.react(alice, hello, "e21"))  # the limit is per member
    assert reacted(only(rep))["e21"] == (alice.public_key,)


def test_threads_hold_replies_and_only_broadcast_ones_show_in_the_channel(
        tmp_path, world, people):
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    question = world.text(alice, "general", "lunch?")
    quiet = world.reply(bob, question, "yes")
    loud = world.reply(alice, question, "12:30 at the usual place", broadcast=True)
    add(rep, loud, quiet, question, world.text(bob, "general", "unrelated"))
    shown = rep.messages("general")
    assert [(m.text, m.replies, m.reply_to) for m in shown] == [
        ("lunch?", 2, None), ("12:30 at the usual place", 0, question.id), ("unrelated", 0, None)]
    thread = rep.thread(question.id)
    assert [(m.text, m.in_channel) for m in thread] == [
        ("lunch?", True), ("yes", False), ("12:30 at the usual place", True)]
    assert rep.thread(quiet.id) == thread  # a reply opens its whole thread
    # A reply only in its thread is not unread in the channel.
    assert rep.unread(people["carol"].public_key, None)["general"][0] == 3
    add(rep, world.delete(bob, quiet))
    assert rep.messages("general")[0].replies == 1


# Against the containers ----------------------------------------------------------------------

@settings(max_examples=30, deadline=None, database=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_views_equal_the_containers_they_implement(tmp_path_factory, seed):
    """Random edits, reactions and removals on one message, in a random order: the replica
    shows what an LWWRegister of the author's edits and an ORSet of (emoji, member) hold."""
    rng, world = random.Random(seed), World()
    alice, bob, carol = (identity(name) for name in ("alice", "bob", "carol"))
    hello = world.text(alice, "general", "hello")
    ops, adds = [], []
    register, reactions = LWWRegister(AuthorizedKeys(alice.public_key)), ORSet()
    for _ in range(rng.randint(1, 25)):
        who = rng.choice([alice, bob, carol])
        roll = rng.random()
        if roll < 0.3:
            ts = rng.choice([None, hello.ts + 10])  # some edits tie
            edit = (world.edit(who, hello, rng.choice(["a", "b", "c"])) if ts is None else
                    world.edit(who, hello, rng.choice(["a", "b", "c"]), ts=ts, links=[],
                               track=False))
            ops.append(edit)
            register.apply(Update(edit.id, edit.author, edit.ts, edit.body["text"]))
        elif roll < 0.75 or not adds:
            react = world.react(who, hello, rng.choice(["👍", "🎉", "👀"]))
            ops.append(react)
            adds.append(react)
            reactions.apply(Add(react.id, react.author, (react.body["emoji"], react.author)))
        else:
            seen = rng.sample(adds, rng.randint(1, min(3, len(adds))))
            taker = rng.choice(seen)
            mine = [a for a in seen if a.author == taker.author]
            remove = world.delete(next(p for p in (alice, bob, carol)
                                       if p.public_key == taker.author), *mine)
            ops.append(remove)
            reactions.apply(Remove(remove.id, remove.author, frozenset(a.id for a in mine)))
    rng.shuffle(ops)
    rep = new_replica(tmp_path_factory.mktemp("c") / "r.sqlite", world)
    cut = rng.randint(0, len(ops))
    results = rep.ingest(ops[:cut]) + rep.ingest([*ops[cut:], hello])
    assert all(r.status.value != "rejected" for r in results)
    message = only(rep)
    assert message.text == (register.value() or "hello")
    assert {(r.emoji, key) for r in message.reactions for key in r.by} == reactions.members()
    rep.close()


def test_only_the_reactor_or_an_admin_takes_a_reaction_back(tmp_path, world, people):
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    hello = world.text(alice, "general", "hello")
    thumbs = world.react(bob, hello, "👍")
    add(rep, hello, thumbs, world.delete(carol, thumbs), world.delete(alice, thumbs))
    assert reacted(only(rep)) == {"👍": (bob.public_key,)}  # neither counted
    add(rep, world.delete(world.root, thumbs))  # the workspace's root is an admin
    assert reacted(only(rep)) == {}


def test_reading_a_page_looks_up_its_messages_reactions_not_the_channels(
        tmp_path, world, people):
    """A page's reactions come from the index by message: the cost of a page must not grow
    with the channel's reactions (scrolling a channel back read every reaction per page)."""
    alice, bob = people["alice"], people["bob"]
    rep = new_replica(tmp_path / "r.sqlite", world)
    posts = [world.text(alice, "general", f"message {n}") for n in range(30)]
    add(rep, *posts, *(world.react(bob, post, "👍") for post in posts))
    statements: list[str] = []
    rep.conn.set_trace_callback(statements.append)
    page = rep.messages("general", limit=5)
    rep.conn.set_trace_callback(None)
    assert [len(m.reactions) for m in page] == [1] * 5
    [query] = [s for s in statements if "SELECT target, emoji, author FROM reactions" in s]
    plan = " ".join(row[3] for row in rep.conn.execute("EXPLAIN QUERY PLAN " + query))
    assert "reactions_by_target" in plan and "reactions_by_channel" not in plan, plan
