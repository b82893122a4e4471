"""The reconciliation index: every stored id, as (stream, ts, id) items.

Sync reconciles this set with negentropy, one stream at a time (docs/ARCHITECTURE.md "Sync").
Deleted posts leave it with their content: the signed delete objects, which stay, are what
carries a deletion to peers, so no peer's word about a deletion is ever needed
(docs/SECURITY.md). Range fingerprints need the sum of the ids in a range; rather than
scanning, ingest keeps per-bucket counts and sums (one bucket per stream and 2^20 ms of `ts`),
with each 256-bit id split into eight 32-bit lanes so the sums never overflow SQLite's 64-bit
integers, and the same per stream (`item_streams`, with the stream's class: which streams a
member who keeps only some channels and documents still syncs). sync.store reads it through an
`ItemReader`: whole buckets are summed from memory and only the items of the (at most two)
buckets at a range's edges are read.
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
# Tables: storage/migrations/v13.py (items, item_buckets, item_streams).

Item = tuple[bytes, int, bytes, int]
"""(stream, ts, id, class): class as core.kinds.stream_class."""


def lanes_to_int(lanes: Iterable[int]) -> int:
    """Lane sums as one integer: the (unreduced) sum of the ids."""
    total = 0
    for k, lane in enumerate(lanes):
        total += lane << (32 * k)
    return total


def _lane_sums(ids: list[bytes]) -> list[int]:
    """[count, lane sums...] of these ids (the columns summed in C, not id by id)."""
    return [len(ids), *map(sum, zip(*_LANES.iter_unpack(b"".join(ids)), strict=True))]


def _sums(items: Iterable[Item]) -> tuple[dict[tuple[bytes, int], list[int]],
                                          dict[bytes, list[int]]]:
    """Per (stream, bucket) and per stream: [count, lane sums...] (per stream also the
    newest ts and the class) of these items."""
    ids: dict[tuple[bytes, int], list[bytes]] = {}
    newest: dict[bytes, list[int]] = {}  # stream -> [newest ts, class]
    for stream, ts, item_id, klass in items:
        key = (stream, ts >> BUCKET_SHIFT)
        found = ids.get(key)
        if found is None:
            ids[key] = [item_id]
        else:
            found.append(item_id)
        extra = newest.get(stream)
        if extra is None:
            newest[stream] = [ts, klass]
        else:
            if ts > extra[0]:
                extra[0] = ts
            if klass < extra[1]:
                extra[1] = klass
    buckets = {key: _lane_sums(found) for key, found in ids.items()}
    streams: dict[bytes, list[int]] = {}
    for (stream, _), acc in buckets.items():
        total = streams.get(stream)
        if total is None:
            streams[stream] = [*acc, *newest[stream]]
        else:
            for k in range(LANES + 1):
                total[k] += acc[k]
    return buckets, streams


def add_items(conn: sqlite3.Connection, items: Iterable[Item]) -> None:
    """Add (stream, ts, id, class) items that are not in the set yet (inside the ingest
    transaction)."""
    items = list(items)
    if not items:
        return
    conn.executemany("INSERT INTO items (stream, ts, id) VALUES (?, ?, ?)",
                     [item[:3] for item in items])
    buckets, streams = _sums(items)
    updates = ", ".join(f"l{k} = l{k} + excluded.l{k}" for k in range(LANES))
    values = ", ".join("?" * LANES)
    conn.executemany(
        f"INSERT INTO item_buckets (stream, bucket, count, {_LANE_COLUMNS}) "
        f"VALUES (?, ?, ?, {values}) "
        f"ON CONFLICT (stream, bucket) DO UPDATE SET count = count + excluded.count, {updates}",
        [(*key, *acc) for key, acc in buckets.items()])
    # A stream is workspace-level (class 0) once any of its objects says so.
    conn.executemany(
        f"INSERT INTO item_streams (stream, count, {_LANE_COLUMNS}, newest, class) "
        f"VALUES (?, ?, {values}, ?, ?) "
        f"ON CONFLICT (stream) DO UPDATE SET count = count + excluded.count, {updates}, "
        "newest = max(newest, excluded.newest), class = min(class, excluded.class)",
        [(stream, *acc) for stream, acc in streams.items()])


def remove_items(conn: sqlite3.Connection, items: Iterable[tuple[bytes, int, bytes]]) -> None:
    """Remove (stream, ts, id) items from the set, if there (inside the ingest transaction).
    A stream's newest ts stays: it only orders streams."""
    gone = [(stream, ts, item_id, 0) for stream, ts, item_id in items if conn.execute(
        "DELETE FROM items WHERE stream = ? AND ts = ? AND id = ? RETURNING 1",
        (stream, ts, item_id)).fetchone()]
    if not gone:
        return
    buckets, streams = _sums(gone)
    updates = ", ".join(f"l{k} = l{k} - ?" for k in range(LANES))
    conn.executemany(
        f"UPDATE item_buckets SET count = count - ?, {updates} WHERE stream = ? AND bucket = ?",
        [(*acc, *key) for key, acc in buckets.items()])
    conn.executemany(
        f"UPDATE item_streams SET count = count - ?, {updates} WHERE stream = ?",
        [(*acc[:LANES + 1], stream) for stream, acc in streams.items()])


def rebuild(conn: sqlite3.Connection, rows: Iterable[Item]) -> None:
    """Replace the whole index by these items (a migration)."""
    for table in ("items", "item_buckets", "item_streams"):
        conn.execute(f"DELETE FROM {table}")  # noqa: S608 - our own table names
    batch: list[Item] = []
    for row in rows:
        batch.append(row)
        if len(batch) >= 50_000:
            add_items(conn, batch)
            batch = []
    add_items(conn, batch)


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

    def streams(self) -> list[tuple[bytes, int, int, int, int]]:
        """(stream, class, count, unreduced sum of ids, newest ts) of every stream held."""
        rows = self._conn.execute(
            f"SELECT stream, class, count, newest, {_LANE_COLUMNS} FROM item_streams "
            "WHERE count > 0").fetchall()
        return [(row[0], row[1], row[2], lanes_to_int(row[4:]), row[3]) for row in rows]

    def buckets(self, stream: bytes) -> list[tuple[int, int, int]]:
        """(bucket, count, unreduced sum of ids) of every non-empty bucket of `stream`, in
        order."""
        rows = self._conn.execute(
            f"SELECT bucket, count, {_LANE_COLUMNS} FROM item_buckets "
            "WHERE stream = ? AND count > 0 ORDER BY bucket", (stream,)).fetchall()
        return [(row[0], row[1], lanes_to_int(row[2:])) for row in rows]

    def bucket_items(self, stream: bytes, bucket: int, *, newest_first: bool = False
                     ) -> list[tuple[int, bytes]]:
        """The (ts, id) items of `stream` in `bucket`, by ts (newest first if asked) then id."""
        lo = bucket << BUCKET_SHIFT
        order = "ts DESC, id" if newest_first else "ts, id"
        return self._conn.execute(
            f"SELECT ts, id FROM items WHERE stream = ? AND ts BETWEEN ? AND ? ORDER BY {order}",
            (stream, lo, lo + (1 << BUCKET_SHIFT) - 1)).fetchall()
