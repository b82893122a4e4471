"""Schema version 6 (analytics.events): channels_kept and history_fetched, their version, and
buckets instead of exact counts and times, with nothing that names a channel, a document, an
object or a peer."""

from __future__ import annotations

import hashlib
import json

import pytest

from analytics.events import (
    EVENT_TYPES,
    KEPT_BUCKETS,
    OBJECTS_BUCKETS,
    SCHEMA_FILE,
    SCHEMA_VERSION,
    SCHEMA_VERSIONS,
    SECONDS_BUCKETS,
    EventError,
    kept_bucket,
    objects_bucket,
    schema,
    seconds_bucket,
    validate,
    version_of,
)
from analytics.recorder import Recorder
from tests.support import FakeClock

PID = "0123456789abcdef" * 2
STREAM = "fedcba9876543210" * 2
TS = "2026-11-25T10:00:00Z"
NEW = ("channels_kept", "history_fetched")
# The shipped contracts (their parsed JSON, keys sorted): collectors and apps of those versions
# hold them, so they are never edited.
SHIPPED = {1: "90d6487a1b12ba3196980925c5f38d4c8cb2a7cb404409398f6b0d55f6097283",
           2: "89f31ae3ec7e7f49d5dba90f240cd28ecdaf020129a3e5d1861d631fb813a1c4",
           3: "e58c5cbc701cedc1faea8177893e8336f8cb6d371e8177719dd71c7445c98ed7",
           4: "8bc96e232b389dc2fe128e52702b0320334fc1ec2937c25ff39bd5314f445540",
           5: "fd545e4ff86cdac39e39e4e8345aa9d32704383270f6133fd81f9de4ee5462d6"}


def kept(**fields: object) -> dict:
    return {"event": "channels_kept", "schema": 6, "ts": TS, "pid": PID, "all": False,
            "channels": 2, "documents": 0} | fields


def fetched(**fields: object) -> dict:
    return {"event": "history_fetched", "schema": 6, "ts": TS, "pid": PID, "objects": 1000,
            "seconds": 3, "kept_all": True} | fields


def test_kept_sets_and_history_fetches_are_the_version_6_events():
    assert SCHEMA_VERSION == 6 and SCHEMA_VERSIONS == (1, 2, 3, 4, 5, 6)
    assert SCHEMA_FILE == "events-v6.json"
    assert [name for name in EVENT_TYPES if version_of(name) == 6] == list(NEW)
    for every in (True, False):
        for channels in KEPT_BUCKETS:
            for documents in KEPT_BUCKETS:
                event = kept(all=every, channels=channels, documents=documents)
                assert validate(event) == event
        for objects in OBJECTS_BUCKETS:
            for seconds in SECONDS_BUCKETS:
                event = fetched(objects=objects, seconds=seconds, kept_all=every)
                assert validate(event) == event


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


def test_the_buckets_are_the_contracts_enums():
    defs = schema(6)["$defs"]
    assert tuple(defs["channels_kept"]["properties"]["channels"]["enum"]) == KEPT_BUCKETS
    assert tuple(defs["channels_kept"]["properties"]["documents"]["enum"]) == KEPT_BUCKETS
    assert tuple(defs["history_fetched"]["properties"]["objects"]["enum"]) == OBJECTS_BUCKETS
    assert tuple(defs["history_fetched"]["properties"]["seconds"]["enum"]) == SECONDS_BUCKETS
    assert {kept_bucket(n) for n in range(100)} == set(KEPT_BUCKETS)
    assert {objects_bucket(10 ** n) for n in range(8)} | {0} == set(OBJECTS_BUCKETS)
    assert {seconds_bucket(s / 10) for s in range(2000)} == set(SECONDS_BUCKETS)


@pytest.mark.parametrize("event,field,value", [
    ("channels_kept", "channel", "general"),
    ("channels_kept", "names", ["general", "design"]),
    ("channels_kept", "stream", STREAM),
    ("channels_kept", "document", "ab" * 16),
    ("channels_kept", "count", 37),
    ("channels_kept", "workspace", STREAM),
    ("history_fetched", "peers", 2),
    ("history_fetched", "peer", "ab" * 16),
    ("history_fetched", "address", "192.168.1.7"),
    ("history_fetched", "bytes", 1 << 20),
    ("history_fetched", "duration_ms", 3141),
    ("history_fetched", "stream", STREAM),
    ("history_fetched", "channels", 2),
    ("history_fetched", "all", True),
])
def test_nothing_that_names_what_is_kept_or_fetched_is_allowed(event, field, value):
    base = kept() if event == "channels_kept" else fetched()
    with pytest.raises(EventError, match="Additional properties"):
        validate(base | {field: value})


@pytest.mark.parametrize("bad,reason", [
    (kept(channels=3), "channels: 3 is not one of"),
    (kept(channels=37), "channels: 37 is not one of"),
    (kept(channels="2-5"), "channels: '2-5' is not one of"),
    (kept(channels=True), "channels: True is not one of"),
    (kept(documents=-1), "documents: -1 is not one of"),
    (kept(documents=None), "documents: None is not one of"),
    (kept(all="true"), "all: 'true' is not of type 'boolean'"),
    (kept(all=1), "all: 1 is not of type 'boolean'"),
    ({k: v for k, v in kept().items() if k != "all"}, "'all' is a required property"),
    ({k: v for k, v in kept().items() if k != "documents"}, "'documents' is a required property"),
    (fetched(objects=1234), "objects: 1234 is not one of"),
    (fetched(objects="1000"), "objects: '1000' is not one of"),
    (fetched(objects=1e7), "objects: 10000000.0 is not one of"),
    (fetched(seconds=2.5), "seconds: 2.5 is not one of"),
    (fetched(seconds=60), "seconds: 60 is not one of"),
    (fetched(seconds=False), "seconds: False is not one of"),
    (fetched(kept_all=0), "kept_all: 0 is not of type 'boolean'"),
    (fetched(kept_all=None), "kept_all: None is not of type 'boolean'"),
    ({k: v for k, v in fetched().items() if k != "seconds"}, "'seconds' is a required property"),
    ({k: v for k, v in fetched().items() if k != "kept_all"}, "'kept_all' is a required property"),
    (kept(schema=5), "schema"),
    (fetched(schema=1), "schema"),
    (fetched(schema=7), "schema"),
])
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


def test_collectors_of_older_versions_refuse_the_version_6_events_and_read_their_own():
    attached = {"event": "file_attached", "schema": 5, "ts": TS, "pid": PID, "size": 0,
                "kind": "image", "files": 1, "stream": STREAM}
    for versions in ((1,), (1, 2), (1, 2, 3), (1, 2, 3, 4), (1, 2, 3, 4, 5)):
        for event in (kept(), fetched()):
            with pytest.raises(EventError, match="version 6 is not read here"):
                validate(event, versions=versions)
    assert validate(attached, versions=(1, 2, 3, 4, 5)) == attached
    assert validate(attached) == attached
    assert validate(fetched(), versions=(1, 2, 3, 4, 5, 6)) == fetched()


def test_version_6_keeps_every_version_5_type_exactly_and_the_shipped_files_are_unchanged():
    v5, v6 = schema(5), schema(6)
    for version, digest in SHIPPED.items():
        parsed = json.dumps(schema(version), sort_keys=True).encode()
        assert hashlib.sha256(parsed).hexdigest() == digest, f"events-v{version}.json was edited"
    for name, spec in v5["$defs"].items():
        assert v6["$defs"][name] == spec, name  # the version-5 types with their pinned schema
    for field in ("ts", "pid"):
        assert v6["properties"][field] == v5["properties"][field]
    assert v6["properties"]["event"]["enum"] == [*v5["properties"]["event"]["enum"], *NEW]
    assert v6["properties"]["schema"]["enum"] == [1, 2, 3, 4, 5, 6]
    assert set(v6["properties"]["event"]["enum"]) == set(EVENT_TYPES)
    assert v6["oneOf"] == [*v5["oneOf"], *({"$ref": f"#/$defs/{name}"} for name in NEW)]
    for name in NEW:
        spec = v6["$defs"][name]
        assert spec["additionalProperties"] is False
        assert set(spec["properties"]) == {"event", "schema", "ts", "pid", *spec["required"]}
    assert v6["$defs"]["channels_kept"]["required"] == ["all", "channels", "documents"]
    assert v6["$defs"]["history_fetched"]["required"] == ["objects", "seconds", "kept_all"]


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
