"""What stored objects are, by id: their kind and stream, read together for a batch that just
arrived (the Node tells its subscribers what changed from them, app/events.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from ._sql import chunks, placeholders

if TYPE_CHECKING:
    from .replica import Replica


def kinds_and_streams(replica: Replica, ids: Sequence[bytes]) -> list[tuple[bytes, str, bytes]]:
    """(id, kind, stream) of each of `ids` held here, in no particular order (one purged
    meanwhile is left out)."""
    found: list[tuple[bytes, str, bytes]] = []
    with replica._lock:
        conn = replica.conn
        for part in chunks(ids):
            found.extend(conn.execute(
                f"SELECT id, type, stream FROM objects WHERE id IN ({placeholders(len(part))})",
                part))
    return found


NEW_MESSAGE_KINDS = ("post/text", "post/reply", "post/file", "post/sealed")


def new_messages(replica: Replica, ids: Sequence[bytes], since_ts: int,
                 me: bytes) -> list[bytes]:
    """Those of `ids` that are messages (not edits, reactions or deletions) by someone other
    than `me`, dated `since_ts` or later: what may notify (app/notify_watch.py), read in one
    query a chunk so that history streaming in costs no look-up per object."""
    found: list[bytes] = []
    kinds = placeholders(len(NEW_MESSAGE_KINDS))
    with replica._lock:
        conn = replica.conn
        for part in chunks(ids):
            found.extend(row[0] for row in conn.execute(
                f"SELECT id FROM objects WHERE id IN ({placeholders(len(part))}) "
                f"AND type IN ({kinds}) AND author != ? AND ts >= ?",
                (*part, *NEW_MESSAGE_KINDS, me, since_ts)))
    return found
