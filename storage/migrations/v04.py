"""Version 4: full-text rowids ordered by time (messages.sk), so search returns the newest
visible matches without ranking every match of a common word."""

from __future__ import annotations

import sqlite3

from ._steps import script

_ID_BITS = 12
_MAX_TS = (1 << (63 - _ID_BITS)) - 1

SQL = """
CREATE UNIQUE INDEX messages_by_sk ON messages (sk);
DROP TABLE messages_fts;
CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content='',
    tokenize='unicode61 remove_diacritics 2');
INSERT INTO messages_fts (rowid, text) SELECT sk, text FROM messages
"""


def sort_keys(messages: list[tuple[int, bytes]]) -> list[int]:
    """Unique keys for (ts, id), as version 4 gave them: the time above 12 bits of the id; a
    collision takes the next free key."""
    taken: set[int] = set()
    keys = []
    for ts, oid in messages:
        key = (min(ts, _MAX_TS) << _ID_BITS) | (int.from_bytes(oid[:2], "big") >> 4)
        while key in taken:
            key += 1
        taken.add(key)
        keys.append(key)
    return keys


def migrate(conn: sqlite3.Connection) -> None:
    conn.execute("ALTER TABLE messages ADD COLUMN sk INTEGER")
    rows = conn.execute("SELECT oid, ts, id FROM messages ORDER BY ts, id").fetchall()
    keys = sort_keys([(ts, oid) for _, ts, oid in rows])
    conn.executemany("UPDATE messages SET sk = ? WHERE oid = ?",
                     [(key, row[0]) for key, row in zip(keys, rows, strict=True)])
    script(conn, SQL)
