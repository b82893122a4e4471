"""Imported messages in the window's rows: one importer signed them all, but each Slack author's
run of messages gets its own header, and none of them shows as "(you)"."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.records import Message  # noqa: E402
from ui import _rows  # noqa: E402

ME = bytes(32)


def _msg(n: int, origin: str | None, nick: str) -> Message:
    return Message(bytes([n]) * 32, "general", ME, nick, 1_700_000_000_000 + n * 1000, "hi",
                   origin=origin)


def test_each_slack_author_starts_a_group_of_their_own():
    rows = [_msg(1, "U1", "ada (from Slack)"), _msg(2, "U1", "ada (from Slack)"),
            _msg(3, "U2", "bob (from Slack)"), _msg(4, None, "me")]
    assert _rows.group_starts(rows) == [True, False, True, True]
    assert [_rows.starts_group(a, b) for a, b in zip(rows, rows[1:], strict=False)] == [
        False, True, True]
