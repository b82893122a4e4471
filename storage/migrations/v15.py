"""Version 15: authority follows signed objects (core.membership "Authority"). The root's
admin grants and revocations join the membership objects, `admins` becomes the view's
(removals and revocations end grants; today's code re-decides what a removal held before
changes), `admin_kept` lists what the end of a former admin's grant kept, and a tombstone
names its post's author, so a delete that stops counting can be lifted."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

SQL = """
CREATE TABLE IF NOT EXISTS admin_kept (id BLOB PRIMARY KEY) WITHOUT ROWID;
INSERT OR IGNORE INTO membership (oid) SELECT oid FROM objects
    WHERE type IN ('workspace/admin-grant', 'workspace/admin-revoke')
    AND stream = (SELECT value FROM meta WHERE key = 'workspace')
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    if "author" not in {row[1] for row in conn.execute("PRAGMA table_info(tombstones)")}:
        conn.execute("ALTER TABLE tombstones ADD COLUMN author BLOB")
    queue(conn, "authority", 15,
          when="EXISTS (SELECT 1 FROM objects WHERE type = 'member/remove')")
