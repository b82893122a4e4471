"""What the Node tells the analytics recorder: app activity turned into anonymized events.

Only counts, buckets, reason codes and keyed hashes leave here: never text, names or keys. The
conversation kinds become events too: a post/reply a thread_reply (length bucket, broadcast or
not), a post/edit a message_edited (the new text's length bucket), a post/react a reaction_added
(no emoji); each with its channel's daily stream hash, never the message they point at (see
`analytics.events` for why). A doc/comment (a comment, a reply or a resolve: its box is never
opened here, so the three are one) becomes a doc_comment with its branch's daily stream hash.
An invite/create becomes an invite_created with its uses and lifetime as buckets, and a
member/admit (my computer let someone in) a member_admitted saying only whether an invite or a
personal code did: never the invite's tag, the key admitted, nor the exact numbers.
Each file a post/file of mine holds becomes a file_attached (its size bucket,
its kind from its media type, how many files the message holds, the channel's daily stream
hash): never its name, media type, key or list id. A channel/private becomes a
private_channel_created saying only whether it is a direct message. What I write in a private
channel is sealed, so the Node never opens it: the library says which public kind a sealed post
of mine holds (`sealed`, from app.private_conversation), and a message, reply, edit or reaction
there is counted as its public kind is (no file_attached: a private message's files stay
uncounted), with the private channel's daily stream hash.
The Node says when this computer's kept set changes (`kept_changed`: a channels_kept with
whether all are kept and how many channels and documents, as buckets, never which) and when
fetching history from peers finishes (`history_fetched`: objects and seconds as buckets, and
whether all are kept).
A conflict is recorded by the node whose own post or commit merges the concurrent heads (it
links to all of them), so each conflict is counted once, with the time from the fork (the
oldest of the merged heads) to that merge.
"""

from __future__ import annotations

import logging
import platform
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from analytics.events import (
    expiry_bucket,
    file_kind,
    file_size_bucket,
    files_count,
    kept_bucket,
    length_bucket,
    objects_bucket,
    pow2,
    seconds_bucket,
    uses_bucket,
)
from analytics.recorder import Recorder
from core.errors import Reason
from core.objects import Object
from storage import Kept
from sync.events import SessionEnded

log = logging.getLogger(__name__)

REJECTION_REASONS = frozenset(r.value for r in Reason)
# Kinds in a channel's stream that link its heads: one that links several merges a fork.
CHAT_KINDS = frozenset({"post/text", "post/topic", "post/join", "post/leave", "post/delete",
                        "post/reply", "post/edit", "post/react", "post/file"})


def _platform() -> str:
    system = platform.system().lower()
    return system if system in ("linux", "darwin", "windows") else "other"


class Activity:
    """Feeds a Recorder from the Node's thread. `heads_of(ids)` gives (type, ts) of objects
    the replica holds, for telling merges apart."""

    def __init__(self, recorder: Recorder, heads_of: Callable[[list[bytes]], list[tuple[str, int]]]):
        self.recorder = recorder
        self._heads_of = heads_of

    def started(self, version: str, ui: str) -> None:
        self.recorder.record("app_started", version=version.split("+")[0] if version[0].isdigit()
                             else "0.0.0", platform=_platform(), ui=ui)

    def created(self, obj: Object) -> None:
        """One of my objects was stored."""
        if not self.recorder.enabled:
            return
        record, stream = self.recorder.record, self.recorder.hash_id(obj.stream)
        if obj.type in ("post/text", "post/file"):
            record("message_sent", length=length_bucket(len(obj.body["text"])))
            self._attached(obj.body.get("files") or (), stream)
        elif obj.type == "post/reply":
            record("thread_reply", length=length_bucket(len(obj.body["text"])),
                   broadcast=bool(obj.body["broadcast"]), stream=stream)
        elif obj.type == "post/edit":
            record("message_edited", length=length_bucket(len(obj.body["text"])), stream=stream)
        elif obj.type == "post/react":
            record("reaction_added", stream=stream)
        elif obj.type == "post/join":
            record("channel_joined", stream=stream)
        elif obj.type == "doc/commit":
            record("doc_commit", stream=stream, size=pow2(len(obj.raw)))
        elif obj.type == "doc/branch":
            record("doc_fork", stream=stream)
        elif obj.type == "doc/comment":
            record("doc_comment", stream=stream)
        elif obj.type == "invite/create":
            record("invite_created", uses=uses_bucket(obj.body["uses"]),
                   expires=expiry_bucket(obj.body["expires"], obj.ts))
        elif obj.type == "member/admit":
            record("member_admitted", how="personal" if obj.body["invite"] is None else "invite")
        elif obj.type == "channel/private":
            record("private_channel_created", dm=bool(obj.body["dm"]))
        # A doc/comment links the branch heads its author read, but merges nothing: no conflict.
        if len(obj.links) > 1 and (obj.type in CHAT_KINDS or obj.type == "doc/commit"):
            self._merged(obj, stream)

    def sealed(self, obj: Object, kind: str, body: dict) -> None:
        """A post/sealed of mine holding `kind`'s `body` was stored: the event its public kind
        makes (`created`), never the text or emoji it holds."""
        if not self.recorder.enabled:
            return
        record, stream = self.recorder.record, self.recorder.hash_id(obj.stream)
        if kind in ("post/text", "post/file"):
            record("message_sent", length=length_bucket(len(body["text"])))
        elif kind == "post/reply":
            record("thread_reply", length=length_bucket(len(body["text"])),
                   broadcast=bool(body["broadcast"]), stream=stream)
        elif kind == "post/edit":
            record("message_edited", length=length_bucket(len(body["text"])), stream=stream)
        elif kind == "post/react":
            record("reaction_added", stream=stream)

    def _attached(self, files: Sequence[dict], stream: str) -> None:
        """One file_attached per file (each keeps its own size and kind), each saying how many
        the message holds."""
        for descriptor in files:
            self.recorder.record("file_attached", size=file_size_bucket(descriptor["size"]),
                                 kind=file_kind(descriptor["type"]), files=files_count(len(files)),
                                 stream=stream)

    def _merged(self, obj: Object, stream: str) -> None:
        heads = self._heads_of(list(obj.links))
        if len(heads) < 2:  # links this replica cannot see: nothing to say about them
            return
        record = self.recorder.record
        if obj.type == "doc/commit":
            record("conflict", kind="concurrent_doc_edit", heads=len(heads), stream=stream)
        else:
            record("conflict", kind="concurrent_heads", heads=len(heads), stream=stream)
            topics = sum(1 for kind, _ in heads if kind == "post/topic")
            if topics > 1:
                record("conflict", kind="lww_overwrite", heads=topics, stream=stream)
        record("convergence", ms=max(0, obj.ts - min(ts for _, ts in heads)), stream=stream)

    def merged_document(self, root: bytes, conflicts: int) -> None:
        """I merged two branches of a document, resolving `conflicts`: a doc_merge, and one
        `conflict` each, two sides edited concurrently ("concurrent_doc_edit": a new kind would
        need a new schema version, see analytics.events). Counts only, never text."""
        if not self.recorder.enabled:  # hash_id makes the install secret: never while off
            return
        stream = self.recorder.hash_id(root)
        self.recorder.record("doc_merge", stream=stream)
        for _ in range(conflicts):
            self.recorder.record("conflict", kind="concurrent_doc_edit", heads=2, stream=stream)

    def session(self, ended: SessionEnded) -> None:
        self.recorder.record("sync_session", peers=max(1, ended.peers), rounds=ended.rounds,
                             bytes=pow2(ended.bytes), objects=ended.objects,
                             duration_ms=max(0, ended.duration_ms))

    def kept_changed(self, kept: Kept) -> None:
        """This computer's kept set changed to `kept` (call it once per change)."""
        # With `all` the lists are not what is kept: the event says all, and 0 and 0.
        channels, documents = (0, 0) if kept.all else (len(kept.channels), len(kept.documents))
        self.recorder.record("channels_kept", all=bool(kept.all), channels=kept_bucket(channels),
                             documents=kept_bucket(documents))

    def history_fetched(self, objects: int, seconds: float, kept_all: bool) -> None:
        """Fetching history from peers finished: `objects` arrived in `seconds`."""
        self.recorder.record("history_fetched", objects=objects_bucket(objects),
                             seconds=seconds_bucket(seconds), kept_all=bool(kept_all))

    def rejected(self, reason: str) -> None:
        if reason in REJECTION_REASONS:
            self.recorder.record("rejection", reason=reason)


def record_usage(data: Path, event: str, *, clock: Callable[[], float] = time.time,
                 **fields: object) -> None:
    """One event of a library call made outside a running Node's Activity (a command, the
    window's settings): spooled if analytics are on in the data folder `data`, else nothing."""
    Recorder(data, clock=clock).record(event, **fields)
