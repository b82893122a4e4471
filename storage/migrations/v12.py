"""Version 12: attached files (storage._files): which messages name which file, and each
file's state here. Messages with files (post/file) an older version stored without
interpreting them are indexed by today's code."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

# IF NOT EXISTS: tests/storage/test_migrations.py fakes older files by undoing the steps
# after the one it imitates, and keeps these tables.
SQL = """
CREATE TABLE IF NOT EXISTS files (
    list BLOB PRIMARY KEY,
    size INTEGER NOT NULL,
    complete INTEGER NOT NULL DEFAULT 0,
    mine INTEGER NOT NULL DEFAULT 0,
    pinned INTEGER NOT NULL DEFAULT 0,
    opened INTEGER NOT NULL DEFAULT 0,
    evicted INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS file_refs (
    oid INTEGER NOT NULL REFERENCES objects (oid) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    message BLOB NOT NULL,
    list BLOB NOT NULL,
    size INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    private BLOB,
    PRIMARY KEY (oid, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS file_refs_by_list ON file_refs (list);
CREATE INDEX IF NOT EXISTS file_refs_by_message ON file_refs (message)
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "files", 12, when="EXISTS (SELECT 1 FROM objects WHERE type = 'post/file')")
