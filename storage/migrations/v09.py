"""Version 9: moderation (storage._moderation): moderator roles, hides and what they hide,
and this computer's blocks. Moderation objects held before (stored, not interpreted) are
indexed by today's code."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

# IF NOT EXISTS: tests/storage/test_migrations.py fakes older files by undoing the steps
# after the one it imitates, and keeps these tables.
SQL = """
CREATE TABLE IF NOT EXISTS mod_roles (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    channel TEXT NOT NULL,
    key BLOB NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    role TEXT NOT NULL,
    reason TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS mod_roles_by_key ON mod_roles (channel, key, ts, id);
CREATE INDEX IF NOT EXISTS mod_roles_by_author ON mod_roles (author);
CREATE TABLE IF NOT EXISTS mod_actions (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    channel TEXT NOT NULL,
    target BLOB NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    hide INTEGER NOT NULL,
    reason TEXT NOT NULL,
    counts INTEGER NOT NULL DEFAULT 0,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS mod_actions_by_target
    ON mod_actions (channel, target, counts, hidden, ts, id);
CREATE INDEX IF NOT EXISTS mod_actions_by_author ON mod_actions (author, channel);
CREATE INDEX IF NOT EXISTS mod_actions_by_time ON mod_actions (ts, id);
CREATE INDEX IF NOT EXISTS mod_actions_future ON mod_actions (ts) WHERE hidden & 2;
CREATE TABLE IF NOT EXISTS mod_hidden (channel TEXT NOT NULL, target BLOB NOT NULL,
                                       PRIMARY KEY (channel, target)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS blocked (key BLOB PRIMARY KEY, ts INTEGER NOT NULL) WITHOUT ROWID
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "moderation", 9, when="EXISTS (SELECT 1 FROM objects "
          "WHERE type IN ('mod/role', 'mod/hide'))")
