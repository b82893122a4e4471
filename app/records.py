"""The records the window shows, in one place: re-exported from the layers below and from the
features' record modules (app/*_records.py), and defined for the Node's facade (app/facade.py),
so ui/ imports app and nothing under it (docs/ARCHITECTURE.md "Layers", "Desktop application
and threading"). A leaf of app: it imports no feature module, only records.

All are frozen values: the facade builds them on the Node's thread and hands them to any
thread. Peer records are plain dicts (sync.service.SyncService.peer_records: sync.peers.Peer's
fields, `address` and `connected`; source "incoming" for a peer that dialled us and that we do
not dial).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from analytics.recorder import WHAT_IS_COLLECTED
from analytics.recorder import Status as AnalyticsStatus
from core.documents import BranchInfo, CommentInfo, CommentReply, CommitInfo
from core.membership import InviteRecord, MemberRecord, RemovalRecord
from storage import (
    Attachment,
    ChannelInfo,
    ChannelState,
    Kept,
    Member,
    Message,
    MessageVersion,
    Reaction,
    StateEvent,
)
from storage.records import BlockedKey, ModAction
from storage.replica import UNREAD_CAP
from sync.peers import AddressError, parse_address

from .doc_records import (
    ALREADY_MERGED,
    READ_ONLY,
    RESOLUTIONS,
    Conflict,
    DocDiff,
    DocumentSummary,
    Hunk,
    MergeConflicts,
    MergePreview,
    Segment,
)
from .file_records import FileRef, StorageUsage, Wanted
from .moderation_records import ModerationLog
from .names import ChannelName
from .private_records import PrivateChannel


@dataclass(frozen=True)
class NodeInfo:
    """Who and where a running Node is; fixed once it has started."""

    key: bytes  # my identity's public key
    workspace_id: bytes
    folder: str  # the workspace's folder in the data folder: what switching and leaving take
    name: str  # the workspace's name as its creator gave it (the folder's until it arrives)
    data: Path  # the data folder


@dataclass(frozen=True)
class ChannelList:
    """The channel list: channels, unread counts and how each name shows."""

    channels: list[ChannelInfo]
    # name -> (messages by others since my read mark, at most UNREAD_CAP; one mentions me)
    unread: dict[str, tuple[int, bool]]
    # name -> how it shows (a stream suffix and a warning when another name looks like it)
    names: dict[str, ChannelName]
    # private channel or direct messages' id -> (unread by others, at most UNREAD_CAP; one
    # mentions me): the same counts for the conversations the sidebar lists below
    private_unread: dict[bytes, tuple[int, bool]] = field(default_factory=dict)
    # the conversations muted here (a public channel's name, a private one's id): their counts
    # above are 0, their mention marks kept (app.notify_rules.badge)
    muted: frozenset[str | bytes] = frozenset()

    @property
    def total_unread(self) -> int:
        """What the window's title counts: every conversation's unread messages."""
        return (sum(count for count, _ in self.unread.values())
                + sum(count for count, _ in self.private_unread.values()))


@dataclass(frozen=True)
class FileProgress:
    """How a file's fetch is going (NodeEvent "files"): chunks' bytes here of `size`."""

    list: bytes  # the file's list chunk id (Attachment.list)
    have: int
    size: int
    done: bool = False  # complete here
    error: str | None = None  # why the fetch stopped (one line), when it did


@dataclass(frozen=True)
class HistoryProgress:
    """How fetching history from peers is going (NodeEvent "history"): `here` objects of the
    streams kept are held of `total` known to exist; `channels` (channel keys) are those whose
    history is still arriving; `done` once nothing is."""

    here: int
    total: int
    done: bool
    channels: frozenset[str] = frozenset()


@dataclass(frozen=True)
class WorkspaceEntry:
    """One workspace of the data folder, for the workspace list."""

    folder: str  # what switching and leaving take
    name: str | None  # its creator's name for it (None until its genesis arrives by sync)
    current: bool  # the running Node's
    label: str = ""  # how the list shows it: the name, with the folder when names clash

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", self.name or self.folder)


@dataclass(frozen=True)
class EditRequest:
    """A member's open request to edit a document, for its editors to accept."""

    id: str  # the doc/edit-request object's id (hex)
    key: bytes  # who asked
    nick: str | None  # their nickname here, None when they have none yet
    ts: int
    note: str = ""


@dataclass(frozen=True)
class DocumentView:
    """What the document pane shows of one branch: read in one go on the Node's thread."""

    id: str
    title: str
    branch: str
    branches: list[BranchInfo]
    heads: list[str]
    text: str
    history: list[CommitInfo]  # oldest first
    tags: dict[str, str]  # tag name -> commit id
    names: dict[bytes, str] = field(default_factory=dict)  # nicknames of the workspace
    # why this holder cannot read the branch (text is then ""), None when it can
    unreadable: str | None = None
    writable: bool = True  # whether this holder may commit to the branch (an editor who reads)
    # why it may not (a sentence for a person: a reader only, or why it cannot read), or None
    why_readonly: str | None = None
    # a merge commit's id -> the names of the branches it merged (CommitInfo.merged resolved)
    merged_from: dict[str, tuple[str, ...]] = field(default_factory=dict)
    visibility: str = "private"  # "workspace" (every member reads) or "private"
    editors: tuple[bytes, ...] = ()  # sorted
    creator: bytes = b""  # who alone changes editors, title and visibility
    # open requests to edit, oldest first: filled for editors (who act on them), else ()
    requests: tuple[EditRequest, ...] = ()
    asked: bool = False  # I have an open request to edit
    editing: str = "listed"  # "workspace" (every member edits) or "listed" (those added)


@dataclass(frozen=True)
class CommentsView:
    """A branch's comments as the editor's margin shows them, read in one go with the text
    they are anchored in: positions are codepoints of `text`, the branch at `heads`."""

    branch: str
    heads: list[str]
    text: str
    comments: list[CommentInfo]  # in the order of the text, detached ones last
    names: dict[bytes, str] = field(default_factory=dict)  # nicknames of the workspace
    editors: tuple[bytes, ...] = ()  # who may resolve any comment (authors resolve their own)
    # why this holder cannot read the branch, so cannot comment on it; None when it can
    unreadable: str | None = None


@dataclass(frozen=True)
class Committed:
    """What committing typed text left: my commit, the branch's heads, the text at them."""

    commit: str
    heads: list[str]
    text: str


__all__ = [
    "UNREAD_CAP", "WHAT_IS_COLLECTED", "AddressError", "AnalyticsStatus", "BranchInfo",
    "ChannelInfo", "ChannelList", "ChannelName", "ChannelState", "CommentInfo",
    "CommentReply", "CommentsView", "CommitInfo", "Committed",
    "DocumentSummary", "DocumentView", "EditRequest", "Member", "Message", "MessageVersion", "NodeInfo",
    "Reaction", "StateEvent",
    "WorkspaceEntry", "parse_address",
    # moderation (app/moderation_records.py): the log, and the keys blocked on this computer
    "BlockedKey", "ModAction", "ModerationLog",
    # members and invites (core/membership.py)
    "InviteRecord", "MemberRecord", "RemovalRecord",
    # private channels and direct messages (app/private_records.py)
    "PrivateChannel",
    # files and images (app/file_records.py; FileProgress comes with NodeEvent "files")
    "Attachment", "FileProgress", "FileRef", "StorageUsage", "Wanted",
    # what this computer keeps, and history still arriving (app/keeping.py; NodeEvent "history")
    "HistoryProgress", "Kept",
    # reviewing documents (app/doc_records.py): diffs and merges with their conflicts
    "ALREADY_MERGED", "RESOLUTIONS", "Conflict", "DocDiff", "Hunk", "MergeConflicts",
    "MergePreview", "Segment",
    # what the document pane says of a branch this holder reads and may not change
    "READ_ONLY",
]
