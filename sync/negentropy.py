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

This module holds the protocol itself; the wire format (constants, bounds, varints, the message
codec) is in ``sync._negentropy_wire`` and the storage (the ``NegentropyStorage`` protocol,
``VectorStorage``, fingerprints) in ``sync._negentropy_storage``, both re-exported here.
"""

from __future__ import annotations

from typing import NamedTuple

from ._negentropy_storage import NegentropyStorage, VectorStorage, fingerprint_from_sum, id_to_int
from ._negentropy_wire import (
    FINGERPRINT_SIZE,
    ID_SIZE,
    INFINITY_BOUND,
    MAX_TIMESTAMP,
    PROTOCOL_VERSION,
    PROTOCOL_VERSION_MAX,
    PROTOCOL_VERSION_MIN,
    ZERO_BOUND,
    Bound,
    BoundEncoder,
    Item,
    Message,
    Mode,
    NegentropyError,
    Range,
    UnsupportedVersionError,
    decode_message,
    encode_message,
    encode_varint,
    minimal_bound,
)

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

DEFAULT_BUCKETS = 16
DEFAULT_ID_LIST_THRESHOLD = 2 * DEFAULT_BUCKETS
"""Ranges with fewer items than this are sent as id lists instead of being split."""
MIN_FRAME_SIZE_LIMIT = 4096
MIN_MAX_RANGES = 64
FRAME_SIZE_MARGIN = 200
"""Stop adding ranges once a frame is within this many bytes of the limit (as the reference)."""


class ClientStep(NamedTuple):
    """What the client learns from one server message."""

    next_message: bytes | None
    """The next message for the server, or ``None`` when reconciliation is complete."""
    have: list[bytes]
    """Ids the client has and the server lacks."""
    need: list[bytes]
    """Ids the server has and the client lacks."""


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
        self.ranges_read = 0  # ranges in the last message reconciled (what it cost)

    @classmethod
    def resume_client(
        cls, storage: NegentropyStorage, frame_size_limit: int = 0, **params: int
    ) -> Negentropy:
        """A client for a reconciliation initiated by another instance.

        V1 keeps no state between messages, so a client may be rebuilt for each server reply
        (the reference's ``setInitiator``).
        """
        negentropy = cls(storage, frame_size_limit, **params)
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
        encoder = BoundEncoder()
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
        self.ranges_read = len(ranges)

        storage, limit = self._storage, self._frame_size_limit
        # Kept back: an id list (and its skip) written before the check, and the fingerprint
        # that covers the rest when out of room.
        room_ranges = self._max_ranges - 3 if self._max_ranges else len(ranges) * 64 + 64
        size = storage.size()
        encoder = BoundEncoder()
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
        self, lower: int, upper: int, upper_bound: Bound, encoder: BoundEncoder
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
                bound = minimal_bound(storage.get_item(curr - 1), storage.get_item(curr))
            parts.append(encoder.encode_range(Range(bound, Mode.FINGERPRINT, fingerprint)))
        return b"".join(parts)
