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
    kind: str  # edit | snapshot | merge, or "?" when this holder cannot read the branch
    merged: tuple[str, ...] = ()


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
