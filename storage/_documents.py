"""Documents' storage in a replica: their objects, this holder's branch keys, and the encrypted
cache of branch states (doc_keys, doc_cache). Objects of removed members that their removal
did not keep (storage._membership `unkept`) are left out, as if they had never arrived."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from ._sql import chunks, placeholders

if TYPE_CHECKING:
    from .replica import Replica


_COUNTED = "AND oid NOT IN (SELECT oid FROM unkept)"
# Objects are found by stream through the item index (storage.items), which sync keeps anyway:
# an index of objects by stream too cost every stored object a second insert.
_IN_STREAM = "id IN (SELECT id FROM items WHERE stream = ?)"
# A document's streams: its root's id, and its branches (doc/branch objects in the root's).
_DOC_STREAMS = ("(SELECT ?1 UNION ALL SELECT b.id FROM items i JOIN objects b ON b.id = i.id "
                "WHERE i.stream = ?1 AND b.type = 'doc/branch')")
_OF_DOCUMENT = f"(id = ?1 OR id IN (SELECT id FROM items WHERE stream IN {_DOC_STREAMS}))"


class DocumentStore:
    """`Replica.documents`: reads and writes through the replica's connection and lock."""

    __slots__ = ("_replica",)

    def __init__(self, replica: Replica):
        self._replica = replica

    def roots(self) -> list[bytes]:
        """Raw doc/root objects of the workspace's documents, oldest first."""
        return [row[0] for row in self._replica.conn.execute(
            f"SELECT raw FROM objects WHERE type = 'doc/root' AND {_IN_STREAM} {_COUNTED} "
            "ORDER BY ts, id",
            (self._replica.workspace.id,))]

    def objects(self, document: bytes) -> list[bytes]:
        """Every object of a document: its root, its root branch and its branches' commits."""
        return [row[0] for row in self._replica.conn.execute(
            f"SELECT raw FROM objects WHERE {_OF_DOCUMENT} {_COUNTED} ORDER BY ts, id",
            (document,))]

    def objects_after(self, document: bytes, after: int) -> tuple[list[bytes], int]:
        """The document's objects stored after row `after` (0: all of them, as `objects`) and
        the last of their rows (else `after`), so that a document open in memory takes in only
        what arrived since. Document objects are never deleted, so every row stored later is
        numbered after the last one read."""
        if after:
            # The rows after `after` are few: read them in order, not through the index.
            rows = self._replica.conn.execute(
                f"SELECT oid, raw FROM objects WHERE oid > ?2 AND (id = ?1 OR stream IN "
                f"{_DOC_STREAMS}) {_COUNTED}", (document, after)).fetchall()
        else:
            rows = self._replica.conn.execute(
                f"SELECT oid, raw FROM objects WHERE {_OF_DOCUMENT} {_COUNTED} ORDER BY ts, id",
                (document,)).fetchall()
        return [raw for _, raw in rows], max((oid for oid, _ in rows), default=after)

    def titles(self, document: bytes) -> list[bytes]:
        return [row[0] for row in self._replica.conn.execute(
            f"SELECT raw FROM objects WHERE type = 'doc/title' AND {_IN_STREAM} {_COUNTED}",
            (document,))]

    def left_out(self) -> int:
        """How many objects are left out (removed members' not kept): when it changes, what
        a document read before may hold is no longer what counts."""
        return self._replica.conn.execute("SELECT COUNT(*) FROM unkept").fetchone()[0]

    def branch_keys(self, branches: list[bytes]) -> list[tuple[bytes, int, bytes]]:
        """This holder's keys for these branches: (branch, epoch, key)."""
        out: list[tuple[bytes, int, bytes]] = []
        for part in chunks(branches):
            out.extend(self._replica.conn.execute(
                f"SELECT branch, epoch, key FROM doc_keys WHERE branch IN "
                f"({placeholders(len(part))})", part).fetchall())
        return out

    def save_branch_keys(self, keys: Iterable[tuple[bytes, int, bytes]]) -> None:
        with self._replica._write() as conn:
            conn.executemany("INSERT OR IGNORE INTO doc_keys (branch, epoch, key) "
                             "VALUES (?, ?, ?)", list(keys))

    def cached_state(self, branch: bytes) -> tuple[bytes, int, bytes, bytes] | None:
        """(heads, epoch, nonce, box) of the cached state of `branch`, if any."""
        return self._replica.conn.execute("SELECT heads, epoch, nonce, box FROM doc_cache "
                                          "WHERE branch = ?", (branch,)).fetchone()

    def save_cached_state(self, branch: bytes, heads: bytes, epoch: int, nonce: bytes,
                          box: bytes) -> None:
        with self._replica._write() as conn:
            conn.execute("INSERT INTO doc_cache (branch, heads, epoch, nonce, box) "
                         "VALUES (?, ?, ?, ?, ?) ON CONFLICT (branch) DO UPDATE SET "
                         "heads = excluded.heads, epoch = excluded.epoch, "
                         "nonce = excluded.nonce, box = excluded.box",
                         (branch, heads, epoch, nonce, box))
