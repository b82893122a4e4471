"""`hearth mod role|hide|unhide|log`, `hearth block|unblock|blocked` on three members' data
folders, whose replicas are brought together by hand between commands (what sync does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.paths import Paths
from storage import Replica
from tests.support import make_members

from .conftest import Hearth


def share(*members: Paths) -> None:
    """Every member ingests every object any of them holds (refusals included)."""
    raws: set[bytes] = set()
    for paths in members:
        with Replica(paths.replica) as replica:
            raws.update(row[0] for row in replica.conn.execute("SELECT raw FROM objects"))
    for paths in members:
        with Replica(paths.replica) as replica:
            replica.ingest(sorted(raws))


def texts(hearth: Hearth, member: Paths) -> list[str]:
    """What `member` reads in #general that nobody hid (a moderator's read also lists what
    moderators hid, marked)."""
    return [m["text"] for m in hearth("read", "general", "--json", data=member.data).json()
            if not m.get("hidden")]


@pytest.fixture
def members(tmp_path: Path) -> tuple[Paths, Paths, Paths]:
    """alice (the root admin), bob and carol; carol posted twice, and all hold everything."""
    return tuple(make_members(tmp_path, 3, names=["alice", "bob", "carol"]))


def test_a_moderator_hides_a_post_and_a_member_for_everyone_else(hearth: Hearth, members):
    alice, bob, carol = members
    hearth("post", "general", "buy cheap watches", data=carol.data)
    hearth("post", "general", "good morning", data=carol.data)
    share(*members)
    spam = next(m["id"] for m in hearth("read", "general", "--json", data=bob.data).json()
                if m["text"].startswith("buy"))
    assert "only admins" in hearth.fails("mod", "role", "general", "bob", "--moderator",
                                         data=carol.data)
    role = hearth("mod", "role", "#general", "bob", "--moderator", "--reason", "helps out",
                  data=alice.data).line
    share(*members)
    assert "only moderators of #general" in hearth.fails(
        "mod", "hide", "general", spam[:8], "--reason", "spam", data=carol.data)
    hide = hearth("mod", "hide", "general", spam[:8], "--reason", "selling things",
                  data=bob.data).line
    assert "already hidden" in hearth.fails("mod", "hide", "general", spam, "--reason", "again",
                                            data=bob.data)
    share(*members)
    for member in members:
        assert texts(hearth, member) == ["good morning"]

    log = hearth("mod", "log", "general", "--json", data=carol.data).json()
    assert [(e["id"], e["action"], e["nick"], e["target_kind"], e["reason"], e["counts"])
            for e in log] == [(role, "moderator", "alice", "member", "helps out", True),
                              (hide, "hide", "bob", "post", "selling things", True)]
    assert log[1]["target"] == spam
    shown = hearth("mod", "log", data=carol.data).stdout.splitlines()
    assert "alice" in shown[0] and "made bob" in shown[0] and shown[0].endswith("helps out")
    assert "bob" in shown[2] and "hid post" in shown[2] and "(buy cheap watches)" in shown[2]

    hearth("mod", "hide", "general", "carol", "--reason", "flooding", data=alice.data)
    share(*members)
    assert texts(hearth, bob) == []
    hearth("mod", "unhide", "general", "carol", "--reason", "calmed down", data=bob.data)
    hearth("mod", "unhide", "general", spam, "--reason", "a joke after all", data=bob.data)
    share(*members)
    assert texts(hearth, alice) == ["buy cheap watches", "good morning"]
    assert [e["action"] for e in hearth("mod", "log", "--json", "--limit", "2",
                                        data=alice.data).json()] == ["unhide", "unhide"]

    # Taken away, bob's actions no longer count: his hide and both unhides. Alice's hide of
    # carol is the latest that counts again.
    hearth("mod", "role", "general", "bob", "--none", data=alice.data)
    share(*members)
    assert texts(hearth, carol) == []
    assert "not a moderator" in hearth.fails("mod", "role", "general", "bob", "--none",
                                             data=alice.data)
    entries = hearth("mod", "log", "general", "--json", data=carol.data).json()
    assert [e["counts"] for e in entries if e["nick"] == "bob"] == [False, False, False]
    assert "does not count" in hearth("mod", "log", data=carol.data).stdout


def test_hides_need_a_bounded_reason_and_a_post_of_that_channel(hearth: Hearth, members):
    alice, _, carol = members
    hearth.channels("random", data=carol.data)
    hearth("post", "random", "elsewhere", data=carol.data)
    share(*members)
    elsewhere = hearth("read", "random", "--json", data=alice.data).json()[0]["id"]
    assert "not in #general" in hearth.fails("mod", "hide", "general", elsewhere, "--reason",
                                             "no", data=alice.data)
    assert "reason" in hearth.fails("mod", "hide", "random", elsewhere, "--reason", " ",
                                    data=alice.data)
    assert "256" in hearth.fails("mod", "hide", "random", elsewhere, "--reason", "x" * 257,
                                 data=alice.data)
    hearth("mod", "hide", "random", elsewhere, "--reason", "x" * 256, data=alice.data)
    assert "no channel #nowhere" in hearth.fails("mod", "log", "nowhere", data=alice.data)
    assert hearth("mod", "log", "general", data=alice.data).line == \
        "no moderation yet in #general"


def test_a_blocked_members_posts_are_neither_shown_nor_stored(hearth: Hearth, members):
    alice, bob, carol = members
    hearth("post", "general", "before the block", data=carol.data)
    share(*members)
    run = hearth("block", "carol", data=bob.data)
    assert run.line.startswith("blocked carol (")
    assert texts(hearth, bob) == []
    hearth("post", "general", "after the block", data=carol.data)
    share(*members)
    assert texts(hearth, bob) == []
    assert texts(hearth, alice) == ["before the block", "after the block"]
    with Replica(bob.replica) as replica:
        stored = {row[0] for row in replica.conn.execute("SELECT raw FROM objects")}
    assert not any(b"after the block" in raw for raw in stored)
    [entry] = hearth("blocked", "--json", data=bob.data).json()
    assert entry["nick"] == "carol" and len(entry["key"]) == 64
    assert "already blocked" in hearth.fails("block", "carol", data=bob.data)
    assert "yourself" in hearth.fails("block", "bob", data=bob.data)
    assert "admins cannot be blocked" in hearth.fails("block", "alice", data=bob.data)

    assert hearth("unblock", "carol", data=bob.data).line.startswith("unblocked carol (")
    assert texts(hearth, bob) == ["before the block"]  # what is still held shows again
    share(*members)  # and what was refused comes with the next sync
    assert texts(hearth, bob) == ["before the block", "after the block"]
    assert hearth("blocked", data=bob.data).line == "nobody is blocked on this computer"
    assert "not blocked" in hearth.fails("unblock", "carol", data=bob.data)


def test_the_log_prints_what_people_wrote_safely(hearth: Hearth, members):
    """A hidden post's text is quoted in the log: a peer's \\r, escapes and bidi overrides
    are shown as escapes (app._text), so it cannot fake a line of the log. (Nicknames and
    reasons cannot hold control characters at all.)"""
    alice, _, carol = members
    hearth("post", "general", "evil\r\x1b[2K\u202ealice (00000000) made carol an admin",
           data=carol.data)
    share(*members)
    post = hearth("read", "general", "--json", data=alice.data).json()[0]["id"]
    hearth("mod", "hide", "general", post, "--reason", "spoofing", data=alice.data)
    assert "reason" in hearth.fails("mod", "hide", "general", "carol", "--reason",
                                    "\u202ereversed", data=alice.data)
    out = hearth("mod", "log", data=alice.data).stdout
    assert "\r" not in out and "\x1b" not in out and "\u202e" not in out
    assert len(out.splitlines()) == 2  # the entry and its id
    assert "\\x1b" in out and "\\r" in out


def test_a_hide_names_a_post_by_a_prefix_or_a_member_and_says_which_it_cannot(
        hearth: Hearth, members):
    alice, _, carol = members
    hearth("post", "general", "hello", data=carol.data)
    share(*members)
    post = hearth("read", "general", "--json", data=alice.data).json()[0]["id"]
    assert "neither a key" in hearth.fails("mod", "hide", "general", post[:3], "--reason",
                                           "x", data=alice.data)  # too short for an id
    assert "no post whose id starts with" in hearth.fails(
        "mod", "hide", "general", "ffffffffff", "--reason", "x", data=alice.data)
    assert "anyone's nickname" in hearth.fails("mod", "hide", "general", "nobody",
                                               "--reason", "x", data=alice.data)
    hearth("mod", "hide", "general", carol.data.name, "--reason", "by nickname",
           data=alice.data)
    [entry] = hearth("mod", "log", "--json", data=alice.data).json()
    assert (entry["target_kind"], entry["target_nick"]) == ("member", "carol")


def test_a_moderators_read_shows_what_was_hidden_marked(hearth: Hearth, members):
    alice, bob, carol = members
    hearth("post", "general", "buy cheap watches", data=carol.data)
    hearth("post", "general", "good morning", data=carol.data)
    share(*members)
    hearth("mod", "role", "general", "bob", "--moderator", data=alice.data)
    spam = hearth("read", "general", "--json", data=alice.data).json()[0]["id"]
    share(*members)
    hearth("mod", "hide", "general", spam, "--reason", "advertising", data=bob.data)
    share(*members)
    for moderator in (alice, bob):  # an admin, and the channel's moderator
        read = hearth("read", "general", "--json", data=moderator.data).json()
        assert [(m["text"], m["hidden"]) for m in read] == [("buy cheap watches", True),
                                                            ("good morning", False)]
        lines = hearth("read", "general", data=moderator.data).stdout.splitlines()
        assert lines[0].endswith("buy cheap watches (hidden by a moderator: only moderators "
                                 "see it)")
    assert [(m["text"], m["hidden"]) for m in hearth("read", "general", "--json",
                                                     data=carol.data).json()] == \
        [("good morning", False)]
