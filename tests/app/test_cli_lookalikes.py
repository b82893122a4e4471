"""Lookalike nicknames and channel names in the command line (issue #12, item 10).

A peer calls himself "аlice" (a Cyrillic а) or "al\u200dice" (a zero-width joiner) and opens
"#gеneral" (a Cyrillic е) beside #general. Every command that names people or channels tells
them apart; posting to a lookalike of an existing channel needs --force.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from app import slash
from app.paths import Paths
from app.workspace import Workspace, WorkspaceError
from core import kinds
from storage import Replica

from .conftest import Hearth
from .test_cli import _id, _replica, copy_objects, member_of

FAKE_ALICE = "\u0430lice"  # Cyrillic а
HIDDEN_ALICE = "al\u200dice"  # a zero-width joiner inside
FAKE_GENERAL = "g\u0435neral"  # Cyrillic е
WARNING = "name looks like another member's"


@pytest.fixture
def crowd(hearth: Hearth, tmp_path: Path):
    """Alice, and two members whose nicknames look like hers, all posting in #general."""
    alice = tmp_path / "alice"
    _id(hearth("init", "--nick", "alice", data=alice).line)
    hearth("post", "general", "hello from the real alice", data=alice)
    keys = {"alice": hearth("whoami", "--json", data=alice).json()["key"]}
    for name, nick in (("mallory", FAKE_ALICE), ("trudy", HIDDEN_ALICE)):
        folder = tmp_path / name
        keys[name] = member_of(hearth, alice, folder, nick)
        hearth("join", "general", data=folder)
        hearth("post", "general", f"hello from {name}", data=folder)
        copy_objects(folder, alice)
    return alice, keys


def test_lookalike_nicknames_are_marked_in_read_members_and_search(hearth: Hearth,
                                                                   crowd) -> None:
    alice, keys = crowd
    read = hearth("read", "general", data=alice).stdout.splitlines()
    headers = {line.rsplit(": ", 1)[1]: line.rsplit(": ", 1)[0] for line in read
               if ": hello from" in line}
    assert len(headers) == 3
    real, fake, hidden = (headers["hello from the real alice"], headers["hello from mallory"],
                          headers["hello from trudy"])
    assert f"alice ({keys['alice'][:8]}, {WARNING})" in real
    assert f"{FAKE_ALICE} ({keys['mallory'][:8]}, {WARNING}: \\u0430lice)" in fake
    assert f"{HIDDEN_ALICE} ({keys['trudy'][:8]}, {WARNING}: al\\u200dice)" in hidden

    members = hearth("members", "general", data=alice).stdout.splitlines()
    assert len(members) == 3 and all(WARNING in line for line in members), members
    assert any(line.startswith(f"{FAKE_ALICE}  {keys['mallory']}") and "\\u0430lice" in line
               for line in members)
    state = hearth("state", "general", data=alice).stdout
    listed, history = state.split("\nhistory (", 1)
    assert listed.count(WARNING) == 3
    # The history names each of them at every change (nickname, join), marked each time; a
    # join made before any nickname (within the same millisecond, in either order) is named
    # by its key alone, and has no name to mark.
    changes = [line for line in history.splitlines()[1:]
               if not re.fullmatch(r"\s+\S+ \S+  [0-9a-f]{8} joined", line)]
    assert changes and all(WARNING in line for line in changes), changes

    found = hearth("search", "hello", data=alice).stdout
    assert found.count(WARNING) == 3 and "\\u0430lice" in found and "al\\u200dice" in found


def test_a_document_by_a_lookalike_names_its_key(hearth: Hearth, crowd, tmp_path) -> None:
    alice, keys = crowd
    hearth("doc", "new", "Minutes", data=tmp_path / "mallory")
    copy_objects(tmp_path / "mallory", alice)
    listed = hearth("doc", "list", data=alice).stdout
    assert f"(by {FAKE_ALICE} ·{keys['mallory'][:6]} ({WARNING}: \\u0430lice)," in listed


def test_a_nickname_nobody_else_resembles_shows_bare(hearth: Hearth, tmp_path: Path) -> None:
    alice = tmp_path / "alice"
    hearth("init", "--nick", "alice", data=alice)
    member_of(hearth, alice, tmp_path / "bob", "bob")
    copy_objects(tmp_path / "bob", alice)
    hearth("post", "general", "hi", data=alice)
    assert WARNING not in hearth("read", "general", data=alice).stdout
    assert WARNING not in hearth("members", "general", data=alice).stdout


@pytest.fixture
def two_generals(hearth: Hearth, tmp_path: Path):
    """Alice's #general, and a #gеneral (Cyrillic е) that a member opened beside it."""
    alice = tmp_path / "alice"
    workspace = _id(hearth("init", "--nick", "alice", data=alice).line)
    hearth("post", "general", "the real one", data=alice)
    mallory = tmp_path / "mallory"
    member_of(hearth, alice, mallory, "mallory")
    # Mallory's own software writes what it likes: the library, no questions asked.
    with Workspace.open(Paths.resolve(mallory, "default")) as ws:
        ws.create_channel(FAKE_GENERAL, public=True, force=True)
        ws.post(FAKE_GENERAL, "the fake one")
    copy_objects(mallory, alice)
    return alice, bytes.fromhex(workspace)


def test_lookalike_channels_are_told_apart_by_stream(hearth: Hearth, two_generals) -> None:
    alice, workspace = two_generals
    real = kinds.channel_stream(workspace, "general").hex()[:6]
    fake = kinds.channel_stream(workspace, FAKE_GENERAL).hex()[:6]
    lines = hearth("channels", data=alice).stdout.splitlines()
    assert len(lines) == 2
    assert any(line.startswith(f"#general ·{real}  (looks like #{FAKE_GENERAL} ·{fake})")
               for line in lines), lines
    assert any(line.startswith(f"#{FAKE_GENERAL} ·{fake}  (looks like #general ·{real}; "
                               "spelled g\\u0435neral)") for line in lines), lines
    # The streams are the ones they always were: each name still reads its own messages.
    assert [m["text"] for m in hearth("read", "general", "--json", data=alice).json()] == [
        "the real one"]
    assert [m["text"] for m in hearth("read", FAKE_GENERAL, "--json", data=alice).json()] == [
        "the fake one"]
    found = hearth("search", "one", data=alice).stdout
    assert f"#general ·{real}  (1)\n" in found and f"#{FAKE_GENERAL} ·{fake}  (1)\n" in found
    assert hearth("state", FAKE_GENERAL, data=alice).stdout.startswith(
        f"#{FAKE_GENERAL} ·{fake}  (looks like #general ·{real}")


@pytest.mark.parametrize("command", [["post", "{name}", "hi"], ["join", "{name}"],
                                     ["topic", "{name}", "a topic"]])
def test_writing_to_a_lookalike_channel_needs_force(hearth: Hearth, tmp_path: Path,
                                                    command: list[str]) -> None:
    alice = tmp_path / "alice"
    hearth("init", "--nick", "alice", data=alice)
    for name in (FAKE_GENERAL, "gen\u00aderal", "GENERAL\u200d"):
        args = [a.format(name=name) for a in command]
        error = hearth.fails(*args, data=alice)
        assert "looks like the existing channel #general" in error and "--force" in error
        with Replica(_replica(alice)) as replica:
            assert [c.name for c in replica.channels()] == ["general"], "a refusal wrote"
    assert "\\u0435" in hearth.fails(*[a.format(name=FAKE_GENERAL) for a in command],
                                     data=alice)
    # --force answers the lookalike, but writing never makes a channel: `channel create`
    # does, and asks the same question.
    unknown = hearth.fails(*[a.format(name=FAKE_GENERAL) for a in command], "--force",
                           data=alice)
    assert f"no channel #{FAKE_GENERAL} here" in unknown and "`hearth channel create" in unknown
    error = hearth.fails("channel", "create", FAKE_GENERAL, data=alice)
    assert "looks like the existing channel #general" in error and "--force" in error
    _id(hearth("channel", "create", FAKE_GENERAL, "--force", data=alice).line)
    _id(hearth(*[a.format(name=FAKE_GENERAL) for a in command], "--force", data=alice).line)
    # Once both exist, the disguised name still needs --force; the plain one, the same
    # channel in another case, and an unrelated name need nothing.
    assert "--force" in hearth.fails(*[a.format(name=FAKE_GENERAL) for a in command],
                                     data=alice)
    hearth.channels("random", data=alice)
    for name in ("general", "General", "random"):
        _id(hearth(*[a.format(name=name) for a in command], data=alice).line)


def test_the_window_join_command_refuses_a_lookalike_too(hearth: Hearth, tmp_path: Path) -> None:
    """`/join gеneral` typed in the window's composer (app.slash) asks like `hearth join`."""
    alice = tmp_path / "alice"
    hearth("init", "--nick", "alice", data=alice)
    with Workspace.open(Paths.resolve(alice, "default")) as ws:
        with pytest.raises(WorkspaceError, match="looks like #general.*/join --force"):
            slash.apply(ws, "general", f"/join {FAKE_GENERAL}")
        assert [c.name for c in ws.channels()] == ["general"]
        # /join never makes a channel: /create does, and asks about lookalikes too.
        with pytest.raises(WorkspaceError, match=f"no channel #{FAKE_GENERAL} here.*/create"):
            slash.apply(ws, "general", f"/join --force {FAKE_GENERAL}")
        with pytest.raises(WorkspaceError, match="looks like the existing channel #general.*"
                                                 "/create --force"):
            slash.apply(ws, "general", f"/create {FAKE_GENERAL}")
        assert [c.name for c in ws.channels()] == ["general"]
        assert slash.apply(ws, "general", f"/create --force {FAKE_GENERAL}") == (FAKE_GENERAL,
                                                                                 None)
        assert slash.apply(ws, "general", f"/join --force {FAKE_GENERAL}") == (FAKE_GENERAL,
                                                                              None)
        with pytest.raises(WorkspaceError, match="no channel #random here; to make it: "
                                                 "/create random"):
            slash.apply(ws, "general", "/join random")
        assert slash.apply(ws, "general", "/create random") == ("random", None)
        assert slash.apply(ws, "general", "/join random") == ("random", None)
        assert sorted(c.name for c in ws.channels()) == ["general", FAKE_GENERAL, "random"]
