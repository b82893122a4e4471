"""What each schema version's own events carry: the version stamped on each type, streams as
keyed hashes, and counts, sizes and times as buckets (analytics/schema/events-vN.json)."""

from __future__ import annotations

import json

import pytest

from analytics.events import (
    EVENT_TYPES,
    EXPIRY_BUCKETS,
    FILE_KINDS,
    FILE_SIZE_BUCKETS,
    KEPT_BUCKETS,
    OBJECTS_BUCKETS,
    SECONDS_BUCKETS,
    USES_BUCKETS,
    EventError,
    expiry_bucket,
    file_kind,
    file_size_bucket,
    files_count,
    kept_bucket,
    objects_bucket,
    schema,
    seconds_bucket,
    uses_bucket,
    validate,
    version_of,
)
from analytics.recorder import Recorder
from tests.support import FakeClock

from .test_event_versions import GIB, HOUR_MS, KIB, MADE, MIB, NEW, PID, STREAM, TS, event

# Version 2: the conversation events -------------------------------------------------------------

def test_an_event_carries_exactly_the_version_that_introduced_its_type():
    with pytest.raises(EventError, match="schema"):
        validate(event("reaction_added", schema=1))
    with pytest.raises(EventError, match="schema"):
        validate({"event": "message_sent", "schema": 2, "ts": TS, "pid": PID, "length": 16})
    assert validate({"event": "message_sent", "schema": 1, "ts": TS, "pid": PID, "length": 16})
    assert {name for name in EVENT_TYPES if version_of(name) == 2} == set(NEW[2])
    assert {name for name in EVENT_TYPES if version_of(name) == 1} == set(
        schema(1)["properties"]["event"]["enum"])


def test_version_2_keeps_every_version_1_type_exactly_and_version_1_is_unchanged():
    v1, v2 = schema(1), schema(2)
    # The shipped contract itself: older collectors hold this file.
    assert v1["properties"]["schema"] == {"const": 1}
    assert len(v1["properties"]["event"]["enum"]) == 10
    for name, spec in v1["$defs"].items():
        newer = json.loads(json.dumps(v2["$defs"][name]))
        if "properties" in spec:
            assert newer["properties"].pop("schema") == {"const": 1}
            spec = {**spec, "properties": {k: v for k, v in spec["properties"].items()
                                           if k != "schema"}}
        assert newer == spec, name
    for field in ("ts", "pid"):
        assert v2["properties"][field] == v1["properties"][field]
    assert set(v2["properties"]["event"]["enum"]) == {
        name for name in EVENT_TYPES if version_of(name) <= 2}
    assert v2["properties"]["schema"]["enum"] == [1, 2]


def test_the_recorder_stamps_each_event_with_its_types_version(tmp_path):
    rec = Recorder(tmp_path, clock=FakeClock(1_795_000_000.0))
    rec.enable()
    assert rec.record("message_sent", length=16)
    assert rec.record("thread_reply", length=64, broadcast=True, stream=rec.hash_id(b"\x01" * 32))
    assert rec.record("reaction_added", stream=rec.hash_id(b"\x01" * 32))
    assert not rec.record("reaction_added", stream=STREAM, emoji="\N{UNICORN FACE}")
    _, lines = rec.take_batch(10)
    assert [(e["event"], e["schema"]) for e in map(json.loads, lines)] == [
        ("message_sent", 1), ("thread_reply", 2), ("reaction_added", 2)]
    assert sorted(rec.schemas()) == [1, 2]


# Version 3: doc_comment -------------------------------------------------------------------------


def test_a_doc_comments_stream_is_a_hash():
    assert schema(3)["$defs"]["doc_comment"]["properties"]["stream"]["$ref"] == "#/$defs/hash"


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


# Version 4: invites and admissions, in buckets ------------------------------------------------


@pytest.mark.parametrize("uses,bucket", [
    (0, "any"), (1, "one"), (2, "few"), (10, "few"), (11, "many"), (100, "many"),
    (2**40, "many"),
])
def test_uses_become_a_bucket(uses, bucket):
    assert uses_bucket(uses) == bucket


@pytest.mark.parametrize("lifetime_ms,bucket", [
    (-5_000, "hour"),  # made expired already
    (0, "hour"), (60_000, "hour"), (HOUR_MS, "hour"),  # the window's "1 hour"
    (HOUR_MS + 1, "day"), (24 * HOUR_MS, "day"),  # "24 hours"
    (24 * HOUR_MS + 1, "week"), (7 * 24 * HOUR_MS, "week"),  # "7 days", the window's default
    (7 * 24 * HOUR_MS + 1, "longer"), (400 * 24 * HOUR_MS, "longer"),
])
def test_an_invites_lifetime_from_its_making_becomes_a_bucket(lifetime_ms, bucket):
    assert expiry_bucket(MADE + lifetime_ms, MADE) == bucket


def test_an_invite_that_never_expires_is_never_whenever_it_was_made():
    assert expiry_bucket(0, MADE) == expiry_bucket(0, 0) == "never"


def test_the_invite_buckets_are_the_contracts_enums():
    spec = schema(4)["$defs"]["invite_created"]["properties"]
    assert tuple(spec["uses"]["enum"]) == USES_BUCKETS
    assert tuple(spec["expires"]["enum"]) == EXPIRY_BUCKETS
    made = {uses_bucket(n) for n in range(0, 40)}
    assert made == set(USES_BUCKETS)
    lived = {expiry_bucket(MADE + h * HOUR_MS, MADE) for h in range(0, 24 * 10)}
    assert lived | {expiry_bucket(0, MADE)} == set(EXPIRY_BUCKETS)


def test_the_recorder_stamps_the_invite_events_with_version_4(tmp_path):
    rec = Recorder(tmp_path, clock=FakeClock(1_795_000_000.0))
    rec.enable()
    assert rec.record("message_sent", length=16)
    assert rec.record("doc_comment", stream=rec.hash_id(b"\x02" * 32))
    assert rec.record("invite_created", uses="few", expires="day")
    assert rec.record("member_admitted", how="personal")
    assert not rec.record("invite_created", uses=3, expires="day")
    assert not rec.record("member_admitted", how="personal", key="ef" * 32)
    _, lines = rec.take_batch(10)
    events = [json.loads(line) for line in lines]
    assert [(e["event"], e["schema"]) for e in events] == [
        ("message_sent", 1), ("doc_comment", 3), ("invite_created", 4), ("member_admitted", 4)]
    assert set(events[2]) == {"event", "schema", "ts", "pid", "uses", "expires"}
    assert set(events[3]) == {"event", "schema", "ts", "pid", "how"}
    assert sorted(rec.schemas()) == [1, 3, 4]
    assert rec.take_batch(10, [1, 2, 3])[1] == lines[:2]


# Version 5: attachments and private channels, in buckets --------------------------------------


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


# Version 6: kept sets and history fetches, in buckets ------------------------------------------


@pytest.mark.parametrize("count,bucket", [
    (-1, 0), (0, 0), (1, 1), (2, 2), (5, 2), (6, 6), (20, 6), (21, 21), (37, 21), (5000, 21),
])
def test_how_many_channels_or_documents_are_kept_becomes_a_bucket(count, bucket):
    assert kept_bucket(count) == bucket


@pytest.mark.parametrize("objects,bucket", [
    (-5, 0), (0, 0), (1, 1), (99, 1), (100, 100), (999, 100), (1000, 1000), (9999, 1000),
    (10_000, 10_000), (99_999, 10_000), (100_000, 100_000), (999_999, 100_000),
    (1_000_000, 1_000_000), (40_000_000, 1_000_000),
])
def test_how_many_objects_arrived_becomes_a_bucket(objects, bucket):
    assert objects_bucket(objects) == bucket


@pytest.mark.parametrize("seconds,bucket", [
    (float("nan"), 0), (-2.0, 0), (0.0, 0), (0.999, 0), (1.0, 1), (2.999, 1), (3.0, 3),
    (9.99, 3), (10.0, 10), (29.9, 10), (30.0, 30), (99.99, 30), (100.0, 100), (86_400.0, 100),
    (float("inf"), 100),
])
def test_how_long_it_took_becomes_a_bucket(seconds, bucket):
    assert seconds_bucket(seconds) == bucket


def test_the_kept_and_history_buckets_are_the_contracts_enums():
    defs = schema(6)["$defs"]
    assert tuple(defs["channels_kept"]["properties"]["channels"]["enum"]) == KEPT_BUCKETS
    assert tuple(defs["channels_kept"]["properties"]["documents"]["enum"]) == KEPT_BUCKETS
    assert tuple(defs["history_fetched"]["properties"]["objects"]["enum"]) == OBJECTS_BUCKETS
    assert tuple(defs["history_fetched"]["properties"]["seconds"]["enum"]) == SECONDS_BUCKETS
    assert {kept_bucket(n) for n in range(100)} == set(KEPT_BUCKETS)
    assert {objects_bucket(10 ** n) for n in range(8)} | {0} == set(OBJECTS_BUCKETS)
    assert {seconds_bucket(s / 10) for s in range(2000)} == set(SECONDS_BUCKETS)


def test_the_recorder_stamps_the_kept_and_history_events_with_version_6(tmp_path):
    rec = Recorder(tmp_path, clock=FakeClock(1_795_000_000.0))
    rec.enable()
    assert rec.record("message_sent", length=0)
    assert rec.record("private_channel_created", dm=True)
    assert rec.record("channels_kept", all=False, channels=6, documents=1)
    assert rec.record("history_fetched", objects=100_000, seconds=30, kept_all=False)
    assert not rec.record("channels_kept", all=False, channels=7, documents=1)
    assert not rec.record("history_fetched", objects=100_000, seconds=30, kept_all=False,
                          peers=3)
    _, lines = rec.take_batch(10)
    events = [json.loads(line) for line in lines]
    assert [(e["event"], e["schema"]) for e in events] == [
        ("message_sent", 1), ("private_channel_created", 5), ("channels_kept", 6),
        ("history_fetched", 6)]
    assert events[2] | {"ts": None, "pid": None} == {
        "event": "channels_kept", "schema": 6, "ts": None, "pid": None, "all": False,
        "channels": 6, "documents": 1}
    assert events[3] | {"ts": None, "pid": None} == {
        "event": "history_fetched", "schema": 6, "ts": None, "pid": None, "objects": 100_000,
        "seconds": 30, "kept_all": False}
    assert sorted(rec.schemas()) == [1, 5, 6]
    assert rec.take_batch(10, [1, 2, 3, 4, 5])[1] == lines[:2]
