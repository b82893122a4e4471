"""Unread counts and mention marks of private channels and direct messages (issue #29), from
the library, without Qt: counted from the posts I can open that others wrote since my read
mark (kept in the replica's local read marks, apart from every public channel's), a mention
of my nickname found once a message is opened, and what the facade's channel list carries."""

from __future__ import annotations

import pytest

from app.private import mentions, read_mark_key
from app.workspace import WorkspaceError
from tests.support import members_in_step, share


@pytest.fixture
def team(tmp_path):
    with members_in_step(tmp_path, ("ada", "bob", "cat")) as spaces:
        yield spaces


def test_others_messages_count_until_read_and_mine_never(team):
    ada, bob, cat = team
    launch = ada.private.create("launch", [bob.key])
    ada.private.post(launch, "first")
    share(ada, bob, cat)
    assert bob.private.unread() == {launch: (1, False)}
    assert ada.private.unread() == {launch: (0, False)}  # my own message is read
    assert cat.private.unread() == {}  # not in it: nothing of it is hers to count
    bob.private.mark_read(launch)
    assert bob.private.unread() == {launch: (0, False)}
    ada.private.post(launch, "second")
    ada.private.post(launch, "third")
    share(ada, bob)
    assert bob.private.unread() == {launch: (2, False)}


def test_a_mention_of_me_is_found_once_the_message_is_opened(team):
    ada, bob, _ = team
    dm = ada.private.direct_message(bob.key, "lunch, @bob?").body["channel"]
    share(ada, bob)
    assert bob.private.unread() == {dm: (1, True)}
    ada.private.post(dm, "bobby is someone else")
    share(ada, bob)
    bob.private.mark_read(dm)
    ada.private.post(dm, "bobby is someone else")
    share(ada, bob)
    assert bob.private.unread() == {dm: (1, False)}


def test_a_private_mark_is_kept_apart_from_every_public_channel(team):
    ada, bob, _ = team
    launch = ada.private.create("launch", [bob.key])
    ada.private.post(launch, "hello")
    share(ada, bob)
    bob.private.mark_read(launch)
    key = read_mark_key(launch)
    assert bob.replica.read_mark(key) is not None
    assert key not in bob.replica.unread(bob.key, "bob")  # no public channel reads it
    assert not any(c.name == key for c in bob.channels())


def test_only_a_member_marks_a_private_channel_read(team):
    ada, bob, cat = team
    launch = ada.private.create("launch", [bob.key])
    share(ada, cat)
    with pytest.raises(WorkspaceError, match="not in that private channel"):
        cat.private.mark_read(launch)


def test_a_mention_is_a_word_of_its_own():
    assert mentions("ada", "hi @ada!") and mentions("ada", "ADA: look")
    assert not mentions("ada", "adam was here") and not mentions("ada", "canada")
