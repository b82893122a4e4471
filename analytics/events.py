"""The analytics event contract: schema versions, event types, buckets, and validation.

Every event is one JSON object checked against the newest contract,
`analytics/schema/events-v8.json`. The recorder, the collector and the pipeline all read the
contract from here. A shipped contract file is never edited: a new event type means a new file.

Versions, and why an event carries the oldest one that knows its type. A collector refuses a
whole batch holding a line it cannot validate, and the shipper drops a batch refused as
malformed, so a new event type sent to a collector that predates it would lose that batch with
every older event in it. Hence:

- Each event type belongs to the version that introduced it, and its fields never change (a
  change is a new type, as with object kinds). Version 1 has the first ten types; version 2 adds
  reaction_added, message_edited and thread_reply; version 3 adds doc_comment; version 4 adds
  invite_created and member_admitted; version 5 adds file_attached and private_channel_created;
  version 6 adds channels_kept and history_fetched; version 7 adds notify_level_set,
  notify_dnd_set and notify_option_set; version 8 adds relay_changed and data_moved. Each
  contract file holds every type up to its version, the older ones exactly as the file before
  it has them (`events-v8.json` the version-7 types as `events-v7.json` does, which has the
  version-6 ones as `events-v6.json` does, which has the version-5 ones as `events-v5.json` does, which has the version-4 ones as `events-v4.json`
  does, and so on back to `events-v1.json`, but for their pinned `schema`), and pins each type's
  `schema` to its version: `"schema": 1` on a message_sent, `"schema": 2` on a thread_reply,
  `"schema": 3` on a doc_comment, `"schema": 4` on a member_admitted, `"schema": 5` on a
  file_attached, `"schema": 6` on a history_fetched, `"schema": 7` on a notify_level_set,
  `"schema": 8` on a data_moved, never another. So a line's `schema` names
  the oldest collector that can read it.
- A collector says which versions it reads: `"schemas": [1, 2, 3, 4, 5, 6, 7, 8]` in its answers to
  `GET /v1/health` and `POST /v1/events`. A collector from before version 2 says nothing, which
  means version 1 alone (`BASE_VERSIONS`); every collector reads version 1. A collector of
  version 2 says `[1, 2]`, so doc_comment events wait for its upgrade as thread replies waited
  for version 2's; one of version 3 says `[1, 2, 3]`, so invite and admission events wait for
  its upgrade in turn; one of version 4 says `[1, 2, 3, 4]`, and attachment and private-channel
  events wait for its; one of version 5 says `[1, 2, 3, 4, 5]`, and kept-set and history events
  wait for its; one of version 6 says `[1, 2, 3, 4, 5, 6]`, and notification settings' events
  wait for its; one of version 7 says `[1, ..., 7]`, and relay and data events wait for its.
- The recorder spools each line with its version, and the shipper sends only the versions its
  collector reads: the others wait in the spool, in order, until the collector is upgraded
  (asked again every few minutes while they wait). If a collector refuses a batch holding a
  version it had claimed, the shipper asks again before dropping anything: a downgraded
  collector makes the lines wait instead of losing them.
- An older app (recorder and shipper of version 1) only ever made version-1 events, which every
  collector reads. The spool table was renamed when lines gained a version, so an older app run
  again on the same data folder never sees, nor ships, version-2 lines (see the recorder).
- The report reads every version: it checks each line against the rules of its own type.

Why the new events say so little. reaction_added carries the channel's daily stream hash and
nothing else: not the emoji, not even a bucket of it. Emoji are an open set (skin tones,
sequences, flags); a rare one in a small workspace, with the hour, the day's pid and the stream
hash, could single out one reaction and so the person who made it, while a count of reactions is
all the product needs. message_edited and thread_reply carry the new text's length bucket like
message_sent does, and thread_reply whether it was also sent to the channel. None carries the
text, the emoji, a message id (even hashed: an id would link an edit or a reply to its message
across installs), or a name.

doc_comment says less still: only the branch's daily stream hash (as doc_commit has it). A
doc/comment is a comment on a range of the text, a reply or a resolve, boxed with the branch key
so that all three look alike from outside; the recorder does not open the box, so it cannot tell
them apart, and it sends no length either: the box's size would tell a resolve from a comment
and give the comment's length. Neither the comment's id, the one it answers, its anchor, nor the
document is sent.

invite_created and member_admitted count how people are let in, not who. Every member's
computer holds an invite/create and a member/admit, with their author, so whatever of one the
event repeats exactly could tie the event (and that day's pid) to the person who made it: an
invite's tag or id, an unusual number of uses (37) or an expiry to the minute. So an invite
gives its `uses` as a bucket (`uses_bucket`: one, few, many, or any when it has no limit) and
its lifetime, from its making to its expiry, as another (`expiry_bucket`: hour, day, week,
longer, or never), whose bounds are the window's choices (1 hour, 24 hours, 7 days), each
counted in its own bucket. An admission says only whether an invite or a personal code let the
person in: not their key, their nickname, nor the invite, so nothing links it to the
invite_created of the invite it used, nor to the newcomer's own events (their computer makes
no member/admit of its own joining, so it counts nothing here). Neither carries the
workspace's stream hash: counts per install are all the product needs.

file_attached counts files sent, one event per file of a message (so each file keeps its own
size and kind, which one event per message would have to merge), with `files`, how many the
message holds, so messages can be counted too (n events with `files` n are one message). Every
member holds the message's descriptors, exact size and media type included, so the event gives
the size as a bucket (`file_size_bucket`: under 100 KiB, 1 MiB, 10 MiB, 100 MiB, 1 GiB, or more,
each named by its lower bound in bytes as `length` buckets are, since `size` is a number in
doc_commit and a field has one type in every event) and the media type as a kind (`file_kind`: image, video, audio, document, archive, other), with
the channel's daily stream hash as thread_reply has it; never the name, the media type itself,
the file's key, its list chunk's id, nor the message. Only public channels' files are counted:
in a private channel or a direct message the descriptors are sealed in the post/sealed box with
the text, and the recorder does not open boxes.

private_channel_created says only whether a private channel of mine is a direct message (a
channel/private object of mine, whose body is a nonce and that flag). Not its name (sealed),
its id, its members, nor how many they are: the object does not hold its members, who come in
the channel/members objects after it and change with every addition and removal, and a DM is
always two anyway.

channels_kept says how much this computer keeps when its person changes it (`hearth keep`, the
window's "Keep on this computer"): whether it keeps all, and how many channels and documents it
keeps otherwise, each as a bucket (`kept_bucket`: 0, 1, 2 to 5, 6 to 20, 21 or more, named by
the lower bound; 0 and 0 with `all`, whose lists say nothing). Never which ones: no channel
name, document id, nor a stream hash of them, which with the day's pid would say that this
install keeps that channel; and not the exact numbers, since keeping exactly 37 of a
workspace's channels can single an install out where "21 or more" cannot. Private channels and
direct messages are always kept, so they are not counted.

history_fetched is recorded when fetching history from peers finishes (a new computer joining,
or one catching up after being away): how many objects arrived (`objects_bucket`: 0, then by
powers of ten from 1 to 99 up to a million or more) and how long it took (`seconds_bucket`:
under 1, 1 to 3, 3 to 10, 10 to 30, 30 to 100, 100 or more), both named by their lower bound as
the other number buckets are (`objects` is a number in sync_session too: a field has one type
in every event), and `kept_all`, whether this computer keeps everything, since keeping a few
channels is what makes joining a big workspace fast. Not the peers, the bytes, which streams
arrived, nor the exact count, which would measure the workspace.

The notification settings' events (version 7) count how people tune notifications, never what
they are about: notify_level_set gives the level chosen (all, mentions, none, or back to the
default), the kind of conversation (a public channel, a private channel or direct messages) and
whether it was set until a time; not which conversation, not even a stream hash of it, which
with the day's pid would say that this install muted that channel. notify_dnd_set says whether
do not disturb is on now and whether a daily schedule is set, not the times (an evening
schedule to the minute could single someone out). notify_option_set says that keyword alerts
or the text shown in notifications changed, and whether it is now on: never a keyword, nor how
many there are.

Version 8's events count features that reach beyond one computer, never where they reach:
relay_changed says that an admin named a relay or took one back, not its address, its key or
the workspace; data_moved says that a Slack export was imported, an archive written (by its
format), or a backup made or restored, with the messages it held as a size bucket (0 for the
backups, which copy the replica whole): never a file name, a channel or a word of a message.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Collection
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Any

SCHEMA_VERSION = 8  # the newest version: this code's collector reads it and every older one
SCHEMA_VERSIONS = (1, 2, 3, 4, 5, 6, 7, 8)
BASE_VERSIONS = frozenset({1})  # what a collector that names no versions reads
SCHEMA_FILE = f"events-v{SCHEMA_VERSION}.json"
EVENT_TYPES = (
    "app_started", "message_sent", "channel_joined", "doc_commit", "doc_fork", "doc_merge",
    "sync_session", "conflict", "convergence", "rejection",
    "reaction_added", "message_edited", "thread_reply",
    "doc_comment",
    "invite_created", "member_admitted",
    "file_attached", "private_channel_created",
    "channels_kept", "history_fetched",
    "notify_level_set", "notify_dnd_set", "notify_option_set",
    "relay_changed", "data_moved",
)
CONFLICT_KINDS = ("concurrent_heads", "lww_overwrite", "concurrent_doc_edit")
LENGTH_BUCKETS = (0, 16, 64, 256, 1024, 4096)
# The report's histogram of heads per concurrent_heads conflict; the last bucket is "50+".
HEAD_BUCKETS = (1, 2, 3, 5, 7, 10, 15, 20, 50)
# An invite's `uses` and lifetime as invite_created gives them (analytics/schema/events-v4.json).
USES_BUCKETS = ("one", "few", "many", "any")
FEW_USES = 10  # "few" is 2 to this many; "any" is an invite without a limit (uses 0)
EXPIRY_BUCKETS = ("hour", "day", "week", "longer", "never")
_HOUR_MS = 3_600_000
_EXPIRY_BOUNDS_MS = (("hour", _HOUR_MS), ("day", 24 * _HOUR_MS), ("week", 7 * 24 * _HOUR_MS))
# file_attached's fields (analytics/schema/events-v5.json): a size is the largest of these bounds
# not above it, in bytes (under 100 KiB, 1 MiB, 10 MiB, 100 MiB, 1 GiB, or 1 GiB and more).
FILE_SIZE_BUCKETS = (0, 100 << 10, 1 << 20, 10 << 20, 100 << 20, 1 << 30)
FILE_KINDS = ("image", "video", "audio", "document", "archive", "other")
MAX_FILES_COUNTED = 4  # a message holds at most 4 files; `files` 4 would stand for more
_DOCUMENT_TYPES = frozenset({
    "application/pdf", "application/rtf", "application/msword", "application/vnd.ms-excel",
    "application/vnd.ms-powerpoint", "application/epub+zip", "application/x-latex"})
_DOCUMENT_PREFIXES = ("text/", "application/vnd.openxmlformats-officedocument.",
                      "application/vnd.oasis.opendocument.")
_ARCHIVE_TYPES = frozenset({
    "application/zip", "application/x-zip-compressed", "application/gzip", "application/x-gzip",
    "application/x-tar", "application/x-gtar", "application/x-bzip2", "application/x-xz",
    "application/zstd", "application/x-zstd", "application/x-7z-compressed",
    "application/vnd.rar", "application/x-rar-compressed", "application/java-archive",
    "application/x-compress", "application/x-lzma"})
# channels_kept's and history_fetched's numbers (analytics/schema/events-v6.json), each the
# largest of its bounds not above the value: channels or documents kept (0, 1, 2-5, 6-20, 21+),
# objects fetched (0, 1-99, 100-999, ..., a million or more) and seconds taken (under 1, 1-3,
# 3-10, 10-30, 30-100, 100 or more).
KEPT_BUCKETS = (0, 1, 2, 6, 21)
OBJECTS_BUCKETS = (0, 1, 100, 1_000, 10_000, 100_000, 1_000_000)
SECONDS_BUCKETS = (0, 1, 3, 10, 30, 100)


# A pid is the hash of a per-day deletion token that only its install knows (the recorder keeps
# it): a deletion request carries tokens, and the collector hashes them back to the pids to
# forget, so it never needs the install's secret and nobody else can delete those pids.
TOKEN_HEX = 64  # 32 bytes
PID_HEX = 32
_PID_LABEL = b"hearth-analytics-pid\0"
_TOKEN = re.compile(r"[0-9a-f]{64}")
_PID = re.compile(r"[0-9a-f]{32}")


class EventError(ValueError):
    """An event that does not follow the schema; the message says which rule it breaks."""


@cache
def schema(version: int = SCHEMA_VERSION) -> dict:
    """The contract of one version (the newest by default), as parsed JSON."""
    return json.loads(resources.files("analytics.schema").joinpath(
        f"events-v{version}.json").read_text())


@cache
def versions_of_types() -> dict[str, int]:
    """Each event type and the version that introduced it (its events' `schema`)."""
    return {name: schema()["$defs"][name]["properties"]["schema"]["const"]
            for name in EVENT_TYPES}


def version_of(event: str) -> int:
    """The `schema` an event of this type carries; the newest version for an unknown type (which
    `validate` then refuses by name)."""
    return versions_of_types().get(event, SCHEMA_VERSION)


@cache
def _validators() -> dict[str, Any]:
    import jsonschema

    whole = schema()
    base = jsonschema.Draft202012Validator({k: whole[k] for k in ("type", "required", "properties")}
                                           | {"$defs": whole["$defs"]})
    by_type = {name: jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": whole["$defs"]})
               for name in EVENT_TYPES}
    return {"": base} | by_type


def validate(event: Any, versions: Collection[int] = SCHEMA_VERSIONS) -> dict:
    """Return `event` if it follows the contract and its `schema` is one of `versions` (what a
    collector reads), else raise EventError with a one-line reason."""
    if not isinstance(event, dict):
        raise EventError("an event must be a JSON object")
    validators = _validators()
    name = event.get("event")
    typed = validators.get(name) if isinstance(name, str) else None  # a list is not hashable
    for validator in (validators[""], typed):
        error = next(iter(validator.iter_errors(event)), None) if validator else None
        if error is not None:
            where = ".".join(str(p) for p in error.absolute_path)
            raise EventError(f"{where or 'event'}: {error.message}"[:300])
    if event["schema"] not in versions:
        read = ", ".join(str(v) for v in sorted(versions))
        raise EventError(f"schema: version {event['schema']} is not read here (only {read})")
    return event


def is_token(value: object) -> bool:
    return isinstance(value, str) and _TOKEN.fullmatch(value) is not None


def is_pid(value: object) -> bool:
    return isinstance(value, str) and _PID.fullmatch(value) is not None


def pid_of_token(token: str) -> str:
    """The pid a deletion token stands for (64 lowercase hex digits in, 32 out)."""
    if not is_token(token):
        raise ValueError("a deletion token is 64 lowercase hex digits")
    return hashlib.sha256(_PID_LABEL + bytes.fromhex(token)).hexdigest()[:PID_HEX]


def hour(when: datetime | float) -> str:
    """UTC ISO-8601 truncated to the hour: the only time an event carries."""
    if not isinstance(when, datetime):
        when = datetime.fromtimestamp(when, UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:00:00Z")


def length_bucket(n: int) -> int:
    """The largest LENGTH_BUCKETS bound not above n."""
    return max(b for b in LENGTH_BUCKETS if b <= max(n, 0))


def pow2(n: int) -> int:
    """0, or the largest power of two not above n: sizes without their exact value."""
    return 0 if n <= 0 else 1 << (int(n).bit_length() - 1)


def uses_bucket(uses: int) -> str:
    """An invite's `uses` as a bucket: 'one', 'few' (2 to FEW_USES), 'many', or 'any' (0)."""
    if uses <= 0:
        return "any"
    if uses == 1:
        return "one"
    return "few" if uses <= FEW_USES else "many"


def expiry_bucket(expires_ms: int, made_ms: int) -> str:
    """How long an invite made at `made_ms` admits, as a bucket: 'hour', 'day' or 'week' (at
    most that long, so the window's choices of 1 hour, 24 hours and 7 days fall in their own),
    'longer', or 'never' (`expires_ms` 0). An invite made expired already is an 'hour' one."""
    if expires_ms <= 0:
        return "never"
    left = expires_ms - made_ms
    return next((name for name, bound in _EXPIRY_BOUNDS_MS if left <= bound), "longer")


def file_size_bucket(size: int) -> int:
    """A file's size in bytes as file_attached gives it: the largest FILE_SIZE_BUCKETS bound not
    above it."""
    return max(b for b in FILE_SIZE_BUCKETS if b <= max(size, 0))


def file_kind(media_type: str) -> str:
    """A media type (as a descriptor holds it, parameters and case as they come) as one of
    FILE_KINDS; what is not recognised is 'other'."""
    base = media_type.split(";", 1)[0].strip().lower()
    top, slash, sub = base.partition("/")
    if slash and sub and top in ("image", "video", "audio"):
        return top
    if base in _DOCUMENT_TYPES or base.startswith(_DOCUMENT_PREFIXES):
        return "document"
    return "archive" if base in _ARCHIVE_TYPES else "other"


def files_count(files: int) -> int:
    """How many files a message holds, as file_attached gives it: 1 to MAX_FILES_COUNTED."""
    return min(max(files, 1), MAX_FILES_COUNTED)


def kept_bucket(count: int) -> int:
    """How many channels (or documents) a computer keeps, as channels_kept gives it."""
    return _floor(count, KEPT_BUCKETS)


def objects_bucket(objects: int) -> int:
    """How many objects a history fetch brought, as history_fetched gives it."""
    return _floor(objects, OBJECTS_BUCKETS)


def seconds_bucket(seconds: float) -> int:
    """How long a history fetch took, as history_fetched gives it (a negative or NaN time, from
    a clock that went back, is the first bucket)."""
    return _floor(seconds, SECONDS_BUCKETS)


def _floor(value: float, bounds: tuple[int, ...]) -> int:
    """The largest of `bounds` (ascending) not above `value`; the first when none is."""
    return next((b for b in reversed(bounds) if value >= b), bounds[0])


def head_bucket(heads: int) -> str:
    """The report's label for a head count: '1', '2', '3', '5', ..., '50+'."""
    label = "1"
    for b in HEAD_BUCKETS:
        if heads >= b:
            label = f"{b}+" if b == HEAD_BUCKETS[-1] else str(b)
    return label
