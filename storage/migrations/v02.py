"""Version 2: full-text search over message text (external content: the messages table)."""

from __future__ import annotations

import sqlite3

from ._steps import script

SQL = """
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content='messages', content_rowid='oid', tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
