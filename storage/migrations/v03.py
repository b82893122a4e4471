"""Version 3: the reconciliation index, one set of (ts, id) items for the whole workspace
with per-bucket sums of the ids' eight 32-bit lanes (version 13 keeps it per stream); a
tombstone keeps its item's ts. The index is derived data: today's code fills it."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

SQL = """
ALTER TABLE tombstones ADD COLUMN ts INTEGER;
CREATE TABLE items (ts INTEGER NOT NULL, id BLOB NOT NULL, PRIMARY KEY (ts, id)) WITHOUT ROWID;
CREATE TABLE item_buckets (
    bucket INTEGER PRIMARY KEY, count INTEGER NOT NULL,
    l0 INTEGER NOT NULL, l1 INTEGER NOT NULL, l2 INTEGER NOT NULL, l3 INTEGER NOT NULL,
    l4 INTEGER NOT NULL, l5 INTEGER NOT NULL, l6 INTEGER NOT NULL, l7 INTEGER NOT NULL
)
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "items", 3, when="EXISTS (SELECT 1 FROM objects)")
