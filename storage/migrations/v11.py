"""Version 11: the ids blocks refused, kept in the reconciliation set (storage._moderation;
without their stream until version 13); and private channels' objects listed by channel
(storage._private; today's code lists such objects held before)."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

# IF NOT EXISTS: tests/storage/test_migrations.py fakes older files by undoing the steps
# after the one it imitates, and keeps these tables.
SQL = """
CREATE TABLE IF NOT EXISTS refused (id BLOB PRIMARY KEY, key BLOB NOT NULL,
                                    ts INTEGER NOT NULL) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS refused_by_key ON refused (key);
CREATE TABLE IF NOT EXISTS private (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    channel BLOB NOT NULL,
    ts INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS private_by_channel ON private (channel, ts)
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "private", 11, when="EXISTS (SELECT 1 FROM objects WHERE type IN "
          "('channel/private', 'channel/members', 'channel/key', 'channel/name', "
          "'post/sealed'))")
