"""Tests for core.encoding: canonical CBOR only, the plain fast path, object and derived ids."""

import hashlib
import math
import struct

import cbor2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.encoding import (
    EncodingError,
    check_canonical,
    derive_id,
    dumps,
    is_canonical_order,
    is_plain,
    loads,
    object_id,
)


def canonical_sorted(d: dict) -> dict:
    """The same dict with its str keys in canonical order (UTF-8 length, then bytes)."""
    return dict(sorted(d.items(), key=lambda kv: (len(kv[0].encode()), kv[0].encode())))


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),  # includes bignums beyond 64 bits (CBOR tags 2 and 3)
    st.text(max_size=30),
    st.binary(max_size=30),
)
# Trees whose insertion order is already canonical: is_plain must say so.
plain_trees = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=6), children, max_size=5).map(canonical_sorted),
    max_leaves=25,
)
# Trees with dict keys in whatever order hypothesis produced them.
any_trees = st.recursive(
    scalars | st.floats(allow_nan=False),
    lambda children: st.lists(children, max_size=5)
    | st.dictionaries(st.text(max_size=6) | st.integers(-50, 50), children, max_size=5),
    max_leaves=25,
)


# Round trips ------------------------------------------------------------------------------


@settings(max_examples=150)
@given(any_trees)
def test_loads_of_dumps_is_the_value(value):
    data = dumps(value)
    assert data == cbor2.dumps(value, canonical=True)
    assert loads(data) == value
    assert dumps(loads(data)) == data


@settings(max_examples=150)
@given(plain_trees)
def test_plain_trees_encode_canonically_in_insertion_order(value):
    assert is_plain(value)
    # The fast path's claim: for plain values the ordinary encoder already writes canonical bytes.
    assert cbor2.dumps(value) == cbor2.dumps(value, canonical=True)
    check_canonical(value, cbor2.dumps(value), plain=True)


@settings(max_examples=500)
@given(st.binary(max_size=64))
def test_loads_of_arbitrary_bytes_raises_only_encoding_error(data):
    try:
        value = loads(data)
    except EncodingError:
        return
    assert dumps(value) == data  # anything accepted is exactly its own canonical encoding


# Rejected forms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "data",
    [
        # maps with keys out of canonical order
        pytest.param("a2616202616101", id="b-before-a"),
        pytest.param("a262616101616202", id="longer-key-first"),
        pytest.param("a26161010102", id="str-key-before-int-key"),
        pytest.param("a16161a2616202616101", id="nested-unsorted"),
    ],
)
def test_loads_rejects_unsorted_keys(data):
    data = bytes.fromhex(data)
    value = cbor2.loads(data)  # well-formed CBOR ...
    assert isinstance(value, dict)
    with pytest.raises(EncodingError):  # ... but not canonical
        loads(data)


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("1817", id="uint-23-in-2-bytes"),
        pytest.param("190001", id="uint-1-in-3-bytes"),
        pytest.param("1a00000001", id="uint-1-in-5-bytes"),
        pytest.param("1b0000000000000001", id="uint-1-in-9-bytes"),
        pytest.param("1900ff", id="uint-255-in-3-bytes"),
        pytest.param("1b00000000ffffffff", id="uint-2^32-1-in-9-bytes"),
        pytest.param("3800", id="nint-minus-1-in-2-bytes"),
        pytest.param("390000", id="nint-minus-1-in-3-bytes"),
        pytest.param("c2420001", id="bignum-1-with-leading-zero"),
        pytest.param("c24101", id="bignum-for-small-int"),
        pytest.param("580161", id="bytes-length-in-2-bytes"),
        pytest.param("780161", id="text-length-in-2-bytes"),
        pytest.param("980101", id="array-length-in-2-bytes"),
        pytest.param("b801616101", id="map-length-in-2-bytes"),
        pytest.param("a161611817", id="nested-non-minimal-value"),
        pytest.param("f814", id="false-as-two-byte-simple"),
    ],
)
def test_loads_rejects_non_minimal_encodings(data):
    with pytest.raises(EncodingError):
        loads(bytes.fromhex(data))


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("5f4161ff", id="bytes"),
        pytest.param("7f6161ff", id="text"),
        pytest.param("9f01ff", id="array"),
        pytest.param("bf616101ff", id="map"),
        pytest.param("a161619f01ff", id="nested-array"),
    ],
)
def test_loads_rejects_indefinite_lengths(data):
    with pytest.raises(EncodingError):
        loads(bytes.fromhex(data))


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("a2616101616102", id="same-value-twice-differs"),
        pytest.param("a2616101616101", id="exact-duplicate-entry"),
        pytest.param("a1616da201020103", id="nested-duplicate"),
    ],
)
def test_loads_rejects_duplicate_keys(data):
    with pytest.raises(EncodingError):
        loads(bytes.fromhex(data))


@pytest.mark.parametrize("value", [0, "x", b"", [1, 2], {"a": 1}, {"v": 1, "ts": 2}])
@pytest.mark.parametrize("tail", [b"\x00", b"\xff", b"\xa0", b"\x01\x02\x03"])
def test_loads_rejects_trailing_bytes(value, tail):
    data = dumps(value)
    assert loads(data) == value
    with pytest.raises(EncodingError):
        loads(data + tail)


@pytest.mark.parametrize("data", [b"", b"\xff", b"\x1c", b"\x5a\x00", b"\x62a", b"\x82\x01"])
def test_loads_rejects_not_cbor(data):
    with pytest.raises(EncodingError):
        loads(data)


def test_encoding_error_is_a_value_error_with_a_message():
    with pytest.raises(ValueError, match=r"\w") as info:
        loads(b"\x18\x17")
    assert isinstance(info.value, EncodingError)


# Floats: the slow path ----------------------------------------------------------------------


def test_canonical_float16_accepted_same_value_as_float64_or_float32_rejected():
    assert loads(bytes.fromhex("f93e00")) == 1.5
    with pytest.raises(EncodingError):
        loads(bytes.fromhex("fa3fc00000"))  # 1.5 as float32
    with pytest.raises(EncodingError):
        loads(bytes.fromhex("fb3ff8000000000000"))  # 1.5 as float64


def test_float_needing_64_bits_is_accepted_as_float64_only():
    assert loads(bytes.fromhex("fb3fb999999999999a")) == 0.1


def test_nan_and_infinity_are_canonical_only_as_float16():
    assert math.isnan(loads(bytes.fromhex("f97e00")))
    assert loads(bytes.fromhex("f97c00")) == math.inf
    assert loads(bytes.fromhex("f9fc00")) == -math.inf
    for data in ("fb7ff8000000000000", "fa7fc00000", "fb7ff0000000000000"):
        with pytest.raises(EncodingError):
            loads(bytes.fromhex(data))


def test_floats_inside_maps_take_the_slow_path():
    value = {"a": 1.5, "bb": [2.5]}
    assert not is_plain(value)
    data = dumps(value)
    assert loads(data) == value
    # The ordinary (non-canonical) encoder writes float64, which must be refused.
    assert cbor2.dumps(value) != data
    with pytest.raises(EncodingError):
        loads(cbor2.dumps(value))
    with pytest.raises(EncodingError):
        check_canonical(value, cbor2.dumps(value))


@settings(max_examples=300)
@given(st.floats(allow_nan=False))
def test_every_float_round_trips_and_only_its_shortest_form_is_accepted(x):
    canonical = cbor2.dumps(x, canonical=True)
    decoded = loads(canonical)
    assert decoded == x and math.copysign(1, decoded) == math.copysign(1, x)
    float64 = b"\xfb" + struct.pack(">d", x)
    if canonical != float64:
        with pytest.raises(EncodingError):
            loads(float64)
    else:
        assert loads(float64) == x


# is_plain and key order ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        None, True, False, 0, -1, 2**70, "", "x", b"", b"\x00",
        [], {}, [1, "a", b"b", None, [True]],
        {"a": 1, "b": 2, "aa": 3},
        {"v": 1, "ts": 2, "sig": b"", "body": {}, "type": "t", "links": [], "author": b"",
         "stream": b""},
        {"aa": 1, "é": 2},  # "é" is 2 bytes of UTF-8 like "aa", and 0x61 < 0xc3
    ],
)
def test_is_plain_true(value):
    assert is_plain(value)
    assert cbor2.dumps(value) == cbor2.dumps(value, canonical=True)


@pytest.mark.parametrize(
    "value",
    [
        1.5, [1.0], {"a": 0.5},
        {"b": 1, "a": 2},
        {"aa": 1, "b": 2},
        {"é": 1, "b": 2},
        {"é": 1, "aa": 2},
        {"a": {"c": 1, "b": 2}},
        [{"b": 1, "a": 2}],
        {1: 2},
        {b"a": 1},
    ],
)
def test_is_plain_false(value):
    assert not is_plain(value)


@pytest.mark.parametrize(
    "value",
    [(1, 2), {1, 2}, bytearray(b"x"), cbor2.CBORTag(99, 1), {"a": cbor2.CBORTag(1, 0)},
     {(1, 2): 3}],
)
def test_is_plain_refuses_what_objects_may_not_hold(value):
    with pytest.raises(EncodingError):
        is_plain(value)


def test_is_canonical_order():
    assert is_canonical_order([])
    assert is_canonical_order(["a", "b", "aa", "ab", "é", "abc"])
    assert not is_canonical_order(["b", "a"])
    assert not is_canonical_order(["aa", "b"])
    assert not is_canonical_order(["a", "a"])
    assert not is_canonical_order(["a", 1])


@settings(max_examples=200)
@given(st.lists(st.text(max_size=5), unique=True, max_size=8))
def test_is_canonical_order_agrees_with_cbor2(keys):
    canonical = list(cbor2.loads(cbor2.dumps(dict.fromkeys(keys, 0), canonical=True)))
    assert is_canonical_order(keys) == (keys == canonical)


def test_check_canonical():
    check_canonical({"a": 1}, bytes.fromhex("a1616101"))
    check_canonical({"a": 1}, bytes.fromhex("a1616101"), plain=True)
    with pytest.raises(EncodingError):
        check_canonical({"a": 1}, bytes.fromhex("a161611801"))
    with pytest.raises(EncodingError):
        check_canonical({"b": 1, "a": 2}, bytes.fromhex("a2616201616102"))


# Ids ----------------------------------------------------------------------------------------


def test_object_id_is_blake2b_256():
    assert object_id(b"").hex() == (
        "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8"
    )
    assert object_id(b"hearth") == hashlib.blake2b(b"hearth", digest_size=32).digest()
    assert object_id(b"a") != object_id(b"b")


def test_derive_id_is_stable():
    # Stream ids derive from these: changing the derivation would split every workspace.
    assert derive_id("profile", bytes(32)).hex() == (
        "1d35c25ab7ac4fe22a27bc049813bd16847a5387f2f15ae0a7365769c39d0b9d"
    )
    assert derive_id("channel", bytes(32), b"general").hex() == (
        "5ca7158a7becdd6055c2b108dc165250a9639023cfb13ed8f549ac3c37af216e"
    )
    assert derive_id("x", b"1") == derive_id("x", b"1")
    assert len(derive_id("x")) == 32


def test_derive_id_separates_labels_and_parts():
    variants = [
        ("a",), ("b",), ("ab",), ("abc",),
        ("a", b""), ("a", b"", b""), ("a", b"bc"), ("a", b"b", b"c"), ("ab", b"c"),
        ("a", b"", b"bc"), ("a", b"bc", b""), ("a", b"c", b"b"),
        ("profile", bytes(32)), ("channel", bytes(32)),
    ]
    ids = [derive_id(label, *parts) for label, *parts in variants]
    assert len(set(ids)) == len(variants)
    assert object_id(b"a") != derive_id("a")  # derived ids live apart from object ids


# Labels are code constants: they never contain NUL (derive_id does not length-prefix them).
labels = st.text(st.characters(exclude_characters="\x00", exclude_categories=("Cs",)),
                 max_size=8)
parts_lists = st.lists(st.binary(max_size=6), max_size=4)


@settings(max_examples=300)
@given(labels, parts_lists, labels, parts_lists)
def test_derive_id_is_injective(label1, parts1, label2, parts2):
    same = (label1, parts1) == (label2, parts2)
    assert (derive_id(label1, *parts1) == derive_id(label2, *parts2)) == same


@settings(max_examples=200)
@given(labels, parts_lists.filter(bool), st.data())
def test_derive_id_moving_bytes_between_parts_changes_the_id(label, parts, data):
    joined = b"".join(parts)
    cut = data.draw(st.integers(0, len(joined)))
    regrouped = [joined[:cut], joined[cut:]]
    for other in (regrouped, [joined], [*parts, b""], [b"", *parts]):
        if other != parts:
            assert derive_id(label, *parts) != derive_id(label, *other)


# Hostile input must still end in EncodingError -------------------------------------------


def test_loads_rejects_a_self_referential_value():
    data = bytes.fromhex("d81c81d81d00")  # 28([29(0)]): a list that contains itself
    with pytest.raises(EncodingError):
        loads(data)


def test_loads_of_deep_but_decodable_nesting_never_raises_recursion_error():
    data = b"\x81" * 390 + b"\x00"  # [[[...[0]...]]], 390 levels
    try:
        value = loads(data)
    except EncodingError:
        return
    assert dumps(value) == data
