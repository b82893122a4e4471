"""Version 14: objects are found by stream through the item index (storage.items), which
sync keeps anyway; an index of objects by stream too cost every stored object a second
insert (a joiner's writer spent 6 us an object less without it, at 1M posts)."""

from __future__ import annotations

import sqlite3

from ._steps import script

SQL = "DROP INDEX IF EXISTS objects_by_stream"


def migrate(conn: sqlite3.Connection) -> None:
    script(conn, SQL)
