"""Signed objects: build and sign one, decode and check the validity of bytes from anywhere.

Envelope (canonical CBOR map): `v` format version, `type` kind, `author` Ed25519 public key,
`ts` claimed time in ms, `stream` the stream it belongs to, `links` ids of the stream heads the
author knew, `body` kind-specific map, `sig` Ed25519 over the canonical encoding of the map
without `sig`. The id is the BLAKE2b-256 of the full signed encoding. See docs/ARCHITECTURE.md "Objects".
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import Any, NamedTuple

import cbor2

from . import encoding, kinds
from .causal import linkable, next_ts
from .errors import InvalidObject, Reason
from .identity import PUBLIC_KEY_SIZE, SIGNATURE_SIZE, Identity, verify

VERSION = 1
MAX_OBJECT_SIZE = 64 * 1024
MAX_LINKS = 64
MIN_ID_PREFIX = 4  # hex digits of an id that stand for the whole id, when they are unique
MAX_TYPE = 64
MAX_TS = 2**63 - 1
# Canonical key order of the envelope (length first, then bytes).
ENVELOPE_KEYS = ("v", "ts", "sig", "body", "type", "links", "author", "stream")
_SIG_ENTRY = b"\x63sig\x58\x40"  # "sig" key, then a 64-byte byte string header


class Object(NamedTuple):
    """A valid object. `raw` is its signed encoding; `id` the hash of `raw`.

    A NamedTuple rather than a frozen dataclass: it is built once per object on the hot
    decode path, where a frozen dataclass's __init__ costs as much as the CBOR decode.
    """

    id: bytes
    type: str
    author: bytes
    ts: int
    stream: bytes
    links: tuple[bytes, ...]
    body: dict[str, Any]
    sig: bytes
    raw: bytes

    @property
    def hex(self) -> str:
        return self.id.hex()


class Stored(Object):
    """An object read back from this replica for a view that reads its envelope (id, type,
    author, ts, stream: the replica's own columns) of many and the rest of few: links, body
    and sig are decoded from `raw` the first time one is asked for (`stored`). A private
    channel of 100,000 posts builds its view at a start without decoding each
    (storage._private). The tuple itself holds placeholders for those three: read them by
    name, never by unpacking or index. Never for bytes from outside."""

    @cached_property
    def _decoded(self) -> dict[str, Any]:
        return cbor2.loads(self.raw)

    @property
    def links(self) -> tuple[bytes, ...]:
        return tuple(self._decoded["links"])

    @property
    def body(self) -> dict[str, Any]:
        return self._decoded["body"]

    @property
    def sig(self) -> bytes:
        return self._decoded["sig"]

    def whole(self) -> Object:
        """This object as a plain Object, every field decoded."""
        return Object(self.id, self.type, self.author, self.ts, self.stream, self.links,
                      self.body, self.sig, self.raw)

    # What reads the tuple rather than the fields reads the decoded values, never placeholders.
    def __iter__(self) -> Iterator[Any]:
        return iter(self.whole())

    def __getitem__(self, index: Any) -> Any:
        return tuple.__getitem__(self.whole(), index)

    def __eq__(self, other: object) -> bool:
        return self.whole() == other

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]  # as Object's: its body is a dict

    def __reduce__(self) -> tuple[Any, ...]:
        return Object, tuple(self.whole())

    def _replace(self, **changes: Any) -> Object:  # type: ignore[override]
        return self.whole()._replace(**changes)


def stored(oid: bytes, kind: str, author: bytes, ts: int, stream: bytes, raw: bytes) -> Object:
    """A `Stored` object from the replica's columns and its raw bytes."""
    return tuple.__new__(Stored, (oid, kind, author, ts, stream, (), {}, b"", raw))


def _uint_size(value: int) -> int:
    """Bytes of the canonical CBOR head of a non-negative integer."""
    if value < 24:
        return 1
    if value < 0x100:
        return 2
    if value < 0x10000:
        return 3
    if value < 0x100000000:
        return 5
    return 9


def _check_envelope(kind: Any, author: Any, ts: Any, stream: Any, links: Any,
                    body: Any) -> None:
    if type(kind) is not str or not 1 <= len(kind) <= MAX_TYPE or not kind.isascii():
        raise InvalidObject(Reason.BAD_FIELD, "type must be 1 to 64 ASCII characters")
    if type(author) is not bytes or len(author) != PUBLIC_KEY_SIZE:
        raise InvalidObject(Reason.BAD_FIELD, "author must be a 32-byte public key")
    if type(ts) is not int or not 0 <= ts <= MAX_TS:
        raise InvalidObject(Reason.BAD_FIELD, "ts must be a non-negative 64-bit integer")
    if type(stream) is not bytes or len(stream) != encoding.ID_SIZE:
        raise InvalidObject(Reason.BAD_FIELD, "stream must be a 32-byte id")
    if type(body) is not dict:
        raise InvalidObject(Reason.BAD_FIELD, "body must be a map")
    if type(links) is not list:
        raise InvalidObject(Reason.BAD_FIELD, "links must be a list")
    if len(links) > MAX_LINKS:
        raise InvalidObject(Reason.TOO_MANY_LINKS, f"more than {MAX_LINKS} links")
    for link in links:
        if type(link) is not bytes or len(link) != encoding.ID_SIZE:
            raise InvalidObject(Reason.BAD_LINKS, "every link must be a 32-byte id")
    if len(set(links)) != len(links):
        raise InvalidObject(Reason.BAD_LINKS, "a link is repeated")


def build(identity: Identity, kind: str, *, stream: bytes, body: dict[str, Any], ts: int,
          links: Iterable[bytes] = ()) -> Object:
    """Build and sign an object; raises InvalidObject if it would not be valid. The object
    holds `body` itself: do not change it afterwards."""
    links = sorted(set(links))
    author = identity.public_key
    _check_envelope(kind, author, ts, stream, links, body)
    # A known kind's body in canonical key order has the shape its checker allows: what
    # decoding reads back as it is. Anything else is parsed once built (below).
    usual = _check_body(kind, body)
    # In canonical key order, so a usual body (in order too) is written as it is, unsorted.
    unsigned = {"v": VERSION, "ts": ts, "body": body, "type": kind, "links": links,
                "author": author, "stream": stream}
    try:
        signed = _dumps(unsigned) if usual else encoding.dumps(unsigned)
        sig = identity.sign(signed)
    except (cbor2.CBORError, TypeError, ValueError, RecursionError) as exc:
        raise InvalidObject(Reason.BAD_BODY, f"body cannot be encoded: {exc}") from None
    # The signed encoding is the unsigned one with the sig entry after `v` and `ts` (the
    # reverse of `parse`'s cut).
    start = 7 + _uint_size(ts)
    raw = b"\xa8" + signed[1:start] + _SIG_ENTRY + sig + signed[start:]
    if not usual:  # so nothing can be built that decoding would refuse
        return parse(raw)[0]
    if len(raw) > MAX_OBJECT_SIZE:
        raise InvalidObject(Reason.OVERSIZE, f"object is {len(raw)} bytes, over 64 KiB")
    return Object(_object_id(raw), kind, author, ts, stream, tuple(links), body, sig, raw)


def authored(identity: Identity, kind: str, *, stream: bytes, body: dict[str, Any],
             now_ms: int, heads: Iterable[tuple[bytes, int]] = ()) -> Object:
    """The one way a member's new object is made: it links to the (id, ts) heads of its stream
    the author knows, those not beyond the horizon and at most MAX_LINKS of them, and is dated
    now but after each of them (so ordering by (ts, id) is a causal order)."""
    links = linkable(heads, now_ms, MAX_LINKS)
    return build(identity, kind, stream=stream, body=body,
                 ts=next_ts(now_ms, (ts for _, ts in links)), links=[oid for oid, _ in links])


_ENVELOPE_SET = frozenset(ENVELOPE_KEYS)
_dumps = cbor2.dumps
_decode_item = encoding.decode_item
_is_plain = encoding.is_plain
_object_id = encoding.object_id
_check_body = kinds.check_body


def bad_signature() -> InvalidObject:
    """The error for an object whose signature does not verify (here or in a helper)."""
    return InvalidObject(Reason.BAD_SIGNATURE, "the signature does not match the author")


def decode(raw: bytes) -> Object:
    """Decode `raw` and check its validity; raises InvalidObject with a reason code."""
    obj, unsigned = parse(raw)
    if not verify(obj.author, unsigned, obj.sig):
        raise bad_signature()
    return obj


def parse(raw: bytes) -> tuple[Object, bytes]:
    """Every validity check but the signature's; returns the object and the signed bytes.

    For callers that verify signatures elsewhere (another process) and must then call
    `verify(obj.author, unsigned, obj.sig)` before trusting the object. This runs for every
    object received, so it is written for speed: the common case costs one CBOR decode and
    one plain re-encode (the canonical check).
    """
    raw, kind, author, ts, stream, links, body, sig, unsigned = _valid(raw)
    return (Object(_object_id(raw), kind, author, ts, stream, tuple(links), body, sig, raw),
            unsigned)


def signed_part(raw: bytes) -> tuple[bytes, bytes, bytes]:
    """`parse` for a signature helper: (author, the signed bytes, sig), and no Object (nor
    its id) built."""
    _, _, author, _, _, _, _, sig, unsigned = _valid(raw)
    return author, unsigned, sig


def _valid(raw: bytes) -> tuple:
    """Every check `parse` makes: (raw, type, author, ts, stream, links, body, sig, the
    signed bytes)."""
    if type(raw) is not bytes:
        raw = bytes(raw)
    if len(raw) > MAX_OBJECT_SIZE:
        raise InvalidObject(Reason.OVERSIZE, f"object is {len(raw)} bytes, over 64 KiB")
    try:
        fields = _decode_item(raw)
    except encoding.EncodingError as exc:
        raise InvalidObject(Reason.MALFORMED, str(exc)) from None
    if type(fields) is not dict:
        raise InvalidObject(Reason.MALFORMED, "an object is a CBOR map")
    if tuple(fields) != ENVELOPE_KEYS:
        if "v" in fields and fields["v"] != VERSION:
            raise InvalidObject(Reason.UNKNOWN_VERSION,
                                f"unknown format version {fields['v']!r}")
        if fields.keys() == _ENVELOPE_SET:
            raise InvalidObject(Reason.NON_CANONICAL, "envelope keys out of canonical order")
        missing = sorted(_ENVELOPE_SET - fields.keys())
        extra = sorted(map(str, fields.keys() - _ENVELOPE_SET))
        raise InvalidObject(Reason.BAD_FIELD, f"envelope: missing {missing}, unexpected {extra}")
    v, ts, sig, body, kind, links, author, stream = fields.values()
    if v != VERSION or type(v) is not int:
        raise InvalidObject(Reason.UNKNOWN_VERSION, f"unknown format version {v!r}")
    _check_envelope(kind, author, ts, stream, links, body)
    if type(sig) is not bytes or len(sig) != SIGNATURE_SIZE:
        raise InvalidObject(Reason.BAD_FIELD, "sig must be 64 bytes")
    # Every envelope field is plain now; only the body can need the slow canonical path.
    try:
        plain = _check_body(kind, body) or _is_plain(body)
    except encoding.EncodingError as exc:
        raise InvalidObject(Reason.MALFORMED, str(exc)) from None
    if plain:
        canonical = _dumps(fields) == raw
    else:
        try:
            canonical = _dumps(fields, canonical=True) == raw
        except (cbor2.CBORError, ValueError, TypeError, RecursionError):
            canonical = False
    if not canonical:
        raise InvalidObject(Reason.NON_CANONICAL, "not canonical CBOR (or trailing bytes)")
    # The unsigned encoding is the signed one minus the sig entry, which in canonical order
    # follows the `v` and `ts` entries: no second encoding pass is needed.
    start = 7 + _uint_size(ts)
    end = start + len(_SIG_ENTRY) + SIGNATURE_SIZE
    return raw, kind, author, ts, stream, links, body, sig, b"\xa7" + raw[1:start] + raw[end:]


def decode_trusted(raw: bytes, known_id: bytes | None = None) -> Object:
    """Decode an object this process validated before (read back from its own replica).

    Skips the signature check and the canonical check; never use it on bytes from outside.
    `known_id` is its id as the replica stored it (saves hashing `raw` again).
    """
    fields = cbor2.loads(raw)
    return Object(known_id or encoding.object_id(raw), fields["type"], fields["author"], fields["ts"],
                  fields["stream"], tuple(fields["links"]), fields["body"], fields["sig"], raw)
