"""Schema version 5 (analytics.events): file_attached and private_channel_created, their version,
and buckets instead of a file's exact size, media type or anything that names it, the message or
the people in a private channel."""

from __future__ import annotations

import hashlib
import json

import pytest

from analytics.events import (
    EVENT_TYPES,
    FILE_KINDS,
    FILE_SIZE_BUCKETS,
    SCHEMA_VERSIONS,
    EventError,
    file_kind,
    file_size_bucket,
    files_count,
    schema,
    validate,
    version_of,
)
from analytics.recorder import Recorder
from tests.support import FakeClock

PID = "0123456789abcdef" * 2
STREAM = "fedcba9876543210" * 2
TS = "2026-11-25T10:00:00Z"
NEW = ("file_attached", "private_channel_created")
# The shipped contracts (their parsed JSON, keys sorted): collectors and apps of those versions
# hold them, so they are never edited.
SHIPPED = {1: "90d6487a1b12ba3196980925c5f38d4c8cb2a7cb404409398f6b0d55f6097283",
           2: "89f31ae3ec7e7f49d5dba90f240cd28ecdaf020129a3e5d1861d631fb813a1c4",
           3: "e58c5cbc701cedc1faea8177893e8336f8cb6d371e8177719dd71c7445c98ed7",
           4: "8bc96e232b389dc2fe128e52702b0320334fc1ec2937c25ff39bd5314f445540"}
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30


def attached(**fields: object) -> dict:
    return {"event": "file_attached", "schema": 5, "ts": TS, "pid": PID, "size": 0,
            "kind": "image", "files": 1, "stream": STREAM} | fields


def private(**fields: object) -> dict:
    return {"event": "private_channel_created", "schema": 5, "ts": TS, "pid": PID,
            "dm": False} | fields


def test_attachments_and_private_channels_are_the_version_5_events():
    assert SCHEMA_VERSIONS[:5] == (1, 2, 3, 4, 5)
    assert [name for name in EVENT_TYPES if version_of(name) == 5] == list(NEW)
    for size in FILE_SIZE_BUCKETS:
        for kind in FILE_KINDS:
            for files in (1, 2, 3, 4):
                assert validate(attached(size=size, kind=kind, files=files))
    for dm in (True, False):
        assert validate(private(dm=dm)) == private(dm=dm)


@pytest.mark.parametrize("size,bucket", [
    (0, 0), (1, 0), (100 * KIB - 1, 0),
    (100 * KIB, 100 * KIB), (MIB - 1, 100 * KIB),
    (MIB, MIB), (3_141_592, MIB), (10 * MIB - 1, MIB),
    (10 * MIB, 10 * MIB), (100 * MIB - 1, 10 * MIB),
    (100 * MIB, 100 * MIB), (GIB - 1, 100 * MIB),
    (GIB, GIB), (4 * GIB, GIB),  # the largest file a descriptor allows
])
def test_a_files_size_becomes_a_bucket(size, bucket):
    assert file_size_bucket(size) == bucket


@pytest.mark.parametrize("media_type,kind", [
    ("image/jpeg", "image"), ("image/png", "image"), ("image/svg+xml", "image"),
    ("IMAGE/HEIC", "image"), ("video/mp4", "video"), ("video/quicktime", "video"),
    ("audio/ogg", "audio"), ("audio/mpeg", "audio"),
    ("application/pdf", "document"), ("text/plain", "document"),
    ("text/markdown; charset=utf-8", "document"), ("text/csv", "document"),
    ("application/msword", "document"), ("application/epub+zip", "document"),
    ("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "document"),
    ("application/vnd.oasis.opendocument.spreadsheet", "document"),
    ("application/zip", "archive"), ("application/gzip", "archive"),
    ("application/x-tar", "archive"), ("application/x-7z-compressed", "archive"),
    ("application/vnd.rar", "archive"), ("application/zstd", "archive"),
    ("application/octet-stream", "other"), ("application/json", "other"),
    ("font/woff2", "other"), ("x", "other"), ("image", "other"), ("imagex/png", "other"),
])
def test_a_media_type_becomes_a_kind(media_type, kind):
    assert file_kind(media_type) == kind


def test_the_buckets_are_the_contracts_enums_and_files_are_one_to_four():
    spec = schema(5)["$defs"]["file_attached"]["properties"]
    assert tuple(spec["size"]["enum"]) == FILE_SIZE_BUCKETS
    assert tuple(spec["kind"]["enum"]) == FILE_KINDS
    assert (spec["files"]["minimum"], spec["files"]["maximum"]) == (1, 4)
    assert {file_size_bucket(1 << n) for n in range(0, 33)} | {0} == set(FILE_SIZE_BUCKETS)
    assert [files_count(n) for n in (1, 2, 3, 4, 5, 9)] == [1, 2, 3, 4, 4, 4]


@pytest.mark.parametrize("event,field,value", [
    ("file_attached", "name", "salaries 2026.xlsx"),
    ("file_attached", "type", "image/jpeg"),
    ("file_attached", "media_type", "image/jpeg"),
    ("file_attached", "bytes", 3_141_592),
    ("file_attached", "list", "ab" * 32),
    ("file_attached", "key", "cd" * 32),
    ("file_attached", "message", "ef" * 16),
    ("file_attached", "w", 640),
    ("file_attached", "h", 480),
    ("file_attached", "length", 16),
    ("private_channel_created", "name", "secret-plans"),
    ("private_channel_created", "channel", "ab" * 16),
    ("private_channel_created", "stream", STREAM),
    ("private_channel_created", "members", 3),
    ("private_channel_created", "member", "ef" * 16),
    ("private_channel_created", "nonce", "01" * 16),
])
def test_nothing_that_names_the_file_the_channel_or_its_people_is_allowed(event, field, value):
    base = attached() if event == "file_attached" else private()
    with pytest.raises(EventError, match="Additional properties"):
        validate(base | {field: value})


@pytest.mark.parametrize("bad,reason", [
    (attached(size=3_141_592), "size: 3141592 is not one of"),
    (attached(size=1 << 20 | 1), "is not one of"),
    (attached(size="<1MB"), "size: '<1MB' is not one of"),
    (attached(size=None), "size: None is not one of"),
    (attached(kind="image/jpeg"), "kind: 'image/jpeg' is not one of"),
    (attached(kind="concurrent_heads"), "kind: 'concurrent_heads' is not one of"),
    (attached(kind="Image"), "kind: 'Image' is not one of"),
    (attached(files=0), "files: 0 is less than the minimum of 1"),
    (attached(files=5), "files: 5 is greater than the maximum of 4"),
    (attached(files=1.5), "files: 1.5 is not of type 'integer'"),
    (attached(files="2"), "files: '2' is not of type 'integer'"),
    (attached(stream="not a hash"), "stream: 'not a hash' does not match"),
    ({k: v for k, v in attached().items() if k != "stream"}, "'stream' is a required property"),
    ({k: v for k, v in attached().items() if k != "files"}, "'files' is a required property"),
    ({k: v for k, v in attached().items() if k != "size"}, "'size' is a required property"),
    (private(dm=1), "dm: 1 is not of type 'boolean'"),
    (private(dm="true"), "dm: 'true' is not of type 'boolean'"),
    (private(dm=None), "dm: None is not of type 'boolean'"),
    ({k: v for k, v in private().items() if k != "dm"}, "'dm' is a required property"),
    (attached(schema=4), "schema"),
    (private(schema=1), "schema"),
    (private(schema=6), "schema"),
])
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


def test_collectors_of_older_versions_refuse_the_version_5_events_and_read_their_own():
    invite = {"event": "invite_created", "schema": 4, "ts": TS, "pid": PID, "uses": "one",
              "expires": "week"}
    for versions in ((1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)):
        for event in (attached(), private()):
            with pytest.raises(EventError, match="version 5 is not read here"):
                validate(event, versions=versions)
    assert validate(invite, versions=(1, 2, 3, 4)) == invite
    assert validate(attached(), versions=(1, 2, 3, 4, 5)) == attached()


def test_version_5_keeps_every_version_4_type_exactly_and_the_shipped_files_are_unchanged():
    v4, v5 = schema(4), schema(5)
    for version, digest in SHIPPED.items():
        parsed = json.dumps(schema(version), sort_keys=True).encode()
        assert hashlib.sha256(parsed).hexdigest() == digest, f"events-v{version}.json was edited"
    for name, spec in v4["$defs"].items():
        assert v5["$defs"][name] == spec, name  # the version-4 types with their pinned schema
    for field in ("ts", "pid"):
        assert v5["properties"][field] == v4["properties"][field]
    assert v5["properties"]["event"]["enum"] == [*v4["properties"]["event"]["enum"], *NEW]
    assert v5["properties"]["schema"]["enum"] == [1, 2, 3, 4, 5]
    assert set(v5["properties"]["event"]["enum"]) == {
        name for name in EVENT_TYPES if version_of(name) <= 5}
    assert v5["oneOf"] == [*v4["oneOf"], *({"$ref": f"#/$defs/{name}"} for name in NEW)]
    for name in NEW:
        spec = v5["$defs"][name]
        assert spec["additionalProperties"] is False
        assert set(spec["properties"]) == {"event", "schema", "ts", "pid", *spec["required"]}
    assert v5["$defs"]["file_attached"]["required"] == ["size", "kind", "files", "stream"]
    assert v5["$defs"]["private_channel_created"]["required"] == ["dm"]


def test_the_recorder_stamps_the_attachment_and_private_channel_events_with_version_5(tmp_path):
    rec = Recorder(tmp_path, clock=FakeClock(1_795_000_000.0))
    rec.enable()
    channel = rec.hash_id(b"\x01" * 32)
    assert rec.record("message_sent", length=0)
    assert rec.record("invite_created", uses="one", expires="week")
    assert rec.record("file_attached", size=MIB, kind="document", files=2, stream=channel)
    assert rec.record("private_channel_created", dm=True)
    assert not rec.record("file_attached", size=3_141_592, kind="document", files=2,
                          stream=channel)
    assert not rec.record("private_channel_created", dm=True, members=2)
    _, lines = rec.take_batch(10)
    events = [json.loads(line) for line in lines]
    assert [(e["event"], e["schema"]) for e in events] == [
        ("message_sent", 1), ("invite_created", 4), ("file_attached", 5),
        ("private_channel_created", 5)]
    assert events[2] | {"ts": None, "pid": None} == {
        "event": "file_attached", "schema": 5, "ts": None, "pid": None, "size": MIB,
        "kind": "document", "files": 2, "stream": channel}
    assert set(events[3]) == {"event", "schema", "ts", "pid", "dm"}
    assert sorted(rec.schemas()) == [1, 4, 5]
    assert rec.take_batch(10, [1, 2, 3, 4])[1] == lines[:2]
