"""Version 5: documents. Their objects are ordinary objects (found by stream); this holder's
branch keys and its encrypted cache of a branch's state at its heads are local, never synced."""

from __future__ import annotations

import sqlite3

from ._steps import script

SQL = """
CREATE INDEX objects_by_stream ON objects (stream, ts);
CREATE TABLE doc_keys (branch BLOB NOT NULL, epoch INTEGER NOT NULL, key BLOB NOT NULL,
                       PRIMARY KEY (branch, epoch, key)) WITHOUT ROWID;
CREATE TABLE doc_cache (branch BLOB PRIMARY KEY, heads BLOB NOT NULL, epoch INTEGER NOT NULL,
                        nonce BLOB NOT NULL, box BLOB NOT NULL) WITHOUT ROWID
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
