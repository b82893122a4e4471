"""The `hearth` command line end to end on real data folders: every command through
`app.cli.main` in this process (tests/app/conftest.py; test_cli_smoke.py runs the real
process)."""

from __future__ import annotations

import argparse
import os
import re
import stat
from pathlib import Path

import pytest

from app.cli import build_parser
from app.paths import Paths
from storage import Replica

from .conftest import Hearth

HEX64 = re.compile(r"^[0-9a-f]{64}$")
COMMANDS = ["init", "post", "topic", "nick", "join", "leave", "delete", "read", "channels",
            "members", "search", "state", "policy", "policies", "whoami", "admin", "identity"]
MESSAGE_FIELDS = {"id", "channel", "author", "nick", "ts", "text", "cursor", "edited", "hidden",
                  "reply_to", "replies", "reactions", "attachments"}


def _id(run_line: str) -> str:
    assert HEX64.match(run_line), f"not a 64-hex id: {run_line!r}"
    return run_line


def _replica(data: Path, workspace: str = "default") -> Path:
    return Paths.resolve(data, workspace).replica


def copy_objects(src: Path, dst: Path) -> None:
    """What sync does, by hand: every object `src` holds goes through `dst`'s ingest."""
    with Replica(_replica(src)) as source:
        raws = [row[0] for row in source.conn.execute("SELECT raw FROM objects")]
    with Replica(_replica(dst)) as target:
        target.ingest(raws)


def member_of(hearth: Hearth, alice: Path, folder: Path, nick: str) -> str:
    """A member of Alice's workspace in `folder`, with his own identity (from a workspace of
    his own) and a replica holding every object Alice's does, as sync would give him, called
    `nick` there; returns his key."""
    me = hearth("whoami", "--json", data=alice).json()
    hearth("init", "--nick", "someone", "--workspace", "own", data=folder)
    Replica.create(_replica(folder), bytes.fromhex(me["workspace"]),
                   bytes.fromhex(me["key"])).close()
    secret = Paths.resolve(folder, "default").secret  # a member has the workspace secret
    secret.write_bytes(Paths.resolve(alice, "default").secret.read_bytes())
    secret.chmod(0o600)
    copy_objects(alice, folder)
    hearth("nick", nick, data=folder)
    return hearth("whoami", "--json", data=folder).json()["key"]


@pytest.fixture
def alice(hearth: Hearth, tmp_path: Path) -> Path:
    data = tmp_path / "alice"
    _id(hearth("init", "--nick", "alice", data=data).line)
    return data


@pytest.fixture(scope="module")
def shared(module_hearth: Hearth, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One initialized folder for the tests that only need it to exist (error cases)."""
    data = tmp_path_factory.mktemp("shared")
    _id(module_hearth("init", "--nick", "sam", data=data).line)
    _id(module_hearth("post", "general", "a message to page from", data=data).line)
    return data


# Basics -------------------------------------------------------------------------------------


def test_version(hearth: Hearth) -> None:
    run = hearth("--version")
    assert re.fullmatch(r"hearth \d+\.\d+\.\d+\S*", run.line), run.stdout


def test_help_lists_every_command(hearth: Hearth) -> None:
    out = hearth("--help").stdout
    registered = next(action.choices for action in build_parser()._actions
                      if isinstance(action, argparse._SubParsersAction))
    assert set(COMMANDS) <= set(registered)
    for command in registered:
        assert re.search(rf"^\s+{re.escape(command)}\s", out, re.M), (
            f"{command} missing from --help")
    assert "grant" in hearth("admin", "--help").stdout
    sub = hearth("identity", "--help").stdout
    assert "export" in sub and "import" in sub
    # No command on a machine without a display: how to start (with a display, the window).
    for name in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        hearth.env.pop(name, None)
    assert "hearth init" in hearth().stdout


def test_init_creates_a_private_identity_and_a_workspace(hearth: Hearth, tmp_path: Path) -> None:
    data = tmp_path / "new"
    workspace = _id(hearth("init", "--nick", "alice", data=data).line)
    key_file = data / "identity.key"
    assert key_file.is_file()
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert _replica(data).is_file()
    me = hearth("whoami", "--json", data=data).json()
    assert me["workspace"] == workspace
    assert HEX64.match(me["key"])
    assert me == {"key": me["key"], "nick": "alice", "workspace": workspace, "name": "default",
                  "admin": True}
    # The creator starts in #general.
    assert hearth("members", "general", "--json", data=data).json() == [
        {"key": me["key"], "nick": "alice"}]
    assert not hearth.fallback_data.exists(), "a command wrote outside --data"
    # A second workspace in the same folder keeps the same identity.
    other = _id(hearth("init", "--nick", "al", "--workspace", "work", data=data).line)
    assert other != workspace
    assert hearth("whoami", "--json", "--workspace", "work", data=data).json()["key"] == me["key"]
    assert "already exists" in hearth.fails("init", "--nick", "again", data=data)


# Writing and reading ------------------------------------------------------------------------


def test_write_commands_print_ids_and_take_effect(hearth: Hearth, alice: Path) -> None:
    post = _id(hearth("post", "general", "hello world", data=alice).line)
    topic = _id(hearth("topic", "general", "all things hearth", data=alice).line)
    nick = _id(hearth("nick", "Alice A.", data=alice).line)
    hearth.channels("random", data=alice)
    join = _id(hearth("join", "Random", data=alice).line)
    leave = _id(hearth("leave", "random", data=alice).line)
    gone = _id(hearth("post", "general", "oops, wrong channel", data=alice).line)
    delete = _id(hearth("delete", gone, data=alice).line)
    assert len({post, topic, nick, join, leave, gone, delete}) == 7

    messages = hearth("read", "general", "--json", data=alice).json()
    assert [m["text"] for m in messages] == ["hello world"]
    assert messages[0]["id"] == post
    assert messages[0]["nick"] == "Alice A."
    assert hearth("whoami", "--json", data=alice).json()["nick"] == "Alice A."
    state = hearth("state", "general", "--json", data=alice).json()
    assert state["topic"] == "all things hearth"
    assert hearth("members", "random", "--json", data=alice).json() == []
    # Deleting again, or deleting the delete, is refused.
    assert "already deleted" in hearth.fails("delete", gone, data=alice)
    assert "cannot be deleted" in hearth.fails("delete", delete, data=alice)
    # The plain-text output names the message and its id.
    text = hearth("read", "general", data=alice).stdout
    assert "hello world" in text and post in text and "oops" not in text


def test_read_json_newest_last_with_paging(hearth: Hearth, alice: Path) -> None:
    ids = [_id(hearth("post", "general", f"message {n}", data=alice).line) for n in range(5)]
    everything = hearth("read", "general", "--json", data=alice).json()
    assert [m["id"] for m in everything] == ids
    me = hearth("whoami", "--json", data=alice).json()
    for n, m in enumerate(everything):
        assert set(m) == MESSAGE_FIELDS
        assert m == {"id": ids[n], "channel": "general", "author": me["key"], "nick": "alice",
                     "ts": m["ts"], "text": f"message {n}", "cursor": m["cursor"],
                     "edited": False, "reply_to": None, "replies": 0, "reactions": {},
                     "attachments": [], "hidden": False}
        assert isinstance(m["ts"], int)
    assert [m["ts"] for m in everything] == sorted(m["ts"] for m in everything)

    newest = hearth("read", "general", "--json", "--limit", "2", data=alice).json()
    assert [m["text"] for m in newest] == ["message 3", "message 4"]
    page = hearth("read", "general", "--json", "--limit", "2",
                  "--before", newest[0]["cursor"], data=alice).json()
    assert [m["text"] for m in page] == ["message 1", "message 2"]
    last = hearth("read", "general", "--json", "--limit", "2",
                  "--before", page[0]["cursor"], data=alice).json()
    assert [m["text"] for m in last] == ["message 0"]
    assert hearth("read", "general", "--json", "--before", last[0]["cursor"],
                  data=alice).json() == []
    # Channel names compare case-insensitively.
    assert len(hearth("read", "GENERAL", "--json", data=alice).json()) == 5


def test_channels_members_state_search_policies(hearth: Hearth, alice: Path) -> None:
    me = hearth("whoami", "--json", data=alice).json()["key"]
    assert hearth("channels", "--json", data=alice).json() == [
        {"name": "general", "topic": None, "members": 1, "messages": 0, "unread": 0,
         "mention": False, "muted": False}]
    hearth("post", "general", "the quick brown fox", data=alice)
    hearth("post", "general", "jumps over the lazy dog", data=alice)
    hearth.channels("Design", data=alice)
    hearth("topic", "Design", "how hearth works", data=alice)
    hearth("post", "design", "foxes are quick", data=alice)
    hearth("nick", "ally", data=alice)

    channels = hearth("channels", "--json", data=alice).json()
    assert channels == [
        {"name": "Design", "topic": "how hearth works", "members": 1, "messages": 1,
         "unread": 0, "mention": False, "muted": False},
        {"name": "general", "topic": None, "members": 1, "messages": 2,
         "unread": 0, "mention": False, "muted": False},
    ]
    assert hearth("members", "general", "--json", data=alice).json() == [
        {"key": me, "nick": "ally"}]

    state = hearth("state", "design", "--json", data=alice).json()
    assert state["channel"] == "Design"
    assert state["topic"] == "how hearth works"
    assert state["members"] == [{"key": me, "nick": "ally"}]
    assert state["nicknames"] == {me: "ally"}
    kinds = [event["kind"] for event in state["history"]]
    assert "topic" in kinds and kinds.count("nick") == 2
    for event in state["history"]:
        assert HEX64.match(event["id"]) and event["author"] == me

    found = hearth("search", "quick", "--json", data=alice).json()["messages"]
    assert sorted(m["text"] for m in found) == ["foxes are quick", "the quick brown fox"]
    assert {m["channel"] for m in found} == {"general", "Design"}
    assert all(set(m) == MESSAGE_FIELDS for m in found)
    assert [m["text"] for m in
            hearth("search", "laz", "--json", data=alice).json()["messages"]] == [
        "jumps over the lazy dog"]
    assert hearth("search", "fox dog", "--json", data=alice).json()["messages"] == []
    # Awkward queries are words, not FTS syntax.
    for query in ['"*', "NEAR( OR", ""]:
        hearth("search", query, "--json", data=alice)

    assert hearth("policies", "general", "--json", data=alice).json() == []
    _id(hearth("policy", "general", "--deny", "--resource", "post/topic", data=alice).line)
    assert hearth("policies", "general", "--json", data=alice).json() == [
        {"effect": "deny", "subjects": [], "resources": ["post/topic"], "actions": ["append"]}]
    assert "everyone" not in hearth("policies", "general", data=alice).stdout


def test_admin_rules_and_policies_across_two_identities(
        hearth: Hearth, alice: Path, tmp_path: Path) -> None:
    alice_me = hearth("whoami", "--json", data=alice).json()
    alice_post = _id(hearth("post", "general", "welcome, everyone", data=alice).line)

    # Bob gets his own identity (from a workspace of his own), then a replica of Alice's
    # workspace that holds every object Alice's does, as sync would give him.
    bob = tmp_path / "bob"
    hearth("init", "--nick", "bob", "--workspace", "own", data=bob)
    bob_key = hearth("whoami", "--json", "--workspace", "own", data=bob).json()["key"]
    Replica.create(_replica(bob), bytes.fromhex(alice_me["workspace"]),
                   bytes.fromhex(alice_me["key"])).close()
    copy_objects(alice, bob)
    assert hearth("whoami", "--json", data=bob).json() == {
        "key": bob_key, "nick": None, "workspace": alice_me["workspace"], "name": "default",
        "admin": False}
    assert [m["id"] for m in hearth("read", "general", "--json", data=bob).json()] == [
        alice_post]

    hearth("nick", "bob", data=bob)
    bob_post = _id(hearth("post", "general", "hi alice", data=bob).line)
    bob_spare = _id(hearth("post", "general", "second thought", data=bob).line)
    error = hearth.fails("policy", "general", "--deny", "--resource", "post/text", data=bob)
    assert "admin" in error
    assert "root" in hearth.fails("admin", "grant", bob_key, data=bob)
    assert "own posts" in hearth.fails("delete", alice_post, data=bob)
    assert hearth("policies", "general", "--json", data=bob).json() == []

    copy_objects(bob, alice)
    texts = [m["text"] for m in hearth("read", "general", "--json", data=alice).json()]
    assert texts == ["welcome, everyone", "hi alice", "second thought"]
    # An admin may delete anyone's post; a deny policy hides the rest, retroactively.
    _id(hearth("delete", bob_spare, data=alice).line)
    _id(hearth("policy", "general", "--deny", "--subject", bob_key, "--resource", "post/text",
               data=alice).line)
    assert hearth("policies", "general", "--json", data=alice).json() == [
        {"effect": "deny", "subjects": [bob_key], "resources": ["post/text"],
         "actions": ["append"]}]
    assert [m["id"] for m in hearth("read", "general", "--json", data=alice).json()] == [
        alice_post]
    assert hearth("search", "alice", "--json", data=alice).json()["messages"] == []

    # The root grants admin to Bob; once Bob holds the grant he may set policies too,
    # but only the root grants admin.
    _id(hearth("admin", "grant", bob_key, data=alice).line)
    assert "already an admin" in hearth.fails("admin", "grant", bob_key, data=alice)
    copy_objects(alice, bob)
    assert hearth("whoami", "--json", data=bob).json()["admin"] is True
    assert [m["id"] for m in hearth("read", "general", "--json", data=bob).json()] == [
        alice_post]
    _id(hearth("policy", "general", "--allow", "--subject", bob_key, "--resource", "post/text",
               data=bob).line)
    assert bob_post in {m["id"] for m in hearth("read", "general", "--json", data=bob).json()}
    carol = "c" * 64
    assert "root" in hearth.fails("admin", "grant", carol, data=bob)


def test_identity_export_and_import(hearth: Hearth, alice: Path, tmp_path: Path) -> None:
    key = hearth("whoami", "--json", data=alice).json()["key"]
    exported = tmp_path / "alice.identity"
    assert hearth("identity", "export", exported, data=alice, passphrase="correct horse").line \
        == key
    assert stat.S_IMODE(exported.stat().st_mode) == 0o600
    assert key not in exported.read_bytes().hex(), "the export is not sealed"
    assert "exists" in hearth.fails("identity", "export", exported, data=alice,
                                    passphrase="correct horse")
    assert "passphrase" in hearth.fails("identity", "export", tmp_path / "other",
                                        data=alice, passphrase="")
    assert "passphrase" in hearth.fails("identity", "export", tmp_path / "nopass", data=alice)

    laptop = tmp_path / "laptop"
    assert "passphrase" in hearth.fails("identity", "import", exported, data=laptop,
                                        passphrase="wrong horse")
    assert not (laptop / "identity.key").exists()
    assert hearth("identity", "import", exported, data=laptop,
                  passphrase="correct horse").line == key
    assert stat.S_IMODE((laptop / "identity.key").stat().st_mode) == 0o600
    assert "already has an identity" in hearth.fails("identity", "import", exported,
                                                     data=laptop, passphrase="correct horse")
    hearth("init", "--nick", "alice on the laptop", data=laptop)
    assert hearth("whoami", "--json", data=laptop).json()["key"] == key


# Bad input: one line on stderr, a non-zero exit, never a traceback ----------------------------

NOT_HELD = "ab" * 32

BAD_INPUT = {
    "text of 4097 bytes": (["post", "general", "x" * 4097], "4096"),
    "text of 4097 bytes in emoji": (["post", "general", "x" + "\N{FIRE}" * 1024], "4096"),
    "blank text": (["post", "general", "   "], "text"),
    "channel with a control character": (["post", "bad\x07name", "hi"], "control"),
    "channel with a zero-width space": (["join", "bad\u200bname"], "control"),
    "channel name too long": (["join", "c" * 65], "64"),
    "empty channel": (["join", ""], "channel"),
    "topic too long": (["topic", "general", "t" * 513], "512"),
    "nickname too long": (["nick", "n" * 33], "32"),
    "delete an id the replica does not hold": (["delete", NOT_HELD], "holds no post"),
    "delete an id that is not hex": (["delete", "zz" * 32], "hexadecimal"),
    "delete a short id": (["delete", "ab" * 31], "holds no post whose id starts with"),
    "admin grant to a non-hex key": (["admin", "grant", "not-a-key"], "hexadecimal"),
    "policy subject not hex": (["policy", "general", "--deny", "--subject", "bob"],
                               "hexadecimal"),
    "workspace name with a slash": (["post", "general", "hi", "--workspace", "a/b"],
                                    "workspace name"),
    "workspace name with dots only": (["read", "general", "--workspace", ".."],
                                      "workspace name"),
    "limit 0": (["read", "general", "--limit", "0"], "--limit"),
    "negative limit": (["read", "general", "--limit", "-3"], "--limit"),
    "garbage cursor": (["read", "general", "--before", "garbage"], "cursor"),
    "cursor with a bad id": (["read", "general", "--before", "12-zz"], "cursor"),
    "cursor with a short id": (["read", "general", "--before", "12-" + "ab" * 31], "cursor"),
    "cursor without a time": (["read", "general", "--before=-" + NOT_HELD], "cursor"),
    "state of an unknown channel": (["state", "nowhere"], "no channel"),
    "workspace that does not exist": (["whoami", "--workspace", "elsewhere"], "init"),
}


@pytest.mark.parametrize("args, says", BAD_INPUT.values(), ids=BAD_INPUT.keys())
def test_bad_input_is_one_line_error(module_hearth: Hearth, shared: Path, args: list[str],
                                     says: str) -> None:
    before = Replica(_replica(shared))
    try:
        count = before.count()
    finally:
        before.close()
    assert says in module_hearth.fails(*args, data=shared)
    with Replica(_replica(shared)) as after:
        assert after.count() == count, "a refused command stored something"


@pytest.mark.parametrize("args", [
    ["post", "general", "hi"], ["read", "general"], ["whoami"], ["channels"],
    ["delete", NOT_HELD], ["admin", "grant", NOT_HELD], ["identity", "export", "{tmp}/out"],
], ids=lambda args: " ".join(args[:2]))
def test_commands_before_init_are_refused(hearth: Hearth, tmp_path: Path,
                                          args: list[str]) -> None:
    empty = tmp_path / "empty"
    args = [arg.format(tmp=tmp_path) for arg in args]
    message = hearth.fails(*args, data=empty, passphrase="pw")
    assert "init" in message or "no identity" in message
    assert not (empty / "identity.key").exists()
    assert not (tmp_path / "out").exists()


def test_data_that_is_a_file_is_refused(hearth: Hearth, tmp_path: Path) -> None:
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")
    assert "not a folder" in hearth.fails("whoami", data=not_a_folder)


def test_key_file_readable_by_others_is_refused(hearth: Hearth, alice: Path) -> None:
    os.chmod(alice / "identity.key", 0o644)
    assert "chmod 600" in hearth.fails("post", "general", "hi", data=alice)


# Bugs found while writing these tests (see the reasons) -------------------------------------


def test_common_options_work_before_and_after_the_command(hearth: Hearth,
                                                          tmp_path: Path) -> None:
    # Found while writing these tests, fixed since: the subcommand's defaults used to
    # overwrite --data/--workspace given before it, so they went to the default data folder.
    data = tmp_path / "before"
    workspace = _id(hearth("--data", data, "--workspace", "team", "init", "--nick", "a").line)
    assert (data / "identity.key").exists()
    assert Paths.resolve(data, "team").replica.exists()
    post = _id(hearth("--data", data, "--workspace", "team", "post", "general", "hi").line)
    after = hearth("read", "general", "--json", "--workspace", "team", data=data).json()
    assert [m["id"] for m in after] == [post]
    mixed = hearth("--workspace", "team", "whoami", "--json", data=data).json()
    assert mixed["workspace"] == workspace
    assert not hearth.fallback_data.exists(), "a command wrote outside --data"


@pytest.mark.parametrize("args", [
    [b"post", b"bad\xffname", b"hi"], [b"state", b"bad\xffname"], [b"search", b"\xff"],
], ids=["post", "state", "search"])
def test_non_utf8_arguments_are_one_line_errors(hearth: Hearth, alice: Path,
                                                args: list[bytes]) -> None:
    hearth.fails(*args, data=alice)


def test_cursor_with_a_huge_time_is_one_line_error(hearth: Hearth, alice: Path) -> None:
    assert "cursor" in hearth.fails("read", "general", "--before",
                                    "9" * 20 + "-" + NOT_HELD, data=alice)


def test_damaged_replica_file_is_one_line_error(hearth: Hearth, alice: Path) -> None:
    replica = _replica(alice)
    for leftover in replica.parent.glob(replica.name + "-*"):
        leftover.unlink()
    replica.write_bytes(b"this is not a database" * 100)
    hearth.fails("whoami", data=alice)
