"""Negentropy storage: the sealed item set a reconciliation reads, and range fingerprints.

Private to :mod:`sync.negentropy`, which re-exports the public names; import them from there.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from functools import partial
from itertools import accumulate, islice
from operator import add, eq
from typing import Protocol, runtime_checkable

from ._negentropy_wire import FINGERPRINT_SIZE, ID_SIZE, MAX_TIMESTAMP, Bound, Item, encode_varint

ID_MODULUS = 1 << 256
"""Ids are summed as 256-bit little-endian integers modulo this."""
_MASK = ID_MODULUS - 1
_from_little = partial(int.from_bytes, byteorder="little")
_to_little = partial(int.to_bytes, length=ID_SIZE, byteorder="little")


def id_to_int(item_id: bytes) -> int:
    """An id as the 256-bit little-endian integer that fingerprints sum."""
    return int.from_bytes(item_id, "little")


def fingerprint_from_sum(id_sum: int, count: int) -> bytes:
    """Fingerprint of a range from the sum of its ids (as from :func:`id_to_int`) and its size."""
    data = (id_sum % ID_MODULUS).to_bytes(ID_SIZE, "little") + encode_varint(count)
    return hashlib.sha256(data).digest()[:FINGERPRINT_SIZE]


@runtime_checkable
class NegentropyStorage(Protocol):
    """A sealed, sorted set of items; mirrors the reference's storage interface.

    Indices are positions in the sort order; ``end`` is exclusive.
    """

    def size(self) -> int:
        """Number of items."""
        ...

    def get_item(self, i: int) -> Item:
        """The item at position ``i``."""
        ...

    def iterate(self, begin: int, end: int) -> Iterable[Item]:
        """Items at positions ``begin`` to ``end``, in order."""
        ...

    def find_lower_bound(self, begin: int, end: int, bound: Bound) -> int:
        """First position in ``[begin, end)`` whose item is not below ``bound``, else ``end``."""
        ...

    def fingerprint(self, begin: int, end: int) -> bytes:
        """Fingerprint of the items at positions ``begin`` to ``end``."""
        ...


class VectorStorage:
    """In-memory storage: ``insert`` items, ``seal``, then use.

    Sealed data is three flat buffers, so the garbage collector never walks per-item objects:
    timestamps in an ``array('Q')`` (fast bisection), ids concatenated in one ``bytes``, and
    the running sums of the ids (32 bytes each, little-endian, mod 2**256), which make
    :meth:`fingerprint` O(1).
    """

    def __init__(self) -> None:
        self._pending: list[Item] = []
        self._timestamps = array("Q")
        self._ids = b""
        self._sums = bytes(ID_SIZE)
        self._sealed = False

    def insert(self, timestamp: int, item_id: bytes) -> None:
        """Add an item; only before :meth:`seal`."""
        if self._sealed:
            raise RuntimeError("storage already sealed")
        if not 0 <= timestamp < MAX_TIMESTAMP:
            raise ValueError(f"timestamp out of range: {timestamp}")
        if len(item_id) != ID_SIZE:
            raise ValueError(f"id must be {ID_SIZE} bytes, got {len(item_id)}")
        self._pending.append((timestamp, bytes(item_id)))

    @classmethod
    def sealed(cls, items: list[Item]) -> VectorStorage:
        """A sealed storage of `items` at once (sorted in place), checked as a whole: what a
        large set costs is the C loops of sort, join and the running sums, not a call each."""
        if items and not (all(0 <= ts < MAX_TIMESTAMP for ts, _ in items)
                          and all(len(item_id) == ID_SIZE for _, item_id in items)):
            raise ValueError("an item's timestamp is out of range or its id not "
                             f"{ID_SIZE} bytes")
        storage = cls()
        storage._pending = items
        storage.seal()
        return storage

    def seal(self) -> None:
        """Sort the items, reject duplicates, and build the running sums of the ids."""
        if self._sealed:
            raise RuntimeError("storage already sealed")
        items = self._pending
        items.sort()
        if any(map(eq, items, islice(items, 1, None))):
            raise ValueError("duplicate item inserted")
        self._timestamps = array("Q", [ts for ts, _ in items])
        ids = [item_id for _, item_id in items]
        self._ids = b"".join(ids)
        # The running sums, every step a C call (no Python frame an item): summed unbounded,
        # then each taken mod 2**256 as it is written.
        sums = accumulate(map(_from_little, ids), add, initial=0)
        self._sums = b"".join(map(_to_little, map(_MASK.__and__, sums)))
        self._pending = []
        self._sealed = True

    def size(self) -> int:
        self._check_sealed()
        return len(self._timestamps)

    def get_item(self, i: int) -> Item:
        self._check_sealed()
        if not 0 <= i < len(self._timestamps):
            raise IndexError(f"item {i} out of range")
        return (self._timestamps[i], self._ids[i * ID_SIZE : (i + 1) * ID_SIZE])

    def iterate(self, begin: int, end: int) -> list[Item]:
        self._check_range(begin, end)
        ids = self._ids
        offsets = range(begin * ID_SIZE, end * ID_SIZE, ID_SIZE)
        return [
            (ts, ids[o : o + ID_SIZE])
            for ts, o in zip(self._timestamps[begin:end], offsets, strict=True)
        ]

    def find_lower_bound(self, begin: int, end: int, bound: Bound) -> int:
        self._check_range(begin, end)
        timestamps = self._timestamps
        lo = bisect_left(timestamps, bound.timestamp, begin, end)
        if not bound.id_prefix or lo == end or timestamps[lo] != bound.timestamp:
            return lo
        hi = bisect_right(timestamps, bound.timestamp, lo, end)
        ids, prefix = self._ids, bound.id_prefix
        while lo < hi:  # bisect the ids of the items sharing the bound's timestamp
            mid = (lo + hi) // 2
            if ids[mid * ID_SIZE : (mid + 1) * ID_SIZE] < prefix:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def fingerprint(self, begin: int, end: int) -> bytes:
        self._check_range(begin, end)
        sums = self._sums
        total = int.from_bytes(sums[end * ID_SIZE : (end + 1) * ID_SIZE], "little")
        total -= int.from_bytes(sums[begin * ID_SIZE : (begin + 1) * ID_SIZE], "little")
        return fingerprint_from_sum(total, end - begin)

    def _check_sealed(self) -> None:
        if not self._sealed:
            raise RuntimeError("storage not sealed")

    def _check_range(self, begin: int, end: int) -> None:
        self._check_sealed()
        if not 0 <= begin <= end <= len(self._timestamps):
            raise ValueError(f"bad range [{begin}, {end}) for {len(self._timestamps)} items")
