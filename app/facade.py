"""The Node's facade: what the window (or any other thread) may ask of a running Node, by name
(docs/ARCHITECTURE.md "Desktop application and threading").

Every method returns a concurrent.futures.Future at once and does its work on the Node's
thread, the replica's one writer; nothing here blocks its caller, so the GUI thread may call
any of them. A Node that is not running answers with a future failed with NodeStopped. Names
are the library's (app.workspace.Workspace, app.documents.Documents) and the `hearth`
commands' (app/chat_commands.py, app/doc_commands.py, app/sync_commands.py,
app/analytics_commands.py), so the three read the same: `facade.topic(channel, text)` is
`Workspace.topic` is `hearth topic CHANNEL TEXT`.

Three things answer without a future, because they never wait: `info` (who and where, fixed
once the Node started), `key`, and `pending()` (a snapshot swapped whole). Events come by
`subscribe` (NodeEvent: objects, peers, synced, delivered), on the Node's thread.

The records handed back are frozen values from app/records.py.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import sharing, slash
from .documents import Documents
from .names import channel_names
from .records import (
    AnalyticsStatus,
    BranchInfo,
    ChannelList,
    ChannelState,
    CommitInfo,
    Committed,
    DocumentSummary,
    DocumentView,
    Member,
    Message,
    NodeInfo,
    WorkspaceEntry,
)
from .workspace import Workspace, export_identity, import_identity
from .workspaces import workspace_entries

if TYPE_CHECKING:
    from core.documents import Document

    from .node import Node, NodeEvent

T = TypeVar("T")
DocRef = bytes | str  # a document's id, or (as the CLI takes it) its hex id, a prefix or title


class NodeFacade:
    """The named operations of one running Node (`node.facade`)."""

    def __init__(self, node: Node):
        self._node = node
        self.documents = DocumentsFacade(node)

    def _run(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self._node._submit(fn, *args)

    def _ws(self) -> Workspace:  # on the Node's thread only
        return self._node._workspace

    # Who, where, and events ---------------------------------------------------------------------

    @property
    def info(self) -> NodeInfo:
        return self._node.info

    @property
    def key(self) -> bytes:
        return self._node.info.key

    def pending(self) -> frozenset[bytes]:
        """Ids of my objects no peer has received yet (a `delivered` event says it shrank)."""
        return self._node.pending()

    def subscribe(self, callback: Callable[[NodeEvent], None]) -> Callable[[], None]:
        """Call `callback` on the Node's thread with every NodeEvent; returns unsubscribe."""
        return self._node.subscribe(callback)

    # Chat (Workspace; `hearth post`, `read`, `channels`, ...) ----------------------------------

    def post(self, channel: str, text: str) -> Future[bytes]:
        """Post `text`; the future holds the new post's id."""
        return self._run(lambda: self._ws().post(channel, text).id)

    def slash(self, channel: str, text: str) -> Future[tuple[str, str | None]]:
        """What a composer sends: a post, or a /join /leave /topic /nick /me /delete command
        (app.slash.apply). The future holds (channel to show next, a note or None)."""
        return self._run(lambda: slash.apply(self._ws(), channel, text))

    def read(self, channel: str, *, limit: int = 50,
             before: str | None = None) -> Future[list[Message]]:
        """A page of `channel`, newest last: the newest `limit`, or those before the cursor
        `before` (Message.cursor of the oldest one shown)."""
        return self._run(lambda: self._ws().read(channel, limit=limit, before=before))

    def channels(self) -> Future[ChannelList]:
        """The channels, with my unread counts and mention marks, and how each name shows."""
        def load() -> ChannelList:
            ws = self._ws()
            channels = ws.channels()
            return ChannelList(channels, ws.replica.unread(ws.key, ws.nickname()),
                               channel_names(ws.id, [c.name for c in channels]))
        return self._run(load)

    def mark_read(self, channel: str) -> Future[None]:
        """Everything `channel` shows now counts as read (stored: it survives a restart)."""
        return self._run(lambda: self._ws().replica.mark_read(channel))

    def members(self, channel: str) -> Future[list[Member]]:
        return self._run(lambda: self._ws().members(channel))

    def state(self, channel: str) -> Future[ChannelState]:
        """Topic, members and history (fails with WorkspaceError for an unknown channel)."""
        return self._run(lambda: self._ws().state(channel))

    def search(self, query: str, *, limit: int = 50) -> Future[list[Message]]:
        return self._run(lambda: self._ws().search(query, limit=limit))

    def topic(self, channel: str, topic: str) -> Future[bytes]:
        return self._run(lambda: self._ws().topic(channel, topic).id)

    def join(self, channel: str) -> Future[bytes]:
        return self._run(lambda: self._ws().join(channel).id)

    def leave(self, channel: str) -> Future[bytes]:
        return self._run(lambda: self._ws().leave(channel).id)

    def delete(self, object_id: bytes) -> Future[bytes]:
        """Delete one of my posts (an admin: anyone's); the future holds the delete's id."""
        return self._run(lambda: self._ws().delete(object_id).id)

    def nick(self, name: str) -> Future[bytes]:
        return self._run(lambda: self._ws().nick(name).id)

    def nickname(self, key: bytes | None = None) -> Future[str | None]:
        """A key's nickname (default: mine), or None."""
        return self._run(lambda: self._ws().nickname(key))

    def nicknames(self) -> Future[dict[bytes, str]]:
        return self._run(lambda: self._ws().replica.nicknames())

    # Sync and sharing (`hearth peers`, `invite`, `serve --peer`) -------------------------------

    def peers(self) -> Future[list[dict]]:
        """Known peers, each with `connected` (a session with it is open now), then the peers
        connected to us that we do not dial (source "incoming"); app/records.py says the
        fields."""
        return self._run(lambda: self._node._service.peer_records())

    def online(self) -> Future[set[bytes]]:
        """Keys of the peers with an open session."""
        return self._run(lambda: set(self._node._service.online()))

    def add_peer(self, host: str, port: int) -> Future[None]:
        """Dial HOST:PORT from now on and remember it (where discovery is blocked)."""
        return self._run(lambda: (self._node._service.add_peer(host, port), None)[1])

    def invite(self) -> Future[str]:
        """An invite code for this workspace (it carries the secret)."""
        return self._run(lambda: sharing.invite(self._ws().paths).encode())

    # Workspaces of the data folder --------------------------------------------------------------

    def workspaces(self) -> Future[list[WorkspaceEntry]]:
        """The data folder's workspaces, named as their creators named them."""
        def load() -> list[WorkspaceEntry]:
            ws = self._ws()
            return workspace_entries(ws.paths.data, current=ws.paths.workspace,
                                     replica=ws.replica)
        return self._run(load)

    # Identity (`hearth identity export`, `identity import`) ------------------------------------

    def export_identity(self, path: str | Path, passphrase: str) -> Future[None]:
        return self._run(lambda: export_identity(self._ws().identity, Path(path), passphrase))

    def import_identity(self, path: str | Path, passphrase: str) -> Future[None]:
        """Use the identity exported to `path` from the next start on (the current one is kept
        aside, not lost); the window then restarts the Node."""
        return self._run(lambda: (import_identity(self._ws().paths, Path(path), passphrase,
                                                  replace=True), None)[1])

    # Analytics (`hearth analytics status`, `enable`, `disable`) --------------------------------

    def analytics_status(self) -> Future[AnalyticsStatus]:
        return self._run(self._node.recorder.status)

    def analytics_enable(self, collector: str | None = None) -> Future[None]:
        return self._run(lambda: self._node.recorder.enable(collector))

    def analytics_disable(self) -> Future[None]:
        """Stop recording, delete the spool, and ask the collector to delete the rest."""
        return self._run(self._node.recorder.disable)


class DocumentsFacade:
    """The documents of the Node's workspace (`node.facade.documents`): app.documents'
    Documents and the `hearth doc` commands, each returning a future. A document is named by
    its id (bytes), or as the CLI takes it (hex id, unique prefix or exact title)."""

    def __init__(self, node: Node):
        self._node = node
        self._docs: Documents | None = None  # made and used on the Node's thread

    def _run(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self._node._submit(fn, *args)

    def _library(self) -> Documents:
        if self._docs is None:
            self._docs = Documents(self._node._workspace)
        return self._docs

    def _open(self, doc: DocRef) -> tuple[Documents, Document]:
        """The document as opened before, with what arrived since (Documents.current)."""
        docs = self._library()
        doc_id = doc if isinstance(doc, bytes) else docs.resolve(doc)
        return docs, docs.current(doc_id)

    def _on(self, doc: DocRef, action: Callable[[Documents, Document], T]) -> Future[T]:
        return self._run(lambda: action(*self._open(doc)))

    # Reading -----------------------------------------------------------------------------------

    def list(self) -> Future[list[DocumentSummary]]:
        return self._run(lambda: self._library().list())

    def open(self, doc: DocRef, branch: str = "main") -> Future[DocumentView]:
        """What a branch shows: title, branches, heads, text, history and tags, read together
        (and the workspace's nicknames, to name the history's authors)."""
        def view(docs: Documents, document: Document) -> DocumentView:
            heads = document.heads(branch)
            why = docs.unreadable(document, branch)  # no key here: no text, and why
            return DocumentView(document.id, document.title, branch, document.branches(),
                                heads, "" if why else document.text(heads),
                                document.history(branch), document.tags(),
                                docs.ws.replica.nicknames(), why)
        return self._on(doc, view)

    def unreadable(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        """Why this computer cannot read the branch (it holds no key for it), None when it
        can (Documents.unreadable)."""
        return self._on(doc, lambda docs, document: docs.unreadable(document, branch))

    def show(self, doc: DocRef, branch: str = "main", at: str | None = None) -> Future[str]:
        """The text of a branch at its heads, or at commit `at`."""
        return self._on(doc, lambda _, document: document.text(
            [at] if at else document.heads(branch)))

    def history(self, doc: DocRef, branch: str = "main") -> Future[list[CommitInfo]]:
        return self._on(doc, lambda _, document: document.history(branch))

    def branches(self, doc: DocRef) -> Future[list[BranchInfo]]:
        return self._on(doc, lambda _, document: document.branches())

    def tags(self, doc: DocRef) -> Future[dict[str, str]]:
        return self._on(doc, lambda _, document: document.tags())

    def editors(self, doc: DocRef) -> Future[list[bytes]]:
        return self._on(doc, lambda _, document: sorted(document.editors()))

    # Writing -----------------------------------------------------------------------------------

    def new(self, title: str) -> Future[str]:
        """Create a document; the future holds its id (hex)."""
        return self._run(lambda: self._library().new(title).id)

    def edit(self, doc: DocRef, seen: list[str], base: str, text: str, *,
             branch: str = "main") -> Future[Committed]:
        """Commit what was typed: the edits from `base` (the text at commits `seen`) to `text`,
        merged with whatever else the branch took in meanwhile (Documents.edit_from)."""
        def work(docs: Documents, document: Document) -> Committed:
            mine = docs.edit_from(document, list(seen), base, text, branch=branch)
            heads = document.heads(branch)
            return Committed(mine, heads, document.text(heads))
        return self._on(doc, work)

    def write(self, doc: DocRef, text: str, *, branch: str = "main") -> Future[str | None]:
        """Make `branch` read `text` with the smallest edits (`hearth doc write`)."""
        return self._on(doc, lambda docs, document: docs.write(document, text, branch=branch))

    def undo(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        return self._on(doc, lambda docs, document: docs.undo(document, branch))

    def redo(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        return self._on(doc, lambda docs, document: docs.redo(document, branch))

    def fork(self, doc: DocRef, source: str, name: str,
             at: str | None = None) -> Future[str]:
        return self._on(doc, lambda docs, document: docs.fork(document, source, name, at))

    def merge(self, doc: DocRef, source: str, into: str) -> Future[str]:
        return self._on(doc, lambda docs, document: docs.merge(document, source, into))

    def set_main(self, doc: DocRef, branch: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.set_main(document, branch))

    def tag(self, doc: DocRef, name: str, at: str | None = None, *,
            branch: str = "main") -> Future[str]:
        """Name commit `at` (default: the branch's newest); the future holds the commit."""
        return self._on(doc, lambda docs, document: docs.tag(document, name, at, branch))

    def rename(self, doc: DocRef, title: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.rename(document, title))

    def add_editor(self, doc: DocRef, key: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.add_editor(document, key))

    def remove_editor(self, doc: DocRef, key: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.remove_editor(document, key))

    # Capabilities (`hearth doc share`, `doc open-cap`) -----------------------------------------

    def share(self, doc: DocRef, branch: str = "main") -> Future[str]:
        """A capability to read one branch (`hearthcap1-...`)."""
        return self._on(doc, lambda _, document: document.share(branch).encode())

    def open_cap(self, cap: str) -> Future[str]:
        """Keep a capability's keys; the future holds the document's id (hex)."""
        return self._run(lambda: self._library().open_capability(cap).id)
