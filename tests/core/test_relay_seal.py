"""Sealed envelopes for relays (core/relay_seal.py) and the workspace/relay kind."""

from __future__ import annotations

import os

import pytest

from core import kinds
from core.errors import InvalidObject
from core.identity import Identity
from core.objects import build, decode
from core.relay_seal import (
    BUCKET_MS,
    OVERHEAD,
    Envelope,
    EpochKeys,
    SealError,
    bucket_of,
    space_id,
    token_valid,
)

SECRET = bytes(range(32))
AUTHOR = Identity.from_seed(bytes(32))
WS = bytes([7]) * 32


def post(text: str, ts: int = 1_700_000_000_000) -> bytes:
    return build(AUTHOR, "post/text", stream=kinds.channel_stream(WS, "general"),
                 body={"channel": "general", "text": text}, ts=ts).raw


def test_an_envelope_opens_to_the_object_and_hides_it() -> None:
    keys = EpochKeys.derive(0, SECRET)
    raw = post("the marker zebra-42")
    env = keys.seal(raw, 1_700_000_000_000)
    assert keys.open(env) == raw
    assert b"zebra-42" not in env.box and AUTHOR.public_key not in env.box
    assert decode(raw).id not in env.opaque and len(env.box) == len(raw) + OVERHEAD
    assert env.bucket == 1_700_000_000_000 // BUCKET_MS
    assert keys.seal(raw, 1_700_000_000_000) == env  # the same object, the same envelope


def test_another_epoch_names_and_seals_the_same_object_differently() -> None:
    raw = post("hello")
    old, new = EpochKeys.derive(0, SECRET), EpochKeys.derive(1, os.urandom(32))
    env = old.seal(raw, 0)
    assert new.seal(raw, 0).opaque != env.opaque
    with pytest.raises(SealError):
        new.open(env)


def test_a_relay_cannot_tamper_with_or_swap_envelopes() -> None:
    keys = EpochKeys.derive(3, SECRET)
    one, two = keys.seal(post("one"), 0), keys.seal(post("two"), 0)
    flipped = bytes([one.box[0] ^ 1]) + one.box[1:]
    for forged in (Envelope(one.opaque, one.bucket, flipped),
                   Envelope(two.opaque, one.bucket, one.box),
                   Envelope(one.opaque, one.bucket, os.urandom(len(one.box))),
                   Envelope(one.opaque, one.bucket, b"")):
        with pytest.raises(SealError):
            keys.open(forged)
    assert keys.open(Envelope(one.opaque, 999, one.box)) == post("one")  # time is a hint only


def test_the_token_proves_one_session_of_one_epoch() -> None:
    keys, other = EpochKeys.derive(0, SECRET), EpochKeys.derive(1, os.urandom(32))
    hh = os.urandom(64)
    proof = keys.prove(hh)
    assert token_valid(keys.token_key, hh, proof)
    assert not token_valid(keys.token_key, os.urandom(64), proof)  # another session
    assert not token_valid(other.token_key, hh, proof)
    assert not token_valid(keys.token_key, hh, b"x" * 3)
    assert EpochKeys.derive(0, SECRET).token_key == keys.token_key
    assert keys.token_key not in (keys.box_key, keys.id_key, SECRET)
    assert "key" not in repr(keys).replace("EpochKeys", "")


def test_buckets_and_spaces() -> None:
    assert bucket_of(-5) == 0 and bucket_of(BUCKET_MS * 3 + 1) == 3
    assert bucket_of(2**63 - 1) == (2**63 - 1) // BUCKET_MS < (1 << 48)
    assert space_id(WS) != WS and len(space_id(WS)) == 32


def relay_body(**changes: object) -> dict:
    return {"host": "relay.example.org", "port": 7655, "key": bytes(32), "active": True,
            **changes}


def test_workspace_relay_bodies() -> None:
    ok = build(AUTHOR, "workspace/relay", stream=WS, body=relay_body(), ts=1)
    assert decode(ok.raw).body["host"] == "relay.example.org"
    build(AUTHOR, "workspace/relay", stream=WS, body=relay_body(host="fe80::1", active=False),
          ts=1)
    for bad in (relay_body(port=0), relay_body(port=65536), relay_body(port=True),
                relay_body(key=bytes(31)), relay_body(host=""), relay_body(host="a b"),
                relay_body(host="h" * 254), relay_body(host="caf\u00e9"),
                relay_body(host="x/y"), relay_body(active=1)):
        with pytest.raises(InvalidObject):
            build(AUTHOR, "workspace/relay", stream=WS, body=bad, ts=1)
    body = relay_body()
    del body["active"]
    with pytest.raises(InvalidObject):
        build(AUTHOR, "workspace/relay", stream=WS, body=body, ts=1)
    assert kinds.stream_class("workspace/relay", WS, WS) == kinds.WORKSPACE_CLASS


def test_signals_are_signed_by_their_sender_and_sealed_for_the_epoch() -> None:
    keys = EpochKeys.derive(0, SECRET)
    blob = keys.seal_signal(AUTHOR, b"typing in #general")
    assert b"general" not in blob and AUTHOR.public_key not in blob
    assert keys.open_signal(blob) == (AUTHOR.public_key, b"typing in #general")
    assert keys.seal_signal(AUTHOR, b"x") != keys.seal_signal(AUTHOR, b"x")  # fresh nonces
    with pytest.raises(SealError):
        EpochKeys.derive(1, os.urandom(32)).open_signal(blob)
    with pytest.raises(SealError):
        keys.open_signal(blob[:-1] + bytes([blob[-1] ^ 1]))
    with pytest.raises(ValueError):
        keys.seal_signal(AUTHOR, b"x" * 1025)
