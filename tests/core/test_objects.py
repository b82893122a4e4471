"""Tests for core.objects (build, decode) and core.kinds: validity decided by the bytes alone.

Hand-crafted objects are signed the way core.objects.build signs: Ed25519 over the canonical
encoding of the map without `sig`, then `sig` inserted (see `signed`).
"""

import contextlib
import hashlib
import pickle
import unicodedata

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import encoding
from core.errors import InvalidObject, Reason
from core.identity import Identity, verify
from core.kinds import KINDS, channel_stream, profile_stream
from core.objects import (
    ENVELOPE_KEYS,
    MAX_LINKS,
    MAX_OBJECT_SIZE,
    Object,
    build,
    decode,
    parse,
)

IDENT = Identity.from_seed(bytes(range(32)))
OTHER = Identity.from_seed(bytes(range(1, 33)))
STREAM = bytes(range(100, 132))
TS = 1_700_000_000_000
ID1 = bytes([1]) * 32
ID2 = bytes([2]) * 32
UNKNOWN = "future/thing"
MISSING = object()


def enc(value) -> bytes:
    return cbor2.dumps(value, canonical=True)


def envelope(**changes) -> dict:
    """Envelope fields without `sig`: a valid unknown-kind object unless changed."""
    fields = {"v": 1, "type": UNKNOWN, "author": IDENT.public_key, "ts": TS, "stream": STREAM,
              "links": [], "body": {}}
    for key, value in changes.items():
        if value is MISSING:
            del fields[key]
        else:
            fields[key] = value
    return fields


def signed(fields: dict, identity: Identity = IDENT) -> bytes:
    """Sign the canonical encoding of `fields` (no `sig`) and insert `sig`, like build does."""
    return enc({**fields, "sig": identity.sign(enc(fields))})


def signed_pairs(pairs: list[tuple[str, bytes]], identity: Identity = IDENT) -> bytes:
    """A map written entry by entry, in the given order and with the given value encodings.

    The signature covers exactly these bytes without the sig entry, and the sig entry goes
    third (after `v` and `ts`), so the only defect is whatever the caller put in `pairs`.
    """
    def write(entries):
        return bytes([0xA0 + len(entries)]) + b"".join(enc(k) + v for k, v in entries)

    sig = identity.sign(write(pairs))
    return write([*pairs[:2], ("sig", enc(sig)), *pairs[2:]])


def canonical_pairs(fields: dict) -> list[tuple[str, bytes]]:
    return [(key, enc(fields[key])) for key in ENVELOPE_KEYS if key != "sig"]


def unsigned_pairs(pairs: list[tuple[str, bytes]]) -> bytes:
    """Like signed_pairs, but with an all-zero signature: what anyone can send."""
    entries = [*pairs[:2], ("sig", enc(bytes(64))), *pairs[2:]]
    return bytes([0xA0 + len(entries)]) + b"".join(enc(k) + v for k, v in entries)


def rejected(raw: bytes) -> InvalidObject:
    with pytest.raises(InvalidObject) as info:
        decode(raw)
    err = info.value
    assert isinstance(err.reason, Reason)
    assert str(err) and str(err) != str(err.reason)  # a sentence, not just the code
    return err


def nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def has_control(text: str) -> bool:
    return any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs") for ch in text)


# Strategies: one per kind, within the documented limits -------------------------------------

EMOJI_CJK = list("日本語中文字한국어漢字😀🎉🔥👍🏽🐈‍⬛🇫🇷ñé")  # codepoints: ZWJ, modifier, flag
NAME_CHARS = st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")) | st.sampled_from(
    [c for c in EMOJI_CJK if not has_control(c)]
)
TEXT_CHARS = st.characters(exclude_categories=("Cs",)) | st.sampled_from(EMOJI_CJK)


def names(limit: int):
    return (
        st.text(NAME_CHARS, min_size=1, max_size=limit)
        .map(nfc)
        .filter(lambda s: 1 <= len(s) <= limit and s.strip() == s and not has_control(s))
    )


def utf8_len(text: str) -> int:
    return len(text.encode())


long_texts = st.sampled_from(["a", "é", "中", "😀"]).flatmap(
    lambda ch: st.integers(1, 4096 // utf8_len(ch)).map(lambda n: ch * n)
)
texts = (st.text(TEXT_CHARS, min_size=1, max_size=200) | long_texts).filter(
    lambda s: 1 <= utf8_len(s) <= 4096
)
topics = st.text(TEXT_CHARS, max_size=80) | st.integers(0, 512).map(lambda n: "話" * n)
ids = st.binary(min_size=32, max_size=32)


def id_lists(lo: int = 0, hi: int = 64):
    return st.lists(ids, min_size=lo, max_size=hi, unique=True)


epochs = st.integers(0, 2**63 - 1)
policies = st.fixed_dictionaries(
    {"effect": st.sampled_from(["allow", "deny"])},
    optional={
        name: st.lists(st.text(max_size=12), max_size=3)
        for name in ("subjects", "resources", "actions")
    },
)
descriptors = st.fixed_dictionaries({
    "name": st.text("abcXYZ019 ._-()éü日本", min_size=1, max_size=40),
    "size": st.integers(0, 4 << 30), "type": st.sampled_from(["image/png", "application/pdf"]),
    "list": ids, "key": ids, "w": st.integers(0, 5000), "h": st.integers(0, 5000),
    "thumb": st.binary(max_size=64)})
editor_changes = st.tuples(id_lists(0, 8), id_lists(0, 8)).filter(lambda t: t[0] or t[1])

BODIES = {
    "post/text": st.fixed_dictionaries({"channel": names(64), "text": texts}),
    "post/delete": st.fixed_dictionaries({"targets": id_lists(1)}),
    "post/info": st.fixed_dictionaries({"name": names(32)}),
    "post/topic": st.fixed_dictionaries({"channel": names(64), "topic": topics}),
    "post/join": st.fixed_dictionaries({"channel": names(64)}),
    "post/leave": st.fixed_dictionaries({"channel": names(64)}),
    "post/reply": st.fixed_dictionaries(
        {"channel": names(64), "text": texts, "parent": ids, "broadcast": st.booleans()}),
    "post/edit": st.fixed_dictionaries({"channel": names(64), "target": ids, "text": texts}),
    "post/file": st.fixed_dictionaries({"channel": names(64), "text": st.just("") | texts,
                                        "files": st.lists(descriptors, min_size=1, max_size=4)}),
    "post/react": st.fixed_dictionaries(
        {"channel": names(64), "target": ids, "emoji": st.sampled_from(["👍", "👩‍💻", "🇫🇷", "+1", "❤️"])}),
    "workspace/genesis": st.fixed_dictionaries(
        {"name": names(64), "nonce": st.binary(min_size=16, max_size=16)}
    ),
    "workspace/admin-grant": st.fixed_dictionaries({"key": ids}),
    "workspace/admin-revoke": st.fixed_dictionaries({"key": ids}),
    "channel/policy": st.fixed_dictionaries(
        {"channel": names(64), "policies": st.lists(policies, max_size=8)}
    ),
    "doc/root": st.fixed_dictionaries(
        {
            "title": st.text(TEXT_CHARS, min_size=1, max_size=256),
            "editors": id_lists(1),
            "nonce": st.binary(min_size=16, max_size=16),
        }
    ),
    "doc/title": st.fixed_dictionaries({"title": st.text(TEXT_CHARS, min_size=1, max_size=256)}),
    "doc/editors": editor_changes.map(lambda t: {"add": t[0], "remove": t[1]}),
    "doc/branch": st.fixed_dictionaries(
        {"name": names(64), "source": st.none() | ids, "at": id_lists()}
    ),
    "doc/main": st.fixed_dictionaries({"branch": ids}),
    "doc/commit": st.fixed_dictionaries(
        {
            "root": id_lists(),
            "epoch": epochs,
            "nonce": st.binary(min_size=24, max_size=24),
            "box": st.binary(max_size=2000),
        }
    ),
    "doc/tag": st.fixed_dictionaries({"name": names(64), "commit": ids}),
    "doc/branch-key": st.fixed_dictionaries(
        {"branch": ids, "epoch": epochs, "recipient": ids, "sealed": st.binary(max_size=256)}
    ),
    "doc/key-refresh": st.fixed_dictionaries(
        {"branch": ids, "epoch": st.integers(1, 2**63 - 1)}
    ),
    "doc/visibility": st.fixed_dictionaries({"mode": st.sampled_from(["workspace", "private"])}),
    "doc/editing": st.fixed_dictionaries({"mode": st.sampled_from(["workspace", "listed"])}),
    "doc/workspace-key": st.fixed_dictionaries(
        {"branch": ids, "epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=256)}
    ),
    "doc/edit-request": st.fixed_dictionaries(
        {"note": st.text(TEXT_CHARS, max_size=256), "open": st.booleans()}
    ),
    "doc/comment": st.fixed_dictionaries(
        {"epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=2000)}
    ),
    "mod/role": st.fixed_dictionaries(
        {"channel": names(64), "key": ids, "role": st.sampled_from(["moderator", "none"]),
         "reason": st.text(NAME_CHARS, max_size=256)}
    ),
    "mod/hide": st.fixed_dictionaries(
        {"channel": names(64), "target": ids, "hidden": st.booleans(),
         "reason": st.text(NAME_CHARS, min_size=1, max_size=256)}
    ),
    "invite/create": st.fixed_dictionaries(
        {"tag": st.binary(min_size=16, max_size=16), "uses": epochs, "expires": epochs,
         "nonce": st.binary(min_size=24, max_size=24), "box": st.binary(max_size=256)}
    ),
    "invite/revoke": st.fixed_dictionaries({"invite": ids}),
    "member/admit": st.fixed_dictionaries({"key": ids, "invite": st.none() | ids}),
    "member/remove": st.fixed_dictionaries(
        {"key": ids, "reason": st.text(NAME_CHARS, max_size=256)}
    ),
    "channel/private": st.fixed_dictionaries(
        {"nonce": st.binary(min_size=16, max_size=16), "dm": st.booleans()}
    ),
    "channel/members": st.fixed_dictionaries(
        {"channel": ids, "add": st.lists(ids, min_size=1, max_size=4, unique=True),
         "remove": st.lists(ids, max_size=4, unique=True)}
    ),
    "channel/key": st.fixed_dictionaries(
        {"channel": ids, "epoch": epochs, "check": st.binary(min_size=16, max_size=16),
         "recipient": ids, "sealed": st.binary(max_size=256)}
    ),
    "channel/name": st.fixed_dictionaries(
        {"channel": ids, "epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=256)}
    ),
    "post/sealed": st.fixed_dictionaries(
        {"channel": ids, "epoch": epochs, "nonce": st.binary(min_size=24, max_size=24),
         "box": st.binary(max_size=2000)}
    ),
    "member/kept": st.fixed_dictionaries(
        {"removal": ids, "ids": st.lists(ids, min_size=1, max_size=8, unique=True)}
    ),
    "workspace/key": st.fixed_dictionaries(
        {"epoch": epochs, "check": st.binary(min_size=16, max_size=16), "recipient": ids,
         "sealed": st.binary(max_size=256)}
    ),
    "workspace/relay": st.fixed_dictionaries(
        {"host": st.text(st.characters(min_codepoint=33, max_codepoint=126,
                                       exclude_characters="/"), min_size=1, max_size=253),
         "port": st.integers(1, 65535), "key": ids, "active": st.booleans()}
    ),
}

unknown_kinds = st.just(UNKNOWN) | st.text(
    st.characters(max_codepoint=127), min_size=1, max_size=64
).filter(lambda k: k not in KINDS)
unknown_bodies = st.dictionaries(
    st.text(max_size=8),
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=20) | st.binary(max_size=20),
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(st.text(max_size=6) | st.integers(-100, 100), children, max_size=4),
        max_leaves=20,
    ),
    max_size=5,
)
ALL_KINDS = sorted(KINDS)
seeds = st.binary(min_size=32, max_size=32)
timestamps = st.integers(0, 2**63 - 1) | st.integers(TS - 10**9, TS + 10**9)


def test_there_is_a_strategy_for_every_kind():
    assert set(BODIES) == set(KINDS)


@st.composite
def built_objects(draw, kind=None):
    if kind is None:
        kind = draw(st.sampled_from([*ALL_KINDS, UNKNOWN]))
    if kind in KINDS:
        body = draw(BODIES[kind])
    else:
        kind = draw(unknown_kinds) if kind == UNKNOWN else kind
        body = draw(unknown_bodies)
    # The caller's key order does not matter: build writes the canonical order.
    body = dict(draw(st.permutations(list(body.items()))))
    identity = Identity.from_seed(draw(seeds))
    stream = draw(ids)
    ts = draw(timestamps)
    links = draw(st.lists(ids, max_size=6) | id_lists(60, 64))
    links += draw(st.lists(st.sampled_from(links), max_size=2)) if links else []  # repeats
    obj = build(identity, kind, stream=stream, body=body, ts=ts, links=links)
    return obj, (identity, kind, stream, body, ts, links)


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


# Bodies of known kinds ------------------------------------------------------------------------

EMOJI_4096 = "😀" * 1024  # 4096 bytes of UTF-8
VALID = {
    "post/text": {"channel": "general", "text": "hello\nworld"},
    "post/delete": {"targets": [ID1]},
    "post/info": {"name": "alice"},
    "post/topic": {"channel": "general", "topic": "news"},
    "post/join": {"channel": "general"},
    "post/leave": {"channel": "general"},
    "post/reply": {"channel": "general", "text": "me too", "parent": ID1, "broadcast": False},
    "post/edit": {"channel": "general", "target": ID1, "text": "hello, world"},
    "post/file": {"channel": "general", "text": "", "files": [
        {"name": "report.pdf", "size": 1000, "type": "application/pdf", "list": ID1,
         "key": ID1, "w": 0, "h": 0, "thumb": b""}]},
    "post/react": {"channel": "general", "target": ID1, "emoji": "👍"},
    "workspace/genesis": {"name": "Home", "nonce": bytes(16)},
    "workspace/admin-grant": {"key": ID1},
    "workspace/admin-revoke": {"key": ID1},
    "channel/policy": {
        "channel": "general",
        "policies": [{"effect": "deny", "subjects": [ID1.hex()], "resources": ["post/text"],
                      "actions": ["append"]}],
    },
    "doc/root": {"title": "Notes", "editors": [ID1], "nonce": bytes(16)},
    "doc/title": {"title": "Notes"},
    "doc/editors": {"add": [ID1], "remove": []},
    "doc/branch": {"name": "main", "source": None, "at": []},
    "doc/main": {"branch": ID1},
    "doc/commit": {"root": [], "epoch": 0, "nonce": bytes(24), "box": b"box"},
    "doc/tag": {"name": "v1", "commit": ID1},
    "doc/branch-key": {"branch": ID1, "epoch": 0, "recipient": ID2, "sealed": b"s" * 80},
    "doc/key-refresh": {"branch": ID1, "epoch": 1},
    "doc/visibility": {"mode": "workspace"},
    "doc/editing": {"mode": "workspace"},
    "doc/workspace-key": {"branch": ID1, "epoch": 0, "nonce": bytes(24), "box": b"b" * 48},
    "doc/edit-request": {"note": "may I help?", "open": True},
    "doc/comment": {"epoch": 0, "nonce": bytes(24), "box": b"box"},
    "mod/role": {"channel": "general", "key": ID1, "role": "moderator", "reason": "helps"},
    "mod/hide": {"channel": "general", "target": ID1, "hidden": True, "reason": "spam"},
    "invite/create": {"tag": ID1[:16], "uses": 3, "expires": 1_700_000_000_000,
                      "nonce": ID1[:24], "box": b"b" * 48},
    "invite/revoke": {"invite": ID1},
    "member/admit": {"key": ID1, "invite": ID1},
    "member/remove": {"key": ID1, "reason": "left the team"},
    "channel/private": {"nonce": ID1[:16], "dm": False},
    "channel/members": {"channel": ID1, "add": [ID1], "remove": [ID1]},
    "channel/key": {"channel": ID1, "epoch": 0, "check": ID1[:16], "recipient": ID1,
                    "sealed": b"s" * 72},
    "channel/name": {"channel": ID1, "epoch": 0, "nonce": ID1[:24], "box": b"n" * 20},
    "post/sealed": {"channel": ID1, "epoch": 0, "nonce": ID1[:24], "box": b"p" * 40},
    "member/kept": {"removal": ID1, "ids": [ID1]},
    "workspace/key": {"epoch": 0, "check": ID1[:16], "recipient": ID1, "sealed": b"s" * 80},
    "workspace/relay": {"host": "relay.example.org", "port": 7655, "key": ID1, "active": True},
}
MANY = [bytes([i]) * 32 for i in range(65)]

# (kind, field, value): boundary values that are still valid
EDGES = [
    ("post/text", "text", EMOJI_4096),
    ("post/text", "text", "x"),
    ("post/text", "text", "\x00\x07 tabs\tand\r\nnewlines \u200b\u2028"),  # text is free-form
    ("post/text", "channel", "日" * 64),
    ("post/text", "channel", "x"),
    ("post/text", "channel", "Général 🎉"),
    ("post/topic", "topic", ""),
    ("post/topic", "topic", "話" * 512),
    ("post/info", "name", "n" * 32),
    ("post/info", "name", "😀" * 32),
    ("post/delete", "targets", MANY[:64]),
    ("post/reply", "broadcast", True),
    ("post/edit", "text", EMOJI_4096),
    ("post/react", "emoji", "👨‍👩‍👧‍👦"),  # a ZWJ sequence of 7 codepoints
    ("post/react", "emoji", "x" * 16),
    ("workspace/genesis", "name", "w" * 64),
    ("channel/policy", "policies", []),
    ("channel/policy", "policies", [{"effect": "allow"}] * 64),
    ("doc/root", "editors", MANY[:64]),
    ("doc/root", "title", "t" * 256),
    ("doc/editors", "add", []),  # with remove non-empty below
    ("doc/branch", "source", ID2),
    ("doc/branch", "at", MANY[:64]),
    ("doc/commit", "epoch", 2**63 - 1),
    ("doc/commit", "box", b""),
    ("doc/commit", "root", MANY[:64]),
    ("doc/tag", "name", "t" * 64),
    ("doc/branch-key", "sealed", b"s" * 256),
    ("doc/branch-key", "sealed", b""),
    ("doc/key-refresh", "epoch", 2**63 - 1),
    ("doc/visibility", "mode", "private"),
    ("doc/editing", "mode", "listed"),
    ("doc/workspace-key", "epoch", 2**63 - 1),
    ("doc/workspace-key", "box", b"b" * 256),
    ("doc/workspace-key", "box", b""),
    ("doc/edit-request", "note", ""),
    ("doc/edit-request", "note", "話" * 256),
    ("doc/edit-request", "open", False),
    ("doc/comment", "epoch", 2**63 - 1),
    ("doc/comment", "box", b""),
    ("mod/role", "role", "none"),
    ("mod/role", "reason", ""),
    ("mod/role", "reason", "話" * 256),
    ("mod/hide", "hidden", False),
    ("mod/hide", "reason", "x"),
    ("mod/hide", "reason", "😀" * 256),
    ("invite/create", "uses", 0),
    ("invite/create", "expires", 0),
    ("invite/create", "box", b""),
    ("member/admit", "invite", None),
    ("workspace/key", "sealed", b""),
    ("member/remove", "reason", ""),
    ("channel/private", "dm", True),
    ("channel/members", "add", []),
    ("post/sealed", "box", b"p" * 20_000),
    ("member/kept", "ids", [bytes([n % 256, n // 256]) * 16 for n in range(1024)]),
]

# (kind, field, value): out of the documented limits -> bad_body
OUT_OF_LIMITS = [
    ("post/text", "text", ""),
    ("post/text", "text", "a" + EMOJI_4096),  # 4097 bytes
    ("post/text", "text", "a" * 4097),
    ("post/text", "text", b"hello"),
    ("post/text", "text", None),
    ("post/text", "channel", "c" * 65),
    ("post/text", "channel", ""),
    ("post/text", "channel", "gen\x07eral"),
    ("post/text", "channel", "gen\neral"),
    ("post/text", "channel", "gen\u2028eral"),
    ("post/text", "channel", "e\u0301"),  # NFD, not NFC
    ("post/text", "channel", " general"),
    ("post/text", "channel", "general "),
    ("post/text", "channel", b"general"),
    ("post/text", "channel", 5),
    ("post/topic", "topic", "t" * 513),
    ("post/reply", "broadcast", 1),
    ("post/reply", "parent", ID1[:31]),
    ("post/reply", "text", ""),
    ("post/edit", "text", "a" * 4097),
    ("post/edit", "target", None),
    ("post/react", "emoji", ""),
    ("post/react", "emoji", "x" * 17),
    ("post/react", "emoji", "thumbs up"),
    ("post/react", "emoji", "\u202e"),  # a bidi override
    ("post/react", "target", [ID1]),
    ("post/topic", "topic", b"news"),
    ("post/topic", "topic", None),
    ("post/topic", "channel", "c" * 65),
    ("post/info", "name", "n" * 33),
    ("post/info", "name", ""),
    ("post/info", "name", "bob\x00"),
    ("post/info", "name", "A\u030a"),  # NFD of Å
    ("post/info", "name", ["alice"]),
    ("post/join", "channel", "c" * 65),
    ("post/join", "channel", "a\tb"),
    ("post/join", "channel", None),
    ("post/leave", "channel", "\x1b[31mred"),
    ("post/leave", "channel", ""),
    ("post/delete", "targets", []),
    ("post/delete", "targets", MANY),
    ("post/delete", "targets", [ID1, ID1]),
    ("post/delete", "targets", [ID1[:31]]),
    ("post/delete", "targets", [ID1.hex()]),
    ("post/delete", "targets", ID1),
    ("workspace/genesis", "name", ""),
    ("workspace/genesis", "name", "w" * 65),
    ("workspace/genesis", "name", "home\x7f"),
    ("workspace/genesis", "nonce", bytes(15)),
    ("workspace/genesis", "nonce", bytes(17)),
    ("workspace/genesis", "nonce", "0" * 16),
    ("workspace/admin-grant", "key", ID1[:31]),
    ("workspace/admin-grant", "key", ID1 + b"\x00"),
    ("workspace/admin-grant", "key", ID1.hex()),
    ("workspace/admin-revoke", "key", ID1[:31]),
    ("workspace/admin-revoke", "key", ID1.hex()),
    ("channel/policy", "channel", "c" * 65),
    ("channel/policy", "policies", [{"effect": "allow"}] * 65),
    ("channel/policy", "policies", "deny everyone"),
    ("channel/policy", "policies", {"effect": "deny"}),
    ("channel/policy", "policies", [{"effect": "maybe"}]),
    ("channel/policy", "policies", [{"subjects": ["a"]}]),
    ("channel/policy", "policies", [{"effect": "deny", "colour": ["red"]}]),
    ("channel/policy", "policies", [{"effect": "deny", "subjects": "alice"}]),
    ("channel/policy", "policies", [{"effect": "deny", "subjects": [1]}]),
    ("channel/policy", "policies", [{"effect": ["deny"]}]),
    ("channel/policy", "policies", ["deny"]),
    ("doc/root", "title", ""),
    ("doc/root", "title", "t" * 257),
    ("doc/root", "title", b"Notes"),
    ("doc/root", "editors", []),
    ("doc/root", "editors", MANY),
    ("doc/root", "editors", [ID1, ID1]),
    ("doc/root", "editors", [ID1[:31]]),
    ("doc/root", "nonce", bytes(24)),
    ("doc/title", "title", ""),
    ("doc/title", "title", "t" * 257),
    ("doc/title", "title", None),
    ("doc/editors", "add", MANY),
    ("doc/editors", "add", [ID1, ID1]),
    ("doc/editors", "add", None),
    ("doc/editors", "remove", [ID1[:31]]),
    ("doc/branch", "name", ""),
    ("doc/branch", "name", "b" * 65),
    ("doc/branch", "name", "a\nb"),
    ("doc/branch", "source", ID1[:31]),
    ("doc/branch", "source", "main"),
    ("doc/branch", "at", MANY),
    ("doc/branch", "at", [ID1, ID1]),
    ("doc/branch", "at", None),
    ("doc/main", "branch", ID1[:31]),
    ("doc/main", "branch", None),
    ("doc/commit", "root", MANY),
    ("doc/commit", "root", [ID1, ID1]),
    ("doc/commit", "epoch", -1),
    ("doc/commit", "epoch", True),
    ("doc/commit", "epoch", 2**63),
    ("doc/commit", "epoch", 1.0),
    ("doc/commit", "epoch", "0"),
    ("doc/commit", "nonce", bytes(16)),
    ("doc/commit", "box", "box"),
    ("doc/commit", "box", None),
    ("doc/tag", "name", ""),
    ("doc/tag", "name", "t" * 65),
    ("doc/tag", "name", "v1\x00"),
    ("doc/tag", "commit", ID1[:31]),
    ("doc/branch-key", "branch", ID1[:31]),
    ("doc/branch-key", "epoch", -1),
    ("doc/branch-key", "recipient", ID2[:31]),
    ("doc/branch-key", "sealed", b"s" * 257),
    ("doc/branch-key", "sealed", "sealed"),
    ("doc/key-refresh", "branch", ID1[:31]),
    ("doc/key-refresh", "epoch", 0),
    ("doc/key-refresh", "epoch", -1),
    ("doc/key-refresh", "epoch", False),
    ("doc/visibility", "mode", "public"),
    ("doc/visibility", "mode", "Workspace"),
    ("doc/visibility", "mode", True),
    ("doc/editing", "mode", "everyone"),
    ("doc/editing", "mode", "Workspace"),
    ("doc/editing", "mode", 1),
    ("doc/workspace-key", "branch", ID1[:31]),
    ("doc/workspace-key", "epoch", -1),
    ("doc/workspace-key", "nonce", bytes(16)),
    ("doc/workspace-key", "box", b"b" * 257),
    ("doc/workspace-key", "box", "box"),
    ("doc/edit-request", "note", "n" * 257),
    ("doc/edit-request", "note", b"note"),
    ("doc/edit-request", "open", 1),
    ("doc/edit-request", "open", None),
    ("doc/comment", "epoch", -1),
    ("doc/comment", "epoch", True),
    ("doc/comment", "nonce", bytes(16)),
    ("doc/comment", "box", "box"),
    ("doc/comment", "box", None),
    ("mod/role", "channel", "c" * 65),
    ("mod/role", "key", ID1[:31]),
    ("mod/role", "role", "admin"),
    ("mod/role", "role", None),
    ("mod/role", "reason", "r" * 257),
    ("mod/role", "reason", "a\nb"),
    ("mod/role", "reason", None),
    ("mod/hide", "channel", ""),
    ("mod/hide", "target", ID1[:31]),
    ("mod/hide", "target", ID1.hex()),
    ("mod/hide", "hidden", 1),
    ("mod/hide", "hidden", None),
    ("mod/hide", "reason", ""),
    ("mod/hide", "reason", "r" * 257),
    ("mod/hide", "reason", "\u202espam"),
    ("mod/hide", "reason", b"spam"),
    ("invite/create", "tag", ID1),
    ("invite/create", "uses", -1),
    ("invite/create", "expires", None),
    ("invite/create", "nonce", ID1[:16]),
    ("invite/create", "box", b"b" * 257),
    ("invite/revoke", "invite", ID1[:31]),
    ("member/admit", "key", None),
    ("member/admit", "invite", ID1.hex()),
    ("workspace/key", "epoch", -1),
    ("workspace/key", "recipient", ID1[:31]),
    ("workspace/key", "sealed", b"s" * 257),
    ("workspace/key", "check", ID1),
    ("member/remove", "reason", "a\nb"),
    ("workspace/relay", "port", 0),
    ("workspace/relay", "host", "a b"),
    ("workspace/relay", "key", ID1[:31]),
    ("workspace/relay", "active", None),
    ("member/remove", "key", None),
    ("member/kept", "ids", []),
    ("member/kept", "ids", [ID1, ID1]),
    ("member/kept", "ids", [bytes([n % 256, n // 256]) * 16 for n in range(1025)]),
    ("member/kept", "removal", ID1[:31]),
    ("channel/private", "dm", 1),
    ("channel/private", "nonce", ID1),
    ("channel/members", "add", [ID1, ID1]),
    ("channel/key", "check", ID1),
    ("channel/name", "box", b"n" * 257),
    ("post/sealed", "channel", "general"),
    ("post/sealed", "nonce", ID1[:16]),
    ("post/file", "files", []),
    ("post/file", "text", "x" * 4097),
    ("post/file", "files", [{**VALID["post/file"]["files"][0], "name": "../x"}] * 1),
]


def with_field(kind: str, field: str, value) -> dict:
    body = dict(VALID[kind])
    body[field] = value
    if kind == "doc/editors" and field == "add" and value == []:
        body["remove"] = [ID2]
    return body


def edge_id(case) -> str:
    kind, field, value = case
    return f"{kind}-{field}-{repr(value)[:24]}"


def test_tables_cover_every_kind():
    assert set(VALID) == set(KINDS)
    assert {kind for kind, _, _ in OUT_OF_LIMITS} == set(KINDS)
    for kind, (fields, _) in KINDS.items():
        assert set(VALID[kind]) == fields


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_valid_example_bodies(kind):
    obj = build(IDENT, kind, stream=STREAM, body=VALID[kind], ts=TS)
    assert decode(obj.raw) == obj
    assert decode(signed(envelope(type=kind, body=VALID[kind]))).body == VALID[kind]


@pytest.mark.parametrize("case", EDGES, ids=edge_id)
def test_boundary_values_are_valid(case):
    body = with_field(*case)
    obj = build(IDENT, case[0], stream=STREAM, body=body, ts=TS)
    assert decode(obj.raw).body == body


@pytest.mark.parametrize("case", OUT_OF_LIMITS, ids=edge_id)
def test_out_of_limit_body_is_bad_body(case):
    kind = case[0]
    body = with_field(*case)
    assert rejected(signed(envelope(type=kind, body=body))).reason is Reason.BAD_BODY
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, stream=STREAM, body=body, ts=TS)
    assert info.value.reason is Reason.BAD_BODY


@pytest.mark.parametrize(
    "kind,field", [(kind, field) for kind in ALL_KINDS for field in sorted(VALID[kind])]
)
def test_body_missing_field_is_bad_body(kind, field):
    body = {k: v for k, v in VALID[kind].items() if k != field}
    assert rejected(signed(envelope(type=kind, body=body))).reason is Reason.BAD_BODY
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, stream=STREAM, body=body, ts=TS)
    assert info.value.reason is Reason.BAD_BODY


@pytest.mark.parametrize("kind", ALL_KINDS)
@pytest.mark.parametrize("extra", ["extra", "x", 1], ids=repr)
def test_body_extra_field_is_bad_body(kind, extra):
    body = {**VALID[kind], extra: 1}
    assert rejected(signed(envelope(type=kind, body=body))).reason is Reason.BAD_BODY
    with pytest.raises(InvalidObject) as info:
        build(IDENT, kind, stream=STREAM, body=body, ts=TS)
    assert info.value.reason is Reason.BAD_BODY


def test_doc_editors_must_change_someone():
    body = {"add": [], "remove": []}
    assert rejected(signed(envelope(type="doc/editors", body=body))).reason is Reason.BAD_BODY


def test_name_checks_are_not_fooled_by_the_cache():
    # A name valid under one limit is not valid under a smaller one (nicknames: 32).
    name = "n" * 40
    build(IDENT, "post/join", stream=STREAM, body={"channel": name}, ts=TS)
    raw = signed(envelope(type="post/info", body={"name": name}))
    assert rejected(raw).reason is Reason.BAD_BODY


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
