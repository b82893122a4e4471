"""The relay protocol's wire, shared by the relay (relay/) and its members (sync.relay_member).

A member dials the relay's WebSocket at PATH and runs Noise_NK_25519_ChaChaPoly_BLAKE2b: the
member knows (pins) the relay's static key, printed when the relay starts and published in a
signed `workspace/relay` object; the relay knows no key of the member's, who proves membership
by a token inside the channel (core.relay_seal) instead. Every later WebSocket message is one
Noise transport message holding a flag byte (1 = last piece of a frame) and a piece; pieces
join into frames of canonical CBOR maps of at most MAX_FRAME bytes, as in sync.session.

Frames (member -> relay, then relay -> member):

    auth     {space, proof}           prove the space's current token (its signature of the
                                      handshake hash); answered by `ok` or a `bye`
    knock    {space, tag, blob}        (instead of `auth`) a newcomer with an invite's code asks the
                                      space's connected members to admit it
                                      (core.relay_knock); answered by `answer` or a `bye`
    answer   {id, blob}                (a member) the answer to the knock `id`
    register {space, token, epoch, owners, by, sig}
                                      an admin registers a space with token `token` of
                                      `epoch`, or moves it to a newer epoch or another token
                                      of its epoch (then `by` must be an owner); `sig` is `by`'s Ed25519 signature of
                                      REGISTER_CONTEXT + handshake hash + the fields' CBOR
    handover {token, epoch, envs}     (an owner, joined) for holders of older epoch `epoch`'s
                                      token `token`: envelopes sealed under its keys
    neg      {m}                      negentropy over (FLIP - bucket, opaque) items: newest first
    put      {envs}                   envelopes [opaque, bucket, box] the relay lacks
    get      {ids}                    opaque ids the member lacks
    signal   {blob}                   typing or presence (core.relay_seal.seal_signal), for
                                      the members connected now: forwarded, never stored
    putchunk {name, data}             a chunk of an attached file (answered by `stored`)
    getchunk {names}                  chunks asked for (1..MAX_CHUNK_NAMES)
    hold     {names}                  which of these chunks the relay holds (1..MAX_IDS)
    ok       {epoch, floor}           authorised; `floor`: buckets older than this were evicted
                                      for space (the member uploads none of them)
    neg      {m}                      the relay's negentropy answer
    envs     {envs, live}             envelopes asked for (`live` false, closed by `done`) or
                                      pushed as another member stored them (`live` true)
    done     {}                       the end of one answer to a `get`
    stored   {n, floor}               a put was stored (n envelopes new; the floor now)
    signal   {blob}                   another member's signal
    chunk    {name, data}             a chunk asked for
    nochunk  {names}                  chunks asked for that the relay does not hold
    held     {names}                  the answer to `hold`: those it holds
    knock    {id, tag, blob}          a newcomer's knock, to the members connected now
    answer   {blob}                   to a knock: a member's answer, then `bye`
    handover {envs}                   to an `auth` that proved an older epoch's token: what its
                                      owner left for them, then `bye`
    bye      {reason}                 the relay refuses or closes
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from noise.connection import Keypair, NoiseConnection

from core.encoding import EncodingError, dumps, loads
from core.objects import MAX_OBJECT_SIZE
from core.relay_seal import MAX_BUCKET, OPAQUE_SIZE, Envelope

from .negentropy import ID_SIZE, MAX_TIMESTAMP

PATH = "/hearth-relay/1"
NOISE_PROTOCOL = b"Noise_NK_25519_ChaChaPoly_BLAKE2b"
PROLOGUE = b"hearth-relay/1"
REGISTER_CONTEXT = b"hearth-relay-register/1"
KEY_SIZE = 32
MAX_NOISE_MESSAGE = 65535
PIECE = MAX_NOISE_MESSAGE - 16 - 1  # minus the AEAD tag and the flag byte
MAX_MESSAGE = MAX_NOISE_MESSAGE + 64  # what aiohttp lets through (a Noise message at most)
MAX_HANDSHAKE_MESSAGE = 1024
MAX_FRAME = 1 << 20
MAX_BOX = MAX_OBJECT_SIZE + 16  # an object's box: the object and the MAC
MAX_ENVS_BYTES = 512 * 1024  # envelopes per `envs` or `put` frame, by their boxes' bytes
MAX_IDS = 4096  # opaque ids per `get`
MAX_OWNERS = 64
TAG_SIZE = 16  # an invite's tag (core.membership.invite_tag)
KNOCK_ID_SIZE = 8
MAX_CHUNK_NAMES = 16  # chunks per `getchunk` (each up to core.attachments.MAX_CHUNK bytes)
MAX_SIGNAL_BLOB = 2048  # a sealed signal: its body, the sender's key and signature, the box
NEG_FRAME_LIMIT = 256 * 1024
NEG_MAX_RANGES = 2048
# As sync.session's NEG_PARAMS (measured there: fewer bytes per difference than the reference's).
NEG_PARAMS = {"buckets": 12, "id_list_threshold": 24, "max_ranges": NEG_MAX_RANGES}
FLIP = MAX_TIMESTAMP - 1  # newest first: a bucket b takes part as FLIP - b (see sync.store)

_LAST, _MORE = b"\x01", b"\x00"


class WireError(Exception):
    """The other side sent what this protocol never sends: close the channel."""


def require(condition: bool, what: str) -> None:
    if not condition:
        raise WireError(f"malformed {what}")


_PAD = bytes(ID_SIZE - OPAQUE_SIZE)


def item_of(bucket: int, opaque: bytes) -> tuple[int, bytes]:
    """The negentropy item of an envelope: newest first, its id the opaque id zero-padded to
    negentropy's 32 bytes."""
    return FLIP - bucket, opaque + _PAD


def items_of(pairs: Iterable[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """`item_of` for many (bucket, opaque) pairs (one comprehension, no call an item)."""
    return [(FLIP - bucket, opaque + _PAD) for bucket, opaque in pairs]


def opaque_of(item_id: bytes) -> bytes:
    """The opaque id of a negentropy item id (as `item_of` made it)."""
    return item_id[:OPAQUE_SIZE]


def envelopes_in(value: Any, what: str) -> list[Envelope]:
    """`[[opaque, bucket, box], ...]` checked field by field."""
    require(isinstance(value, list), what)
    out = []
    for entry in value:
        require(isinstance(entry, list) and len(entry) == 3, what)
        opaque, bucket, box = entry
        require(isinstance(opaque, bytes) and len(opaque) == OPAQUE_SIZE, what)
        require(type(bucket) is int and 0 <= bucket <= MAX_BUCKET, what)
        require(isinstance(box, bytes) and 16 < len(box) <= MAX_BOX, what)
        out.append(Envelope(opaque, bucket, box))
    return out


def opaque_ids(value: Any, what: str, limit: int = MAX_IDS) -> list[bytes]:
    require(isinstance(value, list) and len(value) <= limit and all(
        isinstance(i, bytes) and len(i) == OPAQUE_SIZE for i in value), what)
    return value


def batches(envelopes: list[Envelope]) -> Iterator[list[list]]:
    """Envelopes as `envs`/`put` lists of at most MAX_ENVS_BYTES each."""
    batch: list[list] = []
    size = 0
    for env in envelopes:
        if batch and size + len(env.box) > MAX_ENVS_BYTES:
            yield batch
            batch, size = [], 0
        batch.append([env.opaque, env.bucket, env.box])
        size += len(env.box) + 48
    if batch:
        yield batch


class Channel:
    """One end of the Noise channel, sans-I/O: handshake bytes, then frames as messages.

    The member (`initiator`) pins the relay's `remote_key`; the relay holds `static_private`."""

    def __init__(self, *, initiator: bool, remote_key: bytes | None = None,
                 static_private: bytes | None = None):
        noise = NoiseConnection.from_name(NOISE_PROTOCOL)
        if initiator:
            if remote_key is None or len(remote_key) != KEY_SIZE:
                raise ValueError("a member pins the relay's 32-byte key")
            noise.set_as_initiator()
            noise.set_keypair_from_public_bytes(Keypair.REMOTE_STATIC, remote_key)
        else:
            if static_private is None:
                raise ValueError("a relay needs its static key")
            noise.set_as_responder()
            noise.set_keypair_from_private_bytes(Keypair.STATIC, static_private)
        noise.set_prologue(PROLOGUE)
        noise.start_handshake()
        self._noise = noise
        self.initiator = initiator
        self._partial = bytearray()

    @property
    def ready(self) -> bool:
        return bool(self._noise.handshake_finished)

    @property
    def handshake_hash(self) -> bytes:
        return bytes(self._noise.get_handshake_hash())

    def first_message(self) -> bytes:
        """The member's first handshake message; ValueError when the pinned key is no usable
        X25519 key (a low-order point such as all zeros)."""
        try:
            return bytes(self._noise.write_message())
        except Exception as exc:  # noise raises ValueError, cryptography its own
            raise ValueError(f"not a usable relay key: {exc}") from None

    def handshake(self, data: bytes) -> bytes | None:
        """Read a handshake message; the relay's answer (the member's: None)."""
        if len(data) > MAX_HANDSHAKE_MESSAGE:
            raise WireError("handshake message too large")
        try:
            self._noise.read_message(data)
            return None if self.initiator else bytes(self._noise.write_message())
        except Exception as exc:  # noise and cryptography raise several kinds
            raise WireError(f"handshake failed (not this relay's key?): {exc!r}") from None

    def encode(self, frame: dict) -> list[bytes]:
        """A frame as Noise messages."""
        data = dumps(frame)
        if len(data) > MAX_FRAME:
            raise ValueError(f"frame of {len(data)} bytes")
        pieces = [data[i:i + PIECE] for i in range(0, len(data), PIECE)] or [b""]
        return [bytes(self._noise.encrypt((_LAST if n == len(pieces) - 1 else _MORE) + piece))
                for n, piece in enumerate(pieces)]

    def decode(self, data: bytes) -> dict | None:
        """Read one Noise message: the frame it completes, if any."""
        if len(data) > MAX_NOISE_MESSAGE:
            raise WireError("message larger than a Noise message")
        try:
            plain = bytes(self._noise.decrypt(data))
        except Exception:  # InvalidTag: tampered, replayed or injected
            raise WireError("a message failed decryption") from None
        require(len(plain) >= 1 and plain[:1] in (_LAST, _MORE), "piece")
        self._partial += plain[1:]
        if len(self._partial) > MAX_FRAME:
            raise WireError("frame too large")
        if plain[:1] == _MORE:
            return None
        data, self._partial = bytes(self._partial), bytearray()
        try:
            frame = loads(data)
        except EncodingError as exc:
            raise WireError(f"frame is not canonical CBOR: {exc}") from None
        require(isinstance(frame, dict) and isinstance(frame.get("t"), str), "frame")
        return frame


def relay_public_key(static_private: bytes) -> bytes:
    """The public half of a relay's static key: what members pin."""
    noise = NoiseConnection.from_name(NOISE_PROTOCOL)
    noise.set_as_responder()
    noise.set_keypair_from_private_bytes(Keypair.STATIC, static_private)
    return bytes(noise.noise_protocol.keypairs["s"].public_bytes)
