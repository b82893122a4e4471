"""Private channels' objects in the replica, listed by channel (core/private.py decides what
they mean; app/private.py opens them with the keys sealed to this computer's person).

Storage cannot read them: the names and messages are encrypted. It keeps a list of each
channel's objects (the creation in the workspace stream, the rest in the channel's own stream)
so a channel is read without scanning the replica, and leaves out, as everywhere, the objects
of removed members that their removal did not keep (storage._membership).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.objects import Object, decode_trusted, stored
from core.private import KINDS

if TYPE_CHECKING:
    from .replica import Replica

# Table: storage/migrations/v11.py (private).
_COUNTED = "AND p.oid NOT IN (SELECT oid FROM unkept)"


def record(conn: sqlite3.Connection, workspace: bytes, objects: Iterable[Object],
           oids: dict[bytes, int]) -> None:
    """List the private channels' objects among `objects`: creations in the workspace stream,
    the rest in the stream of the channel they name."""
    rows = []
    for o in objects:
        if o.type == "channel/private" and o.stream == workspace:
            rows.append((oids[o.id], o.id, o.ts))
        elif o.type in KINDS and o.body["channel"] == o.stream:
            rows.append((oids[o.id], o.stream, o.ts))
    conn.executemany("INSERT OR IGNORE INTO private (oid, channel, ts) VALUES (?, ?, ?)", rows)


def reindex(conn: sqlite3.Connection, workspace: bytes) -> None:
    """List what a version that did not know these kinds stored."""
    rows = conn.execute("SELECT oid, raw FROM objects WHERE type IN ('channel/private', "
                        "'channel/members', 'channel/key', 'channel/name', 'post/sealed')")
    held = [(oid, decode_trusted(raw)) for oid, raw in rows]
    record(conn, workspace, [o for _, o in held], {o.id: oid for oid, o in held})


class PrivateStore:
    """`Replica.private`: the private channels' objects held."""

    def __init__(self, replica: Replica):
        self._replica = replica

    def channels(self) -> list[Object]:
        """Every private channel's creation held, oldest first."""
        # The channels listed, one index seek each (a private channel may hold 100,000
        # messages: never a scan of them), then each one's creation by its id; a creation is
        # listed under its own id, and only one in the workspace stream has a row.
        rows = self._replica.conn.execute(
            "WITH RECURSIVE c(channel) AS (SELECT MIN(channel) FROM private UNION ALL "
            "SELECT (SELECT MIN(channel) FROM private WHERE channel > c.channel) FROM c "
            "WHERE c.channel IS NOT NULL) "
            "SELECT o.raw FROM c JOIN objects o ON o.id = c.channel "
            "WHERE o.type = 'channel/private' "
            "AND EXISTS (SELECT 1 FROM private p WHERE p.oid = o.oid) "
            "AND NOT EXISTS (SELECT 1 FROM unkept u WHERE u.oid = o.oid) ORDER BY o.ts, o.id")
        return [decode_trusted(raw) for (raw,) in rows]

    def objects(self, channel: bytes) -> list[Object]:
        """Every object of one private channel held (its creation too), in no particular
        order (PrivateView.compute orders them)."""
        # A channel's many sealed posts are read by their envelope (core.objects.Stored).
        rows = self._replica.conn.execute(
            "SELECT o.id, o.type, o.author, o.ts, o.stream, o.raw FROM private p "
            f"JOIN objects o ON o.oid = p.oid WHERE p.channel = ? {_COUNTED}", (channel,))
        return [stored(*row) if row[1] == "post/sealed" else decode_trusted(row[5], row[0])
                for row in rows]

    def objects_after(self, channel: bytes, oid: int) -> list[Object]:
        """The objects of one private channel stored after the row `oid` (a version), oldest
        first: what arrived since a view was computed."""
        # +p.channel: walk the (few) rows after `oid`, never every row of a large channel.
        rows = self._replica.conn.execute(
            "SELECT o.raw FROM private p JOIN objects o ON o.oid = p.oid "
            f"WHERE p.oid > ? AND +p.channel = ? {_COUNTED} ORDER BY p.ts, o.id",
            (oid, channel))
        return [decode_trusted(raw) for (raw,) in rows]

    def version(self) -> int:
        """Changes whenever a private channel's object is stored. Rows are only ever added:
        no kind listed here may be deleted (core.kinds.DELETABLE_KINDS), and what a removal
        stops counting is the membership view's version; so the newest row says it, read from
        the primary key rather than by counting a large channel's rows."""
        (last,) = self._replica.conn.execute("SELECT MAX(oid) FROM private").fetchone()
        return last or 0
