"""The work migrations queue for today's code (storage/migrations, `_steps.queue`), done once
the schema is current: indexing objects an older version stored without interpreting their
kinds, re-deciding what a removal changes, and rebuilding the reconciliation index. Each is
a function of the objects held, so doing it with today's rules is what ingest would do."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from core import kinds

from . import _membership, _origins, _private, items
from ._ingest import Batch, WorkspaceIdentity
from ._sql import placeholders
from .errors import StorageError


def _held(conn: sqlite3.Connection, types: tuple[str, ...]) -> list[tuple[int, bytes]]:
    """(oid, raw) of the objects of `types` held, oldest first."""
    return conn.execute(f"SELECT oid, raw FROM objects WHERE type IN ({placeholders(len(types))}) "
                        "ORDER BY oid", types).fetchall()


def _items(batch: Batch) -> None:
    conn, ws = batch.conn, batch.ws.id
    rows = [(stream, ts, oid, kinds.stream_class(kind, stream, ws))
            for stream, ts, oid, kind in conn.execute("SELECT stream, ts, id, type FROM objects")]
    rows += conn.execute("SELECT stream, ts, id, class FROM refused").fetchall()
    items.rebuild(conn, rows)


def _conversation(batch: Batch) -> None:
    # Indexed as version 8 did, before moderators' hides: the "moderation" fix-up follows.
    batch.reindex(_held(batch.conn, ("post/reply", "post/edit", "post/react")))


def _moderation(batch: Batch) -> None:
    batch.reindex_moderation(_held(batch.conn, ("mod/role", "mod/hide")))


def _private_channels(batch: Batch) -> None:
    _private.reindex(batch.conn, batch.ws.id)


def _files(batch: Batch) -> None:
    batch.reindex(_held(batch.conn, ("post/file",)), moderation=True)


def _authority(batch: Batch) -> None:
    if changed := _membership.refresh(batch):  # removed admins are admins no more
        batch.redecide(changed)


def _origins_index(batch: Batch) -> None:
    _origins.reindex(batch.conn, batch.ws.id)


FIXUPS: dict[str, Callable[[Batch], None]] = {
    "items": _items, "conversation": _conversation, "moderation": _moderation,
    "private": _private_channels, "files": _files, "authority": _authority,
    "origins": _origins_index,
}


def run(conn: sqlite3.Connection, workspace: WorkspaceIdentity, now_ms: int) -> None:
    """Do the queued fix-ups in the order of the versions that queued them, each in its own
    transaction with its mark removed (another process may have done it meanwhile)."""
    queued = conn.execute("SELECT key FROM meta WHERE key LIKE 'fixup:%' "
                          "ORDER BY value, key").fetchall()
    for (key,) in queued:
        fixup = FIXUPS.get(key.removeprefix("fixup:"))
        if fixup is None:
            raise StorageError(f"unknown fix-up {key!r} queued in this replica")
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("DELETE FROM meta WHERE key = ? RETURNING 1", (key,)).fetchone():
                fixup(Batch(conn, workspace, now_ms))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
