"""The two helpers every migration uses. Frozen like the migrations: a change here changes
every shipped step, so it never changes."""

from __future__ import annotations

import sqlite3


def script(conn: sqlite3.Connection, sql: str) -> None:
    """Run `sql`, statements separated by ";" at a line's end, in the caller's transaction."""
    for statement in sql.split(";\n"):
        if statement.strip():
            conn.execute(statement)


def queue(conn: sqlite3.Connection, fixup: str, version: int, *, when: str = "1") -> None:
    """Ask today's code (storage._fixups) to do `fixup` once the schema is current, if the SQL
    condition `when` holds now. Re-deciding objects with the rules of the day is code, not
    schema: the migration names the work, and never runs live code itself."""
    conn.execute("INSERT INTO meta (key, value) SELECT ?, ? WHERE " + when +
                 " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                 (f"fixup:{fixup}", version))
