"""Tests for core.objects (build, decode) and core.kinds: validity decided by the bytes alone.

Hand-crafted objects are signed the way core.objects.build signs: Ed25519 over the canonical
encoding of the map without `sig`, then `sig` inserted (see `signed`).
"""

import contextlib
import hashlib
import pickle

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import encoding
from core.errors import InvalidObject, Reason
from core.identity import verify
from core.kinds import KINDS, channel_stream, profile_stream
from core.objects import (
    ENVELOPE_KEYS,
    MAX_LINKS,
    MAX_OBJECT_SIZE,
    Object,
    build,
    decode,
    parse,
    stored,
)

from .objects_support import (
    ALL_KINDS,
    BODIES,
    ID1,
    ID2,
    IDENT,
    MISSING,
    OTHER,
    STREAM,
    TS,
    UNKNOWN,
    built_objects,
    canonical_pairs,
    enc,
    envelope,
    rejected,
    signed,
    signed_pairs,
    unsigned_pairs,
)


def test_there_is_a_strategy_for_every_kind():
    assert set(BODIES) == set(KINDS)


# Round trips ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*ALL_KINDS, UNKNOWN])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_build_decode_round_trip(kind, data):
    obj, (identity, kind, stream, body, ts, links) = data.draw(built_objects(kind))
    assert obj.id == hashlib.blake2b(obj.raw, digest_size=32).digest()
    assert obj.hex == obj.id.hex()
    assert (obj.type, obj.author, obj.ts, obj.stream, obj.body) == (
        kind, identity.public_key, ts, stream, body)
    assert obj.links == tuple(sorted(set(links)))
    assert len(obj.raw) <= MAX_OBJECT_SIZE

    decoded = decode(obj.raw)
    assert decoded == obj  # every field: id, type, author, ts, stream, links, body, sig, raw
    assert isinstance(decoded, Object) and type(decoded.links) is tuple
    assert decoded.id == hashlib.blake2b(obj.raw, digest_size=32).digest()

    # The bytes are canonical CBOR with exactly the envelope keys, and the sig is real.
    fields = encoding.loads(obj.raw)
    assert tuple(fields) == ENVELOPE_KEYS
    assert fields["v"] == 1 and fields["sig"] == obj.sig
    unsigned = {k: v for k, v in fields.items() if k != "sig"}
    assert verify(identity.public_key, enc(unsigned), obj.sig)
    # Deterministic: building again gives the same bytes.
    again = build(identity, kind, stream=stream, body=body, ts=ts, links=reversed(links))
    assert again.raw == obj.raw


@settings(max_examples=40, deadline=None)
@given(built_objects())
def test_parse_returns_the_object_and_the_signed_bytes(built):
    obj = built[0]
    parsed, unsigned = parse(obj.raw)
    assert parsed == obj
    fields = cbor2.loads(obj.raw)
    del fields["sig"]
    assert unsigned == enc(fields)
    assert verify(obj.author, unsigned, obj.sig)
    # parse skips only the signature check: a forged sig parses but does not verify.
    forged = signed(envelope(author=OTHER.public_key))
    parsed, unsigned = parse(forged)
    assert not verify(parsed.author, unsigned, parsed.sig)
    assert rejected(forged).reason is Reason.BAD_SIGNATURE


def test_decode_accepts_bytes_like_input():
    obj = build(IDENT, "post/join", stream=STREAM, body={"channel": "général"}, ts=TS)
    assert decode(bytearray(obj.raw)) == obj
    assert decode(memoryview(obj.raw)) == obj


def test_handcrafted_signing_matches_build():
    obj = build(IDENT, "post/text", stream=STREAM, body={"text": "hi", "channel": "x"}, ts=TS,
                links=[ID2, ID1])
    fields = envelope(type="post/text", body={"channel": "x", "text": "hi"}, links=[ID1, ID2])
    assert signed(fields) == obj.raw
    assert signed_pairs(canonical_pairs(fields)) == obj.raw


# Corruption: every changed, missing or extra byte is rejected ----------------------------------


@settings(max_examples=150, deadline=None)
@given(built_objects(), st.data())
def test_changing_any_single_byte_is_rejected(built, data):
    raw = built[0].raw
    pos = data.draw(st.integers(0, len(raw) - 1), label="position")
    value = data.draw(st.integers(0, 255).filter(lambda b: b != raw[pos]), label="new byte")
    corrupt = raw[:pos] + bytes([value]) + raw[pos + 1:]
    with pytest.raises(InvalidObject):  # and nothing else escapes
        decode(corrupt)


def test_every_byte_position_of_one_object_is_checked():
    # Every position, with each single-bit flip and the bytes most likely to keep the CBOR
    # well-formed (heads of ints, strings, arrays, maps, tags, simple values).
    obj = build(IDENT, "post/text", stream=STREAM, body={"channel": "café", "text": "hé 😀"},
                ts=TS, links=[ID1])
    raw = obj.raw
    accepted = []
    for pos in range(len(raw)):
        values = {raw[pos] ^ (1 << bit) for bit in range(8)}
        values |= {0x00, 0x01, 0x17, 0x18, 0x40, 0x58, 0x60, 0x78, 0x80, 0xA0, 0xC0, 0xD8,
                   0xF4, 0xF5, 0xF6, 0xF9, 0xFF, (raw[pos] + 1) % 256, (raw[pos] - 1) % 256}
        for value in values - {raw[pos]}:
            try:
                decode(raw[:pos] + bytes([value]) + raw[pos + 1:])
            except InvalidObject:
                continue
            accepted.append((pos, value))
    assert accepted == []


@settings(max_examples=30, deadline=None)
@given(built_objects())
def test_truncation_at_any_length_is_rejected(built):
    raw = built[0].raw
    for n in range(len(raw)):
        with pytest.raises(InvalidObject):
            decode(raw[:n])


@settings(max_examples=100, deadline=None)
@given(built_objects(), st.binary(min_size=1, max_size=16), st.data())
def test_appended_inserted_or_deleted_bytes_are_rejected(built, extra, data):
    raw = built[0].raw
    with pytest.raises(InvalidObject):
        decode(raw + extra)
    pos = data.draw(st.integers(0, len(raw) - 1))
    with pytest.raises(InvalidObject):
        decode(raw[:pos] + extra + raw[pos:])
    with pytest.raises(InvalidObject):
        decode(raw[:pos] + raw[pos + 1:])


# Reason codes, one by one ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"\xff", id="break-byte"),
        pytest.param(b"hello", id="text-not-cbor"),
        pytest.param(b"\xa8", id="map-head-only"),
        pytest.param(b"\x1c", id="reserved-info"),
        pytest.param(enc([1, 2, 3]), id="array"),
        pytest.param(enc("object"), id="string"),
        pytest.param(enc(7), id="int"),
        pytest.param(enc(None), id="null"),
        pytest.param(enc(b"\xa0"), id="bytes"),
    ],
)
def test_malformed(raw):
    assert rejected(raw).reason is Reason.MALFORMED


def test_non_canonical_envelope_key_order():
    pairs = canonical_pairs(envelope())
    pairs[2], pairs[3] = pairs[3], pairs[2]  # "type" before "body"
    assert rejected(signed_pairs(pairs)).reason is Reason.NON_CANONICAL
    pairs = canonical_pairs(envelope())
    assert rejected(signed_pairs(pairs[::-1])).reason is Reason.NON_CANONICAL


@pytest.mark.parametrize(
    "key,encoded",
    [
        pytest.param("ts", b"\x1b" + (1000).to_bytes(8, "big"), id="ts-9-byte-head"),
        pytest.param("ts", b"\x1a" + (1000).to_bytes(4, "big"), id="ts-5-byte-head"),
        pytest.param("ts", b"\x18\x05", id="ts-5-in-2-bytes"),
        pytest.param("v", b"\x18\x01", id="v-2-byte-head"),
        pytest.param("links", b"\x98\x00", id="links-length-2-byte-head"),
        pytest.param("stream", b"\x59\x00\x20" + STREAM, id="stream-length-3-byte-head"),
        pytest.param("type", b"\x78\x0c" + UNKNOWN.encode(), id="type-length-2-byte-head"),
        pytest.param("body", bytes.fromhex("a2616202616101"), id="body-keys-unsorted"),
        pytest.param("body", bytes.fromhex("a161611817"), id="body-non-minimal-int"),
        pytest.param("body", bytes.fromhex("a16161fb3ff8000000000000"), id="body-float64-1.5"),
        pytest.param("body", bytes.fromhex("a16161fa3fc00000"), id="body-float32-1.5"),
    ],
)
def test_non_canonical_field(key, encoded):
    fields = envelope(ts=1000 if encoded != b"\x18\x05" else 5)
    assert signed_pairs(canonical_pairs(fields)) == signed(fields)
    pairs = canonical_pairs(fields)
    pairs = [(k, encoded if k == key else v) for k, v in pairs]
    assert rejected(signed_pairs(pairs)).reason is Reason.NON_CANONICAL


def test_non_canonical_known_kind_body_key_order():
    body = bytes.fromhex("a2") + enc("channel") + enc("general") + enc("text") + enc("hi")
    fields = envelope(type="post/text", body={"channel": "general", "text": "hi"})
    pairs = [(k, body if k == "body" else v) for k, v in canonical_pairs(fields)]
    assert decode(signed_pairs(canonical_pairs(fields))).body["text"] == "hi"
    assert rejected(signed_pairs(pairs)).reason is Reason.NON_CANONICAL


def test_canonical_float_in_unknown_body_is_valid():
    obj = decode(signed(envelope(body={"a": 1.5, "b": [0.1, float("inf")]})))
    assert obj.body == {"a": 1.5, "b": [0.1, float("inf")]}


@pytest.mark.parametrize(
    "version",
    [2, 0, 3, 255, -1, "1", b"\x01", [1], True, 1.0, None],
    ids=lambda v: repr(v),
)
def test_unknown_version(version):
    assert rejected(signed(envelope(v=version))).reason is Reason.UNKNOWN_VERSION


def test_unknown_version_with_a_different_envelope_layout():
    # A future format may change the envelope: its version is what makes it unknown.
    fields = envelope(v=2, links=MISSING, extra="new field")
    assert rejected(enc(fields)).reason is Reason.UNKNOWN_VERSION


@pytest.mark.parametrize("key", ENVELOPE_KEYS)
def test_missing_field(key):
    fields = envelope()
    if key == "sig":
        raw = enc(fields)
    else:
        sig = IDENT.sign(enc(fields))
        raw = enc({k: v for k, v in {**fields, "sig": sig}.items() if k != key})
    assert rejected(raw).reason is Reason.BAD_FIELD


@pytest.mark.parametrize("extra", ["x", "id", "sigs", "v2", "bodyy"])
def test_extra_field(extra):
    assert rejected(signed(envelope(**{extra: 1}))).reason is Reason.BAD_FIELD


@pytest.mark.parametrize(
    "key,value",
    [
        ("type", b"post/text"), ("type", ""), ("type", "x" * 65), ("type", "post/tëxt"),
        ("type", 1), ("type", None),
        ("author", IDENT.public_key[:31]), ("author", IDENT.public_key + b"\x00"),
        ("author", IDENT.public_key.hex()), ("author", None),
        ("ts", -1), ("ts", "1700000000000"), ("ts", True), ("ts", 2**63), ("ts", 2**64),
        ("ts", 1.5), ("ts", None),
        ("stream", STREAM[:31]), ("stream", STREAM + b"\x00"), ("stream", STREAM.hex()),
        ("stream", None),
        ("body", []), ("body", None), ("body", "text"), ("body", b""),
        ("links", {}), ("links", ID1), ("links", None),
    ],
    ids=lambda x: repr(x)[:20],
)
def test_wrong_typed_field(key, value):
    assert rejected(signed(envelope(**{key: value}))).reason is Reason.BAD_FIELD


@pytest.mark.parametrize("sig", [bytes(63), bytes(65), b"", "sig", None, [bytes(64)]],
                         ids=repr)
def test_wrong_typed_signature(sig):
    assert rejected(enc({**envelope(), "sig": sig})).reason is Reason.BAD_FIELD


def test_type_limits_are_inclusive():
    assert decode(signed(envelope(type="x" * 64))).type == "x" * 64
    assert decode(signed(envelope(type="x"))).type == "x"
    assert decode(signed(envelope(ts=0))).ts == 0
    assert decode(signed(envelope(ts=2**63 - 1))).ts == 2**63 - 1


@pytest.mark.parametrize(
    "links",
    [
        pytest.param([ID1[:31]], id="31-byte-link"),
        pytest.param([ID1 + b"\x00"], id="33-byte-link"),
        pytest.param([ID1, ID2[:31]], id="second-link-short"),
        pytest.param([ID1.hex()], id="hex-string-link"),
        pytest.param([None], id="null-link"),
        pytest.param([ID1, ID1], id="repeated-link"),
        pytest.param([ID1, ID2, ID1], id="repeated-not-adjacent"),
    ],
)
def test_bad_links(links):
    assert rejected(signed(envelope(links=links))).reason is Reason.BAD_LINKS


def test_too_many_links():
    links = [bytes([i]) * 32 for i in range(MAX_LINKS + 1)]
    assert rejected(signed(envelope(links=links))).reason is Reason.TOO_MANY_LINKS
    assert len(decode(signed(envelope(links=links[:MAX_LINKS]))).links) == MAX_LINKS
    # links need not be sorted (the author signed the order they wrote)
    assert decode(signed(envelope(links=[ID2, ID1]))).links == (ID2, ID1)


@pytest.mark.parametrize("pos", [0, 1, 31, 32, 62, 63])
def test_bad_signature_flipped_byte(pos):
    fields = envelope()
    sig = bytearray(IDENT.sign(enc(fields)))
    sig[pos] ^= 0x01
    assert rejected(enc({**fields, "sig": bytes(sig)})).reason is Reason.BAD_SIGNATURE


def test_bad_signature_other_signer():
    raw = signed(envelope(author=IDENT.public_key), identity=OTHER)
    assert rejected(raw).reason is Reason.BAD_SIGNATURE
    raw = signed(envelope(author=OTHER.public_key), identity=IDENT)
    assert rejected(raw).reason is Reason.BAD_SIGNATURE


def test_bad_signature_over_other_content():
    sig = IDENT.sign(enc(envelope(ts=TS + 1)))
    assert rejected(enc({**envelope(), "sig": sig})).reason is Reason.BAD_SIGNATURE
    sig = IDENT.sign(enc({**envelope(), "sig": bytes(64)}))  # signed *with* a sig field
    assert rejected(enc({**envelope(), "sig": sig})).reason is Reason.BAD_SIGNATURE


@pytest.mark.parametrize("author", [bytes(32), b"\xff" * 32, bytes([1]) + bytes(31)],
                         ids=["zero", "ff", "identity-point"])
def test_bad_signature_weird_author_keys(author):
    for sig in (bytes(64), IDENT.sign(enc(envelope(author=author)))):
        raw = enc({**envelope(author=author), "sig": sig})
        assert rejected(raw).reason is Reason.BAD_SIGNATURE


def padded_fields(size: int) -> dict:
    """Unknown-kind envelope whose signed encoding is exactly `size` bytes."""
    probe = len(signed(envelope(body={"pad": b"\x00" * 60000})))
    return envelope(body={"pad": b"\x00" * (60000 + size - probe)})


def test_oversize_limit_is_exactly_64_kib():
    assert MAX_OBJECT_SIZE == 65536
    at_limit = signed(padded_fields(MAX_OBJECT_SIZE))
    assert len(at_limit) == MAX_OBJECT_SIZE
    assert decode(at_limit).raw == at_limit
    over = signed(padded_fields(MAX_OBJECT_SIZE + 1))
    assert len(over) == MAX_OBJECT_SIZE + 1
    assert rejected(over).reason is Reason.OVERSIZE
    assert rejected(b"\xff" * (MAX_OBJECT_SIZE + 1)).reason is Reason.OVERSIZE


def test_unknown_kind_with_valid_envelope_and_signature_is_valid():
    body = {"anything": [1, -2, b"\x00", "✓", {"nested": None}], 7: True}
    raw = signed(envelope(type="future/thing", body=body, links=[ID1]))
    obj = decode(raw)
    assert (obj.type, obj.body, obj.links, obj.author) == (
        "future/thing", body, (ID1,), IDENT.public_key)
    assert obj.id == encoding.object_id(raw)


# build refuses whatever decode would refuse ---------------------------------------------------


def build_reason(**kwargs) -> Reason:
    args = {"kind": UNKNOWN, "stream": STREAM, "body": {}, "ts": TS, **kwargs}
    kind = args.pop("kind")
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, **args)
    assert str(info.value)
    return info.value.reason


def test_build_rejects_oversize():
    fields = padded_fields(MAX_OBJECT_SIZE)
    obj = build(IDENT, UNKNOWN, stream=STREAM, body=fields["body"], ts=TS)
    assert len(obj.raw) == MAX_OBJECT_SIZE
    pad = b"\x00" * (len(fields["body"]["pad"]) + 1)
    assert build_reason(body={"pad": pad}) is Reason.OVERSIZE
    big = {"root": [], "epoch": 0, "nonce": bytes(24), "box": bytes(65536)}
    assert build_reason(kind="doc/commit", body=big) is Reason.OVERSIZE


def test_build_rejects_bad_envelope_fields():
    assert build_reason(links=[bytes([i]) * 32 for i in range(65)]) is Reason.TOO_MANY_LINKS
    assert build_reason(links=[ID1[:31]]) is Reason.BAD_LINKS
    assert build_reason(links=["not bytes"]) is Reason.BAD_LINKS
    assert build_reason(ts=-1) is Reason.BAD_FIELD
    assert build_reason(ts=2**63) is Reason.BAD_FIELD
    assert build_reason(ts=True) is Reason.BAD_FIELD
    assert build_reason(ts=1.0) is Reason.BAD_FIELD
    assert build_reason(stream=STREAM[:31]) is Reason.BAD_FIELD
    assert build_reason(stream=STREAM.hex()) is Reason.BAD_FIELD
    assert build_reason(kind="") is Reason.BAD_FIELD
    assert build_reason(kind="k" * 65) is Reason.BAD_FIELD
    assert build_reason(kind="pöst/text") is Reason.BAD_FIELD
    assert build_reason(body=[]) is Reason.BAD_FIELD


def test_build_rejects_unencodable_text():
    assert build_reason(kind="post/text", body={"channel": "c", "text": "\ud800"}) is (
        Reason.BAD_BODY
    )
    assert build_reason(body={"x": "\udfff"}) is Reason.BAD_BODY


def test_build_rejects_unencodable_values_with_invalid_object():
    assert build_reason(body={"x": object()}) is Reason.BAD_BODY


def test_build_deduplicates_and_sorts_links():
    obj = build(IDENT, UNKNOWN, stream=STREAM, body={}, ts=TS, links=[ID2, ID1, ID2, ID1])
    assert obj.links == (ID1, ID2)
    assert decode(obj.raw) == obj
    # 64 distinct links given with repeats are fine.
    links = [bytes([i]) * 32 for i in range(64)]
    assert len(build(IDENT, UNKNOWN, stream=STREAM, body={}, ts=TS, links=links * 2).links) == 64


def nested(depth: int):
    value = 0
    for _ in range(depth):
        value = [value]
    return value


def test_build_refuses_bodies_decode_cannot_read():
    try:
        obj = build(IDENT, UNKNOWN, stream=STREAM, body={"a": nested(450)}, ts=TS)
    except InvalidObject:
        return
    assert decode(obj.raw) == obj


def test_decode_of_deep_body_never_raises_recursion_error():
    raw = signed(envelope(body={"a": nested(390)}))
    with contextlib.suppress(InvalidObject):
        decode(raw)


def test_decode_of_self_referential_body_is_invalid_object():
    body = bytes.fromhex("a16161d81c81d81d00")  # {"a": 28([29(0)])}
    pairs = [(k, body if k == "body" else v) for k, v in canonical_pairs(envelope())]
    rejected(unsigned_pairs(pairs))
    rejected(signed_pairs(pairs))


def test_decode_of_body_cbor2_cannot_reencode_is_invalid_object():
    body = b"\xa1\x61a" + cbor2.dumps(cbor2.CBORTag(36, "Content-Type: text/plain\n\nhi"))
    pairs = [(k, body if k == "body" else v) for k, v in canonical_pairs(envelope())]
    rejected(unsigned_pairs(pairs))
    rejected(signed_pairs(pairs))


# InvalidObject --------------------------------------------------------------------------------


def test_invalid_object_carries_a_reason_and_pickles():
    err = rejected(signed(envelope(type="post/info", body={"name": "n" * 33})))
    assert err.reason is Reason.BAD_BODY and err.reason == "bad_body"
    assert isinstance(err, ValueError)
    assert "nickname" in str(err) and "32" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is InvalidObject
    assert again.reason is Reason.BAD_BODY
    assert str(again) == str(err)
    assert again.args == err.args


@pytest.mark.parametrize("reason", list(Reason))
def test_every_reason_pickles(reason):
    err = InvalidObject(reason, f"because {reason}")
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.reason, str(again)) == (InvalidObject, reason, f"because {reason}")


# Derived streams (core.kinds) -----------------------------------------------------------------


def test_channel_stream_compares_names_case_insensitively_and_in_nfc():
    ws = bytes(range(32))
    general = channel_stream(ws, "General")
    assert general == channel_stream(ws, "general") == channel_stream(ws, "GENERAL")
    assert channel_stream(ws, "Café") == channel_stream(ws, "Cafe\u0301")
    assert len(general) == 32
    assert general != channel_stream(ws, "random")
    assert general != channel_stream(bytes(32), "general")  # per workspace


def test_profile_stream_is_derived_from_the_key_alone():
    assert profile_stream(IDENT.public_key) == profile_stream(bytes(IDENT.public_key))
    assert profile_stream(IDENT.public_key) != profile_stream(OTHER.public_key)
    assert len(profile_stream(IDENT.public_key)) == 32
    assert profile_stream(bytes(32)) != channel_stream(bytes(32), "x")


def test_a_stored_object_reads_what_decoding_reads():
    """core.objects.Stored: built from the replica's columns, it decodes links, body and sig
    from its raw bytes when asked, the same as decoding them does."""
    obj = build(IDENT, "post/text", stream=channel_stream(bytes(32), "general"),
                body={"channel": "general", "text": "hi"}, ts=TS, links=[ID1, ID2])
    lazy = stored(obj.id, obj.type, obj.author, obj.ts, obj.stream, obj.raw)
    assert (lazy.id, lazy.type, lazy.author, lazy.ts, lazy.stream, lazy.raw) == (
        obj.id, obj.type, obj.author, obj.ts, obj.stream, obj.raw)
    assert (lazy.links, lazy.body, lazy.sig) == (obj.links, obj.body, obj.sig)
    assert isinstance(lazy, Object) and lazy.hex == obj.hex
    # read as a tuple (unpacked, indexed, compared, pickled, replaced) it is the whole object
    assert tuple(lazy) == tuple(obj) and lazy[6] == obj.body and lazy[-2:] == obj[-2:]
    assert lazy == obj and obj == lazy
    assert pickle.loads(pickle.dumps(lazy)) == obj
    assert lazy._replace(ts=TS + 1) == obj._replace(ts=TS + 1)
    assert lazy._asdict() == obj._asdict()
