"""What a sync session reads and writes: the Store protocol, and its two implementations.

`ReplicaStore` serves a real replica (SQLite); `MemoryStore` is an in-memory set of objects for
wiring two protocol peers together in tests. Ingesting is not here: received objects leave the
session as events and take the one path of data (the Node calls Replica.ingest).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from itertools import accumulate
from typing import Protocol

from core.objects import Object, decode
from storage import Replica
from storage.items import BUCKET_SHIFT, ItemReader

from .negentropy import Bound, NegentropyStorage, VectorStorage, fingerprint_from_sum


class Store(Protocol):
    def snapshot(self) -> AbstractContextManager[NegentropyStorage]:
        """The reconciliation set (the ids held), sealed, for one step."""
        ...

    def missing(self, ids: list[bytes]) -> list[bytes]:
        """For ids a peer asks for: the raw objects held (ids not held are left out)."""
        ...


class ReplicaStore:
    """A Store over a Replica."""

    def __init__(self, replica: Replica):
        self.replica = replica
        self._cached: tuple[tuple[int, int], ItemSnapshot] | None = None

    @contextmanager
    def snapshot(self) -> Iterator[NegentropyStorage]:
        """A snapshot, reused while nothing was written (each step of a round asks again)."""
        with self.replica.reconciliation.reader() as reader:
            key = reader.version()
            if self._cached is not None and self._cached[0] == key:
                snapshot = self._cached[1].rebind(reader)
            else:
                snapshot = ItemSnapshot(reader)
                self._cached = (key, snapshot)
            yield snapshot

    def missing(self, ids: list[bytes]) -> list[bytes]:
        return self.replica.reconciliation.missing(ids)


class MemoryStore:
    """A Store over objects held in memory (tests and benchmarks of the protocol alone)."""

    def __init__(self, objects: Iterable[Object | bytes] = ()):
        self.objects: dict[bytes, Object] = {}
        self.add(objects)

    def add(self, objects: Iterable[Object | bytes]) -> None:
        for obj in objects:
            obj = obj if isinstance(obj, Object) else decode(obj)
            self.objects[obj.id] = obj

    @contextmanager
    def snapshot(self) -> Iterator[NegentropyStorage]:
        storage = VectorStorage()
        for obj in self.objects.values():
            storage.insert(obj.ts, obj.id)
        storage.seal()
        yield storage

    def missing(self, ids: list[bytes]) -> list[bytes]:
        return [self.objects[i].raw for i in ids if i in self.objects]


class ItemSnapshot:
    """The replica's reconciliation index (storage.items) as a sealed NegentropyStorage.

    Reads through `reader`, whose read transaction the caller keeps while it is used.
    Whole buckets are summed in memory; only edge buckets' items are read, and cached.
    """

    def __init__(self, reader: ItemReader):
        self._reader = reader
        buckets = reader.buckets()
        self._buckets = [bucket for bucket, _, _ in buckets]
        # starts[k]: position of bucket k's first item; sums[k]: sum of ids before it.
        self._starts = list(accumulate((count for _, count, _ in buckets), initial=0))
        self._sums = list(accumulate((total for _, _, total in buckets), initial=0))
        self._cache: dict[int, tuple[list[tuple[int, bytes]], list[int]]] = {}

    def rebind(self, reader: ItemReader) -> ItemSnapshot:
        """Use this (unchanged) snapshot through a new read transaction."""
        self._reader = reader
        return self

    def _bucket_items(self, k: int) -> tuple[list[tuple[int, bytes]], list[int]]:
        """Bucket k's items in order, and the running sums of their ids."""
        found = self._cache.get(k)
        if found is None:
            items = self._reader.bucket_items(self._buckets[k])
            sums = list(accumulate((int.from_bytes(i, "little") for _, i in items), initial=0))
            if len(items) != self._starts[k + 1] - self._starts[k]:
                raise RuntimeError("the item index changed under a snapshot")
            found = self._cache[k] = (items, sums)
        return found

    def _locate(self, i: int) -> tuple[int, int]:
        k = bisect_right(self._starts, i) - 1
        return k, i - self._starts[k]

    def size(self) -> int:
        return self._starts[-1]

    def get_item(self, i: int) -> tuple[int, bytes]:
        if not 0 <= i < self.size():
            raise IndexError(f"item {i} out of range")
        k, offset = self._locate(i)
        return self._bucket_items(k)[0][offset]

    def iterate(self, begin: int, end: int) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        i = begin
        while i < end:
            k, offset = self._locate(i)
            items = self._bucket_items(k)[0]
            take = items[offset:offset + (end - i)]
            out.extend(take)
            i += len(take)
        return out

    def find_lower_bound(self, begin: int, end: int, bound: Bound) -> int:
        key = (bound.timestamp, bound.id_prefix)
        k = bisect_left(self._buckets, bound.timestamp >> BUCKET_SHIFT)
        if k < len(self._buckets) and self._buckets[k] == bound.timestamp >> BUCKET_SHIFT:
            items = self._bucket_items(k)[0]
            position = self._starts[k] + bisect_left(items, key)
        else:
            position = self._starts[k]
        return min(max(position, begin), end)

    def _prefix_sum(self, i: int) -> int:
        """Sum of the ids of the first i items."""
        if i >= self.size():
            return self._sums[-1]
        k, offset = self._locate(i)
        return self._sums[k] + self._bucket_items(k)[1][offset]

    def fingerprint(self, begin: int, end: int) -> bytes:
        return fingerprint_from_sum(self._prefix_sum(end) - self._prefix_sum(begin), end - begin)
