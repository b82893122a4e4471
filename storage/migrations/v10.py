"""Version 10: membership (storage._membership): invites, admissions, removals and sealed
workspace keys. Such objects of the workspace stream held before (stored, not interpreted)
are listed now."""

from __future__ import annotations

import sqlite3

from ._steps import script

# IF NOT EXISTS: tests/storage/test_migrations.py fakes older files by undoing the steps
# after the one it imitates, and keeps these tables.
SQL = """
CREATE TABLE IF NOT EXISTS membership (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS removed (key BLOB PRIMARY KEY, removal BLOB NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kept (id BLOB PRIMARY KEY) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS unkept (oid INTEGER PRIMARY KEY REFERENCES objects (oid)
                                   ON DELETE CASCADE);
INSERT OR IGNORE INTO membership (oid) SELECT oid FROM objects
    WHERE type IN ('invite/create', 'invite/revoke', 'member/admit', 'member/kept',
                   'member/remove', 'workspace/key')
    AND stream = (SELECT value FROM meta WHERE key = 'workspace')
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
