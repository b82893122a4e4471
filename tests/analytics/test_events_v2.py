"""Schema version 2 (analytics.events): the conversation events, their versions, no content."""

from __future__ import annotations

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
NEW = ("reaction_added", "message_edited", "thread_reply")


def event(name: str, **fields: object) -> dict:
    defaults = {"reaction_added": {"stream": STREAM},
                "message_edited": {"length": 64, "stream": STREAM},
                "thread_reply": {"length": 16, "broadcast": False, "stream": STREAM}}
    return {"event": name, "schema": 2, "ts": TS, "pid": PID} | defaults[name] | fields


@pytest.mark.parametrize("name", NEW)
def test_the_conversation_events_are_version_2_events(name):
    assert name in EVENT_TYPES and version_of(name) == 2
    assert validate(event(name)) == event(name)
    assert validate(event("thread_reply", broadcast=True))


@pytest.mark.parametrize("name", NEW)
@pytest.mark.parametrize("field,value", [
    ("text", "meet at the pier"),
    ("emoji", "\N{UNICORN FACE}"),
    ("emoji", ":unicorn:"),
    ("emoji_bucket", "animals"),
    ("target", "ab" * 32),
    ("parent", "ab" * 16),
    ("message", "ab" * 16),
    ("nick", "zorro"),
    ("channel", "project-xylophone"),
    ("author", "cd" * 32),
])
def test_content_or_anything_that_points_at_a_message_is_refused(name, field, value):
    with pytest.raises(EventError, match="Additional properties"):
        validate(event(name, **{field: value}))


@pytest.mark.parametrize("bad,reason", [
    (event("thread_reply", broadcast="true"), "broadcast: 'true' is not of type 'boolean'"),
    (event("thread_reply", broadcast=1), "broadcast: 1 is not of type 'boolean'"),
    (event("thread_reply", broadcast=None), "broadcast: None is not of type 'boolean'"),
    (event("message_edited", length=17), "length: 17 is not one of"),
    (event("reaction_added", stream="not a hash"), "stream: 'not a hash' does not match"),
    ({k: v for k, v in event("thread_reply").items() if k != "broadcast"},
     "'broadcast' is a required property"),
    ({k: v for k, v in event("reaction_added").items() if k != "stream"},
     "'stream' is a required property"),
])
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


def test_an_event_carries_exactly_the_version_that_introduced_its_type():
    with pytest.raises(EventError, match="schema"):
        validate(event("reaction_added", schema=1))
    with pytest.raises(EventError, match="schema"):
        validate({"event": "message_sent", "schema": 2, "ts": TS, "pid": PID, "length": 16})
    assert validate({"event": "message_sent", "schema": 1, "ts": TS, "pid": PID, "length": 16})
    assert {name for name in EVENT_TYPES if version_of(name) == 2} == set(NEW)
    assert {name for name in EVENT_TYPES if version_of(name) == 1} == set(
        schema(1)["properties"]["event"]["enum"])


def test_a_collector_of_version_1_alone_refuses_version_2_events_only():
    v1 = {"event": "message_sent", "schema": 1, "ts": TS, "pid": PID, "length": 16}
    assert validate(v1, versions=(1,)) == v1
    with pytest.raises(EventError, match="version 2 is not read here"):
        validate(event("thread_reply"), versions=(1,))
    assert validate(event("thread_reply"), versions=(1, 2)) == event("thread_reply")
    assert SCHEMA_VERSIONS[:2] == (1, 2)


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
