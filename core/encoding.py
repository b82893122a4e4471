"""Canonical CBOR and object ids.

Canonical means exactly what `cbor2.dumps(value, canonical=True)` writes (RFC 7049 canonical
form: shortest integers and lengths, map keys sorted by length then bytes, definite lengths).
Decoding accepts a byte string only if re-encoding it gives the same bytes.
"""

from __future__ import annotations

import hashlib
from typing import Any

import cbor2

ID_SIZE = 32


class EncodingError(ValueError):
    """Bytes that are not one canonical CBOR item."""


def dumps(value: Any) -> bytes:
    return cbor2.dumps(value, canonical=True)


def dumps_ordered(value: Any) -> bytes:
    """`dumps` of a value whose maps already have their keys in canonical order and that
    `is_plain` accepts: written as it is, without sorting."""
    return cbor2.dumps(value)


def _canonical_key(key: str) -> tuple[int, bytes]:
    raw = key.encode()
    return (len(raw), raw)


def is_canonical_order(keys: Any) -> bool:
    """True when str keys are in canonical order (length of UTF-8 first, then bytes)."""
    previous = None
    for key in keys:
        if type(key) is not str:
            return False
        current = _canonical_key(key)
        if previous is not None and current <= previous:
            return False
        previous = current
    return True


_SCALARS = (str, bytes, int, bool, type(None))
_KEYS = (str, bytes, int)


def is_plain(value: Any) -> bool:
    """True when insertion-order encoding of `value` is already canonical (the fast path).

    Holds for trees of str-keyed maps whose keys are in canonical order, lists, str, bytes,
    ints, bools and None; floats and other key types need the slow path. Raises
    EncodingError for what objects may not hold at all: CBOR tags (values decoded to other
    Python types) and shared or self-referencing containers. Iterative, so no depth that
    cbor2 decodes can exhaust the stack.
    """
    plain = True
    seen: set[int] = set()
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict or kind is list:
            if id(item) in seen:
                raise EncodingError("shared or self-referencing values are not allowed")
            seen.add(id(item))
            if kind is dict:
                for key in item:
                    if type(key) not in _KEYS:
                        raise EncodingError(f"map keys may not be {type(key).__name__}")
                plain = plain and is_canonical_order(item)
                stack.extend(item.values())
            else:
                stack.extend(item)
        elif kind is float:
            plain = False
        elif kind not in _SCALARS:
            raise EncodingError(f"CBOR tags are not allowed (found {kind.__name__})")
    return plain


def decode_item(data: bytes) -> Any:
    """Decode one CBOR item (definite lengths, no duplicate keys); not yet canonical-checked."""
    try:
        return cbor2.loads(data, allow_indefinite=False, allow_duplicate_keys=False)
    except (cbor2.CBORError, ValueError, TypeError, RecursionError, OverflowError) as exc:
        raise EncodingError(f"not CBOR: {exc}") from None


def check_canonical(value: Any, data: bytes, *, plain: bool | None = None) -> None:
    """Raise EncodingError unless `data` is the canonical encoding of `value`.

    `plain` is the caller's answer to `is_plain(value)` when it has checked it more cheaply.
    """
    if plain is None:
        plain = is_plain(value)
    try:
        again = cbor2.dumps(value) if plain else cbor2.dumps(value, canonical=True)
    except (cbor2.CBORError, ValueError, TypeError, RecursionError) as exc:
        raise EncodingError(f"cannot re-encode: {exc}") from None
    if again != data:
        raise EncodingError("not canonical CBOR (or trailing bytes)")


def loads(data: bytes) -> Any:
    """Decode one canonical CBOR item; raise EncodingError for anything else."""
    value = decode_item(data)
    check_canonical(value, data)
    return value


def object_id(data: bytes) -> bytes:
    """BLAKE2b-256 of an object's full signed encoding."""
    return hashlib.blake2b(data, digest_size=ID_SIZE).digest()


def derive_id(label: str, *parts: bytes) -> bytes:
    """A 32-byte id derived from a label and parts (stream ids nobody has to announce)."""
    h = hashlib.blake2b(digest_size=ID_SIZE, person=b"hearth-derive")
    h.update(label.encode())
    for part in parts:
        h.update(len(part).to_bytes(4, "big"))
        h.update(part)
    return h.digest()
