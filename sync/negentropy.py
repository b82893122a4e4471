"""Negentropy protocol V1: range-based set reconciliation, sans-I/O.

Wire-compatible with hoytech/negentropy (protocol byte 0x61). This module does no I/O and
reads no clocks: callers move the bytes.

Usage::

    client = Negentropy(client_storage)
    server = Negentropy(server_storage)
    msg = client.initiate()
    while msg is not None:
        reply = server.reconcile_server(msg)
        msg, have, need = client.reconcile_client(reply)

``have`` are ids only the client holds, ``need`` ids only the server holds. The two roles are
separate methods (instead of one ``reconcile`` with two return types) so each is typed
precisely. Malformed input raises :class:`NegentropyError`; misuse of the API (wrong role,
initiating twice) raises :class:`RuntimeError`.

Items are ``(timestamp, id)`` tuples: timestamps in ``[0, 2**64 - 2]`` (``2**64 - 1`` is the
protocol's infinity), 32-byte ids, sorted by timestamp then id.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from itertools import accumulate, islice
from operator import eq
from typing import NamedTuple, Protocol, runtime_checkable

__all__ = [
    "DEFAULT_BUCKETS",
    "DEFAULT_ID_LIST_THRESHOLD",
    "FINGERPRINT_SIZE",
    "ID_SIZE",
    "INFINITY_BOUND",
    "MAX_TIMESTAMP",
    "PROTOCOL_VERSION",
    "Bound",
    "ClientStep",
    "Item",
    "Message",
    "Mode",
    "Negentropy",
    "NegentropyError",
    "NegentropyStorage",
    "Range",
    "UnsupportedVersionError",
    "VectorStorage",
    "decode_message",
    "encode_message",
    "encode_varint",
    "fingerprint_from_sum",
    "id_to_int",
]

PROTOCOL_VERSION = 0x61
"""Version byte of protocol V1."""
PROTOCOL_VERSION_MIN = 0x60
PROTOCOL_VERSION_MAX = 0x6F
"""Bytes in this range are negentropy versions; anything else is not a negentropy message."""

ID_SIZE = 32
FINGERPRINT_SIZE = 16
MAX_U64 = (1 << 64) - 1
MAX_TIMESTAMP = MAX_U64
"""The 'infinity' timestamp; stored items must have a smaller one."""
ID_MODULUS = 1 << 256
"""Ids are summed as 256-bit little-endian integers modulo this."""

DEFAULT_BUCKETS = 16
DEFAULT_ID_LIST_THRESHOLD = 2 * DEFAULT_BUCKETS
"""Ranges with fewer items than this are sent as id lists instead of being split."""
MIN_FRAME_SIZE_LIMIT = 4096
MIN_MAX_RANGES = 64
FRAME_SIZE_MARGIN = 200
"""Stop adding ranges once a frame is within this many bytes of the limit (as the reference)."""
MAX_VARINT_BYTES = 10
"""A 64-bit value needs at most 10 base-128 digits."""

Item = tuple[int, bytes]
"""A stored item: (timestamp, 32-byte id)."""


class NegentropyError(ValueError):
    """A negentropy message is malformed or cannot be processed."""


class UnsupportedVersionError(NegentropyError):
    """The peer speaks a negentropy protocol version other than V1."""

    def __init__(self, version: int) -> None:
        super().__init__(
            f"unsupported negentropy protocol version 0x{version:02x} "
            f"(this implementation speaks 0x{PROTOCOL_VERSION:02x})"
        )
        self.version = version


class Mode(IntEnum):
    """What a range of a message carries."""

    SKIP = 0
    FINGERPRINT = 1
    ID_LIST = 2


@dataclass(frozen=True, slots=True)
class Bound:
    """Upper bound of a range: a timestamp and an id prefix (at most 32 bytes).

    Compared with items as the tuple ``(timestamp, id_prefix)`` (a shorter prefix sorts first).
    """

    timestamp: int
    id_prefix: bytes = b""

    def key(self) -> tuple[int, bytes]:
        """The bound as a tuple comparable with items."""
        return (self.timestamp, self.id_prefix)


ZERO_BOUND = Bound(0)
INFINITY_BOUND = Bound(MAX_TIMESTAMP)


@dataclass(frozen=True, slots=True)
class Range:
    """One range of a message; ``payload`` depends on ``mode``.

    SKIP: ``None``; FINGERPRINT: 16 bytes; ID_LIST: a tuple of 32-byte ids.
    """

    bound: Bound
    mode: Mode
    payload: bytes | tuple[bytes, ...] | None = None


@dataclass(frozen=True, slots=True)
class Message:
    """A decoded V1 message: the version byte and its ranges in order."""

    ranges: tuple[Range, ...]
    version: int = PROTOCOL_VERSION


class ClientStep(NamedTuple):
    """What the client learns from one server message."""

    next_message: bytes | None
    """The next message for the server, or ``None`` when reconciliation is complete."""
    have: list[bytes]
    """Ids the client has and the server lacks."""
    need: list[bytes]
    """Ids the server has and the client lacks."""


# --- Fingerprints ----------------------------------------------------------------------------


def id_to_int(item_id: bytes) -> int:
    """An id as the 256-bit little-endian integer that fingerprints sum."""
    return int.from_bytes(item_id, "little")


def fingerprint_from_sum(id_sum: int, count: int) -> bytes:
    """Fingerprint of a range from the sum of its ids (as from :func:`id_to_int`) and its size."""
    data = (id_sum % ID_MODULUS).to_bytes(ID_SIZE, "little") + encode_varint(count)
    return hashlib.sha256(data).digest()[:FINGERPRINT_SIZE]


# --- Storage ---------------------------------------------------------------------------------


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
        sums = accumulate(map(id_to_int, ids), _add_mod_2_256, initial=0)
        self._sums = b"".join(total.to_bytes(ID_SIZE, "little") for total in sums)
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


def _add_mod_2_256(a: int, b: int) -> int:
    return (a + b) % ID_MODULUS


# --- Encoding --------------------------------------------------------------------------------


def encode_varint(n: int) -> bytes:
    """Big-endian base-128 varint; the high bit marks 'more digits follow'."""
    if 0 <= n < 0x80:
        return _SMALL_VARINTS[n]
    if n < 0:
        raise ValueError("varint must not be negative")
    digits = [n & 0x7F]
    n >>= 7
    while n:
        digits.append(0x80 | (n & 0x7F))
        n >>= 7
    return bytes(reversed(digits))


_SMALL_VARINTS = [bytes([n]) for n in range(0x80)]


class _Reader:
    """Consumes a message; every read checks the remaining length."""

    __slots__ = ("_data", "_pos")

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def remaining(self) -> int:
        return len(self._data) - self._pos

    def read_bytes(self, n: int) -> bytes:
        if n > self.remaining():
            raise NegentropyError(f"message ends prematurely: wanted {n} bytes at {self._pos}")
        start = self._pos
        self._pos += n
        return self._data[start : self._pos]

    def read_varint(self) -> int:
        data, result = self._data, 0
        if self._pos < len(data) and data[self._pos] < 0x80:  # fast path: one byte
            self._pos += 1
            return data[self._pos - 1]
        for _ in range(MAX_VARINT_BYTES):
            if self._pos >= len(data):
                raise NegentropyError(f"truncated varint at byte {self._pos}")
            byte = data[self._pos]
            self._pos += 1
            result = (result << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        else:
            raise NegentropyError(f"varint longer than {MAX_VARINT_BYTES} bytes")
        if result > MAX_U64:
            raise NegentropyError("varint does not fit in 64 bits")
        return result


class _BoundDecoder:
    """Decodes bounds whose timestamps are deltas from the previous bound of the message."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = 0

    def decode(self, reader: _Reader) -> Bound:
        encoded = reader.read_varint()
        if encoded == 0 or self._last == MAX_TIMESTAMP:
            timestamp = MAX_TIMESTAMP
        else:
            timestamp = min(self._last + encoded - 1, MAX_TIMESTAMP)  # saturate, as the reference
        self._last = timestamp
        prefix_len = reader.read_varint()
        if prefix_len > ID_SIZE:
            raise NegentropyError(f"bound id prefix too long: {prefix_len} bytes")
        return Bound(timestamp, reader.read_bytes(prefix_len))


class _BoundEncoder:
    """Encodes ranges; bound timestamps become deltas from the previous bound."""

    __slots__ = ("_last",)

    def __init__(self) -> None:
        self._last = 0

    def encode_bound(self, bound: Bound) -> bytes:
        if bound.timestamp == MAX_TIMESTAMP:
            self._last = MAX_TIMESTAMP
            timestamp = encode_varint(0)
        else:
            delta = bound.timestamp - self._last
            if delta < 0 or bound.timestamp > MAX_TIMESTAMP:
                raise NegentropyError(f"bound timestamp {bound.timestamp} out of order or range")
            self._last = bound.timestamp
            timestamp = encode_varint(delta + 1)
        if len(bound.id_prefix) > ID_SIZE:
            raise NegentropyError("bound id prefix too long")
        return timestamp + encode_varint(len(bound.id_prefix)) + bound.id_prefix

    def encode_range(self, rng: Range) -> bytes:
        head = self.encode_bound(rng.bound) + encode_varint(rng.mode)
        if rng.mode == Mode.SKIP:
            return head
        if rng.mode == Mode.FINGERPRINT:
            if not isinstance(rng.payload, bytes) or len(rng.payload) != FINGERPRINT_SIZE:
                raise NegentropyError("fingerprint payload must be 16 bytes")
            return head + rng.payload
        ids = rng.payload
        if not isinstance(ids, tuple) or any(len(i) != ID_SIZE for i in ids):
            raise NegentropyError("id list payload must be a tuple of 32-byte ids")
        return head + encode_varint(len(ids)) + b"".join(ids)


def _check_version(version: int) -> None:
    if not PROTOCOL_VERSION_MIN <= version <= PROTOCOL_VERSION_MAX:
        raise NegentropyError(f"invalid negentropy protocol version byte 0x{version:02x}")
    if version != PROTOCOL_VERSION:
        raise UnsupportedVersionError(version)


def decode_message(data: bytes, max_ranges: int = 0) -> Message:
    """Parse a whole V1 message into its ranges (timestamps made absolute); with
    `max_ranges`, a message of more ranges is refused before the rest is read."""
    data = bytes(data)
    if not data:
        raise NegentropyError("empty message: no protocol version byte")
    _check_version(data[0])
    reader = _Reader(data)
    reader.read_bytes(1)
    bounds = _BoundDecoder()
    ranges: list[Range] = []
    while reader.remaining():  # every pass consumes at least 3 bytes
        bound = bounds.decode(reader)
        mode = reader.read_varint()
        payload: bytes | tuple[bytes, ...] | None = None
        if mode == Mode.SKIP:
            pass
        elif mode == Mode.FINGERPRINT:
            payload = reader.read_bytes(FINGERPRINT_SIZE)
        elif mode == Mode.ID_LIST:
            count = reader.read_varint()
            if count * ID_SIZE > reader.remaining():
                raise NegentropyError(f"id list of {count} ids exceeds the message")
            blob = reader.read_bytes(count * ID_SIZE)
            payload = tuple(blob[i : i + ID_SIZE] for i in range(0, len(blob), ID_SIZE))
        else:
            raise NegentropyError(f"unexpected mode {mode}")
        ranges.append(Range(bound, Mode(mode), payload))
        if max_ranges and len(ranges) > max_ranges:
            raise NegentropyError(f"message of more than {max_ranges} ranges")
    return Message(tuple(ranges))


def encode_message(message: Message) -> bytes:
    """Serialize a message; the inverse of :func:`decode_message`."""
    encoder = _BoundEncoder()
    parts = [bytes([message.version])]
    parts.extend(encoder.encode_range(rng) for rng in message.ranges)
    return b"".join(parts)


def _minimal_bound(prev: Item, curr: Item) -> Bound:
    """The shortest bound above ``prev`` and not above ``curr``."""
    if curr[0] != prev[0]:
        return Bound(curr[0])
    prev_id, curr_id = prev[1], curr[1]
    shared = 0
    while shared < ID_SIZE and prev_id[shared] == curr_id[shared]:
        shared += 1
    return Bound(curr[0], curr_id[: shared + 1])


# --- Protocol --------------------------------------------------------------------------------


class Negentropy:
    """One side of a reconciliation over a sealed :class:`NegentropyStorage`.

    The client calls :meth:`initiate` then :meth:`reconcile_client` with each server reply (on
    the same instance or one from :meth:`resume_client`); the server answers each message with
    :meth:`reconcile_server`. ``frame_size_limit`` (0 = none,
    else at least 4096) caps the size of produced messages, at the cost of more rounds;
    ``max_ranges`` (0 = none, else at least 64) caps the ranges of produced messages the same
    way and refuses received messages of more, which bounds the work one message can cause.
    """

    def __init__(
        self,
        storage: NegentropyStorage,
        frame_size_limit: int = 0,
        *,
        buckets: int = DEFAULT_BUCKETS,
        id_list_threshold: int = DEFAULT_ID_LIST_THRESHOLD,
        max_ranges: int = 0,
    ) -> None:
        if max_ranges and max_ranges < MIN_MAX_RANGES:
            raise ValueError(f"max_ranges must be 0 or at least {MIN_MAX_RANGES}")
        if frame_size_limit and frame_size_limit < MIN_FRAME_SIZE_LIMIT:
            raise ValueError(f"frame_size_limit must be 0 or at least {MIN_FRAME_SIZE_LIMIT}")
        if buckets < 2:
            raise ValueError("buckets must be at least 2")
        if id_list_threshold < buckets:
            raise ValueError("id_list_threshold must be at least buckets")
        self._storage = storage
        self._frame_size_limit = frame_size_limit
        self._buckets = buckets
        self._id_list_threshold = id_list_threshold
        self._max_ranges = max_ranges
        self._is_initiator = False

    @classmethod
    def resume_client(
        cls,
        storage: NegentropyStorage,
        frame_size_limit: int = 0,
        *,
        buckets: int = DEFAULT_BUCKETS,
        id_list_threshold: int = DEFAULT_ID_LIST_THRESHOLD,
        max_ranges: int = 0,
    ) -> Negentropy:
        """A client for a reconciliation initiated by another instance.

        V1 keeps no state between messages, so a client may be rebuilt for each server reply
        (the reference's ``setInitiator``).
        """
        negentropy = cls(
            storage, frame_size_limit, buckets=buckets, id_list_threshold=id_list_threshold,
            max_ranges=max_ranges,
        )
        negentropy._is_initiator = True
        return negentropy

    @property
    def is_initiator(self) -> bool:
        """Whether :meth:`initiate` was called (this side is the client)."""
        return self._is_initiator

    def initiate(self) -> bytes:
        """The client's first message."""
        if self._is_initiator:
            raise RuntimeError("already initiated")
        self._is_initiator = True
        encoder = _BoundEncoder()
        body = self._split_range(0, self._storage.size(), INFINITY_BOUND, encoder)
        return bytes([PROTOCOL_VERSION]) + body

    def reconcile_server(self, message: bytes) -> bytes:
        """Answer a client message (always returns a message to send back)."""
        if self._is_initiator:
            raise RuntimeError("reconcile_server called on the initiator")
        return self._reconcile(message, [], [])

    def reconcile_client(self, message: bytes) -> ClientStep:
        """Process a server reply: the next message (``None`` when done), have and need ids."""
        if not self._is_initiator:
            raise RuntimeError("reconcile_client called before initiate")
        have: list[bytes] = []
        need: list[bytes] = []
        output = self._reconcile(message, have, need)
        return ClientStep(None if len(output) == 1 else output, have, need)

    def _reconcile(self, message: bytes, have: list[bytes], need: list[bytes]) -> bytes:
        message = bytes(message)
        version = message[0] if message else None
        if (
            not self._is_initiator
            and version is not None
            and version != PROTOCOL_VERSION
            and PROTOCOL_VERSION_MIN <= version <= PROTOCOL_VERSION_MAX
        ):
            # As the reference: answer a bare version byte naming the version we speak.
            return bytes([PROTOCOL_VERSION])
        ranges = decode_message(message, self._max_ranges).ranges  # raises if malformed

        storage, limit = self._storage, self._frame_size_limit
        # Kept back: an id list (and its skip) written before the check, and the fingerprint
        # that covers the rest when out of room.
        room_ranges = self._max_ranges - 3 if self._max_ranges else len(ranges) * 64 + 64
        size = storage.size()
        encoder = _BoundEncoder()
        output = bytearray([PROTOCOL_VERSION])
        written = 0  # ranges in output
        prev_bound, prev_index, skip = ZERO_BOUND, 0, False

        for rng in ranges:
            pending = bytearray()
            adding = 0  # ranges in pending
            lower = prev_index
            upper = storage.find_lower_bound(prev_index, size, rng.bound)

            if rng.mode == Mode.SKIP:
                skip = True
            elif rng.mode == Mode.FINGERPRINT:
                if storage.fingerprint(lower, upper) == rng.payload:
                    skip = True
                else:
                    if skip:
                        skip = False
                        pending += encoder.encode_range(Range(prev_bound, Mode.SKIP))
                        adding += 1
                    pending += self._split_range(lower, upper, rng.bound, encoder)
                    adding += 1 if upper - lower < self._id_list_threshold else self._buckets
            elif self._is_initiator:
                assert isinstance(rng.payload, tuple)
                theirs = dict.fromkeys(rng.payload)
                for _, item_id in storage.iterate(lower, upper):
                    if item_id in theirs:
                        del theirs[item_id]
                    else:
                        have.append(item_id)
                need.extend(theirs)
                skip = True
            else:
                if skip:
                    skip = False
                    pending += encoder.encode_range(Range(prev_bound, Mode.SKIP))
                    adding += 1
                end_bound = rng.bound
                if limit:
                    # The reference adds the n-th id while len(output) + 32 * n stays within
                    # limit - margin (the pending skip not counted); count them in one step.
                    room = limit - FRAME_SIZE_MARGIN - len(output)
                    fit = room // ID_SIZE + 1 if room >= 0 else 0
                    if fit < upper - lower:
                        upper = lower + fit
                        end_bound = Bound(*storage.get_item(upper))
                ids = tuple(item_id for _, item_id in storage.iterate(lower, upper))
                pending += encoder.encode_range(Range(end_bound, Mode.ID_LIST, ids))
                output += pending
                written += adding + 1
                pending = bytearray()
                adding = 0

            if (limit and len(output) + len(pending) > limit - FRAME_SIZE_MARGIN
                    or written + adding > room_ranges):
                # Out of room: one fingerprint covers everything not yet answered.
                rest = storage.fingerprint(upper, size)
                output += encoder.encode_range(Range(INFINITY_BOUND, Mode.FINGERPRINT, rest))
                break
            output += pending
            written += adding
            prev_index, prev_bound = upper, rng.bound

        return bytes(output)

    def _split_range(
        self, lower: int, upper: int, upper_bound: Bound, encoder: _BoundEncoder
    ) -> bytes:
        """Describe ``[lower, upper)`` as an id list, or as fingerprints of equal buckets."""
        storage = self._storage
        count = upper - lower
        if count < self._id_list_threshold:
            ids = tuple(item_id for _, item_id in storage.iterate(lower, upper))
            return encoder.encode_range(Range(upper_bound, Mode.ID_LIST, ids))
        per_bucket, with_extra = divmod(count, self._buckets)
        parts: list[bytes] = []
        curr = lower
        for i in range(self._buckets):
            bucket_end = curr + per_bucket + (1 if i < with_extra else 0)
            fingerprint = storage.fingerprint(curr, bucket_end)
            curr = bucket_end
            if curr == upper:
                bound = upper_bound
            else:
                bound = _minimal_bound(storage.get_item(curr - 1), storage.get_item(curr))
            parts.append(encoder.encode_range(Range(bound, Mode.FINGERPRINT, fingerprint)))
        return b"".join(parts)
