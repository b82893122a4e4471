"""Version 7: deletions rest on signed delete objects alone. Tombstones taken on a peer's
word (deleted_by empty) are dropped, and tombstoned ids leave the reconciliation set (today's
code rebuilds it). Purging an object looks up the deletes that name it by their own oid."""

from __future__ import annotations

import sqlite3

from ._steps import queue, script

SQL = """
CREATE INDEX delete_targets_by_delete ON delete_targets (delete_oid);
DELETE FROM tombstones WHERE deleted_by = x''
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
    queue(conn, "items", 7, when="EXISTS (SELECT 1 FROM objects)")
