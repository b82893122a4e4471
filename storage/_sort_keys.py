"""Messages' sort keys (messages.sk): their full-text rowids, ordered by time, so search can
walk the newest matches first (storage._search) and stop."""

from __future__ import annotations

import sqlite3

from ._sql import chunks, placeholders

SK_ID_BITS = 12
SK_MAX_TS = (1 << (63 - SK_ID_BITS)) - 1


def sort_key(ts: int, oid: bytes) -> int:
    """A message's full-text rowid: ordered by time, so search can walk newest first and stop.

    The low bits come from the id, so equal times still differ; the rare collision takes the
    next free key (sort_keys)."""
    return (min(ts, SK_MAX_TS) << SK_ID_BITS) | (int.from_bytes(oid[:2], "big") >> 4)


def sort_keys(conn: sqlite3.Connection, messages: list[tuple[int, bytes]]) -> list[int]:
    """Unique sort keys for new messages (ts, id), avoiding every key already taken."""
    wanted = [sort_key(ts, oid) for ts, oid in messages]
    taken: set[int] = set()
    for part in chunks(wanted):
        taken.update(row[0] for row in conn.execute(
            f"SELECT sk FROM messages WHERE sk IN ({placeholders(len(part))})", part))
    keys = []
    for key in wanted:
        while key in taken:
            key += 1
            if conn.execute("SELECT 1 FROM messages WHERE sk = ?", (key,)).fetchone():
                taken.add(key)
        taken.add(key)
        keys.append(key)
    return keys
