"""The replica's schema version (PRAGMA user_version): refusing files this code must not touch,
and upgrading older ones by the frozen migrations of storage/migrations."""

from __future__ import annotations

import sqlite3

from .errors import SchemaError
from .migrations import MIGRATIONS

SCHEMA_VERSION = len(MIGRATIONS)


def _newer(version: int) -> SchemaError:
    return SchemaError(
        f"this replica was written by a newer Hearth (schema {version}, this version "
        f"reads up to {SCHEMA_VERSION}); upgrade Hearth to open it")


def check_version(conn: sqlite3.Connection, path: object) -> None:
    """Raise SchemaError for a file this code must not touch: not a Hearth replica, or newer."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise _newer(version)
    ours = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if version == 0 or not ours:
        raise SchemaError(f"{path} is not a Hearth replica")


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database to `target`, one transaction per step; return the version reached.
    What the steps queued for today's code is done by storage._fixups.run."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise _newer(version)
    while version < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < target:
                MIGRATIONS[version](conn)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version
