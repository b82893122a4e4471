"""What a relay link holds of the replica under one epoch (sync.relay_client): every object's
opaque id and bucket, sealed on demand, and the negentropy set a round reconciles. Re-exported
by sync.relay_client."""

from __future__ import annotations

from bisect import insort

from core.objects import decode_trusted
from core.relay_seal import Envelope, EpochKeys, bucket_of
from storage import Replica
from storage.items import ItemReader

from .negentropy import VectorStorage
from .relay_wire import item_of


class HeldEnvelopes:
    """The replica's objects as one epoch names them to a relay: opaque id -> (id, bucket),
    and their sealed negentropy set. Kept by the link across its connections under one epoch,
    and brought up to date when the reconciliation index changed (its per-stream counts and
    sums, storage.items): objects stored since are added (by `objects.oid`), and only when the
    index's count and sum say something else happened (a delete) is the whole set read again."""

    def __init__(self, replica: Replica, keys: EpochKeys):
        self._replica = replica
        self.keys = keys
        self._version: object = None
        self._oid = 0  # the newest objects.oid taken in
        self._sum = 0  # the ids' sum, as the index keeps it (little-endian integers)
        self._held: dict[bytes, tuple[bytes, int]] = {}
        self._items: dict[bytes, int] = {}
        self._sorted: list[tuple[int, bytes]] = []  # negentropy items, kept in order
        self._storage: VectorStorage | None = None

    def _refresh(self) -> None:
        conn = self._replica.conn
        version = ItemReader(conn).streams()
        if version == self._version:
            return
        count, total = sum(row[2] for row in version), sum(row[3] for row in version)
        rows = conn.execute("SELECT oid, ts, id FROM objects WHERE oid > ? ORDER BY oid",
                            (self._oid,)).fetchall()
        fresh = [(ts, oid) for _, ts, oid in rows]
        fresh_sum = sum(int.from_bytes(oid, "little") for _, oid in fresh)
        # The index's count and sum of ids say whether adding these makes the set it holds
        # (anything else, a delete or a row id used again, has the whole set read again).
        if self._version is not None and (len(self._held) + len(fresh),
                                          self._sum + fresh_sum) == (count, total):
            self._add(fresh)
            self._sum += fresh_sum
        else:
            self._held, self._items, self._sorted = {}, {}, []
            self._add([tuple(r) for r in conn.execute("SELECT ts, id FROM items")])
            self._sum = total
        if rows:
            self._oid = max(self._oid, rows[-1][0])
        else:
            self._oid = max(self._oid, conn.execute(
                "SELECT coalesce(max(oid), 0) FROM objects").fetchone()[0])
        self._storage = None
        self._version = version

    def _add(self, rows: list) -> None:
        opaque, many = self.keys.opaque, len(rows) > 64
        for ts, oid in rows:
            name, bucket = opaque(oid), bucket_of(ts)
            if name in self._held:
                continue
            self._held[name] = (oid, bucket)
            self._items[name] = bucket
            if many:
                self._sorted.append(item_of(bucket, name))
            else:
                insort(self._sorted, item_of(bucket, name))
        if many:
            self._sorted.sort()  # nearly in order: timsort's linear case

    def items(self) -> dict[bytes, int]:
        self._refresh()
        return self._items

    def storage(self) -> VectorStorage:
        """The items as a sealed negentropy set (built once per change, from items kept in
        order)."""
        self._refresh()
        if self._storage is None:
            self._storage = VectorStorage.sealed(self._sorted)
        return self._storage

    def deleted(self) -> frozenset[bytes]:
        """The opaque ids of objects deleted here (not to be fetched again each round)."""
        rows = self._replica.conn.execute("SELECT id FROM tombstones").fetchall()
        return frozenset(self.keys.opaque(oid) for (oid,) in rows)

    def seal(self, opaques: list[bytes]) -> list[Envelope]:
        out = []
        for opaque in opaques:
            held = self._held.get(opaque)
            raw = self._replica.get(held[0]) if held else None
            if raw is not None:
                out.append(self.keys.seal(raw, decode_trusted(raw).ts))
        return out
