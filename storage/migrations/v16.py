"""Version 16: the local index of what this computer opened in its private channels
(storage._private_index): each message it can read, its current text (after edits) and a
full-text index over it, so search finds private messages without opening every box. Local
like read marks: filled by the app as it opens, never synced or offered to a peer."""

from __future__ import annotations

import sqlite3

from ._steps import script

SQL = """
CREATE TABLE IF NOT EXISTS private_opened (
    sk INTEGER PRIMARY KEY,
    channel BLOB NOT NULL,
    id BLOB NOT NULL UNIQUE,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS private_opened_by_channel ON private_opened (channel, sk);
CREATE VIRTUAL TABLE IF NOT EXISTS private_fts USING fts5 (text, content='private_opened',
    content_rowid='sk', tokenize='unicode61 remove_diacritics 2')
"""


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
