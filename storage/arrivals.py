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
