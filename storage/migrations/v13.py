"""Version 13: the reconciliation index per stream (storage.items), so sync reconciles one
stream at a time: newest first, and only the streams a member keeps on this computer. Ids a
block refused before knew no stream: they leave the set, and when sync brings them again
the block refuses them again, with their stream. Today's code fills the new index."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

REFUSED = """
DROP TABLE IF EXISTS refused;
CREATE TABLE IF NOT EXISTS refused (id BLOB PRIMARY KEY, key BLOB NOT NULL,
                                    ts INTEGER NOT NULL, stream BLOB NOT NULL,
                                    class INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refused_by_key ON refused (key)
"""

SQL = """
DROP TABLE IF EXISTS items;
DROP TABLE IF EXISTS item_buckets;
DROP TABLE IF EXISTS item_streams;
CREATE TABLE items (stream BLOB NOT NULL, ts INTEGER NOT NULL, id BLOB NOT NULL,
                    PRIMARY KEY (stream, ts, id)) WITHOUT ROWID;
CREATE TABLE item_buckets (
    stream BLOB NOT NULL, bucket INTEGER NOT NULL, count INTEGER NOT NULL,
    l0 INTEGER NOT NULL, l1 INTEGER NOT NULL, l2 INTEGER NOT NULL, l3 INTEGER NOT NULL,
    l4 INTEGER NOT NULL, l5 INTEGER NOT NULL, l6 INTEGER NOT NULL, l7 INTEGER NOT NULL,
    PRIMARY KEY (stream, bucket)
) WITHOUT ROWID;
CREATE TABLE item_streams (
    stream BLOB PRIMARY KEY, class INTEGER NOT NULL, count INTEGER NOT NULL,
    newest INTEGER NOT NULL,
    l0 INTEGER NOT NULL, l1 INTEGER NOT NULL, l2 INTEGER NOT NULL, l3 INTEGER NOT NULL,
    l4 INTEGER NOT NULL, l5 INTEGER NOT NULL, l6 INTEGER NOT NULL, l7 INTEGER NOT NULL
) WITHOUT ROWID
"""


def migrate(conn: sqlite3.Connection) -> None:
    if "stream" not in {row[1] for row in conn.execute("PRAGMA table_info(refused)")}:
        script(conn, REFUSED)
    script(conn, SQL)
    queue(conn, "items", 13, when="EXISTS (SELECT 1 FROM objects)")
