"""Schema version 3 (analytics.events): doc_comment, its version, nothing from inside the box."""

from __future__ import annotations

import hashlib
import json

import pytest

from analytics.events import (
    EVENT_TYPES,
    SCHEMA_VERSIONS,
    EventError,
    schema,
    validate,
    version_of,
)
from analytics.recorder import Recorder
from tests.support import FakeClock

PID = "0123456789abcdef" * 2
STREAM = "fedcba9876543210" * 2
TS = "2026-11-18T10:00:00Z"
# The shipped contracts (their parsed JSON, keys sorted): collectors and apps of those versions
# hold them, so they are never edited.
SHIPPED = {1: "90d6487a1b12ba3196980925c5f38d4c8cb2a7cb404409398f6b0d55f6097283",
           2: "89f31ae3ec7e7f49d5dba90f240cd28ecdaf020129a3e5d1861d631fb813a1c4"}


def comment(**fields: object) -> dict:
    return {"event": "doc_comment", "schema": 3, "ts": TS, "pid": PID, "stream": STREAM} | fields


def test_doc_comment_is_the_version_3_event():
    assert SCHEMA_VERSIONS[:3] == (1, 2, 3)
    assert "doc_comment" in EVENT_TYPES and version_of("doc_comment") == 3
    assert [name for name in EVENT_TYPES if version_of(name) == 3] == ["doc_comment"]
    assert validate(comment()) == comment()


@pytest.mark.parametrize("field,value", [
    ("text", "is this right?"),
    ("quote", "the brave words"),
    ("kind", "reply"),
    ("resolved", True),
    ("reply", False),
    ("comment", "ab" * 16),
    ("parent", "ab" * 16),
    ("anchor", 12),
    ("length", 16),
    ("size", 64),
    ("document", "cd" * 16),
    ("branch", "draft"),
    ("title", "Quarterly plans"),
    ("author", "cd" * 32),
])
def test_nothing_from_inside_the_box_nor_what_it_points_at_is_allowed(field, value):
    with pytest.raises(EventError, match="Additional properties"):
        validate(comment(**{field: value}))


@pytest.mark.parametrize("bad,reason", [
    (comment(stream="not a hash"), "stream: 'not a hash' does not match"),
    (comment(stream="AB" * 16), "does not match"),
    ({k: v for k, v in comment().items() if k != "stream"}, "'stream' is a required property"),
    (comment(schema=2), "schema"),
    (comment(schema=1), "schema"),
    (comment(schema=4), "schema"),
])
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


def test_collectors_of_older_versions_refuse_doc_comment_and_read_their_own():
    v2 = {"event": "reaction_added", "schema": 2, "ts": TS, "pid": PID, "stream": STREAM}
    for versions in ((1,), (1, 2)):
        with pytest.raises(EventError, match="version 3 is not read here"):
            validate(comment(), versions=versions)
    assert validate(v2, versions=(1, 2)) == v2
    assert validate(comment(), versions=(1, 2, 3)) == comment()


def test_version_3_keeps_every_version_2_type_exactly_and_the_shipped_files_are_unchanged():
    v2, v3 = schema(2), schema(3)
    for version, digest in SHIPPED.items():
        parsed = json.dumps(schema(version), sort_keys=True).encode()
        assert hashlib.sha256(parsed).hexdigest() == digest, f"events-v{version}.json was edited"
    for name, spec in v2["$defs"].items():
        assert v3["$defs"][name] == spec, name  # the version-2 types with their pinned schema
    for field in ("ts", "pid"):
        assert v3["properties"][field] == v2["properties"][field]
    assert v3["properties"]["event"]["enum"] == [*v2["properties"]["event"]["enum"],
                                                 "doc_comment"]
    assert v3["properties"]["schema"]["enum"] == [1, 2, 3]
    assert set(v3["properties"]["event"]["enum"]) == {
        name for name in EVENT_TYPES if version_of(name) <= 3}
    assert v3["oneOf"] == [*v2["oneOf"], {"$ref": "#/$defs/doc_comment"}]
    assert v3["$defs"]["doc_comment"]["properties"]["stream"]["$ref"] == "#/$defs/hash"


def test_the_recorder_stamps_doc_comment_with_version_3(tmp_path):
    rec = Recorder(tmp_path, clock=FakeClock(1_795_000_000.0))
    rec.enable()
    branch = rec.hash_id(b"\x02" * 32)
    assert rec.record("message_sent", length=16)
    assert rec.record("reaction_added", stream=rec.hash_id(b"\x01" * 32))
    assert rec.record("doc_comment", stream=branch)
    assert not rec.record("doc_comment", stream=branch, length=16)
    _, lines = rec.take_batch(10)
    assert [(e["event"], e["schema"]) for e in map(json.loads, lines)] == [
        ("message_sent", 1), ("reaction_added", 2), ("doc_comment", 3)]
    assert set(json.loads(lines[2])) == {"event", "schema", "ts", "pid", "stream"}
    assert json.loads(lines[2])["stream"] == branch
    assert sorted(rec.schemas()) == [1, 2, 3]
    assert rec.take_batch(10, [1, 2])[1] == lines[:2]
