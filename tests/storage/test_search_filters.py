"""Replica.search_messages: words, phrases, channel, author and time filters, the bounded count,
and hidden messages never matching (storage/_search.py)."""

from __future__ import annotations

import pytest

from core import kinds
from storage import _search
from storage._search import MessageFilter

from .conftest import DAY_MS, T0_MS, WEEK_MS, add, deny

GENERAL, RANDOM, DESIGN = (kinds.channel_key(n) for n in ("general", "random", "design"))


@pytest.fixture(params=["walk matches", "walk the filter"])
def plan(request, monkeypatch):
    """Words with a channel or person filter take one of two plans (storage._search): both
    must answer the same."""
    if request.param == "walk the filter":
        monkeypatch.setattr(_search, "FTS_WALK_MAX", 1)
    return request.param


@pytest.fixture
def chat(replica, world, people):
    """Posts a minute apart from T0_MS + 1 min, in three channels by three people."""
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    posts = [
        (alice, "general", "the quick brown fox"),
        (bob, "general", "a lazy brown dog"),
        (carol, "random", "quick thinking saves the day"),
        (alice, "random", "brown bread for lunch"),
        (bob, "design", "the fox logo, brown and quick"),
        (carol, "general", "Café meeting at noon"),
        (alice, "design", "quick brown sketches"),
    ]
    add(replica, *[world.text(who, channel, text, ts=T0_MS + (n + 1) * 60_000)
                   for n, (who, channel, text) in enumerate(posts)])
    return replica


def found(replica, match: MessageFilter, **kw) -> list[str]:
    return [m.text for m in replica.search_messages(match, **kw).messages]


def words(*texts: str, prefix_last: bool = False) -> tuple[tuple[str, bool], ...]:
    return tuple((t, prefix_last and n == len(texts) - 1) for n, t in enumerate(texts))


def test_words_phrases_and_prefixes(chat):
    # Every term must match, newest first.
    assert found(chat, MessageFilter(words("brown", "quick"))) == [
        "quick brown sketches", "the fox logo, brown and quick", "the quick brown fox"]
    # A phrase: its words in a row.
    assert found(chat, MessageFilter(words("quick brown"))) == [
        "quick brown sketches", "the quick brown fox"]
    assert found(chat, MessageFilter(words("brown quick"))) == []
    # Only a prefix term matches the start of a word; diacritics and case are ignored.
    assert found(chat, MessageFilter(words("lun"))) == []
    assert found(chat, MessageFilter(words("lun", prefix_last=True))) == [
        "brown bread for lunch"]
    assert found(chat, MessageFilter(words("CAFE"))) == ["Café meeting at noon"]


def test_channel_filter(chat, plan):
    assert found(chat, MessageFilter(channels=(RANDOM,))) == [
        "brown bread for lunch", "quick thinking saves the day"]
    assert found(chat, MessageFilter(words("quick"), channels=(GENERAL,))) == [
        "the quick brown fox"]
    # Several channels: any of them, merged newest first.
    assert found(chat, MessageFilter(words("brown"), channels=(GENERAL, DESIGN))) == [
        "quick brown sketches", "the fox logo, brown and quick", "a lazy brown dog",
        "the quick brown fox"]
    assert found(chat, MessageFilter(channels=(GENERAL, DESIGN)), limit=3) == [
        "quick brown sketches", "Café meeting at noon", "the fox logo, brown and quick"]
    assert found(chat, MessageFilter(channels=(kinds.channel_key("nowhere"),))) == []


def test_author_filter(chat, people, plan):
    alice, bob = people["alice"].public_key, people["bob"].public_key
    assert found(chat, MessageFilter(authors=(alice,))) == [
        "quick brown sketches", "brown bread for lunch", "the quick brown fox"]
    assert found(chat, MessageFilter(words("quick"), authors=(alice, bob))) == [
        "quick brown sketches", "the fox logo, brown and quick", "the quick brown fox"]
    assert found(chat, MessageFilter(words("fox"), authors=(bob,), channels=(GENERAL,))) == []
    assert found(chat, MessageFilter(authors=(bob,), channels=(GENERAL,))) == [
        "a lazy brown dog"]
    [message] = chat.search_messages(MessageFilter(words("dog"), authors=(bob,))).messages
    assert (message.channel, message.author, message.ts) == ("general", bob, T0_MS + 120_000)


def test_time_range_is_since_inclusive_until_exclusive(chat, plan):
    # Posts are at T0 + 1..7 minutes: [3 min, 5 min) holds the third and fourth.
    since, until = T0_MS + 3 * 60_000, T0_MS + 5 * 60_000
    assert found(chat, MessageFilter(since_ms=since, until_ms=until)) == [
        "brown bread for lunch", "quick thinking saves the day"]
    assert found(chat, MessageFilter(words("brown"), since_ms=since, until_ms=until)) == [
        "brown bread for lunch"]
    assert found(chat, MessageFilter(words("brown"), until_ms=until,
                                     channels=(GENERAL, RANDOM))) == [
        "brown bread for lunch", "a lazy brown dog", "the quick brown fox"]
    assert found(chat, MessageFilter(words("brown"), until_ms=T0_MS + 4 * 60_000,
                                     channels=(GENERAL, RANDOM))) == [
        "a lazy brown dog", "the quick brown fox"]
    assert found(chat, MessageFilter(since_ms=T0_MS + 7 * 60_000)) == ["quick brown sketches"]
    assert found(chat, MessageFilter(since_ms=T0_MS + 7 * 60_000 + 1)) == []
    assert found(chat, MessageFilter(until_ms=T0_MS + 60_000)) == []
    assert found(chat, MessageFilter(until_ms=T0_MS + 60_001)) == ["the quick brown fox"]
    assert found(chat, MessageFilter(until_ms=2**63 - 1), limit=1) == ["quick brown sketches"]


def test_all_filters_together(chat, people, plan):
    alice = people["alice"].public_key
    match = MessageFilter(words("brown", "qu", prefix_last=True), channels=(GENERAL, DESIGN),
                          authors=(alice,), since_ms=T0_MS, until_ms=T0_MS + 7 * 60_000)
    assert found(chat, match) == ["the quick brown fox"]
    assert chat.search_messages(match).total == 1


def test_hidden_messages_never_match(replica, world, people, plan):
    alice, bob = people["alice"], people["bob"]
    gone = world.text(alice, "general", "needle deleted")
    denied = world.text(bob, "general", "needle denied")
    ahead = world.text(alice, "general", "needle from the future", ts=T0_MS + WEEK_MS + DAY_MS)
    kept = world.text(alice, "general", "needle kept", ts=T0_MS + 1000)
    add(replica, gone, denied, ahead, kept)
    add(replica, world.delete(alice, gone),
        world.policy(world.root, "general", [deny([bob])]))
    for match in [MessageFilter(words("needle")),
                  MessageFilter(words("needle"), channels=(GENERAL,)),
                  MessageFilter(words("needle"), authors=(alice.public_key,
                                                          bob.public_key)),
                  MessageFilter(channels=(GENERAL,)),
                  MessageFilter(authors=(alice.public_key, bob.public_key)),
                  MessageFilter(since_ms=0)]:
        result = replica.search_messages(match)
        assert [m.text for m in result.messages] == ["needle kept"], match
        assert (result.total, result.capped) == (1, False), match


def test_count_is_bounded_and_independent_of_the_limit(replica, world, people, plan):
    alice, bob = people["alice"], people["bob"]
    add(replica, *[world.text(alice if n % 2 else bob, "general", f"ping {n}")
                   for n in range(12)])
    every = replica.search_messages(MessageFilter(words("ping")), limit=3, count_cap=20)
    assert [m.text for m in every.messages] == ["ping 11", "ping 10", "ping 9"]
    assert (every.total, every.capped) == (12, False)
    capped = replica.search_messages(MessageFilter(words("ping")), limit=3, count_cap=5)
    assert (capped.total, capped.capped) == (5, True)
    assert len(capped.messages) == 3
    mine = replica.search_messages(
        MessageFilter(words("ping"), authors=(alice.public_key,), channels=(GENERAL,)),
        limit=2, count_cap=5)
    assert [m.text for m in mine.messages] == ["ping 11", "ping 9"]
    assert (mine.total, mine.capped) == (5, True)
    two = replica.search_messages(MessageFilter(authors=(alice.public_key, bob.public_key)),
                                  limit=1, count_cap=100)
    assert (two.total, two.capped, [m.text for m in two.messages]) == (12, False, ["ping 11"])
    assert replica.search_messages(MessageFilter(words("ping")), count_cap=None).total == 0
    # A limit beyond the cap still shows every message asked for and counts at least those.
    many = replica.search_messages(MessageFilter(words("ping")), limit=10, count_cap=4)
    assert (len(many.messages), many.total, many.capped) == (10, 10, True)


def test_an_empty_filter_or_a_wordless_term_matches_nothing(chat):
    assert chat.search_messages(MessageFilter()).messages == ()
    assert found(chat, MessageFilter(words("-"))) == []
    assert found(chat, MessageFilter(words('"', 'NEAR(', "*", prefix_last=True))) == []
    # Query syntax in a term is text, never an operator.
    assert found(chat, MessageFilter(words("quick OR nothing"))) == []
