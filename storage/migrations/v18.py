"""Version 18: what this computer keeps of each private channel's conversation as it last
computed it (storage._private_index), so a start shows the newest page without opening every
box again: each indexed message's place (shown in the channel or only in its thread; the time
of its own post, which orders the channel, where an import shows another) and the rest of
what it shows (its original text, files, thread, edits, reactions: CBOR), and per
channel a stamp of exactly what that conversation was computed from (its first `posts` posts
and the keys), with the ids its posts named that are no post yet (`pending`: CBOR). Local like
private_opened: filled by the app as it opens, never synced or offered to a peer."""

from __future__ import annotations

import sqlite3

from ._steps import script

COLUMNS = {"in_channel": "INTEGER NOT NULL DEFAULT 1", "posted": "INTEGER NOT NULL DEFAULT 0",
           "shown": "BLOB"}
SQL = """
CREATE INDEX IF NOT EXISTS private_opened_by_place ON private_opened (channel, posted, id);
CREATE TABLE IF NOT EXISTS private_kept (
    channel BLOB PRIMARY KEY,
    stamp BLOB NOT NULL,
    posts INTEGER NOT NULL,
    pending BLOB NOT NULL
) WITHOUT ROWID
"""


def migrate(conn: sqlite3.Connection) -> None:
    held = {row[1] for row in conn.execute("PRAGMA table_info(private_opened)")}
    for name, kind in COLUMNS.items():
        if name not in held:  # a file upgraded again from an older version holds them
            conn.execute(f"ALTER TABLE private_opened ADD COLUMN {name} {kind}")
    script(conn, SQL)
