"""The reconciliation index: every stored id, as (ts, id) items.

Sync reconciles this set with negentropy (docs/ARCHITECTURE.md "Sync"). Deleted posts leave it
with their content: the signed delete objects, which stay, are what carries a deletion to
peers, so no peer's word about a deletion is ever needed (docs/SECURITY.md). Range fingerprints need the sum
of the ids in a range; rather than scanning, ingest keeps per-bucket counts and sums (one
bucket per 2^20 ms of `ts`), with each 256-bit id split into eight 32-bit lanes so the sums
never overflow SQLite's 64-bit integers. sync.store reads it through an `ItemReader`: whole
buckets are summed from memory and only the items of the (at most two) buckets at a range's
edges are read.
"""

from __future__ import annotations

import sqlite3
import struct
from collections.abc import Iterable

BUCKET_SHIFT = 20  # part of the file format: buckets of 2^20 ms (17.5 minutes)
LANES = 8
_LANES = struct.Struct("<8I")
_LANE_COLUMNS = ", ".join(f"l{k}" for k in range(LANES))

LANE_COLUMNS = _LANE_COLUMNS
SCHEMA = f"""
CREATE TABLE items (ts INTEGER NOT NULL, id BLOB NOT NULL, PRIMARY KEY (ts, id)) WITHOUT ROWID;
CREATE TABLE item_buckets (
    bucket INTEGER PRIMARY KEY, count INTEGER NOT NULL,
    {", ".join(f"l{k} INTEGER NOT NULL" for k in range(LANES))}
);
INSERT INTO items (ts, id) SELECT ts, id FROM objects;
INSERT INTO items (ts, id) SELECT ts, id FROM tombstones WHERE ts IS NOT NULL
"""


def lanes_to_int(lanes: Iterable[int]) -> int:
    """A bucket's lane sums as one integer: the (unreduced) sum of its ids."""
    total = 0
    for k, lane in enumerate(lanes):
        total += lane << (32 * k)
    return total


def _bucket_sums(items: Iterable[tuple[int, bytes]]) -> dict[int, list[int]]:
    """Per bucket: [count, lane sums...] of these items."""
    buckets: dict[int, list[int]] = {}
    for ts, item_id in items:
        acc = buckets.get(ts >> BUCKET_SHIFT)
        if acc is None:
            acc = buckets[ts >> BUCKET_SHIFT] = [0] * (LANES + 1)
        acc[0] += 1
        for k, lane in enumerate(_LANES.unpack(item_id), 1):
            acc[k] += lane
    return buckets


def add_items(conn: sqlite3.Connection, items: Iterable[tuple[int, bytes]]) -> None:
    """Add (ts, id) items that are not in the set yet (inside the ingest transaction)."""
    items = list(items)
    if not items:
        return
    conn.executemany("INSERT INTO items (ts, id) VALUES (?, ?)", items)
    updates = ", ".join(f"l{k} = l{k} + excluded.l{k}" for k in range(LANES))
    conn.executemany(
        f"INSERT INTO item_buckets (bucket, count, {_LANE_COLUMNS}) "
        f"VALUES (?, ?, {', '.join('?' * LANES)}) "
        f"ON CONFLICT (bucket) DO UPDATE SET count = count + excluded.count, {updates}",
        [(bucket, *acc) for bucket, acc in _bucket_sums(items).items()])


def remove_items(conn: sqlite3.Connection, items: Iterable[tuple[int, bytes]]) -> None:
    """Remove (ts, id) items from the set, if there (inside the ingest transaction)."""
    gone = [(ts, item_id) for ts, item_id in items if conn.execute(
        "DELETE FROM items WHERE ts = ? AND id = ? RETURNING 1", (ts, item_id)).fetchone()]
    updates = ", ".join(f"l{k} = l{k} - ?" for k in range(LANES))
    conn.executemany(f"UPDATE item_buckets SET count = count - ?, {updates} WHERE bucket = ?",
                     [(*acc, bucket) for bucket, acc in _bucket_sums(gone).items()])


def rebuild_buckets(conn: sqlite3.Connection) -> None:
    """Recompute every bucket from the items (after a migration filled the items table)."""
    conn.execute("DELETE FROM item_buckets")
    rows = conn.execute("SELECT ts, id FROM items").fetchall()
    conn.execute("DELETE FROM items")
    add_items(conn, rows)


class ItemReader:
    """Reads the index through `conn`, which the caller keeps in one read transaction while
    the reader is used; answers plain tuples."""

    __slots__ = ("_conn",)

    def __init__(self, conn: sqlite3.Connection):
        self._conn = conn

    def version(self) -> tuple[int, int]:
        """Changes whenever the index may have: another connection committed to the file, or
        this one wrote."""
        return self._conn.execute("PRAGMA data_version").fetchone()[0], self._conn.total_changes

    def buckets(self) -> list[tuple[int, int, int]]:
        """(bucket, count, unreduced sum of ids) of every non-empty bucket, in order."""
        rows = self._conn.execute(
            f"SELECT bucket, count, {_LANE_COLUMNS} FROM item_buckets WHERE count > 0 "
            "ORDER BY bucket").fetchall()
        return [(row[0], row[1], lanes_to_int(row[2:])) for row in rows]

    def bucket_items(self, bucket: int) -> list[tuple[int, bytes]]:
        """The (ts, id) items of `bucket`, in order."""
        lo = bucket << BUCKET_SHIFT
        return self._conn.execute(
            "SELECT ts, id FROM items WHERE ts BETWEEN ? AND ? ORDER BY ts, id",
            (lo, lo + (1 << BUCKET_SHIFT) - 1)).fetchall()
