"""The local index of what this computer opened in its private channels (`Replica.
private_index`; tables: storage/migrations/v16.py, v18.py).

Storage cannot open a private channel's boxes; the app (app/private_conversation.py) opens
them with the keys sealed to this computer's person and hands over, per channel, each message
it reads and its current text (after edits). They are kept here with a full-text index so that
search does not open every box. Like read marks, these rows are local: no object is written,
nothing syncs them, and nothing a peer asks for reads this table (sync reads objects only).
Rowids are time-ordered sort keys, as messages' are (storage._sort_keys), so a search walks the
newest matches first and stops.

With each message it also keeps what the conversation shows of it (whether it is shown in the
channel; `shown`: the app's encoding of its thread, edits, reactions and files), and per channel
the stamp of exactly what that conversation was computed from (`private_kept`): a start whose
channel still has that stamp reads its newest page here instead of opening every box.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._search import match_expression
from ._sort_keys import sort_key
from ._sql import chunks, placeholders

if TYPE_CHECKING:
    from .replica import Replica


class PrivateIndex:
    """`Replica.private_index`: the opened private messages of this computer, searchable."""

    def __init__(self, replica: Replica):
        self._replica = replica

    def held(self, channel: bytes) -> dict[bytes, tuple[int, str, bool, int, bytes | None]]:
        """What is indexed of one channel: message id -> (ts, text, in the channel, posted,
        shown)."""
        return {row[0]: row[1:] for row in self._replica.conn.execute(
            "SELECT id, ts, text, in_channel, posted, shown FROM private_opened "
            "WHERE channel = ?", (channel,))}

    def kept(self, channel: bytes) -> tuple[bytes, int, bytes] | None:
        """(stamp, posts, pending) of what the channel's indexed conversation was computed
        from, as `update` took them."""
        return self._replica.conn.execute(
            "SELECT stamp, posts, pending FROM private_kept WHERE channel = ?",
            (channel,)).fetchone()

    def page(self, channel: bytes, limit: int) -> list[tuple[bytes, bytes, int, str, bytes]]:
        """The newest `limit` (0: all) messages shown in the channel, (id, author, ts, text,
        shown), oldest first, in the (posted, id) order the conversation shows them in."""
        rows = self._replica.conn.execute(
            "SELECT id, author, ts, text, shown FROM private_opened WHERE channel = ? "
            "AND in_channel = 1 ORDER BY posted DESC, id DESC LIMIT ?",
            (channel, limit or -1)).fetchall()
        return rows[::-1]

    def rows(self, channel: bytes, ids: Sequence[bytes]
             ) -> dict[bytes, tuple[bytes, bytes, int, str, bytes]]:
        """Indexed messages of one channel by id: id -> (id, author, ts, text, shown)."""
        out: dict[bytes, tuple[bytes, bytes, int, str, bytes]] = {}
        for part in chunks(list(ids)):
            out.update((row[0], row) for row in self._replica.conn.execute(
                # +channel: found by id (unique), never by walking the channel's rows
                "SELECT id, author, ts, text, shown FROM private_opened "
                f"WHERE id IN ({placeholders(len(part))}) AND +channel = ?", (*part, channel)))
        return out

    def update(self, channel: bytes,
               put: Sequence[tuple[bytes, bytes, int, str, bool, int, bytes]],
               drop: Sequence[bytes], kept: tuple[bytes, int, bytes]) -> None:
        """In one transaction: index `put` (id, author, ts, text, in the channel, the time of
        its own post, shown; an id indexed already gets its new values) and forget `drop` (ids), all of `channel`, which
        then stands as computed from `kept` (stamp, posts, pending)."""
        if not put and not drop and self.kept(channel) == kept:
            return
        with self._replica._write() as conn:
            for oid in [*drop, *(row[0] for row in put)]:
                _forget(conn, "id = ?", (oid,))
            for oid, author, ts, text, in_channel, posted, shown in put:
                key = sort_key(ts, oid)
                while conn.execute("SELECT 1 FROM private_opened WHERE sk = ?",
                                   (key,)).fetchone():
                    key += 1
                conn.execute("INSERT INTO private_opened (sk, channel, id, author, ts, text, "
                             "in_channel, posted, shown) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                             (key, channel, oid, author, ts, text, int(in_channel), posted,
                              shown))
                conn.execute("INSERT INTO private_fts (rowid, text) VALUES (?, ?)", (key, text))
            conn.execute("INSERT OR REPLACE INTO private_kept (channel, stamp, posts, pending) "
                         "VALUES (?, ?, ?, ?)", (channel, *kept))

    def forget(self, channels: Sequence[bytes]) -> None:
        """Drop everything indexed and kept of these channels (I am no longer in them)."""
        if not channels:
            return
        where = f"channel IN ({placeholders(len(channels))})"
        with self._replica._write() as conn:
            _forget(conn, where, tuple(channels))
            conn.execute(f"DELETE FROM private_kept WHERE {where}", tuple(channels))

    def channels(self) -> set[bytes]:
        """The channels with something indexed or kept."""
        return {c for (c,) in self._replica.conn.execute(
            "SELECT DISTINCT channel FROM private_opened UNION SELECT channel FROM private_kept")}

    def search(self, channels: Sequence[bytes], terms: tuple[tuple[str, bool], ...],
               authors: Sequence[bytes], since_ms: int | None, until_ms: int | None,
               want: int) -> list[tuple[int, bytes, bytes]]:
        """The newest `want` indexed messages of `channels` that match every term (phrases as
        storage._search takes them) and filter: (ts, id, channel), newest first."""
        if not channels:
            return []
        where = [f"p.channel IN ({placeholders(len(channels))})"]
        params: list = list(channels)
        if authors:
            where.append(f"p.author IN ({placeholders(len(authors))})")
            params += list(authors)
        if since_ms is not None:
            where.append("p.ts >= ?")
            params.append(since_ms)
        if until_ms is not None:
            where.append("p.ts < ?")
            params.append(until_ms)
        if terms:
            sql = ("SELECT p.ts, p.id, p.channel FROM private_fts f CROSS JOIN private_opened p "
                   "ON p.sk = f.rowid WHERE private_fts MATCH ? AND " + " AND ".join(where) +
                   " ORDER BY f.rowid DESC LIMIT ?")
            params = [match_expression(terms), *params]
        else:
            sql = ("SELECT p.ts, p.id, p.channel FROM private_opened p WHERE " +
                   " AND ".join(where) + " ORDER BY p.sk DESC LIMIT ?")
        return self._replica.conn.execute(sql, [*params, want]).fetchall()


def _forget(conn: sqlite3.Connection, where: str, params: tuple) -> None:
    rows = conn.execute(f"DELETE FROM private_opened WHERE {where} RETURNING sk, text",
                        params).fetchall()
    conn.executemany("INSERT INTO private_fts (private_fts, rowid, text) "
                     "VALUES ('delete', ?, ?)", rows)
