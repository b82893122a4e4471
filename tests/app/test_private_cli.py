"""`hearth channel create --private`, `channel add|remove|members`, `dm`, and `post`, `read`
and `channels` on private channels, as a person runs them; objects travel by bundle files
(`hearth export` / `hearth import`), as between computers that never met."""

from __future__ import annotations

from pathlib import Path

from .conftest import Hearth, carry

MARKER = "MARKER-0c1d-friday-at-nine"


def _holds(folder: Path, text: str) -> bool:
    return any(text.encode() in p.read_bytes() for p in folder.rglob("*") if p.is_file())


def test_a_private_channel_and_a_direct_message_from_the_command_line(
        hearth: Hearth, team: tuple[Path, Path, Path]):
    ada, bob, dan = team
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


def test_reply_react_edit_search_and_mentions_take_a_private_message(
        hearth: Hearth, team: tuple[Path, Path, Path], tmp_path: Path):
    """The public conversation commands, unchanged, on a private channel's message id."""
    ada, bob, dan = team
    hearth("channel", "create", "launch", "--private", "--member", "bob", data=ada)
    first = hearth("post", "launch", "@bob the plan", data=ada).stdout.strip()
    carry(hearth, ada, bob, dan)
    hearth("reply", first[:12], f"a reply {MARKER}", data=bob)
    hearth("react", first[:12], ":rocket:", data=bob)
    carry(hearth, bob, ada, dan)
    hearth("edit", first[:12], "@bob the new plan", data=ada)
    carry(hearth, ada, bob, dan)

    (message,) = hearth("read", "launch", "--json", data=bob).json()
    assert message["text"] == "@bob the new plan" and message["replies"] == 1
    assert message["reactions"] == {"🚀": 1}
    assert [m["text"] for m in hearth("thread", first, "--json", data=bob).json()] == [
        "@bob the new plan", f"a reply {MARKER}"]
    assert [v["text"] for v in hearth("versions", first, "--json", data=bob).json()] == [
        "@bob the plan", "@bob the new plan"]
    assert [m["text"] for m in hearth("mentions", "--json", data=bob).json()] == [
        "@bob the new plan"]
    assert MARKER in hearth("search", "reply in:#launch", data=bob).stdout
    assert MARKER not in hearth("search", "reply", data=dan).stdout
    assert "not in that private channel" in hearth.fails("thread", first, data=dan)
    assert not _holds(dan, MARKER) and not _holds(dan, "new plan")
    hearth("unreact", first[:12], ":rocket:", data=bob)
    carry(hearth, bob, ada)
    assert hearth("read", "launch", "--json", data=ada).json()[0]["reactions"] == {}
