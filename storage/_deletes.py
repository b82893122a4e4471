"""Deletes inside one ingest batch: which deletes count (the target's author, or an admin's
power, in the target's stream; never one its author's removal did not keep), honouring them
(the target purged, its item out of the reconciliation set, a tombstone), and re-deciding them
when their author's power changes. A collaborator of storage._ingest.Batch."""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import kinds
from core.objects import Object, decode_trusted

from . import items
from ._sql import chunks, placeholders

if TYPE_CHECKING:
    from ._ingest import Batch


class Deletes:
    def __init__(self, batch: Batch):
        self.batch = batch
        self.conn = batch.conn

    def delete(self, obj: Object, oid: int, *, record: bool = True) -> None:
        targets = obj.body["targets"]
        if record:
            self.conn.executemany(
                "INSERT OR IGNORE INTO delete_targets (target, delete_oid) VALUES (?, ?)",
                [(target, oid) for target in targets])
        for target in targets:
            self.honour(obj, target)

    def arrived_targets(self, ids: list[bytes]) -> None:
        """New objects that stored deletes already name: the delete still wins."""
        if self.conn.execute("SELECT 1 FROM delete_targets LIMIT 1").fetchone() is None:
            return
        for part in chunks(ids):
            rows = self.conn.execute(
                "SELECT o.raw, d.target FROM delete_targets d "
                "JOIN objects o ON o.oid = d.delete_oid "
                f"WHERE d.target IN ({placeholders(len(part))})", part).fetchall()
            for raw, target in rows:
                self.honour(decode_trusted(raw), target)

    def honour(self, delete: Object, target: bytes) -> None:
        """Drop `target` if `delete` may delete it: its author, or an admin, in its stream."""
        row = self.conn.execute(
            "SELECT oid, type, author, stream, raw FROM objects WHERE id = ?", (target,)
        ).fetchone()
        if row is None:
            return
        oid, kind, author, stream, raw = row
        if kind not in kinds.DELETABLE_KINDS or stream != delete.stream:
            return
        if not self.may_delete(delete, author):
            return
        obj = decode_trusted(raw)
        self.batch.purge(oid, obj)
        # The item leaves the reconciliation set with the content: the delete, which is in
        # it, tells peers; a peer that still sends the post sees it dropped on arrival here.
        items.remove_items(self.conn, [(obj.stream, obj.ts, target)])
        self.conn.execute(
            "INSERT OR IGNORE INTO tombstones (id, deleted_by, ts, author) VALUES (?, ?, ?, ?)",
            (target, delete.id, obj.ts, author))

    def may_delete(self, delete: Object, author: bytes) -> bool:
        """A delete counts from the target's author or with an admin's power, and never when
        its author's removal did not keep it."""
        if self.batch.removed_bit(delete.id, delete.author):
            return False
        return delete.author == author or self.batch.acts_as_admin(delete.author, delete.id)

    def redecide(self, key: bytes) -> None:
        """`key`'s power changed: their deletes that count now are honoured, and a tombstone
        left by one that no longer counts is lifted, so the post can be synced again (from a
        peer that never honoured it). Tombstones from before version 15 do not name their
        post's author: those are lifted only when the removal did not keep the delete."""
        deletes = [decode_trusted(raw) for (raw,) in self.conn.execute(
            "SELECT raw FROM objects WHERE author = ? AND type = 'post/delete'", (key,))]
        for delete in deletes:
            for target in delete.body["targets"]:
                tomb = self.conn.execute(
                    "SELECT ts, author FROM tombstones WHERE id = ? AND deleted_by = ?",
                    (target, delete.id)).fetchone()
                if tomb is None:
                    self.honour(delete, target)
                    continue
                ts, author = tomb
                if author is None and not self.batch.removed_bit(delete.id, delete.author):
                    continue
                if author is not None and self.may_delete(delete, author):
                    continue
                self.conn.execute("DELETE FROM tombstones WHERE id = ?", (target,))
                for (raw,) in self.conn.execute(  # another delete of it may still count
                        "SELECT o.raw FROM delete_targets d JOIN objects o "
                        "ON o.oid = d.delete_oid WHERE d.target = ? AND o.id != ?",
                        (target, delete.id)).fetchall():
                    other = decode_trusted(raw)
                    if author is not None and other.stream == delete.stream and \
                            self.may_delete(other, author):
                        self.conn.execute(
                            "INSERT INTO tombstones (id, deleted_by, ts, author) "
                            "VALUES (?, ?, ?, ?)", (target, other.id, ts, author))
                        break
