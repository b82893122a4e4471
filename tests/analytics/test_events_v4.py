"""Schema version 4 (analytics.events): invite_created and member_admitted, their version, and
buckets instead of an invite's exact numbers or anything that names it or the person let in."""

from __future__ import annotations

import hashlib
import json

import pytest

from analytics.events import (
    EVENT_TYPES,
    EXPIRY_BUCKETS,
    SCHEMA_VERSIONS,
    USES_BUCKETS,
    EventError,
    expiry_bucket,
    schema,
    uses_bucket,
    validate,
    version_of,
)
from analytics.recorder import Recorder
from tests.support import FakeClock

PID = "0123456789abcdef" * 2
STREAM = "fedcba9876543210" * 2
TS = "2026-11-18T10:00:00Z"
NEW = ("invite_created", "member_admitted")
# The shipped contracts (their parsed JSON, keys sorted): collectors and apps of those versions
# hold them, so they are never edited.
SHIPPED = {1: "90d6487a1b12ba3196980925c5f38d4c8cb2a7cb404409398f6b0d55f6097283",
           2: "89f31ae3ec7e7f49d5dba90f240cd28ecdaf020129a3e5d1861d631fb813a1c4",
           3: "e58c5cbc701cedc1faea8177893e8336f8cb6d371e8177719dd71c7445c98ed7"}
HOUR_MS = 3_600_000
MADE = 1_795_000_000_000


def invite(**fields: object) -> dict:
    return {"event": "invite_created", "schema": 4, "ts": TS, "pid": PID, "uses": "one",
            "expires": "week"} | fields


def admitted(**fields: object) -> dict:
    return {"event": "member_admitted", "schema": 4, "ts": TS, "pid": PID,
            "how": "invite"} | fields


def test_invites_and_admissions_are_the_version_4_events():
    assert SCHEMA_VERSIONS[:4] == (1, 2, 3, 4)
    assert [name for name in EVENT_TYPES if version_of(name) == 4] == list(NEW)
    for uses in USES_BUCKETS:
        for expires in EXPIRY_BUCKETS:
            assert validate(invite(uses=uses, expires=expires))
    for how in ("invite", "personal"):
        assert validate(admitted(how=how)) == admitted(how=how)


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


def test_the_buckets_are_the_contracts_enums():
    spec = schema(4)["$defs"]["invite_created"]["properties"]
    assert tuple(spec["uses"]["enum"]) == USES_BUCKETS
    assert tuple(spec["expires"]["enum"]) == EXPIRY_BUCKETS
    made = {uses_bucket(n) for n in range(0, 40)}
    assert made == set(USES_BUCKETS)
    lived = {expiry_bucket(MADE + h * HOUR_MS, MADE) for h in range(0, 24 * 10)}
    assert lived | {expiry_bucket(0, MADE)} == set(EXPIRY_BUCKETS)


@pytest.mark.parametrize("event,field,value", [
    ("invite_created", "tag", "ab" * 16),
    ("invite_created", "code", "hearth-abcdef-0123"),
    ("invite_created", "invite", "cd" * 32),
    ("invite_created", "stream", STREAM),
    ("invite_created", "workspace", "cd" * 16),
    ("invite_created", "max_uses", 37),
    ("invite_created", "expires_ms", 1_795_003_600_000),
    ("invite_created", "nick", "zorro"),
    ("member_admitted", "key", "ef" * 32),
    ("member_admitted", "member", "ef" * 16),
    ("member_admitted", "invite", "cd" * 16),
    ("member_admitted", "nick", "zorro"),
    ("member_admitted", "stream", STREAM),
    ("member_admitted", "uses", "one"),
])
def test_nothing_that_names_the_invite_or_the_person_is_allowed(event, field, value):
    base = invite() if event == "invite_created" else admitted()
    with pytest.raises(EventError, match="Additional properties"):
        validate(base | {field: value})


@pytest.mark.parametrize("bad,reason", [
    (invite(uses=1), "uses: 1 is not one of"),
    (invite(uses=37), "uses: 37 is not one of"),
    (invite(uses="some"), "uses: 'some' is not one of"),
    (invite(uses=None), "uses: None is not one of"),
    (invite(expires=1_795_003_600_000), "expires: 1795003600000 is not one of"),
    (invite(expires="month"), "expires: 'month' is not one of"),
    (invite(expires=0), "expires: 0 is not one of"),
    ({k: v for k, v in invite().items() if k != "uses"}, "'uses' is a required property"),
    ({k: v for k, v in invite().items() if k != "expires"}, "'expires' is a required property"),
    (admitted(how="code"), "how: 'code' is not one of"),
    (admitted(how=True), "how: True is not one of"),
    ({k: v for k, v in admitted().items() if k != "how"}, "'how' is a required property"),
    (invite(schema=3), "schema"),
    (admitted(schema=1), "schema"),
    (admitted(schema=5), "schema"),
])
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


def test_collectors_of_older_versions_refuse_the_version_4_events_and_read_their_own():
    comment = {"event": "doc_comment", "schema": 3, "ts": TS, "pid": PID, "stream": STREAM}
    for versions in ((1,), (1, 2), (1, 2, 3)):
        for event in (invite(), admitted()):
            with pytest.raises(EventError, match="version 4 is not read here"):
                validate(event, versions=versions)
    assert validate(comment, versions=(1, 2, 3)) == comment
    assert validate(invite(), versions=(1, 2, 3, 4)) == invite()


def test_version_4_keeps_every_version_3_type_exactly_and_the_shipped_files_are_unchanged():
    v3, v4 = schema(3), schema(4)
    for version, digest in SHIPPED.items():
        parsed = json.dumps(schema(version), sort_keys=True).encode()
        assert hashlib.sha256(parsed).hexdigest() == digest, f"events-v{version}.json was edited"
    for name, spec in v3["$defs"].items():
        assert v4["$defs"][name] == spec, name  # the version-3 types with their pinned schema
    for field in ("ts", "pid"):
        assert v4["properties"][field] == v3["properties"][field]
    assert v4["properties"]["event"]["enum"] == [*v3["properties"]["event"]["enum"], *NEW]
    assert v4["properties"]["schema"]["enum"] == [1, 2, 3, 4]
    assert set(v4["properties"]["event"]["enum"]) == {
        name for name in EVENT_TYPES if version_of(name) <= 4}
    assert v4["oneOf"] == [*v3["oneOf"], *({"$ref": f"#/$defs/{name}"} for name in NEW)]
    for name in NEW:
        spec = v4["$defs"][name]
        assert spec["additionalProperties"] is False
        assert set(spec["properties"]) == {"event", "schema", "ts", "pid", *spec["required"]}
    assert v4["$defs"]["invite_created"]["required"] == ["uses", "expires"]
    assert v4["$defs"]["member_admitted"]["required"] == ["how"]


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
