"""No implicit channels (issue #28, item 3), and a removed member's writes (item 7).

`hearth post`, `topic` and `join` write only in a channel this computer knows; a name it does not
know is refused in one line, exit 2, and nothing is written: a typo no longer opens a channel,
and a member added to a private channel whose computer has not received it yet does not publish
its name (and their message) in the clear. `hearth channel create NAME` makes a public channel:
never under the name of a private channel this computer opens, and only with --public while it
cannot tell (a private channel of mine is held but its key has not arrived, or nothing from the
workspace has). A member whose own removal has arrived writes nothing, and is told who removed
them, when and why.

Real replicas and the real command line; objects travel by bundle files (`hearth export` and
`hearth import`), or, for a sync cut short, as the raw objects of some kinds through the one
ingest path."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest

from app.errors import MayBePrivate, PrivateName, RemovedMember, UnknownChannel
from app.paths import Paths
from app.workspace import Workspace
from core.objects import decode
from storage import Replica

from .conftest import Hearth, carry, personal_code

NAME = "launch-q3-7f2e"  # the private channel's name: never seen in the clear outside it
MARKER = "MARKER-5be1-friday-at-nine"
CREATE_HINT = "`hearth channel create"


def _replica(folder: Path) -> Path:
    return Paths.resolve(folder, "default").replica


def _files(folder: Path) -> list[Path]:
    """The replica's files (the database, its -wal and -shm) and everything else kept there."""
    return [p for p in folder.rglob("*") if p.is_file()]


def _holds(folder: Path, text: str) -> bool:
    return any(text.encode() in p.read_bytes() for p in _files(folder))


def _count(folder: Path) -> int:
    with Replica(_replica(folder)) as replica:
        return replica.count()


def _channels(hearth: Hearth, folder: Path) -> list[str]:
    return sorted(c["name"] for c in hearth("channels", "--json", data=folder).json()
                  if not c.get("private"))


def _refused(hearth: Hearth, *args: str, data: Path) -> str:
    """A refusal as the person sees it: one line on stderr, exit 2, nothing on stdout."""
    run = hearth(*args, data=data, ok=False)
    assert run.returncode == 2 and run.stdout == "", (run.returncode, run.stdout)
    line = hearth.fails(*args, data=data)
    assert line == run.stderr.strip()
    return line




# A typo ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("command", [["post", "genral", "hi"], ["topic", "genral", "hi"],
                                     ["join", "genral"], ["leave", "genral"]])
def test_a_typo_is_refused_with_a_hint_and_creates_nothing(hearth: Hearth, tmp_path: Path,
                                                           command: list[str]):
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    held = _count(ada)
    error = _refused(hearth, *command, data=ada)
    assert error == (f"hearth: no channel #genral here; `hearth channel create genral --data "
                     f"{ada}` makes one")
    assert _count(ada) == held and _channels(hearth, ada) == ["general"]
    # The hint runs as shown, and then the command does what it was asked.
    hearth("channel", "create", "genral", data=ada)
    hearth(*command, data=ada)
    assert _channels(hearth, ada) == ["general", "genral"]


def test_the_library_refuses_the_same_way(tmp_path: Path):
    paths = Paths.resolve(tmp_path / "ada", "default")
    picture = tmp_path / "picture.png"
    picture.write_bytes(b"not really a picture")
    with Workspace.init(paths, "ada") as ws:
        held = ws.replica.count()
        for write in (lambda: ws.post("genral", "hi"), lambda: ws.topic("genral", "t"),
                      lambda: ws.join("genral"), lambda: ws.leave("genral"),
                      lambda: ws.files.attach("genral", [picture])):
            with pytest.raises(UnknownChannel) as refused:
                write()
            assert refused.value.name == "genral"
        assert ws.replica.count() == held
        ws.create_channel("genral")
        ws.post("genral", "hi")
        assert [m.text for m in ws.read("genral")] == ["hi"]


# A member added to a private channel, not synced yet --------------------------------------------

def _carry_kinds(source: Path, target: Path, kinds: set[str]) -> None:
    """A sync cut short: only `source`'s objects of these kinds reach `target` (through the
    one ingest path, as sync hands them over)."""
    with Replica(_replica(source)) as replica:
        raws = [raw for (raw,) in replica.conn.execute("SELECT raw FROM objects ORDER BY oid")
                if decode(raw).type in kinds]
    with Replica(_replica(target)) as replica:
        replica.ingest(raws)


def test_a_member_added_but_not_synced_writes_nothing_in_the_clear(
        hearth: Hearth, team, tmp_path: Path):
    ada, bob, dan = team
    hearth("channel", "create", NAME, "--private", "--member", "bob", data=ada)
    hearth("post", NAME, "the plan", data=ada)

    # Bob's computer has not received the channel: whatever he types, nothing is written.
    held = _count(bob)
    for command in (["post", NAME, MARKER], ["topic", NAME, MARKER], ["join", NAME],
                    ["post", f"#{NAME}", MARKER]):
        error = _refused(hearth, *command, data=bob)
        assert f"no channel #{NAME} here" in error and CREATE_HINT in error
    assert _count(bob) == held and not _holds(bob, MARKER)

    # A sync cut short: the channel and its members list reach him, not its key. He is in a
    # channel whose name his computer cannot open, so it cannot tell whether the name he types
    # is that one: a public channel, of any name, is made only when he confirms it.
    _carry_kinds(ada, bob, {"channel/private", "channel/members"})
    assert _count(bob) > held
    for command in (["post", NAME, MARKER], ["topic", NAME, MARKER], ["join", NAME]):
        assert CREATE_HINT in _refused(hearth, *command, data=bob)
    for name in (NAME, "elsewhere"):
        error = _refused(hearth, "channel", "create", name, data=bob)
        assert ("holds 1 private channel you are in whose name it cannot open yet" in error
                and "--public" in error and "`hearth serve --data" in error), error
    assert not _holds(bob, MARKER) and _channels(hearth, bob) == ["general"]

    # Everything arrives: now the name is the private channel's, which is never made public,
    # and his message goes into the channel, sealed.
    carry(hearth, ada, bob)
    for flags in ((), ("--public",), ("--public", "--force")):
        error = _refused(hearth, "channel", "create", NAME, *flags, data=bob)
        assert error.startswith(f"hearth: #{NAME} is the name of a private channel here")
    assert "is the name of a private channel" in _refused(
        hearth, "channel", "create", NAME.upper(), "--public", data=bob)
    hearth("post", NAME, MARKER, data=bob)
    assert [m["text"] for m in hearth("read", NAME, "--json", data=ada).json()] == ["the plan"]
    hearth("channel", "create", "elsewhere", data=bob)  # nothing unopened: no question
    assert _channels(hearth, bob) == ["elsewhere", "general"]

    # Everyone syncs with everyone: dan, who is not in the channel, holds neither its name
    # nor the marker, in his replica's files or in a bundle of all bob holds.
    carry(hearth, bob, ada, dan)
    carry(hearth, ada, dan)
    assert [m["text"] for m in hearth("read", NAME, "--json", data=ada).json()] == [
        "the plan", MARKER]
    names = [p.name for p in _files(dan)]
    assert any(n.endswith(".sqlite3") for n in names), names
    for text in (NAME, MARKER):
        assert not _holds(dan, text), text
        assert text.encode() not in bob.with_name("bob.hearth").read_bytes()
    assert _channels(hearth, dan) == ["elsewhere", "general"]


def test_a_computer_nothing_has_reached_asks_before_a_public_channel(
        hearth: Hearth, tmp_path: Path):
    ada, bob = tmp_path / "ada", tmp_path / "bob"
    hearth("init", "--nick", "ada", data=ada)
    hearth("join-workspace", personal_code(hearth, ada, bob), "--nick", "bob", data=bob)
    held = _count(bob)
    error = _refused(hearth, "channel", "create", NAME, data=bob)
    assert "nothing has arrived from your workspace here yet" in error and "--public" in error
    assert _count(bob) == held
    with Workspace.open(Paths.resolve(bob, "default")) as ws:
        with pytest.raises(MayBePrivate):
            ws.create_channel(NAME)
        assert ws.replica.count() == held
    # Confirmed, it is made; once the workspace has arrived, no question is asked.
    hearth("channel", "create", "design", "--public", data=bob)
    carry(hearth, ada, bob)
    hearth("channel", "create", "random", data=bob)
    assert _channels(hearth, bob) == ["design", "general", "random"]


def test_the_creators_own_private_name_never_becomes_public(tmp_path: Path):
    paths = Paths.resolve(tmp_path / "ada", "default")
    with Workspace.init(paths, "ada") as ws:
        ws.private.create(NAME, [])
        held = ws.replica.count()
        for name in (NAME, NAME.upper(), f" {NAME} "):
            with pytest.raises(PrivateName):
                ws.create_channel(name, public=True, force=True)
        with pytest.raises(UnknownChannel, match="is a private channel"):
            ws.join(NAME)
        with pytest.raises(UnknownChannel, match="is a private channel"):
            ws.topic(NAME, MARKER)
        assert ws.replica.count() == held
        assert [c.name for c in ws.channels()] == ["general"]


# A removed member -------------------------------------------------------------------------------

def test_a_removed_members_writes_are_refused_naming_the_remover(hearth: Hearth, team):
    ada, bob, _ = team
    hearth("post", "general", "before", data=bob)
    hearth("channel", "create", NAME, "--private", "--member", "bob", data=ada)
    carry(hearth, bob, ada)
    hearth("workspace", "remove", "bob", "--reason", "left the team", data=ada)
    carry(hearth, ada, bob)  # bob's computer receives his removal
    (removal,) = hearth("workspace", "removed", "--json", data=bob).json()
    ada_key = hearth("whoami", "--json", data=ada).json()["key"]
    assert removal["by"] == ada_key
    at = datetime.fromtimestamp(removal["at"] / 1000).strftime("%Y-%m-%d %H:%M")

    held = _count(bob)
    message = (f"hearth: ada ({ada_key[:8]}) removed you from this workspace on {at}: left the "
               "team; nothing you write here counts any more, so nothing was written")
    for command in (["post", "general", MARKER], ["topic", "general", MARKER],
                    ["join", "general"], ["post", "nowhere", MARKER],
                    ["channel", "create", "elsewhere"], ["dm", "ada", MARKER]):
        assert _refused(hearth, *command, data=bob) == message, command
    assert _count(bob) == held and not _holds(bob, MARKER)

    with Workspace.open(Paths.resolve(bob, "default")) as ws:
        before = next(m for m in ws.read("general") if m.text == "before")
        for write in (lambda: ws.post("general", MARKER), lambda: ws.conversation.reply(before.id, MARKER),
                      lambda: ws.conversation.react(before.id, "👍"), lambda: ws.conversation.edit(before.id, MARKER),
                      lambda: ws.topic("general", MARKER), lambda: ws.join("general")):
            with pytest.raises(RemovedMember) as refused:
                write()
            assert refused.value.removal.by.hex() == ada_key
            assert str(refused.value) == message.removeprefix("hearth: ")
        assert ws.replica.count() == held
