"""What the document API hands out and takes: edits, commit and branch records, its error."""

from __future__ import annotations

from dataclasses import dataclass

Edit = tuple[int, int, str]  # (position, delete count, inserted text), in codepoints


class DocumentError(ValueError):
    """A document operation that cannot be done; the message is for a person."""


@dataclass(frozen=True)
class CommitInfo:
    id: str
    branch: str
    parents: tuple[str, ...]
    author: bytes
    ts: int
    kind: str  # edit | snapshot | merge | restore, or "?" when this holder cannot read it
    merged: tuple[str, ...] = ()
    restores: str | None = None  # a restore's commit: the version it made the branch read as


@dataclass(frozen=True)
class BranchInfo:
    id: str
    name: str
    source: str | None
    at: tuple[str, ...]
    heads: tuple[str, ...]
    main: bool
    readable: bool


@dataclass(frozen=True)
class RequestInfo:
    """An open request to edit: a member who may not edit asked the editors (`doc/edit-request`)."""

    id: str
    author: bytes
    ts: int
    note: str = ""


@dataclass(frozen=True)
class CommentReply:
    """A reply to a comment (`Comments.reply`)."""

    id: str
    author: bytes
    ts: int
    text: str


@dataclass(frozen=True)
class CommentInfo:
    """A comment on a range of a branch's text (`Comments.on`). `start` and `end` are
    where its words are in the text at the branch's heads (codepoints); both None when it is
    detached: every word it was on was deleted (or has not arrived here)."""

    id: str
    branch: str
    author: bytes
    ts: int
    text: str
    quote: str  # the words as they read when it was written (the first MAX_QUOTE of them)
    start: int | None
    end: int | None
    replies: tuple[CommentReply, ...] = ()
    resolved: bool = False
    resolved_by: bytes | None = None

    @property
    def detached(self) -> bool:
        return self.start is None
