"""What the replica answers with: plain, immutable records."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    ADDED = "added"
    DUPLICATE = "duplicate"
    REJECTED = "rejected"  # invalid: a peer that sends it is at fault
    REFUSED = "refused"  # valid, but not stored by a choice of this computer's (a block)


@dataclass(frozen=True, slots=True)
class IngestResult:
    """The answer for one object of a batch. `id` is the hash of the bytes offered."""

    id: bytes
    status: Status
    reason: str | None = None
    message: str | None = None


@dataclass(frozen=True, slots=True)
class Reaction:
    """One emoji on a message: who reacted with it (keys, earliest first), and how many
    reacted with it before it was imported (Slack's count: storage/_origins.py)."""

    emoji: str
    by: tuple[bytes, ...]
    imported: int = 0

    @property
    def count(self) -> int:
        return len(self.by) + self.imported


@dataclass(frozen=True, slots=True)
class Attachment:
    """A file a message carries (its descriptor, core/kinds.py), and its state here."""

    name: str
    size: int
    media_type: str
    list: bytes  # the list chunk's id: names the file on the wire
    width: int = 0
    height: int = 0
    thumb: bytes = b""  # a small JPEG, for images
    complete: bool = False  # every chunk is here (the replica records it)
    mine: bool = False  # I attached it
    pinned: bool = False  # kept here whatever the storage quota (`hearth pin`)


@dataclass(frozen=True, slots=True)
class Message:
    id: bytes
    channel: str
    author: bytes
    nick: str | None
    ts: int
    text: str  # the latest edit's text (the post's own when never edited)
    edited: bool = False
    reply_to: bytes | None = None  # the thread's first message, for a reply
    replies: int = 0  # visible replies in this message's thread
    reactions: tuple[Reaction, ...] = ()  # by first reaction, earliest first
    in_channel: bool = True  # False for a reply shown only in its thread
    hidden: bool = False  # hidden by a moderator: only a moderator's read shows it, marked
    files: tuple[Attachment, ...] = ()  # attached files, in the message's order
    private: bytes | None = None  # the private channel's id, for a private channel's message
    origin: str | None = None  # an imported message's Slack user id (storage/_origins.py)
    # Whose avatar and colour an imported message shows: the member who claimed its Slack user,
    # else a key made from that user, so Slack's authors never all wear the importer's face.
    face: bytes | None = None

    @property
    def shown_author(self) -> bytes:
        return self.face if self.face is not None else self.author

    @property
    def cursor(self) -> str:
        """Opaque paging position; (ts, id) because timestamps can tie."""
        return f"{self.ts}-{self.id.hex()}"


@dataclass(frozen=True, slots=True)
class MessageVersion:
    """One text a message has had: its own, or an edit's."""

    ts: int
    text: str


@dataclass(frozen=True, slots=True)
class Member:
    key: bytes
    nick: str | None


@dataclass(frozen=True, slots=True)
class StateEvent:
    id: bytes
    kind: str  # topic | join | leave | nick
    author: bytes
    ts: int
    value: str | None


@dataclass(frozen=True, slots=True)
class ChannelState:
    channel: str
    topic: str | None
    members: tuple[Member, ...]
    history: tuple[StateEvent, ...]


@dataclass(frozen=True, slots=True)
class ChannelInfo:
    name: str
    topic: str | None
    members: int
    messages: int


@dataclass(frozen=True, slots=True)
class ModAction:
    """One entry of the moderation log: a role an admin gave, or a hide or unhide."""

    id: bytes
    channel: str
    action: str  # "moderator" or "none" (a role), "hide" or "unhide"
    author: bytes
    ts: int
    target: bytes  # the key a role is for; a hide's post id or member key
    reason: str
    counts: bool = True  # its author is an admin or a moderator of the channel now
    post: bool = False  # a hide's target is a post held (or deleted) here, not a member


@dataclass(frozen=True, slots=True)
class BlockedKey:
    """A key blocked on this computer, and since when (ms)."""

    key: bytes
    ts: int


@dataclass(frozen=True, slots=True)
class Kept:
    """Which channels and documents a computer keeps: all, or these (channel keys, document
    ids); workspace-level objects, private channels and direct messages always."""

    all: bool = True
    channels: tuple[str, ...] = ()
    documents: tuple[bytes, ...] = ()
