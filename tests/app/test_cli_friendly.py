"""The command line, tried as a new user would (issue #14): ids by a unique prefix, people by
nickname, `#channel`, a channel that is not there, an empty workspace just joined, hints that
repeat `--data`/`--workspace`, a channel's history in text, and the workspace's name."""

from __future__ import annotations

import re
import shlex
import time
from pathlib import Path

import pytest

from app.paths import Paths
from app.workspace import Workspace
from storage import Replica
from tests.support import FakeClock

from .conftest import Hearth, personal_code
from .test_cli import _id, member_of

WHEN = r"\d{4}-\d\d-\d\d \d\d:\d\d"


def _key(hearth: Hearth, data: Path) -> str:
    return hearth("whoami", "--json", data=data).json()["key"]


def _copy(src: Path, dst: Path, *, src_workspace: str = "default",
          dst_workspace: str = "default") -> None:
    """What sync does, by hand: every object `src` holds goes through `dst`'s ingest."""
    with Replica(Paths.resolve(src, src_workspace).replica) as source:
        raws = [row[0] for row in source.conn.execute("SELECT raw FROM objects")]
    with Replica(Paths.resolve(dst, dst_workspace).replica) as target:
        target.ingest(raws)


@pytest.fixture
def alice(hearth: Hearth, tmp_path: Path) -> Path:
    data = tmp_path / "alice"
    _id(hearth("init", "--nick", "alice", data=data).line)
    return data


def _member(hearth: Hearth, alice: Path, folder: Path, nick: str) -> str:
    """A member called `nick` whose objects Alice's replica holds (as after a sync): his key."""
    key = member_of(hearth, alice, folder, nick)
    _copy(folder, alice)
    return key


# 1. Ids by a unique prefix ----------------------------------------------------------------------

def _colliding_posts(data: Path) -> tuple[str, str]:
    """Posts in #general until two posts' ids share their first 4 hex digits (a few hundred
    posts): those two ids, and no other object starts the same way. (A post sharing them with
    an object that is not a post, which `read` does not list, does not count.)"""
    with Workspace.open(Paths.resolve(data, "default")) as ws:
        seen: dict[str, str | None] = {  # prefix -> the one post with it, None: not a post
            row[0].hex()[:4]: None for row in ws.replica.conn.execute("SELECT id FROM objects")}
        for n in range(20_000):
            post = ws.post("general", f"message {n}").hex
            if post[:4] not in seen:
                seen[post[:4]] = post
            elif (other := seen[post[:4]]) is not None and len(
                    ws.replica.ids_with_prefix(bytes.fromhex(post[:4]), 3)) == 2:
                return other, post
            else:  # a non-post's prefix (posting may make others): never the answer
                seen[post[:4]] = None
    raise AssertionError("no two ids share 4 hex digits in 20000 posts")


def test_delete_takes_a_unique_prefix_of_the_id(hearth: Hearth, alice: Path) -> None:
    keep = _id(hearth("post", "general", "keep me", data=alice).line)
    gone = _id(hearth("post", "general", "delete me", data=alice).line)
    assert _id(hearth("delete", gone[:8], data=alice).line) != gone
    assert [m["id"] for m in hearth("read", "general", "--json", data=alice).json()] == [keep]
    # An odd number of digits counts too, in either case.
    assert _id(hearth("delete", keep[:7].upper(), data=alice).line)
    assert hearth("read", "general", "--json", data=alice).json() == []


def test_an_ambiguous_or_unknown_or_short_prefix_is_refused(hearth: Hearth,
                                                            alice: Path) -> None:
    first, second = _colliding_posts(alice)
    assert f"'{first[:4]}' matches 2 objects; give more of it" in hearth.fails(
        "delete", first[:4], data=alice)
    with Replica(Paths.resolve(alice, "default").replica) as replica:
        unknown = next(f"{n:04x}" for n in range(1 << 16)
                       if not replica.ids_with_prefix(bytes.fromhex(f"{n:04x}"), 1))
    assert f"holds no post whose id starts with {unknown}" in hearth.fails(
        "delete", unknown, data=alice)
    assert "at least 4 hex characters" in hearth.fails("delete", first[:3], data=alice)
    assert "hexadecimal" in hearth.fails("delete", "c4cd-40ee", data=alice)
    # Both are still there; the longer prefix tells them apart.
    hearth("delete", second[:12], data=alice)
    assert [m["id"] for m in hearth("read", "general", "--json", "--limit", "100000",
                                    data=alice).json()].count(first) == 1


def test_the_replica_finds_ids_by_prefix_on_its_index(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path / "lib", "default")
    with Workspace.init(paths, "ada") as ws:
        for n in range(300):
            ws.post("general", f"m{n}")
        replica = ws.replica
        ids = sorted(row[0] for row in replica.conn.execute("SELECT id FROM objects"))
        for probe in (ids[0], ids[150], ids[-1]):
            for digits in (1, 2, 3, 4, 5, 7, 64):
                text = probe.hex()[:digits]
                expected = [i for i in ids if i.hex().startswith(text)]
                found = replica.ids_with_prefix(bytes.fromhex(text + "0" * (digits % 2)),
                                                1000, bits=4 * digits)
                assert found == expected, text
        assert replica.ids_with_prefix(b"", 5) == ids[:5]
        assert replica.ids_with_prefix(b"\xff" * 2, 1000) == [i for i in ids
                                                              if i[:2] == b"\xff\xff"]
        statements: list[str] = []
        replica.conn.set_trace_callback(statements.append)
        replica.ids_with_prefix(ids[42][:2], 10)
        replica.conn.set_trace_callback(None)
        (plan,) = [row[3] for row in replica.conn.execute(
            "EXPLAIN QUERY PLAN " + statements[-1])]
        assert plan.startswith("SEARCH objects USING COVERING INDEX") and "id>? AND id<?" in plan


def test_documents_and_commits_take_a_prefix_of_4(hearth: Hearth, alice: Path) -> None:
    doc = _id(hearth("doc", "new", "Plans", data=alice).line)
    first = _id(hearth("doc", "write", doc[:4], "--text", "one", data=alice).line)
    hearth("doc", "write", doc[:5], "--text", "one two", data=alice)
    assert hearth("doc", "show", doc[:4], "--at", first[:4], data=alice).stdout == "one\n"
    shown = hearth("doc", "show", doc[:4], "--at", first[:5], "--json", data=alice).json()
    assert shown["heads"] == [first] and shown["text"] == "one"
    assert _id(hearth("doc", "fork", doc[:4], "--from", f"main@{first[:4]}", "--name", "old",
                      data=alice).line)
    assert hearth("doc", "show", doc[:4], "--branch", "old", data=alice).stdout == "one\n"
    assert hearth("doc", "tag", doc[:4], "v1", "--at", first[:4], data=alice).line == first


# 2. People by nickname --------------------------------------------------------------------------

def test_admin_grant_policy_and_editors_take_a_nickname(hearth: Hearth, alice: Path,
                                                        tmp_path: Path) -> None:
    grace = _member(hearth, alice, tmp_path / "grace", "grace")
    _id(hearth("admin", "grant", "grace", data=alice).line)
    with Replica(Paths.resolve(alice, "default").replica) as replica:
        assert replica.is_admin(bytes.fromhex(grace))

    _id(hearth("policy", "general", "--deny", "--subject", "Grace", data=alice).line)
    assert hearth("policies", "general", "--json", data=alice).json()[-1]["subjects"] == [grace]

    doc = _id(hearth("doc", "new", "Plans", data=alice).line)
    listed = hearth("doc", "editors", doc, "--add", "grace", data=alice).stdout
    assert f"grace  {grace}" in listed
    listed = hearth("doc", "editors", doc, "--remove", "grace", data=alice).stdout
    assert grace not in listed and listed.count("\n") == 1
    # A 64-hex key still works, and so does a unique prefix of one (as lists show keys).
    assert grace in hearth("doc", "editors", doc, "--add", grace, data=alice).stdout
    assert grace not in hearth("doc", "editors", doc, "--remove", grace[:10], data=alice).stdout


def test_a_nickname_two_people_share_is_refused_with_their_keys(hearth: Hearth, alice: Path,
                                                                tmp_path: Path) -> None:
    one = _member(hearth, alice, tmp_path / "one", "grace")
    two = _member(hearth, alice, tmp_path / "two", "grace")
    message = hearth.fails("admin", "grant", "grace", data=alice)
    assert "'grace' could be 2 people" in message
    assert one[:8] in message and two[:8] in message
    doc = _id(hearth("doc", "new", "Plans", data=alice).line)
    assert "could be 2 people" in hearth.fails("doc", "editors", doc, "--add", "grace",
                                               data=alice)
    assert "could be 2 people" in hearth.fails("policy", "general", "--allow", "--subject",
                                               "grace", data=alice)


def test_a_lookalike_nickname_is_refused_with_the_candidates(hearth: Hearth, alice: Path,
                                                             tmp_path: Path) -> None:
    fake = _member(hearth, alice, tmp_path / "mallory", "gr\u0430ce")  # a Cyrillic а
    # The only one whose name looks like "grace" is spelled otherwise: not taken for her.
    message = hearth.fails("admin", "grant", "grace", data=alice)
    assert "no one here is called 'grace'" in message
    assert fake[:8] in message and "\\u0430" in message
    real = _member(hearth, alice, tmp_path / "grace", "grace")
    message = hearth.fails("admin", "grant", "grace", data=alice)
    assert "could be 2 people" in message and fake[:8] in message and real[:8] in message
    with Replica(Paths.resolve(alice, "default").replica) as replica:
        assert replica.admins() == {bytes.fromhex(_key(hearth, alice))}


def test_an_unknown_person_is_refused(hearth: Hearth, alice: Path) -> None:
    assert "'nobody' is neither a key (64 hexadecimal characters) nor anyone's nickname" in \
        hearth.fails("admin", "grant", "nobody", data=alice)
    doc = _id(hearth("doc", "new", "Plans", data=alice).line)
    assert "nor anyone's nickname" in hearth.fails("doc", "editors", doc, "--add", "nobody",
                                                   data=alice)


# 3. '#channel' ----------------------------------------------------------------------------------

def test_a_leading_hash_names_the_channel(hearth: Hearth, alice: Path) -> None:
    hearth.channels("#random", "#other", data=alice)
    post = _id(hearth("post", "#random", "hi", data=alice).line)
    assert [m["id"] for m in hearth("read", "random", "--json", data=alice).json()] == [post]
    assert [m["id"] for m in hearth("read", "#random", "--json", data=alice).json()] == [post]
    hearth("topic", "#random", "chatter", data=alice)
    hearth("join", "#other", data=alice)
    hearth("leave", "#other", data=alice)
    assert hearth("state", "#random", "--json", data=alice).json()["topic"] == "chatter"
    assert len(hearth("members", "#random", "--json", data=alice).json()) == 1
    _id(hearth("policy", "#random", "--deny", "--resource", "post/topic", data=alice).line)
    assert len(hearth("policies", "#random", "--json", data=alice).json()) == 1
    assert sorted(c["name"] for c in hearth("channels", "--json", data=alice).json()) == [
        "general", "other", "random"]


# 4. A channel that is not there, a workspace not synced yet ----------------------------------------

def test_reading_an_unknown_channel_is_refused(hearth: Hearth, alice: Path) -> None:
    for command in ("read", "members", "state"):
        run = hearth(command, "#nope", data=alice, ok=False)
        assert run.returncode != 0 and run.stdout == ""
        assert run.stderr.startswith("hearth: no channel #nope here; `hearth channels")
        assert "lists them" in run.stderr
    assert "no channel #nope" in hearth.fails("read", "nope", "--json", data=alice)


def test_an_empty_read_after_joining_says_to_sync(hearth: Hearth, alice: Path,
                                                  tmp_path: Path) -> None:
    bob = tmp_path / "bob"
    code = personal_code(hearth, alice, bob)
    _id(hearth("join-workspace", code, "--nick", "bob", data=bob).line)
    run = hearth("read", "general", data=bob)
    assert run.stdout == ""
    assert run.stderr == (f"nothing yet: run `hearth serve --data {shlex.quote(str(bob))}` "
                          "to sync with your workspace\n")
    run = hearth("read", "general", "--json", data=bob)
    assert run.json() == [] and run.stderr == ""
    # A channel nobody here knows of yet: syncing is what brings it.
    assert "no channel #random here yet" in hearth.fails("read", "random", data=bob)
    assert "`hearth serve --data" in hearth.fails("read", "random", data=bob)

    _copy(alice, bob)  # as a sync brings Alice's objects
    run = hearth("read", "general", data=bob)
    assert run.stdout == "" and run.stderr == ""
    # The creator's own empty channel is just empty.
    hearth.channels("quiet", data=alice)
    run = hearth("read", "quiet", data=alice)
    assert run.stdout == "" and run.stderr == ""


# 5. Hints repeat --data and --workspace -----------------------------------------------------------

def test_hints_repeat_the_data_and_workspace_given(hearth: Hearth, tmp_path: Path) -> None:
    data = tmp_path / "my data"
    options = f"--data {shlex.quote(str(data))}"
    message = hearth.fails("whoami", "--workspace", "team", data=data)
    assert f"`hearth init --nick NAME {options} --workspace team`" in message
    assert f"`hearth join-workspace CODE {options} --workspace team`" in message

    _id(hearth("init", "--nick", "ada", "--workspace", "team", data=data).line)
    team = f"{options} --workspace team"
    assert f"`hearth doc new TITLE {team}`" in hearth("doc", "list", "--workspace", "team",
                                                      data=data).stdout
    assert f"`hearth channels {team}`" in hearth.fails("read", "nope", "--workspace", "team",
                                                       data=data)
    # The library's own hints too (app.documents: "see `hearth doc list`").
    assert f"`hearth doc list {team}`" in hearth.fails("doc", "show", "nothing", "--workspace",
                                                       "team", data=data)
    # Options given before the command count as well.
    assert f"`hearth channels {team}`" in hearth.fails("--workspace", "team", "--data", data,
                                                       "state", "nope")


def test_hints_without_options_stay_plain(hearth: Hearth, tmp_path: Path) -> None:
    hearth.env["HEARTH_DATA"] = str(tmp_path / "from-the-environment")
    message = hearth.fails("whoami")
    assert "`hearth init --nick NAME` or join one with `hearth join-workspace CODE`" in message


# 6. A channel's history in text -------------------------------------------------------------------

def test_state_shows_the_history_of_changes(hearth: Hearth, tmp_path: Path) -> None:
    # Made through the library on a clock that moves a second at each reading, so no two
    # changes share a millisecond and the history's order is known.
    clock = FakeClock(time.time() - 3600, tick=1)
    alice = Paths.resolve(tmp_path / "alice", "default")
    bob = Paths.resolve(tmp_path / "bob", "default")
    with Workspace.init(alice, "alice", clock=clock) as ws:
        me = ws.key.hex()[:8]
        ws.topic("general", "Plans for the week")
        ws.nick("ally")
        ws.topic("general", "")
        workspace, root = ws.id, ws.replica.workspace.root
    with Workspace.create(bob, "bob", secret=bytes(32), workspace=workspace, root=root,
                          clock=clock) as ws:
        him = ws.key.hex()[:8]
        ws.leave("general")
    _copy(bob.data, alice.data)

    out = hearth("state", "#general", data=alice.data).stdout
    history = out.split("\nhistory (", 1)[1].splitlines()[1:]
    assert all(re.match(rf"  {WHEN}  ", line) for line in history), history
    assert [re.sub(rf"^  {WHEN}  ", "", line) for line in history] == [
        f"{me} took the nickname alice",
        f"alice ({me}) joined",
        f"alice ({me}) set the topic: Plans for the week",
        f"alice ({me}) took the nickname ally",
        f"ally ({me}) cleared the topic",
        f"{him} took the nickname bob",
        f"bob ({him}) joined",
        f"bob ({him}) left",
    ]
    assert len(history) == len(hearth("state", "general", "--json",
                                      data=alice.data).json()["history"])


# 7. The workspace's name --------------------------------------------------------------------------

def test_whoami_shows_the_workspace_name(hearth: Hearth, tmp_path: Path) -> None:
    ada = tmp_path / "ada"
    workspace = _id(hearth("init", "--nick", "ada", "--name", "Team Plans", data=ada).line)
    lines = hearth("whoami", data=ada).stdout.splitlines()
    assert lines[1] == f"workspace Team Plans (--workspace default)  {workspace}"
    assert hearth("whoami", "--json", data=ada).json()["name"] == "Team Plans"

    # Joined: the folder's name until the genesis arrives by sync, then the creator's.
    bea = tmp_path / "bea"
    code = personal_code(hearth, ada, bea)
    hearth("join-workspace", code, "--nick", "bea", "--workspace", "team", data=bea)
    assert hearth("whoami", "--json", "--workspace", "team", data=bea).json()["name"] == "team"
    assert hearth("whoami", "--workspace", "team", data=bea).stdout.splitlines()[1] == \
        f"workspace team  {workspace}"
    _copy(ada, bea, dst_workspace="team")
    assert hearth("whoami", "--json", "--workspace", "team", data=bea).json()["name"] == \
        "Team Plans"
    with Workspace.open(Paths.resolve(bea, "team")) as ws:
        assert ws.name == "Team Plans"


def test_a_damaged_invite_code_is_called_damaged_not_new(tmp_path):
    """A code whose first byte is no version Hearth made (issue #29): not 'needs a newer
    Hearth', which only a higher version than this one knows deserves."""
    import base64
    import hashlib

    from app.invite import Invite, InviteError

    def code(version: int) -> str:
        payload = bytes([version]) + bytes(64 + 32)
        data = payload + hashlib.blake2b(payload, digest_size=5).digest()
        return "hearth-" + base64.b32encode(data).decode().rstrip("=").lower()

    with pytest.raises(InviteError, match="damaged"):
        Invite.decode(code(0))
    with pytest.raises(InviteError, match="needs a newer Hearth"):
        Invite.decode(code(200))
