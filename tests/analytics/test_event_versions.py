"""The event schema's versions 2 to 6 (analytics.events): each version's new events, that they
carry exactly their version, that nothing of what a person wrote or named and nothing that points
at it is allowed, the buckets some fields hold instead of exact numbers, that older collectors
refuse a newer version's events and read their own, and that each version keeps every older type
exactly while the shipped contracts stay unchanged.

One table per concern (NEW, EXAMPLES, ALLOWED, REFUSED, BAD, ...) holds every version's cases;
what only one version has (its buckets, what its recorder writes) is tested beside them.
"""

from __future__ import annotations

import hashlib
import json
from functools import partial

import pytest

from analytics.events import (
    EVENT_TYPES,
    EXPIRY_BUCKETS,
    FILE_KINDS,
    FILE_SIZE_BUCKETS,
    KEPT_BUCKETS,
    OBJECTS_BUCKETS,
    SCHEMA_FILE,
    SCHEMA_VERSION,
    SCHEMA_VERSIONS,
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

PID = "0123456789abcdef" * 2
STREAM = "fedcba9876543210" * 2
TS = "2026-11-25T10:00:00Z"
HOUR_MS = 3_600_000
MADE = 1_795_000_000_000
KIB, MIB, GIB = 1 << 10, 1 << 20, 1 << 30

# The event types each version brought.
NEW = {
    2: ("reaction_added", "message_edited", "thread_reply"),
    3: ("doc_comment",),
    4: ("invite_created", "member_admitted"),
    5: ("file_attached", "private_channel_created"),
    6: ("channels_kept", "history_fetched"),
}
# The fields each new type requires, in the contract's order.
REQUIRED = {
    "doc_comment": ["stream"],
    "invite_created": ["uses", "expires"],
    "member_admitted": ["how"],
    "file_attached": ["size", "kind", "files", "stream"],
    "private_channel_created": ["dm"],
    "channels_kept": ["all", "channels", "documents"],
    "history_fetched": ["objects", "seconds", "kept_all"],
}
# The shipped contracts (their parsed JSON, keys sorted): collectors and apps of those versions
# hold them, so they are never edited.
SHIPPED = {1: "90d6487a1b12ba3196980925c5f38d4c8cb2a7cb404409398f6b0d55f6097283",
           2: "89f31ae3ec7e7f49d5dba90f240cd28ecdaf020129a3e5d1861d631fb813a1c4",
           3: "e58c5cbc701cedc1faea8177893e8336f8cb6d371e8177719dd71c7445c98ed7",
           4: "8bc96e232b389dc2fe128e52702b0320334fc1ec2937c25ff39bd5314f445540",
           5: "fd545e4ff86cdac39e39e4e8345aa9d32704383270f6133fd81f9de4ee5462d6"}

# A valid event of each type (of its version), which the tests vary.
EXAMPLES = {
    "message_sent": {"length": 16},
    "reaction_added": {"stream": STREAM},
    "message_edited": {"length": 64, "stream": STREAM},
    "thread_reply": {"length": 16, "broadcast": False, "stream": STREAM},
    "doc_comment": {"stream": STREAM},
    "invite_created": {"uses": "one", "expires": "week"},
    "member_admitted": {"how": "invite"},
    "file_attached": {"size": 0, "kind": "image", "files": 1, "stream": STREAM},
    "private_channel_created": {"dm": False},
    "channels_kept": {"all": False, "channels": 2, "documents": 0},
    "history_fetched": {"objects": 1000, "seconds": 3, "kept_all": True},
}


def event(name: str, **fields: object) -> dict:
    base = {"event": name, "schema": version_of(name), "ts": TS, "pid": PID}
    return base | EXAMPLES[name] | fields


comment = partial(event, "doc_comment")
invite = partial(event, "invite_created")
admitted = partial(event, "member_admitted")
attached = partial(event, "file_attached")
private = partial(event, "private_channel_created")
kept = partial(event, "channels_kept")
fetched = partial(event, "history_fetched")


def upto(version: int) -> tuple[int, ...]:
    return tuple(range(1, version + 1))


def without(event: dict, field: str) -> dict:
    return {k: v for k, v in event.items() if k != field}


# Every version ----------------------------------------------------------------------------------

VERSIONS = sorted(NEW)


@pytest.mark.parametrize("version", VERSIONS)
def test_a_versions_new_types_are_its_events(version):
    assert SCHEMA_VERSIONS[:version] == upto(version)
    assert [name for name in EVENT_TYPES if version_of(name) == version] == list(NEW[version])
    for name in NEW[version]:
        assert validate(event(name)) == event(name)


def test_version_6_is_the_current_version():
    assert SCHEMA_VERSION == 6 and SCHEMA_VERSIONS == (1, 2, 3, 4, 5, 6)
    assert SCHEMA_FILE == "events-v6.json"
    assert set(schema(SCHEMA_VERSION)["properties"]["event"]["enum"]) == set(EVENT_TYPES)


# Every value a field may hold, by version (the buckets, the flags).
ALLOWED = {
    2: [event("thread_reply", broadcast=True)],
    3: [],
    4: [invite(uses=uses, expires=expires) for uses in USES_BUCKETS
        for expires in EXPIRY_BUCKETS]
       + [admitted(how=how) for how in ("invite", "personal")],
    5: [attached(size=size, kind=kind, files=files) for size in FILE_SIZE_BUCKETS
        for kind in FILE_KINDS for files in (1, 2, 3, 4)]
       + [private(dm=dm) for dm in (True, False)],
    6: [kept(all=every, channels=channels, documents=documents) for every in (True, False)
        for channels in KEPT_BUCKETS for documents in KEPT_BUCKETS]
       + [fetched(objects=objects, seconds=seconds, kept_all=every) for every in (True, False)
          for objects in OBJECTS_BUCKETS for seconds in SECONDS_BUCKETS],
}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_value_a_field_may_hold_is_valid(version):
    for allowed in ALLOWED[version]:
        assert validate(allowed) == allowed


# Fields that would name or point at what a person wrote, named or fetched.
REFUSED = [
    *((name, field, value) for name in NEW[2] for field, value in [
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
    ]),
    *(("doc_comment", field, value) for field, value in [
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
    ]),
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
]


@pytest.mark.parametrize("name,field,value", REFUSED)
def test_nothing_that_names_or_points_at_content_is_allowed(name, field, value):
    with pytest.raises(EventError, match="Additional properties"):
        validate(event(name) | {field: value})


BAD = [
    # version 2
    (event("thread_reply", broadcast="true"), "broadcast: 'true' is not of type 'boolean'"),
    (event("thread_reply", broadcast=1), "broadcast: 1 is not of type 'boolean'"),
    (event("thread_reply", broadcast=None), "broadcast: None is not of type 'boolean'"),
    (event("message_edited", length=17), "length: 17 is not one of"),
    (event("reaction_added", stream="not a hash"), "stream: 'not a hash' does not match"),
    (without(event("thread_reply"), "broadcast"),
     "'broadcast' is a required property"),
    (without(event("reaction_added"), "stream"),
     "'stream' is a required property"),
    # version 3
    (comment(stream="not a hash"), "stream: 'not a hash' does not match"),
    (comment(stream="AB" * 16), "does not match"),
    (without(comment(), "stream"), "'stream' is a required property"),
    (comment(schema=2), "schema"),
    (comment(schema=1), "schema"),
    (comment(schema=4), "schema"),
    # version 4
    (invite(uses=1), "uses: 1 is not one of"),
    (invite(uses=37), "uses: 37 is not one of"),
    (invite(uses="some"), "uses: 'some' is not one of"),
    (invite(uses=None), "uses: None is not one of"),
    (invite(expires=1_795_003_600_000), "expires: 1795003600000 is not one of"),
    (invite(expires="month"), "expires: 'month' is not one of"),
    (invite(expires=0), "expires: 0 is not one of"),
    (without(invite(), "uses"), "'uses' is a required property"),
    (without(invite(), "expires"), "'expires' is a required property"),
    (admitted(how="code"), "how: 'code' is not one of"),
    (admitted(how=True), "how: True is not one of"),
    (without(admitted(), "how"), "'how' is a required property"),
    (invite(schema=3), "schema"),
    (admitted(schema=1), "schema"),
    (admitted(schema=5), "schema"),
    # version 5
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
    (without(attached(), "stream"), "'stream' is a required property"),
    (without(attached(), "files"), "'files' is a required property"),
    (without(attached(), "size"), "'size' is a required property"),
    (private(dm=1), "dm: 1 is not of type 'boolean'"),
    (private(dm="true"), "dm: 'true' is not of type 'boolean'"),
    (private(dm=None), "dm: None is not of type 'boolean'"),
    (without(private(), "dm"), "'dm' is a required property"),
    (attached(schema=4), "schema"),
    (private(schema=1), "schema"),
    (private(schema=6), "schema"),
    # version 6
    (kept(channels=3), "channels: 3 is not one of"),
    (kept(channels=37), "channels: 37 is not one of"),
    (kept(channels="2-5"), "channels: '2-5' is not one of"),
    (kept(channels=True), "channels: True is not one of"),
    (kept(documents=-1), "documents: -1 is not one of"),
    (kept(documents=None), "documents: None is not one of"),
    (kept(all="true"), "all: 'true' is not of type 'boolean'"),
    (kept(all=1), "all: 1 is not of type 'boolean'"),
    (without(kept(), "all"), "'all' is a required property"),
    (without(kept(), "documents"), "'documents' is a required property"),
    (fetched(objects=1234), "objects: 1234 is not one of"),
    (fetched(objects="1000"), "objects: '1000' is not one of"),
    (fetched(objects=1e7), "objects: 10000000.0 is not one of"),
    (fetched(seconds=2.5), "seconds: 2.5 is not one of"),
    (fetched(seconds=60), "seconds: 60 is not one of"),
    (fetched(seconds=False), "seconds: False is not one of"),
    (fetched(kept_all=0), "kept_all: 0 is not of type 'boolean'"),
    (fetched(kept_all=None), "kept_all: None is not of type 'boolean'"),
    (without(fetched(), "seconds"), "'seconds' is a required property"),
    (without(fetched(), "kept_all"), "'kept_all' is a required property"),
    (kept(schema=5), "schema"),
    (fetched(schema=1), "schema"),
    (fetched(schema=7), "schema"),
]


@pytest.mark.parametrize("bad,reason", BAD)
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


# An event of the version before each version, which its collectors read.
PREVIOUS = {2: event("message_sent"), 3: event("reaction_added"), 4: comment(),
            5: invite(), 6: attached()}


@pytest.mark.parametrize("version", VERSIONS)
def test_collectors_of_older_versions_refuse_a_versions_events_and_read_their_own(version):
    for older in range(1, version):
        for name in NEW[version]:
            with pytest.raises(EventError, match=f"version {version} is not read here"):
                validate(event(name), versions=upto(older))
    previous = PREVIOUS[version]
    assert validate(previous, versions=upto(version - 1)) == previous
    assert validate(previous) == previous
    for name in NEW[version]:
        assert validate(event(name), versions=upto(version)) == event(name)


@pytest.mark.parametrize("version", VERSIONS[1:])
def test_a_version_keeps_every_older_type_exactly_and_the_shipped_files_are_unchanged(version):
    older, newer = schema(version - 1), schema(version)
    for shipped in range(1, version):
        parsed = json.dumps(schema(shipped), sort_keys=True).encode()
        assert hashlib.sha256(parsed).hexdigest() == SHIPPED[shipped], (
            f"events-v{shipped}.json was edited")
    for name, spec in older["$defs"].items():
        assert newer["$defs"][name] == spec, name  # the older types with their pinned schema
    for field in ("ts", "pid"):
        assert newer["properties"][field] == older["properties"][field]
    assert newer["properties"]["event"]["enum"] == [*older["properties"]["event"]["enum"],
                                                    *NEW[version]]
    assert newer["properties"]["schema"]["enum"] == list(upto(version))
    assert set(newer["properties"]["event"]["enum"]) == {
        name for name in EVENT_TYPES if version_of(name) <= version}
    assert newer["oneOf"] == [*older["oneOf"],
                              *({"$ref": f"#/$defs/{name}"} for name in NEW[version])]
    for name in NEW[version]:
        spec = newer["$defs"][name]
        assert spec["additionalProperties"] is False
        assert set(spec["properties"]) == {"event", "schema", "ts", "pid", *spec["required"]}
        assert spec["required"] == REQUIRED[name]


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
