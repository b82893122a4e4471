"""What a sync session reads and writes: the Store protocol, and its two implementations.

`ReplicaStore` serves a real replica (SQLite); `MemoryStore` is an in-memory set of objects for
wiring two protocol peers together in tests. Ingesting is not here: received objects leave the
session as events and take the one path of data (the Node calls Replica.ingest).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from itertools import accumulate
from typing import NamedTuple, Protocol

from core.kinds import stream_class
from core.objects import Object, decode
from storage import Replica
from storage.items import BUCKET_SHIFT, ItemReader

from .negentropy import (
    MAX_TIMESTAMP,
    Bound,
    NegentropyStorage,
    VectorStorage,
    fingerprint_from_sum,
)

MAX_CACHED_SNAPSHOTS = 32  # streams whose snapshots a store keeps between steps
MAX_CACHED_BUCKETS = 64  # buckets' items a snapshot keeps (a big id list reads them all once)


FLIP = MAX_TIMESTAMP - 1
"""Newest first: an item (ts, id) takes part as (FLIP - ts, id), so ascending order, which
negentropy's ranges follow, is newest first (ids ascending within a timestamp)."""


class StreamInfo(NamedTuple):
    """One stream of the reconciled set: its class (core.kinds.stream_class), how many items
    it holds, their fingerprint (as negentropy's of the whole stream) and the newest ts."""

    klass: int
    count: int  # type: ignore[assignment]  # (mypy: a field named like tuple.count)
    fingerprint: bytes
    newest: int


class Store(Protocol):
    def streams(self) -> dict[bytes, StreamInfo]:
        """Every stream held, with its summary."""
        ...

    def snapshot(self, stream: bytes, *, newest_first: bool = False
                 ) -> AbstractContextManager[NegentropyStorage]:
        """One stream's items (the ids held), sealed, for one step; newest first: see FLIP."""
        ...

    def missing(self, ids: list[bytes]) -> list[bytes]:
        """For ids a peer asks for: the raw objects held (ids not held are left out)."""
        ...


class ReplicaStore:
    """A Store over a Replica."""

    def __init__(self, replica: Replica):
        self.replica = replica
        # Per (stream, direction): the snapshot and the index version it was read at.
        self._cached: dict[tuple[bytes, bool], tuple[tuple[int, int], ItemSnapshot]] = {}

    def streams(self) -> dict[bytes, StreamInfo]:
        with self.replica.reconciliation.reader() as reader:
            return {stream: StreamInfo(klass, count, fingerprint_from_sum(total, count), newest)
                    for stream, klass, count, total, newest in reader.streams()}

    @contextmanager
    def snapshot(self, stream: bytes, *, newest_first: bool = False
                 ) -> Iterator[NegentropyStorage]:
        """A snapshot, reused while nothing was written (each step of a round asks again)."""
        with self.replica.reconciliation.reader() as reader:
            key = reader.version()
            cached = self._cached.get((stream, newest_first))
            if cached is not None and cached[0] == key:
                snapshot = cached[1].rebind(reader)
            else:
                if len(self._cached) >= MAX_CACHED_SNAPSHOTS:
                    self._cached.clear()
                snapshot = ItemSnapshot(reader, stream, newest_first=newest_first)
                self._cached[(stream, newest_first)] = (key, snapshot)
            yield snapshot

    def missing(self, ids: list[bytes]) -> list[bytes]:
        return self.replica.reconciliation.missing(ids)


class MemoryStore:
    """A Store over objects held in memory (tests and benchmarks of the protocol alone)."""

    def __init__(self, objects: Iterable[Object | bytes] = (), *, workspace: bytes = b""):
        self.objects: dict[bytes, Object] = {}
        self.workspace = workspace
        self.add(objects)

    def add(self, objects: Iterable[Object | bytes]) -> None:
        for obj in objects:
            obj = obj if isinstance(obj, Object) else decode(obj)
            self.objects[obj.id] = obj

    def streams(self) -> dict[bytes, StreamInfo]:
        found: dict[bytes, list[int]] = {}
        for obj in self.objects.values():
            klass = stream_class(obj.type, obj.stream, self.workspace)
            acc = found.setdefault(obj.stream, [klass, 0, 0, 0])
            acc[0] = min(acc[0], klass)  # workspace-level once any object says so
            acc[1] += 1
            acc[2] += int.from_bytes(obj.id, "little")
            acc[3] = max(acc[3], obj.ts)
        return {stream: StreamInfo(klass, count, fingerprint_from_sum(total, count), newest)
                for stream, (klass, count, total, newest) in found.items()}

    @contextmanager
    def snapshot(self, stream: bytes, *, newest_first: bool = False
                 ) -> Iterator[NegentropyStorage]:
        storage = VectorStorage()
        for obj in self.objects.values():
            if obj.stream == stream:
                storage.insert(FLIP - obj.ts if newest_first else obj.ts, obj.id)
        storage.seal()
        yield storage

    def missing(self, ids: list[bytes]) -> list[bytes]:
        return [self.objects[i].raw for i in ids if i in self.objects]


class ItemSnapshot:
    """One stream of the replica's reconciliation index (storage.items) as a sealed
    NegentropyStorage, oldest or newest first.

    Reads through `reader`, whose read transaction the caller keeps while it is used.
    Whole buckets are summed in memory; only edge buckets' items are read, and cached.
    """

    def __init__(self, reader: ItemReader, stream: bytes, *, newest_first: bool = False):
        self._reader = reader
        self._stream = stream
        self._newest_first = newest_first
        buckets = reader.buckets(stream)
        if newest_first:
            buckets.reverse()
        self._buckets = [bucket for bucket, _, _ in buckets]
        # Ascending whichever the direction, for bisection: newest first, a bucket's key is
        # minus its number.
        self._keys = [-b for b in self._buckets] if newest_first else self._buckets
        # starts[k]: position of bucket k's first item; sums[k]: sum of ids before it.
        self._starts = list(accumulate((count for _, count, _ in buckets), initial=0))
        self._sums = list(accumulate((total for _, _, total in buckets), initial=0))
        # Edge buckets read, the most recently used last (at most MAX_CACHED_BUCKETS).
        self._cache: OrderedDict[int, tuple[list[tuple[int, bytes]], list[int]]] = OrderedDict()

    def rebind(self, reader: ItemReader) -> ItemSnapshot:
        """Use this (unchanged) snapshot through a new read transaction."""
        self._reader = reader
        return self

    def _bucket_items(self, k: int) -> tuple[list[tuple[int, bytes]], list[int]]:
        """Bucket k's items in order, and the running sums of their ids."""
        found = self._cache.get(k)
        if found is not None:
            self._cache.move_to_end(k)
        else:
            items = self._reader.bucket_items(self._stream, self._buckets[k],
                                              newest_first=self._newest_first)
            if self._newest_first:
                items = [(FLIP - ts, item_id) for ts, item_id in items]
            sums = list(accumulate((int.from_bytes(i, "little") for _, i in items), initial=0))
            if len(items) != self._starts[k + 1] - self._starts[k]:
                raise RuntimeError("the item index changed under a snapshot")
            found = self._cache[k] = (items, sums)
            if len(self._cache) > MAX_CACHED_BUCKETS:
                self._cache.popitem(last=False)
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
        if self._newest_first:
            ts = FLIP - bound.timestamp
            if ts < 0:  # beyond the oldest item (the infinity bound)
                return end
            bucket_key = -(ts >> BUCKET_SHIFT)
        else:
            bucket_key = bound.timestamp >> BUCKET_SHIFT
        k = bisect_left(self._keys, bucket_key)
        if k < len(self._keys) and self._keys[k] == bucket_key:
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
