"""The one ingest path answers per object: added, duplicate, or rejected with a reason code."""

from __future__ import annotations

import hashlib

import cbor2
import pytest

from core.objects import MAX_OBJECT_SIZE
from storage import Status

from .conftest import add, texts


def _blake(raw: bytes) -> bytes:
    return hashlib.blake2b(raw, digest_size=32).digest()


def test_added_then_duplicate_in_batch_and_later(replica, world, people):
    alice = people["alice"]
    a = world.text(alice, "general", "a")
    b = world.text(alice, "general", "b")
    before = replica.count()
    results = replica.ingest([a, b, a.raw, a])
    assert [r.status for r in results] == [Status.ADDED, Status.ADDED, Status.DUPLICATE,
                                           Status.DUPLICATE]
    assert [r.id for r in results] == [a.id, b.id, a.id, a.id]
    assert all(r.reason is None for r in results)
    assert replica.count() == before + 2
    later = replica.ingest([b, a])
    assert [r.status for r in later] == [Status.DUPLICATE, Status.DUPLICATE]
    assert replica.count() == before + 2
    assert texts(replica, "general") == ["a", "b"]  # a duplicate is not indexed twice
    assert replica.channels()[0].messages == 2


def test_corrupted_object_in_the_middle_is_rejected_alone(replica, world, people):
    alice, bob = people["alice"], people["bob"]
    first = world.text(alice, "general", "hello first")
    bad_source = world.text(bob, "general", "hello tampered")
    last = world.text(alice, "general", "hello last")
    tampered = bad_source.raw.replace(b"tampered", b"tamperee")
    assert tampered != bad_source.raw and len(tampered) == len(bad_source.raw)
    before = replica.count()
    results = replica.ingest([first, tampered, last])
    assert [r.status for r in results] == [Status.ADDED, Status.REJECTED, Status.ADDED]
    rejected = results[1]
    assert rejected.reason == "bad_signature"
    assert rejected.message  # a sentence a person can read
    assert rejected.id == _blake(tampered)  # the id is the hash of the bytes offered
    assert replica.count() == before + 2
    # No trace: not stored, not indexed, not searchable, not a head, no channel effect.
    assert replica.get(rejected.id) is None
    assert not replica.is_deleted(rejected.id)
    assert texts(replica, "general") == ["hello first", "hello last"]
    assert [m.text for m in replica.search("tamperee")] == []
    assert bob.public_key not in {m.key for m in replica.members("general")}
    assert rejected.id not in {h for h, _ in replica.heads(world.channel("general"))}
    assert replica.posts_by(bob.public_key) == []
    # The original, untampered object is still welcome.
    assert replica.ingest([bad_source])[0].status is Status.ADDED


def test_reason_codes(replica, world, people):
    alice = people["alice"]
    good = world.text(alice, "general", "fine")
    decoded = cbor2.loads(good.raw)
    # The same map with its keys out of canonical order.
    non_canonical = cbor2.dumps(dict(reversed(list(decoded.items()))))
    assert cbor2.loads(non_canonical) == decoded and non_canonical != good.raw
    unknown_version = cbor2.dumps({**decoded, "v": 2}, canonical=True)
    extra_field = cbor2.dumps({**decoded, "zz": 1}, canonical=True)
    bad_body = cbor2.dumps({**decoded, "body": {"channel": "general"}}, canonical=True)
    cases = {
        b"\xff\x00garbage": "malformed",
        cbor2.dumps([1, 2, 3]): "malformed",
        bytes(MAX_OBJECT_SIZE + 1): "oversize",
        non_canonical: "non_canonical",
        unknown_version: "unknown_version",
        extra_field: "bad_field",
        bad_body: "bad_body",
        good.raw[:-1]: "malformed",  # truncated
    }
    before = replica.count()
    results = replica.ingest([*cases, good])
    for (raw, reason), result in zip(cases.items(), results, strict=False):
        assert (result.status, result.reason) == (Status.REJECTED, reason), raw[:16]
        assert result.id == _blake(raw)
    assert results[-1].status is Status.ADDED
    assert replica.count() == before + 1


def test_unknown_kind_is_stored_not_interpreted(replica, world, people):
    alice = people["alice"]
    thing = world.unknown(alice, world.channel("general"))
    assert replica.ingest([thing])[0].status is Status.ADDED
    assert replica.get(thing.id) == thing.raw
    assert replica.object(thing.id).type == "future/thing"
    assert replica.posts_by(alice.public_key, "future/thing") == [thing.id]
    assert replica.heads(world.channel("general")) == [(thing.id, thing.ts)]
    assert replica.channels() == []
    assert replica.members("general") == []


def test_rejected_batch_of_only_bad_objects_changes_nothing(replica, world, people):
    alice = people["alice"]
    good = world.text(alice, "general", "x")
    digest = replica.digest()
    results = replica.ingest([good.raw[:10], b"", good.raw + b"\x00"])
    assert {r.status for r in results} == {Status.REJECTED}
    assert replica.digest() == digest
    add(replica, good)
    assert replica.digest() != digest


def test_own_objects_are_stored_as_checked_ones_are_and_only_their_authors(
        replica, world, people):
    """Replica.ingest_own (what this computer just signed: not verified again) stores and
    indexes as ingest does, answers duplicates, and takes no object of another author."""
    alice, bob = people["alice"], people["bob"]
    a = world.text(alice, "general", "a")
    b = world.text(alice, "general", "b")
    results = replica.ingest_own([a, b, a], alice.public_key)
    assert [r.status for r in results] == [Status.ADDED, Status.ADDED, Status.DUPLICATE]
    assert texts(replica, "general") == ["a", "b"]
    before = replica.digest()
    with pytest.raises(ValueError, match="signed by this computer's key"):
        replica.ingest_own([world.text(bob, "general", "c")], alice.public_key)
    assert replica.digest() == before
