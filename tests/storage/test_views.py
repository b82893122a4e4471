"""Unit tests for each chat view of the replica (docs/ARCHITECTURE.md "Storage", chat-views seed)."""

from __future__ import annotations

import pytest

from storage import NotFound, StorageError

from .conftest import T0_MS, add, channel_info, deny, member_keys, texts

# Messages by channel and time --------------------------------------------------------------------


def test_messages_newest_last_and_limit(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    posts = [world.text(alice if n % 2 else bob, "general", f"m{n}") for n in range(6)]
    add(replica, *reversed(posts))  # arrival order must not matter
    assert texts(replica, "general") == [f"m{n}" for n in range(6)]
    assert texts(replica, "general", limit=2) == ["m4", "m5"]  # the newest two, newest last
    assert texts(replica, "general", limit=0) == []
    assert texts(replica, "GENERAL") == texts(replica, "general")  # names compare folded
    assert texts(replica, "random") == []
    got = replica.messages("general")
    assert [m.author for m in got] == [p.author for p in posts]
    assert [m.ts for m in got] == sorted(m.ts for m in got)
    assert {m.channel for m in got} == {"general"}


def test_messages_paging_through_ties_in_ts(replica, world, people):
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    ts = T0_MS + 50_000
    early = [world.text(alice, "general", f"early{n}") for n in range(2)]
    # Five messages from three authors at the very same ms (concurrent, no links between them).
    tied = [world.text(who, "general", f"tied{n}", ts=ts, links=[], track=False)
            for n, who in enumerate([alice, bob, carol, alice, bob])]
    late = [world.text(carol, "general", f"late{n}", ts=ts + 1) for n in range(2)]
    add(replica, *late, *tied, *early)
    expected = sorted(early + tied + late, key=lambda o: (o.ts, o.id))

    pages, before = [], None
    while True:
        page = replica.messages("general", limit=2, before=before)
        if not page:
            break
        assert len(page) <= 2
        pages.append([m.id for m in page])
        before = page[0].cursor
    seen = [oid for page in reversed(pages) for oid in page]
    assert seen == [o.id for o in expected]  # every message once, in (ts, id) order
    assert len(pages) == 5


def test_messages_bad_cursor_is_a_storage_error(replica):
    for cursor in ("nonsense", "12-zz", "12-abcd", "x-" + "00" * 32):
        with pytest.raises(StorageError):
            replica.messages("general", before=cursor)


def test_message_nick_is_current_nick(replica, world, people):
    alice = people["alice"]
    add(replica, world.nick(alice, "old"), world.text(alice, "general", "hi"))
    assert replica.messages("general")[0].nick == "old"
    add(replica, world.nick(alice, "new"))
    assert replica.messages("general")[0].nick == "new"


# Channel list ------------------------------------------------------------------------------------


def test_channel_list_counts_and_topic(replica, world, people):
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    add(replica,
        world.join(alice, "general"), world.join(bob, "general"),
        world.text(alice, "general", "one"), world.text(carol, "general", "two"),
        world.topic(bob, "general", "all things"),
        world.text(bob, "random", "three"), world.leave(bob, "random"))
    listing = replica.channels()
    assert [c.name for c in listing] == ["general", "random"]
    general, random = listing
    assert (general.topic, general.members, general.messages) == ("all things", 3, 2)
    assert (random.topic, random.members, random.messages) == (None, 0, 1)


@pytest.mark.parametrize("reverse", [False, True])
def test_channel_names_fold_case_and_earliest_name_wins(replica, world, people, reverse):
    alice, bob = people["alice"], people["bob"]
    first = world.text(alice, "Dev", "first")
    second = world.text(bob, "DEV", "second")
    third = world.join(bob, "dev")
    assert first.stream == second.stream == third.stream  # one stream per folded name
    objs = [first, second, third]
    for obj in reversed(objs) if reverse else objs:
        add(replica, obj)
    [info] = replica.channels()
    assert info.name == "Dev"
    assert (info.messages, info.members) == (2, 2)
    assert [m.channel for m in replica.messages("dEv")] == ["Dev", "Dev"]


def test_channel_display_name_is_earliest_even_if_later_arrival(replica, world, people):
    alice = people["alice"]
    later = world.text(alice, "Lounge", "later", ts=T0_MS + 9000)
    earlier = world.text(alice, "LOUNGE", "earlier", ts=T0_MS + 1000, links=[], track=False)
    add(replica, later)
    assert replica.channels()[0].name == "Lounge"
    add(replica, earlier)
    assert replica.channels()[0].name == "LOUNGE"
    assert texts(replica, "lounge") == ["earlier", "later"]


# Membership --------------------------------------------------------------------------------------


def test_members_join_leave_post(replica, world, people):
    alice, bob, carol, dave = (people[n] for n in ("alice", "bob", "carol", "dave"))
    add(replica, world.join(alice, "general"))
    assert member_keys(replica, "general") == {alice.public_key}
    add(replica, world.text(bob, "general", "posting without joining joins"))
    assert member_keys(replica, "general") == {alice.public_key, bob.public_key}
    add(replica, world.join(carol, "general"), world.leave(carol, "general"))
    assert carol.public_key not in member_keys(replica, "general")
    add(replica, world.join(dave, "general"), world.leave(dave, "general"))
    add(replica, world.text(dave, "general", "back again"))  # posting after leaving re-joins
    assert member_keys(replica, "general") == {alice.public_key, bob.public_key,
                                               dave.public_key}
    add(replica, world.leave(bob, "general"))
    assert bob.public_key not in member_keys(replica, "general")
    assert channel_info(replica, "general").members == 2
    assert member_keys(replica, "other") == set()
    # Names fold case: a leave of "GENERAL" is a leave of "general".
    add(replica, world.leave(alice, "GENERAL"))
    assert member_keys(replica, "General") == {dave.public_key}


def test_members_carry_nicks_and_sort_by_nick(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    add(replica, world.nick(alice, "zed"), world.nick(bob, "Amy"),
        world.join(alice, "general"), world.join(bob, "general"))
    assert [(m.key, m.nick) for m in replica.members("general")] == [
        (bob.public_key, "Amy"), (alice.public_key, "zed")]


def test_leave_and_join_order_decided_by_ts_not_arrival(replica, world, people):
    alice = people["alice"]
    join = world.join(alice, "general")
    leave = world.leave(alice, "general")
    add(replica, leave)
    add(replica, join)  # the older join arriving late must not re-join alice
    assert member_keys(replica, "general") == set()


# Topic ---------------------------------------------------------------------------------------------


def test_topic_last_writer_wins(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    t1 = world.topic(alice, "general", "first")
    t2 = world.topic(bob, "general", "second")
    add(replica, t2)
    add(replica, t1)  # older, arriving later
    assert replica.topic("general") == "second"
    assert replica.topic("GENERAL") == "second"
    assert replica.topic("nowhere") is None
    add(replica, world.topic(alice, "general", ""))  # an empty topic is a topic
    assert replica.topic("general") == ""


@pytest.mark.parametrize("reverse", [False, True])
def test_topic_tie_in_ts_broken_by_id(replica, world, people, reverse):
    alice, bob = people["alice"], people["bob"]
    ts = T0_MS + 5000
    a = world.topic(alice, "general", "from alice", ts=ts, links=[], track=False)
    b = world.topic(bob, "general", "from bob", ts=ts, links=[], track=False)
    winner = max((a, b), key=lambda o: o.id)
    add(replica, *((b, a) if reverse else (a, b)))
    assert replica.topic("general") == winner.body["topic"]


# Nicknames ---------------------------------------------------------------------------------------


def test_nickname_per_key(replica, world, people):
    alice, bob, carol = people["alice"], people["bob"], people["carol"]
    n1 = world.nick(alice, "al")
    n2 = world.nick(alice, "Alice")
    add(replica, n2, n1, world.nick(bob, "bobby"))
    assert replica.nickname(alice.public_key) == "Alice"
    assert replica.nickname(bob.public_key) == "bobby"
    assert replica.nickname(carol.public_key) is None
    assert replica.nicknames() == {alice.public_key: "Alice", bob.public_key: "bobby"}


def test_nickname_tie_in_ts_broken_by_id(replica, world, people):
    alice = people["alice"]
    ts = T0_MS + 7000
    a = world.nick(alice, "one", ts=ts, links=[], track=False)
    b = world.nick(alice, "two", ts=ts, links=[], track=False)
    add(replica, a, b)
    assert replica.nickname(alice.public_key) == max((a, b), key=lambda o: o.id).body["name"]


# Channel history -------------------------------------------------------------------------------


def test_channel_state_history(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    objs = [world.join(alice, "general"), world.nick(alice, "al"),
            world.topic(alice, "general", "hello"), world.join(bob, "general"),
            world.leave(bob, "general"), world.topic(bob, "general", "bye"),
            world.text(alice, "general", "texts are not state")]
    add(replica, *reversed(objs))
    state = replica.channel_state("GENERAL")
    assert state.channel == "general"
    assert state.topic == "bye"
    assert [m.key for m in state.members] == [alice.public_key]
    assert [(e.id, e.kind, e.value) for e in state.history] == [
        (objs[0].id, "join", None), (objs[1].id, "nick", "al"), (objs[2].id, "topic", "hello"),
        (objs[3].id, "join", None), (objs[4].id, "leave", None), (objs[5].id, "topic", "bye")]
    assert [e.ts for e in state.history] == sorted(e.ts for e in state.history)
    with pytest.raises(NotFound):
        replica.channel_state("nowhere")


# Posts by author, heads, tombstones ---------------------------------------------------------------


def test_posts_by_author_and_kind(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    a1 = world.text(alice, "general", "a1")
    a2 = world.join(alice, "general")
    a3 = world.text(alice, "random", "a3")
    b1 = world.text(bob, "general", "b1")
    add(replica, a3, b1, a2, a1)
    assert replica.posts_by(alice.public_key) == [a1.id, a2.id, a3.id]
    assert replica.posts_by(alice.public_key, "post/text") == [a1.id, a3.id]
    assert replica.posts_by(alice.public_key, "post/topic") == []
    assert replica.posts_by(bob.public_key) == [b1.id]
    assert replica.posts_by(world.root.public_key) == [world.genesis.id]


def test_heads_fork_and_merge(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    stream = world.channel("general")
    base = world.text(alice, "general", "base")
    add(replica, base)
    assert replica.heads(stream) == [(base.id, base.ts)]
    # Two concurrent posts that both saw only `base`: a fork.
    left = world.text(alice, "general", "left", links=[base.id], track=False)
    right = world.text(bob, "general", "right", links=[base.id], track=False)
    add(replica, left, right)
    assert replica.heads(stream) == sorted([(left.id, left.ts), (right.id, right.ts)])
    merge = world.text(alice, "general", "merge", links=[left.id, right.id])
    assert merge.ts > max(left.ts, right.ts)
    add(replica, merge)
    assert replica.heads(stream) == [(merge.id, merge.ts)]
    assert replica.heads(world.channel("random")) == []
    assert replica.heads(world.ws) == []  # the genesis lives in the genesis stream


def test_heads_do_not_wait_for_missing_links(replica, world, people):
    alice = people["alice"]
    stream = world.channel("general")
    parent = world.text(alice, "general", "parent")
    child = world.text(alice, "general", "child")
    add(replica, child)  # its parent is missing: it is a head all the same
    assert replica.heads(stream) == [(child.id, child.ts)]
    add(replica, parent)
    assert replica.heads(stream) == [(child.id, child.ts)]


def test_is_deleted(replica, world, people):
    alice = people["alice"]
    post = world.text(alice, "general", "soon gone")
    keep = world.text(alice, "general", "stays")
    add(replica, post, keep)
    assert not replica.is_deleted(post.id)
    delete = world.delete(alice, post)
    add(replica, delete)
    assert replica.is_deleted(post.id)
    assert not replica.is_deleted(keep.id)
    assert not replica.is_deleted(delete.id)
    assert replica.get(post.id) is None
    assert replica.has(delete.id)


# Search --------------------------------------------------------------------------------------------


def _search(replica, query, **kw):
    return sorted(m.text for m in replica.search(query, **kw))


def test_search_words_prefix_and_diacritics(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    add(replica,
        world.text(alice, "general", "Meet at the café tomorrow"),
        world.text(bob, "general", "The cafeteria is closed"),
        world.text(bob, "Random", "tomorrow never comes"),
        world.text(alice, "random", "Über cool Ñandú"))
    assert _search(replica, "tomorrow") == ["Meet at the café tomorrow", "tomorrow never comes"]
    assert _search(replica, "cafe") == ["Meet at the café tomorrow", "The cafeteria is closed"]
    assert _search(replica, "cafe tomorrow") == ["Meet at the café tomorrow"]
    assert _search(replica, "CAFÉ TOMORROW") == ["Meet at the café tomorrow"]
    assert _search(replica, "café is") == []  # a word before the last must match whole
    assert _search(replica, "tomorrow meet") == ["Meet at the café tomorrow"]  # every word
    assert _search(replica, "meet tom") == ["Meet at the café tomorrow"]  # last is a prefix
    assert _search(replica, "tom meet") == []  # only the last word is a prefix
    assert _search(replica, "uber nandu") == ["Über cool Ñandú"]
    assert _search(replica, "nothing") == []
    assert _search(replica, "   ") == []
    assert len(replica.search("tomorrow", limit=1)) == 1
    [hit] = replica.search("never")
    assert (hit.channel, hit.author) == ("Random", bob.public_key)


def test_search_skips_deleted_and_hidden(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    gone = world.text(alice, "general", "secret plans")
    hidden = world.text(bob, "general", "secret handshake")
    shown = world.text(alice, "general", "secret garden")
    add(replica, gone, hidden, shown)
    assert len(replica.search("secret")) == 3
    add(replica, world.delete(alice, gone))
    add(replica, world.policy(world.root, "general", [deny([bob])]))
    assert _search(replica, "secret") == ["secret garden"]


@pytest.mark.parametrize("query", [
    'AND ( *', '"', '""', '"unterminated', '*', '(', ')', 'a OR', 'NOT', 'NEAR(a b, 2)',
    'col:x', '-x', '^start', 'x AND', '{a b}', "it's", 'a + b', '\\', '%_', 'AND OR NOT',
])
def test_search_with_query_syntax_characters_does_not_raise(replica, world, people, query):
    alice = people["alice"]
    add(replica, world.text(alice, "general", 'quote "x" AND (y) * NOT col:x a OR b it\'s'))
    found = replica.search(query)
    assert isinstance(found, list)


def test_search_treats_syntax_as_words(replica, world, people):
    alice = people["alice"]
    add(replica, world.text(alice, "general", "cats AND dogs"),
        world.text(alice, "general", "cats or dogs"))
    # "AND" and "OR" are plain words here, not operators.
    assert _search(replica, "cats AND") == ["cats AND dogs"]
    assert _search(replica, "cats OR dogs") == ["cats or dogs"]
    assert _search(replica, '"dogs"') == ["cats AND dogs", "cats or dogs"]



SEARCH_WINDOW_BUG = (
    "storage/replica.py Replica.search takes the newest `limit * 4 + 50` FTS matches by rowid "
    "(arrival order) before dropping hidden rows and ordering by ts, so visible matches behind "
    "many hidden ones are lost, and which matches come back depends on arrival order")


def test_search_finds_a_visible_match_behind_many_hidden_ones(replica, world, people):
    alice, spammer = people["alice"], people["bob"]
    add(replica, world.policy(world.root, "general", [deny([spammer])]))
    add(replica, world.text(alice, "general", "needle worth finding"))
    add(replica, *[world.text(spammer, "general", f"needle spam {n}") for n in range(60)])
    assert [m.text for m in replica.search("needle", limit=1)] == ["needle worth finding"]


def test_search_newest_first_does_not_depend_on_arrival_order(replica, world, people):
    alice = people["alice"]
    posts = [world.text(alice, "general", f"needle {n}") for n in range(80)]
    add(replica, *reversed(posts))  # the newest (by ts) arrives first
    found = replica.search("needle", limit=2)
    assert [m.text for m in found] == ["needle 79", "needle 78"]


def test_unread_counts_others_since_my_mark_capped_and_finds_mentions(replica, world,
                                                                      people, monkeypatch):
    from storage import _chat as replica_module

    monkeypatch.setattr(replica_module, "UNREAD_CAP", 5)
    alice, bob = people["alice"], people["bob"]
    me = alice.public_key
    add(replica, world.text(alice, "general", "mine do not count"),
        world.text(bob, "general", "first"))
    assert replica.unread(me, "alice") == {"general": (1, False)}
    replica.mark_read("general")
    assert replica.unread(me, "alice") == {"general": (0, False)}
    add(replica, world.text(bob, "general", "hey alice, look"),
        *(world.text(bob, "general", f"later {n}") for n in range(3)))
    assert replica.unread(me, "alice") == {"general": (4, True)}
    assert replica.unread(me, "carol") == {"general": (4, False)}
    # Past the cap, the count stops and only the newest unread are searched for mentions.
    add(replica, *(world.text(bob, "general", f"more {n}") for n in range(6)))
    assert replica.unread(me, "alice") == {"general": (5, False)}
    assert replica.unread(me, "50%_off") == {"general": (5, False)}  # LIKE wildcards escaped


def test_a_mention_is_the_nickname_as_a_word_of_its_own(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    add(replica, world.text(bob, "general", "adam and adabelle were here"))
    assert replica.unread(alice.public_key, "ada") == {"general": (1, False)}
    add(replica, world.text(bob, "random", "thanks @ADA!"))
    assert replica.unread(alice.public_key, "ada")["random"] == (1, True)
