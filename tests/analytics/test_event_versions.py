"""The event schema's versions 2 to 8 (analytics.events): each version's new events, that they
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
    schema,
    validate,
    version_of,
)

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
    7: ("notify_level_set", "notify_dnd_set", "notify_option_set"),
    8: ("relay_changed", "data_moved"),
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
    "notify_level_set": ["level", "kind", "timed"],
    "notify_dnd_set": ["paused", "scheduled"],
    "notify_option_set": ["option", "on"],
    "relay_changed": ["added"],
    "data_moved": ["what", "messages"],
}
# The shipped contracts (their parsed JSON, keys sorted): collectors and apps of those versions
# hold them, so they are never edited.
SHIPPED = {1: "90d6487a1b12ba3196980925c5f38d4c8cb2a7cb404409398f6b0d55f6097283",
           2: "89f31ae3ec7e7f49d5dba90f240cd28ecdaf020129a3e5d1861d631fb813a1c4",
           3: "e58c5cbc701cedc1faea8177893e8336f8cb6d371e8177719dd71c7445c98ed7",
           4: "8bc96e232b389dc2fe128e52702b0320334fc1ec2937c25ff39bd5314f445540",
           5: "fd545e4ff86cdac39e39e4e8345aa9d32704383270f6133fd81f9de4ee5462d6",
           6: "9a7987b9a0c4bb8885c84ffe1fa715778406368e4ddc9c84aa33842aadb4c6a0",
           7: "cd137598234ffbe8070aa242e65d582858e94f12f6e9567abda942858dbd6732"}

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
    "notify_level_set": {"level": "none", "kind": "channel", "timed": False},
    "notify_dnd_set": {"paused": True, "scheduled": False},
    "notify_option_set": {"option": "keywords", "on": True},
    "relay_changed": {"added": True},
    "data_moved": {"what": "slack_import", "messages": 1024},
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
level_set = partial(event, "notify_level_set")
dnd_set = partial(event, "notify_dnd_set")
option_set = partial(event, "notify_option_set")
relay_changed = partial(event, "relay_changed")
data_moved = partial(event, "data_moved")


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


def test_version_8_is_the_current_version():
    assert SCHEMA_VERSION == 8 and SCHEMA_VERSIONS == (1, 2, 3, 4, 5, 6, 7, 8)
    assert SCHEMA_FILE == "events-v8.json"
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
    7: [level_set(level=level, kind=kind, timed=timed)
        for level in ("all", "mentions", "none", "default")
        for kind in ("channel", "private", "dm") for timed in (True, False)]
       + [dnd_set(paused=paused, scheduled=scheduled) for paused in (True, False)
          for scheduled in (True, False)]
       + [option_set(option=option, on=on) for option in ("keywords", "show_text")
          for on in (True, False)],
    8: [relay_changed(added=added) for added in (True, False)]
       + [data_moved(what=what, messages=messages)
          for what in ("slack_import", "archive_sqlite", "archive_json", "archive_html",
                       "backup", "restore") for messages in (0, 1, 1024, 1 << 20)],
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
    *(("notify_level_set", field, value) for field, value in [
        ("channel", "general"),
        ("name", "secret-plans"),
        ("stream", STREAM),
        ("conversation", "ab" * 16),
        ("until", 1_795_003_600),
        ("text", "lunch is ready"),
    ]),
    ("notify_dnd_set", "schedule", "22:00-08:00"),
    ("notify_dnd_set", "start", 1320),
    ("notify_dnd_set", "until", 1_795_003_600),
    ("notify_option_set", "keywords", ["deploy"]),
    ("notify_option_set", "keyword", "deploy"),
    ("notify_option_set", "count", 3),
    ("relay_changed", "address", "relay.example.org:7655"),
    ("relay_changed", "host", "relay.example.org"),
    ("relay_changed", "key", "ab" * 32),
    ("relay_changed", "workspace", STREAM),
    ("data_moved", "file", "slack-export.zip"),
    ("data_moved", "path", "/home/ada/team.db"),
    ("data_moved", "channel", "general"),
    ("data_moved", "channels", 12),
    ("data_moved", "text", "lunch is ready"),
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
    # version 7
    (level_set(level="loud"), "level: 'loud' is not one of"),
    (level_set(level=None), "level: None is not one of"),
    (level_set(kind="thread"), "kind: 'thread' is not one of"),
    (level_set(timed="yes"), "timed: 'yes' is not of type 'boolean'"),
    (without(level_set(), "kind"), "'kind' is a required property"),
    (dnd_set(paused=1), "paused: 1 is not of type 'boolean'"),
    (without(dnd_set(), "scheduled"), "'scheduled' is a required property"),
    (option_set(option="deploy"), "option: 'deploy' is not one of"),
    (option_set(on="true"), "on: 'true' is not of type 'boolean'"),
    (without(option_set(), "option"), "'option' is a required property"),
    (level_set(schema=6), "schema"),
    (dnd_set(schema=8), "schema"),
    # version 8
    (relay_changed(added="yes"), "added: 'yes' is not of type 'boolean'"),
    (without(relay_changed(), "added"), "'added' is a required property"),
    (data_moved(what="export"), "what: 'export' is not one of"),
    (data_moved(messages=1000), "messages"),
    (data_moved(messages=-1), "messages"),
    (without(data_moved(), "what"), "'what' is a required property"),
    (relay_changed(schema=7), "schema"),
    (data_moved(schema=9), "schema"),
]


@pytest.mark.parametrize("bad,reason", BAD)
def test_each_field_keeps_to_its_rule(bad, reason):
    with pytest.raises(EventError) as refused:
        validate(bad)
    assert reason in str(refused.value)


# An event of the version before each version, which its collectors read.
PREVIOUS = {2: event("message_sent"), 3: event("reaction_added"), 4: comment(),
            5: invite(), 6: attached(), 7: kept(), 8: level_set()}


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
