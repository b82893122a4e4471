"""Version 6: what this person has read, per channel (local, never synced)."""

from __future__ import annotations

import sqlite3

from ._steps import script

SQL = """
CREATE TABLE read_marks (channel TEXT PRIMARY KEY, ts INTEGER NOT NULL, id BLOB NOT NULL)
WITHOUT ROWID
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
