"""The delivery outbox of a replica: objects in storage order, and how far they reached a peer."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._sql import chunks, placeholders

if TYPE_CHECKING:
    from .replica import Replica


class Outbox:
    """`Replica.outbox`: reads and writes through the replica's connection and lock.

    Sequence numbers are storage order (they grow with every stored object); the delivered
    mark is kept in the replica's meta table."""

    __slots__ = ("_replica",)

    def __init__(self, replica: Replica):
        self._replica = replica

    def last_sequence(self) -> int:
        """Storage sequence number of the newest object (grows with every stored object)."""
        with self._replica._lock:
            return self._replica.conn.execute(
                "SELECT COALESCE(MAX(oid), 0) FROM objects").fetchone()[0]

    def stored_since(self, sequence: int, limit: int
                     ) -> list[tuple[int, bytes, bytes, int]]:
        """(sequence, id, stream, stream class) of objects stored after `sequence`, oldest
        first (their raw objects: `raws`, read only for a peer that gets them)."""
        with self._replica._lock:
            return self._replica.conn.execute(
                "SELECT o.oid, o.id, o.stream, coalesce(s.class, 0) FROM objects o "
                "LEFT JOIN item_streams s ON s.stream = o.stream "
                "WHERE o.oid > ? ORDER BY o.oid LIMIT ?", (sequence, limit)).fetchall()

    def raws(self, sequences: list[int]) -> dict[int, bytes]:
        """The raw objects stored under these sequence numbers (a purged one is absent)."""
        found: dict[int, bytes] = {}
        with self._replica._lock:
            for part in chunks(sequences):
                found.update(self._replica.conn.execute(
                    f"SELECT oid, raw FROM objects WHERE oid IN ({placeholders(len(part))})",
                    part))
        return found

    def delivered_sequence(self) -> int:
        """Objects up to this storage sequence number have reached at least one peer."""
        with self._replica._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'delivered'").fetchone()
        return int(row[0]) if row else 0

    def set_delivered(self, sequence: int) -> None:
        with self._replica._write() as conn:
            conn.execute("INSERT INTO meta (key, value) VALUES ('delivered', ?) ON CONFLICT (key) "
                         "DO UPDATE SET value = MAX(CAST(value AS INTEGER), excluded.value)",
                         (sequence,))

    def undelivered(self, author: bytes) -> set[bytes]:
        """Ids of `author`'s objects that no peer has received yet."""
        with self._replica._read() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'delivered'").fetchone()
            return {r[0] for r in conn.execute(
                "SELECT id FROM objects WHERE oid > ? AND author = ?",
                (int(row[0]) if row else 0, author))}
