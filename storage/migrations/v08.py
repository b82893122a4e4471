"""Version 8: conversation (storage._conversation): replies, edits, reactions. Objects of
these kinds held before (stored, not interpreted) are indexed by today's code."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

SQL = """
ALTER TABLE messages ADD COLUMN reply_to BLOB;
ALTER TABLE messages ADD COLUMN in_channel INTEGER NOT NULL DEFAULT 1;
ALTER TABLE messages ADD COLUMN edited INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_by_thread ON messages (reply_to, hidden, ts, id)
    WHERE reply_to IS NOT NULL;
CREATE TABLE edits (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    target BLOB NOT NULL,
    channel TEXT NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    text TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX edits_by_target ON edits (target, hidden, ts, id);
CREATE INDEX edits_by_channel ON edits (channel, author);
CREATE INDEX edits_future ON edits (ts) WHERE hidden & 2;
CREATE TABLE reactions (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    target BLOB NOT NULL,
    channel TEXT NOT NULL,
    author BLOB NOT NULL,
    emoji TEXT NOT NULL,
    ts INTEGER NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0,
    counted INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX reactions_by_target ON reactions (target, author, hidden, ts, id);
CREATE INDEX reactions_by_channel ON reactions (channel, author);
CREATE INDEX reactions_future ON reactions (ts) WHERE hidden & 2
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "conversation", 8, when="EXISTS (SELECT 1 FROM objects "
          "WHERE type IN ('post/reply', 'post/edit', 'post/react'))")
