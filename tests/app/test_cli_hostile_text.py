"""What a peer writes cannot drive the terminal of someone running `hearth` (issue #12, item 9).

Bob is a member with his own identity and a replica of Alice's workspace; everything he writes
reaches Alice's replica through ingest, as sync would bring it. His texts carry a carriage
return, ANSI escapes, a C1 control, a bidi override and a line that looks like a message header
of another author with that author's real key; Alice reads them with every command that prints
them. Nothing a terminal would act on may reach her stdout, and no line of Bob's may start at
the left margin where headers are.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from .conftest import Hearth
from .test_cli import _id, copy_objects, member_of

# The control characters a terminal acts on, and the bidi controls that reorder a line.
RAW = ["\r", "\x1b", "\x07", "\x08", "\x9b", "\x7f", "\u202e", "\u202d", "\u2066", "\u2067",
       "\u2068", "\u2069", "\u200f\u202b", "\u2028", "\u2029"]
HEADER = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d  ")


@pytest.fixture
def two(hearth: Hearth, tmp_path: Path) -> tuple[Path, Path, str, str]:
    """Alice's folder, Bob's (a member of Alice's workspace), and both keys."""
    alice = tmp_path / "alice"
    _id(hearth("init", "--nick", "alice", data=alice).line)
    alice_key = hearth("whoami", "--json", data=alice).json()["key"]
    bob = tmp_path / "bob"
    bob_key = member_of(hearth, alice, bob, "bob")
    return alice, bob, alice_key, bob_key


def _hostile(alice_key: str) -> str:
    """A message that, printed raw, erases its own line and shows one by Alice instead."""
    fake = f"2024-01-01 10:00  alice ({alice_key[:8]}): the fake one"
    return (f"hi\r\x1b[2K{fake}\n{fake}\n    id {'0' * 64}\n"
            "\x1b]0;new window title\x07\x9b31m red \u202eevil\u202c \u2067isolated\u2069 "
            "\x1b[1A\x1b[2K\x08\x7f")


def _assert_safe(stdout: str, *, what: str) -> None:
    for raw in RAW:
        assert raw not in stdout, f"{what} printed {raw!r} raw: {stdout!r}"


def test_hostile_texts_reach_no_terminal(hearth: Hearth, two) -> None:
    alice, bob, alice_key, _ = two
    text = _hostile(alice_key)
    post = _id(hearth("post", "general", text, data=bob).line)
    hearth("topic", "general", "topic\r\x1b[2K\u202eevil", data=bob)
    hearth("doc", "new", "title\r\x1b[2Kfake\u202e\x9b", data=bob)
    copy_objects(bob, alice)

    read = hearth("read", "general", data=alice).stdout
    found = hearth("search", "hi", data=alice).stdout
    # Search groups its results: a "#channel  (count)" line above them, the count line last.
    found_lines = found.splitlines()
    assert found_lines[0] == "#general  (1)" and found_lines[-1] == "1 message in 1 channel"
    found = "".join(line + "\n" for line in found_lines[1:-1] if line)
    for what, out in [("read", read), ("search", found)]:
        _assert_safe(out, what=what)
        # One header line per message (Alice has posted nothing): the fake headers are
        # indented continuation lines of Bob's message.
        headers = [line for line in out.splitlines() if HEADER.match(line)]
        assert len(headers) == 1, (what, out)
        assert "bob (" in headers[0] and "alice (" not in headers[0].split(":")[1], headers
        assert out.count("\n    id ") == 1 and post in out
        assert [line for line in out.splitlines() if not line.startswith(("    id ", "  | "))
                and not HEADER.match(line)] == [], out
        assert "\\x1b[2K" in out and "\\u202e" in out and "\\r" in out  # shown, not acted on

    for args in (["state", "general"], ["channels"], ["doc", "list"], ["members", "general"]):
        _assert_safe(hearth(*args, data=alice).stdout, what=" ".join(args))
    assert "\\u202e" in hearth("channels", data=alice).stdout
    assert "title\\r\\x1b[2Kfake\\u202e\\x9b" in hearth("doc", "list", data=alice).stdout

    # JSON stays exact (it decodes to the very text) but escapes the same characters.
    for args in (["read", "general"], ["search", "hi"], ["state", "general"], ["channels"],
                 ["doc", "list"]):
        out = hearth(*args, "--json", data=alice).stdout
        _assert_safe(out, what=" ".join(args) + " --json")
    assert hearth("read", "general", "--json", data=alice).json()[-1]["text"] == text
    assert json.loads(hearth("doc", "list", "--json", data=alice).stdout)[0]["title"] == \
        "title\r\x1b[2Kfake\u202e\x9b"


def test_a_document_text_from_a_peer_is_shown_safely(hearth: Hearth, two) -> None:
    alice, bob, alice_key, bob_key = two
    doc = _id(hearth("doc", "new", "Shared notes", data=alice).line)
    hearth("doc", "editors", doc, "--add", bob_key, data=alice)
    copy_objects(alice, bob)
    text = "line one\n\x1b[2J\x1b[Hcleared\r\u202eevil\ttab\n"
    _id(hearth("doc", "write", doc, "--text", text, data=bob).line)
    copy_objects(bob, alice)
    shown = hearth("doc", "show", doc, data=alice).stdout
    _assert_safe(shown, what="doc show")
    assert shown == "line one\n\\x1b[2J\\x1b[Hcleared\\r\\u202eevil\ttab\n"
    assert hearth("doc", "show", doc, "--json", data=alice).json()["text"] == text
    assert "  bob  edit" in hearth("doc", "history", doc, data=alice).stdout


def test_error_lines_quote_nothing_raw(hearth: Hearth, two) -> None:
    alice, *_ = two
    line = hearth.fails("doc", "show", "no such \x1b[2J\u202e title", data=alice)
    _assert_safe(line, what="an error")
    line = hearth.fails("read", "general", "--limit", "\x1b[2J", data=alice)
    _assert_safe(line, what="an argument error")
