"""Negentropy V1 on the wire: protocol constants, bounds, ranges, varints and the message codec.

Private to :mod:`sync.negentropy`, which re-exports the public names; import them from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

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


class BoundEncoder:
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
    encoder = BoundEncoder()
    parts = [bytes([message.version])]
    parts.extend(encoder.encode_range(rng) for rng in message.ranges)
    return b"".join(parts)


def minimal_bound(prev: Item, curr: Item) -> Bound:
    """The shortest bound above ``prev`` and not above ``curr``."""
    if curr[0] != prev[0]:
        return Bound(curr[0])
    prev_id, curr_id = prev[1], curr[1]
    shared = 0
    while shared < ID_SIZE and prev_id[shared] == curr_id[shared]:
        shared += 1
    return Bound(curr[0], curr_id[: shared + 1])
