"""`hearth channel create --private`, `channel add|remove|members`, `dm`, and `post`, `read`
and `channels` on private channels, as a person runs them; objects travel by bundle files
(`hearth export` / `hearth import`), as between computers that never met."""

from __future__ import annotations

from pathlib import Path

from .conftest import Hearth, carry, personal_code

MARKER = "MARKER-0c1d-friday-at-nine"


def _holds(folder: Path, text: str) -> bool:
    return any(text.encode() in p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_private_channel_and_a_direct_message_from_the_command_line(
        hearth: Hearth, tmp_path: Path):
    ada, bob, dan = tmp_path / "ada", tmp_path / "bob", tmp_path / "dan"
    hearth("init", "--nick", "ada", data=ada)
    for who in (bob, dan):
        hearth("join-workspace", personal_code(hearth, ada, who), "--nick", who.name, data=who)
        carry(hearth, who, ada)  # ada learns their nicknames
    hearth("channel", "create", "launch", "--private", "--member", "bob", data=ada)
    hearth("post", "launch", MARKER, data=ada)
    hearth("dm", "bob", "psst", data=ada)
    carry(hearth, ada, bob, dan)

    assert [m["text"] for m in hearth("read", "launch", "--json", data=bob).json()] == [MARKER]
    assert [m["text"] for m in hearth("dm", "ada", "--json", data=bob).json()] == ["psst"]
    listed = hearth("channels", data=bob).stdout
    assert "#launch  private, 2 members" in listed and "@ada  direct messages" in listed
    assert [m["nick"] for m in hearth("channel", "members", "launch", "--json",
                                      data=bob).json()] == ["ada", "bob"]
    assert "only the channel's creator or an admin" in hearth.fails(
        "channel", "add", "launch", "dan", data=bob)

    # dan holds every object and reads nothing: not the name, not a word.
    assert "launch" not in hearth("channels", data=dan).stdout
    assert "no private channel" in hearth.fails("channel", "members", "launch", data=dan)
    assert not _holds(dan, MARKER) and not _holds(dan, "launch")

    hearth("channel", "remove", "launch", "bob", data=ada)
    hearth("post", "launch", "after bob left", data=ada)
    carry(hearth, ada, bob)
    assert "no private channel" in hearth.fails("channel", "members", "launch", data=bob)
    assert not _holds(bob, "after bob left")
    assert "--private" in hearth.fails("channel", "create", "x", "--member", "bob", data=ada)
