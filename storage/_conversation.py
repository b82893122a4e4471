"""The conversation views: edits, reactions and threads, kept by the one ingest path.

Each view is a function of the set of objects held, as every chat view is (storage._ingest):
- An edit is a last-writer-wins register per message (core.containers.LWWRegister's rule:
  the greatest (ts, id) wins; authors date objects after what they link to, so that order is
  causal). Only the message's author's visible edits in its channel count. `messages.text`
  holds the winner's text, so reading and searching see the latest version.
- Reactions are an observed-remove set per (message, emoji) (core.containers.ORSet): a
  post/react adds, and a post/delete of it (which names the add's id, as an ORSet Remove
  names op ids) removes; a concurrent add survives. A member's first MAX_EMOJI_PER_MEMBER
  distinct emoji on a message count, by each emoji's earliest visible add.
- A reply is a message (`messages.reply_to`); `in_channel` is 0 for one shown only in its
  thread. Reply counts are read, not kept.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TypeVar

from core.kinds import MAX_EMOJI_PER_MEMBER
from core.objects import Object, decode_trusted

from . import _files, _origins
from ._sql import chunks, placeholders
from .records import Message, MessageVersion, Reaction

T = TypeVar("T", bytes, str, None)
LONG_READ = 1000  # messages: after a read this long the connection's page cache is let go


# Edits ------------------------------------------------------------------------------------------

def add_edits(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    """Store edits (oid, id, target, channel, author, ts, text, hidden) and re-decide the
    text of each message they name."""
    conn.executemany(
        "INSERT INTO edits (oid, id, target, channel, author, ts, text, hidden) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
    refresh_texts(conn, {row[2] for row in rows})


def edited_among(conn: sqlite3.Connection, ids: Sequence[bytes]) -> set[bytes]:
    """Which of these (newly stored) messages already have edits waiting for them."""
    found: set[bytes] = set()
    if conn.execute("SELECT 1 FROM edits LIMIT 1").fetchone() is None:
        return found
    for part in chunks(ids):
        found.update(row[0] for row in conn.execute(
            f"SELECT DISTINCT target FROM edits WHERE target IN ({placeholders(len(part))})",
            part))
    return found


def refresh_texts(conn: sqlite3.Connection, targets: Iterable[bytes]) -> None:
    """Set each message's text to its latest counting edit's, or back to its own."""
    for target in targets:
        row = conn.execute(
            "SELECT m.oid, m.channel, m.author, m.text, m.edited, m.sk, o.raw "
            "FROM objects o JOIN messages m ON m.oid = o.oid WHERE o.id = ?",
            (target,)).fetchone()
        if row is None:  # not (yet) held, or not a message: the edit waits or never counts
            continue
        oid, channel, author, text, edited, key, raw = row
        winner = conn.execute(
            "SELECT text FROM edits WHERE target = ? AND hidden = 0 AND channel = ? "
            "AND author = ? ORDER BY ts DESC, id DESC LIMIT 1",
            (target, channel, author)).fetchone()
        new = winner[0] if winner else decode_trusted(raw).body["text"]
        now_edited = int(winner is not None)
        if (new, now_edited) == (text, edited):
            continue
        conn.execute("UPDATE messages SET text = ?, edited = ? WHERE oid = ?",
                     (new, now_edited, oid))
        if new != text:
            conn.execute("INSERT INTO messages_fts (messages_fts, rowid, text) "
                         "VALUES ('delete', ?, ?)", (key, text))
            conn.execute("INSERT INTO messages_fts (rowid, text) VALUES (?, ?)", (key, new))


def versions(conn: sqlite3.Connection, target: bytes) -> list[MessageVersion]:
    """A message's texts, oldest first: its own, then each counting edit's."""
    row = conn.execute(
        "SELECT m.channel, m.author, m.ts, o.raw FROM objects o "
        "JOIN messages m ON m.oid = o.oid WHERE o.id = ? AND m.hidden = 0",
        (target,)).fetchone()
    if row is None:
        return []
    channel, author, ts, raw = row
    edits = conn.execute(
        "SELECT ts, text FROM edits WHERE target = ? AND hidden = 0 AND channel = ? "
        "AND author = ? ORDER BY ts, id", (target, channel, author)).fetchall()
    return [MessageVersion(ts, decode_trusted(raw).body["text"]),
            *(MessageVersion(*edit) for edit in edits)]


# Reactions --------------------------------------------------------------------------------------

def add_reactions(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    """Store reactions (oid, id, target, channel, author, ts, emoji, hidden) and re-decide
    which of their authors' emoji count."""
    # Stored as counted when visible, the common case, so the recount rarely writes again.
    conn.executemany(
        "INSERT INTO reactions (oid, id, target, channel, author, ts, emoji, hidden, counted) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?8 = 0)", rows)
    recount_reactions(conn, {(row[2], row[4]) for row in rows})


def recount_reactions(conn: sqlite3.Connection, pairs: Iterable[tuple[bytes, bytes]]) -> None:
    """For each (message, member): their first MAX_EMOJI_PER_MEMBER distinct visible emoji
    count, ordered by each emoji's earliest add. One query per 500 messages, not per pair."""
    wanted = set(pairs)
    rows: dict[tuple[bytes, bytes], list[tuple]] = {}
    for part in chunks(sorted({target for target, _ in wanted})):
        for target, author, oid, emoji, hidden, counted in conn.execute(
                "SELECT target, author, oid, emoji, hidden, counted FROM reactions "
                f"WHERE target IN ({placeholders(len(part))}) ORDER BY target, author, ts, id",
                part):
            if (target, author) in wanted:
                rows.setdefault((target, author), []).append((oid, emoji, hidden, counted))
    changes = []
    for found in rows.values():
        allowed: set[str] = set()
        for oid, emoji, hidden, counted in found:
            if not hidden and emoji not in allowed and len(allowed) < MAX_EMOJI_PER_MEMBER:
                allowed.add(emoji)
            want = int(not hidden and emoji in allowed)
            if want != counted:
                changes.append((want, oid))
    conn.executemany("UPDATE reactions SET counted = ? WHERE oid = ?", changes)


# Both, when a channel's policies or the clock change what is visible ----------------------------

def rehide(conn: sqlite3.Connection, channel: str, bit_for) -> None:
    """Re-decide the policy bit of `channel`'s edits and reactions; `bit_for(author, kind)`
    is the batch's policy bit."""
    for table, kind in (("edits", "post/edit"), ("reactions", "post/react")):
        for (author,) in conn.execute(
                f"SELECT DISTINCT author FROM {table} WHERE channel = ?", (channel,)).fetchall():
            bit = bit_for(author, kind)
            changed = conn.execute(
                f"UPDATE {table} SET hidden = (hidden & ~1) | ? WHERE channel = ? AND author = ? "
                f"AND (hidden & 1) != ? RETURNING target", (bit, channel, author, bit)).fetchall()
            if table == "edits":
                refresh_texts(conn, {target for (target,) in changed})
            else:
                recount_reactions(conn, {(target, author) for (target,) in changed})


def mature(conn: sqlite3.Connection, horizon: int) -> bool:
    """Edits and reactions whose date has come count now."""
    edits = conn.execute("UPDATE edits SET hidden = hidden & ~2 WHERE hidden & 2 AND ts <= ? "
                         "RETURNING target", (horizon,)).fetchall()
    reactions = conn.execute(
        "UPDATE reactions SET hidden = hidden & ~2 WHERE hidden & 2 AND ts <= ? "
        "RETURNING target, author", (horizon,)).fetchall()
    refresh_texts(conn, {target for (target,) in edits})
    recount_reactions(conn, set(reactions))
    return bool(edits or reactions)


def due(conn: sqlite3.Connection, horizon: int) -> bool:
    return conn.execute(
        "SELECT 1 FROM edits WHERE hidden & 2 AND ts <= ?1 UNION ALL "
        "SELECT 1 FROM reactions WHERE hidden & 2 AND ts <= ?1 LIMIT 1",
        (horizon,)).fetchone() is not None


def purged(conn: sqlite3.Connection, obj: Object) -> None:
    """After an edit or a reaction was deleted: what it fed is decided again."""
    if obj.type == "post/edit":
        refresh_texts(conn, [obj.body["target"]])
    elif obj.type == "post/react":
        recount_reactions(conn, [(obj.body["target"], obj.author)])


# Reading ----------------------------------------------------------------------------------------

def decorate(conn: sqlite3.Connection, rows: Sequence[tuple], key: str,
             name: str) -> list[Message]:
    """Messages of the channel `key` (shown as `name`) from rows (id, author, nick, ts,
    text, edited, reply_to, in_channel), with their reply counts, reactions and files."""
    ids = [row[0] for row in rows]
    files = _files.attachments(conn, ids)
    replies: dict[bytes, int] = {}
    reacted: dict[bytes, dict[str, list[bytes]]] = {}
    for part in chunks(ids):
        marks = placeholders(len(part))
        replies.update(conn.execute(
            f"SELECT reply_to, COUNT(*) FROM messages INDEXED BY messages_by_thread "
            f"WHERE reply_to IN ({marks}) AND hidden = 0 AND channel = ? GROUP BY reply_to",
            (*part, key)).fetchall())
        # Each member once per emoji (two concurrent adds are one reaction), in order of
        # each emoji's and each member's first add.
        for target, emoji, author in conn.execute(
                f"SELECT target, emoji, author FROM reactions INDEXED BY reactions_by_target "
                f"WHERE target IN ({marks}) "
                f"AND counted = 1 AND channel = ? GROUP BY target, emoji, author "
                f"ORDER BY MIN(ts), MIN(id)", (*part, key)):
            reacted.setdefault(target, {}).setdefault(emoji, []).append(_shared(author))
    if len(rows) >= LONG_READ:
        # A window scrolled back through a long channel would otherwise fill the connection's
        # page cache (64 MiB, for ingest's hot pages) with pages nothing reads again.
        conn.execute("PRAGMA shrink_memory")
    return _origins.overlay(conn, [
        Message(oid, name, _shared(author), _shared(nick), ts, text, bool(edited), reply_to,
                    replies.get(oid, 0),
                    tuple(Reaction(_shared(emoji), tuple(by))
                          for emoji, by in reacted.get(oid, {}).items()),
                    bool(in_channel), False, files.get(oid, ()))
        for oid, author, nick, ts, text, edited, reply_to, in_channel in rows])


_SHARED: dict = {}  # authors' keys, nicknames and emoji, one object each across reads
_SHARED_MOST = 50_000


def _shared(value: T) -> T:
    """One object for equal keys, nicknames and emoji: a window scrolled back through a long
    channel holds 100,000 messages by a few dozen authors, not 100,000 copies of each."""
    if value is None:
        return value
    found = _SHARED.get(value)
    if found is None:
        if len(_SHARED) >= _SHARED_MOST:
            _SHARED.clear()
        found = _SHARED[value] = value
    return found
