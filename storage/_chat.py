"""The chat views' reads: a channel's messages and threads, channels, members, nicknames,
channel state and unread counts. Functions over a connection in a read transaction (the
Replica opens one: Replica.messages and the others)."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import replace

from core import kinds

from . import _conversation
from ._moderation import HIDDEN_MOD
from .errors import NotFound, StorageError
from .records import ChannelInfo, ChannelState, Member, Message, StateEvent

UNREAD_CAP = 1000  # unread counts stop here (the window shows "999+")


def _mention_word(nick: str) -> re.Pattern[str]:
    """`nick` as a word of its own ("@ada", "ada:"), in any case."""
    return re.compile(r"(?<!\w)" + re.escape(nick) + r"(?!\w)", re.IGNORECASE)


def _marked(messages: list[Message], hidden: set[bytes]) -> list[Message]:
    """`messages`, those whose id is in `hidden` marked as hidden by a moderator."""
    if not hidden:
        return messages
    return [replace(m, hidden=True) if m.id in hidden else m for m in messages]


def parse_cursor(cursor: str) -> tuple[int, bytes]:
    try:
        ts, hex_id = cursor.split("-", 1)
        oid = bytes.fromhex(hex_id)
        if len(oid) != 32 or not ts.isdigit() or int(ts) >= 2**63:
            raise ValueError
        return int(ts), oid
    except ValueError:
        raise StorageError(f"{cursor!r} is not a message cursor") from None


NICK = ("(SELECT name FROM nicks n WHERE n.author = {a} AND n.hidden = 0 "
        "ORDER BY n.ts DESC, n.id DESC LIMIT 1)")
COLUMNS = ("m.id, m.author, {nick}, m.ts, m.text, m.edited, m.reply_to, m.in_channel "
           "FROM messages m")


def messages(conn: sqlite3.Connection, channel: str, *, limit: int = 50,
             before: str | None = None, hidden: bool = False) -> list[Message]:
    """The newest `limit` visible messages of `channel` before `before`, newest last
    (replies only in their thread are left out: see `thread`). With `hidden` (for a
    moderator's read: the caller decides who moderates), the messages moderators hid
    are there too, marked `Message.hidden`."""
    key = kinds.channel_key(channel)
    sql = ("SELECT " + COLUMNS.format(nick=NICK.format(a="m.author")) +
           " WHERE m.channel = ? AND m.hidden = ? AND m.in_channel = 1")
    cursor: list = []
    if before:
        ts, oid = parse_cursor(before)
        sql += " AND (m.ts, m.id) < (?, ?)"
        cursor = [ts, oid]
    sql += " ORDER BY m.ts DESC, m.id DESC LIMIT ?"
    limit = max(0, limit)
    rows: list = []
    marked: set[bytes] = set()
    # One walk of messages_by_channel per hidden value: each is in time order.
    for bits in (0, HIDDEN_MOD) if hidden else (0,):
        found = conn.execute(sql, [key, bits, *cursor, limit]).fetchall()
        if bits:
            marked.update(row[0] for row in found)
        rows += found
    rows.sort(key=lambda row: (row[3], row[0]))
    rows = rows[max(0, len(rows) - limit):]
    name = channel_name(conn, key) or channel
    return _marked(_conversation.decorate(conn, rows, key, name), marked)


def thread(conn: sqlite3.Connection, message_id: bytes, *,
           hidden: bool = False) -> list[Message]:
    """A thread: its first message, then its visible replies oldest first; [] when the
    message is not a visible message held here. `hidden`: as `messages`."""
    shown = f"(0, {HIDDEN_MOD})" if hidden else "(0)"
    found = conn.execute(
        "SELECT m.channel, m.reply_to FROM objects o JOIN messages m ON m.oid = o.oid "
        f"WHERE o.id = ? AND m.hidden IN {shown}", (message_id,)).fetchone()
    if found is None:
        return []
    key, parent = found
    root = parent if parent is not None else message_id
    columns = COLUMNS.replace(" FROM", ", m.hidden FROM").format(
        nick=NICK.format(a="m.author"))
    first = conn.execute(
        f"SELECT {columns} JOIN objects o ON o.oid = m.oid WHERE o.id = ? "
        f"AND m.hidden IN {shown} AND m.channel = ?", (root, key)).fetchall()
    replies = conn.execute(
        f"SELECT {columns} INDEXED BY messages_by_thread WHERE m.reply_to = ? "
        f"AND m.hidden IN {shown} AND m.channel = ? ORDER BY m.ts, m.id",
        (root, key)).fetchall()
    name = channel_name(conn, key) or key
    rows = first + replies
    marked = {row[0] for row in rows if row[-1]}
    return _marked(_conversation.decorate(conn, [row[:-1] for row in rows], key, name),
                   marked)


def message(conn: sqlite3.Connection, message_id: bytes) -> Message | None:
    """One visible message (a reply too), with its reply count and reactions."""
    row = conn.execute(
        "SELECT m.channel, " + COLUMNS.format(nick=NICK.format(a="m.author"))
        + " JOIN objects o ON o.oid = m.oid WHERE o.id = ? AND m.hidden = 0",
        (message_id,)).fetchone()
    if row is None:
        return None
    key = row[0]
    name = channel_name(conn, key) or key
    return _conversation.decorate(conn, [row[1:]], key, name)[0]


def channel_name(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute("SELECT name FROM channels WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def topic(conn: sqlite3.Connection, key: str) -> str | None:
    row = conn.execute(
        "SELECT value FROM state WHERE channel = ? AND kind = 'topic' AND hidden = 0 "
        "ORDER BY ts DESC, id DESC LIMIT 1", (key,)).fetchone()
    return row[0] if row else None


def members(conn: sqlite3.Connection, key: str) -> list[Member]:
    rows = conn.execute(
        "SELECT author, " + NICK.format(a="members.author") +
        " FROM members WHERE channel = ? AND member = 1", (key,)).fetchall()
    found = [Member(author, nick) for author, nick in rows]
    return sorted(found, key=lambda m: ((m.nick or "").casefold(), m.key))


def nickname(conn: sqlite3.Connection, key: bytes) -> str | None:
    row = conn.execute("SELECT " + NICK.format(a="?"), (key,)).fetchone()
    return row[0]


def nicknames(conn: sqlite3.Connection) -> dict[bytes, str]:
    """Current nickname of every key that has one."""
    rows = conn.execute(
        "SELECT author, name FROM (SELECT author, name, ROW_NUMBER() OVER ("
        "PARTITION BY author ORDER BY ts DESC, id DESC) AS rn FROM nicks "
        "WHERE hidden = 0) WHERE rn = 1").fetchall()
    return dict(rows)


def channel_state(conn: sqlite3.Connection, channel: str) -> ChannelState:
    """Topic, members and the history of topic, membership and nickname changes."""
    key = kinds.channel_key(channel)
    name = channel_name(conn, key)
    if name is None:
        raise NotFound(f"no channel {channel!r} in this replica")
    who = members(conn, key)
    history = [StateEvent(*row) for row in conn.execute(
        "SELECT id, kind, author, ts, value FROM state WHERE channel = ? AND hidden = 0 "
        "UNION ALL SELECT n.id, 'nick', n.author, n.ts, n.name FROM nicks n "
        "WHERE n.hidden = 0 AND n.author IN (SELECT author FROM members "
        "WHERE channel = ?) ORDER BY 4, 1", (key, key))]
    return ChannelState(name, topic(conn, key), tuple(who), tuple(history))


def channels(conn: sqlite3.Connection) -> list[ChannelInfo]:
    rows = conn.execute(
        "SELECT c.key, c.name, c.messages, (SELECT COUNT(*) FROM members m "
        "WHERE m.channel = c.key AND m.member = 1) FROM channels c "
        "ORDER BY c.key").fetchall()
    return [ChannelInfo(name, topic(conn, key), count, messages)
            for key, name, messages, count in rows]


def unread(conn: sqlite3.Connection, me: bytes,
           nick: str | None) -> dict[str, tuple[int, bool]]:
    """Per channel name: (messages by others since my mark, at most UNREAD_CAP, and
    whether one of the newest UNREAD_CAP of them mentions `nick`)."""
    out: dict[str, tuple[int, bool]] = {}
    for key, name, mark_ts, mark_id in conn.execute(
            "SELECT c.key, c.name, r.ts, r.id FROM channels c "
            "LEFT JOIN read_marks r ON r.channel = c.key"):
        # The newest UNREAD_CAP unread: a channel left unread for months stays cheap.
        since = "FROM (SELECT text FROM messages WHERE channel = ? AND hidden = 0 " \
                "AND in_channel = 1 " \
                "AND (ts, id) > (?, ?) AND author != ? ORDER BY ts DESC, id DESC " \
                "LIMIT ?)"
        args = (key, mark_ts if mark_ts is not None else -1, mark_id or b"", me,
                UNREAD_CAP)
        count = conn.execute("SELECT COUNT(*) " + since, args).fetchone()[0]
        mention = False
        if count and nick:
            pattern = "%" + nick.replace("\\", "\\\\").replace("%", "\\%").replace(
                "_", "\\_") + "%"
            word = _mention_word(nick)  # "adam" does not mention ada
            mention = any(word.search(text) for (text,) in conn.execute(
                "SELECT text " + since + " WHERE text LIKE ? ESCAPE '\\'",
                (*args, pattern)))
        out[name] = (count, mention)
    return out
