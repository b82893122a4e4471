"""The Node's facade: what the window (or any other thread) may ask of a running Node, by name
(docs/ARCHITECTURE.md "Desktop application and threading").

Every method returns a concurrent.futures.Future at once and does its work on the Node's
thread, the replica's one writer; nothing here blocks its caller, so the GUI thread may call
any of them. A Node that is not running answers with a future failed with NodeStopped. Names
are the library's (app.workspace.Workspace, app.documents.Documents) and the `hearth`
commands' (app/chat_commands.py, app/doc_commands.py, app/sync_commands.py,
app/analytics_commands.py), so the three read the same: `facade.topic(channel, text)` is
`Workspace.topic` is `hearth topic CHANNEL TEXT`; `facade.mod_hide` is `Workspace.mod_hide` is
`hearth mod hide` (app/moderation.py, app/moderation_commands.py).

A few things answer without a future, because they never wait: `info` (who and where, fixed
once the Node started), `key`, `pending()` and `history()` (snapshots swapped whole), and
`focus` (which channel the window shows, so its history comes first). Events come by
`subscribe` (app/events.py: one dataclass per kind, saying what changed), on the Node's
thread. `typing`, `presence` and `presence-left` send live signals and return
nothing: they never wait either.

The records handed back are frozen values from app/records.py. `run(fn)` runs any other library
call the same way (fn gets the Workspace, on the Node's thread: Node.run).

Attaching, saving and opening a file hash, encrypt or decrypt up to 4 GiB: that part runs in
the facade's own worker threads (FILE_WORKERS; the ChunkStore may be written from any thread),
between a first and a last step on the Node's thread (checking, then posting and recording),
so sync keeps serving meanwhile. Their futures mean what the others' do.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import keeping, preferences, slash
from .attachments import AttachTarget, SealedFiles
from .channel_list import channel_list
from .doc_facade import DocumentsFacade
from .errors import NodeStopped
from .membership import InviteRecord, MemberRecord, RemovalRecord
from .private import PrivateChannel
from .records import (
    AnalyticsStatus,
    BlockedKey,
    ChannelList,
    ChannelState,
    HistoryProgress,
    Kept,
    Member,
    Message,
    MessageVersion,
    ModerationLog,
    NodeInfo,
    StorageUsage,
    WorkspaceEntry,
)
from .search import SearchResults
from .workspace import Workspace, export_identity, import_identity
from .workspaces import workspace_entries

if TYPE_CHECKING:
    from .events import NodeEvent
    from .node import Node

T = TypeVar("T")
U = TypeVar("U")
V = TypeVar("V")
FILE_WORKERS = 2  # files hashed, encrypted or decrypted at once, off the Node's thread


@dataclass(frozen=True)
class Removal:
    """This computer's key was removed: by `by` (key; `nick` their nickname, or None), at
    `at_ms`, for `reason` (possibly empty)."""

    by: bytes
    nick: str | None
    at_ms: int
    reason: str


class NodeFacade:
    """The named operations of one running Node (`node.facade`)."""

    def __init__(self, node: Node):
        self._node = node
        self.documents = DocumentsFacade(node)
        self._files = ThreadPoolExecutor(FILE_WORKERS, thread_name_prefix="hearth-files")

    def run(self, fn: Callable[[Workspace], T]) -> Future[T]:
        """Run fn(the Workspace) on the Node's thread: any library call the named methods
        below do not make (Node.run)."""
        return self._node.run(fn)

    def _run(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self._node.run(lambda _: fn(*args))

    def close(self) -> None:
        """Let the file workers go (the Node stopped); what they were given still ends, and
        its last step then fails with NodeStopped. Idempotent."""
        self._files.shutdown(wait=False)

    def _ws(self) -> Workspace:  # on the Node's thread only
        return self._node.workspace

    def _off_loop(self, first: Callable[[], U], work: Callable[[U], V],
                  last: Callable[[V], T] | None = None,
                  undo: Callable[[V], None] | None = None) -> Future[T]:
        """first() on the Node's thread, work(its result) in a file worker, then last(that)
        on the Node's thread again (when given); `undo(work's result)` when the Node stopped
        before last could run."""
        result: Future[T] = Future()

        def fail(exc: BaseException) -> None:
            if result.set_running_or_notify_cancel():
                result.set_exception(exc)

        def worked(done: Future[V]) -> None:
            error = done.exception()
            if error is not None:
                fail(error)
                return
            value = done.result()
            if last is None:  # then T is V
                if result.set_running_or_notify_cancel():
                    result.set_result(cast(T, value))
                return

            def finished(end: Future[T]) -> None:
                exc = end.exception()
                if exc is None:
                    if result.set_running_or_notify_cancel():
                        result.set_result(end.result())
                    return
                if undo is not None and isinstance(exc, NodeStopped):
                    undo(value)
                fail(exc)
            self._run(last, value).add_done_callback(finished)

        def started(begun: Future[U]) -> None:
            error = begun.exception()
            if error is not None:
                fail(error)
                return
            try:
                self._files.submit(work, begun.result()).add_done_callback(worked)
            except RuntimeError as exc:  # the Node stopped (close), or the interpreter is ending
                fail(NodeStopped(str(exc)))
        self._run(first).add_done_callback(started)
        return result

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

    def read(self, channel: str, *, limit: int = 50, before: str | None = None,
             hidden: bool = False) -> Future[list[Message]]:
        """A page of `channel`, newest last: the newest `limit`, or those before the cursor
        `before` (Message.cursor of the oldest one shown). `hidden`: when I moderate the
        channel, the posts moderators hid are there too, marked Message.hidden."""
        return self._run(lambda: self._ws().read(channel, limit=limit, before=before,
                                                 hidden=hidden))

    def channels(self) -> Future[ChannelList]:
        """The channels, with my unread counts and mention marks (the private channels' and
        direct messages' too), and how each name shows."""
        return self.run(channel_list)

    # What this computer keeps (app.keeping; `hearth keep`) ------------------------------------

    def kept(self) -> Future[Kept]:
        return self._run(lambda: keeping.kept(self._ws()))

    def keep(self, channels: Iterable[str] = (), documents: Iterable[str] = (), *,
             drop: bool = False) -> Future[Kept]:
        """Keep these channels and documents on this computer (or, `drop`, stop): sync asks
        peers for what is kept and no more; a channel kept again fetches its history."""
        channels, documents = list(channels), list(documents)
        return self._kept(lambda ws: keeping.keep(ws, channels, documents, drop=drop))

    def keep_all(self) -> Future[Kept]:
        return self._kept(keeping.keep_all)

    def keep_only(self, channels: Iterable[str] = (), documents: Iterable[str] = ()
                  ) -> Future[Kept]:
        channels, documents = list(channels), list(documents)
        return self._kept(lambda ws: keeping.keep_only(ws, channels, documents))

    def _kept(self, change: Callable[[Workspace], Kept]) -> Future[Kept]:
        def run() -> Kept:
            kept = change(self._ws())
            self._node.kept_changed()
            return kept
        return self._run(run)

    def history(self) -> HistoryProgress | None:
        """How fetching history is going (None: nothing is arriving); never waits."""
        return self._node.history()

    def focus(self, channel: str | None) -> None:
        """The window shows `channel`: its history comes first; never waits."""
        self._node.focus(channel)

    def mark_read(self, channel: str) -> Future[None]:
        """Everything `channel` shows now counts as read (stored: it survives a restart)."""
        return self._run(lambda: self._ws().replica.mark_read(channel))

    def mark_private_read(self, channel: bytes) -> Future[None]:
        """Everything a private channel (or direct messages) holds now counts as read."""
        return self._run(lambda: self._ws().private.mark_read(channel))

    def create_channel(self, name: str, *, public: bool = False,
                       force: bool = False) -> Future[bytes]:
        """A new channel (Workspace.create_channel: refused for a private channel's name,
        asked again when it may be one or looks like another's); its id."""
        return self._run(lambda: self._ws().create_channel(name, public=public,
                                                           force=force).id)

    def members(self, channel: str) -> Future[list[Member]]:
        return self._run(lambda: self._ws().channel_members(channel))

    def state(self, channel: str) -> Future[ChannelState]:
        """Topic, members and history (fails with WorkspaceError for an unknown channel)."""
        return self._run(lambda: self._ws().state(channel))

    def may(self, channel: str, kind: str) -> Future[bool]:
        """Whether the channel's policies let me post objects of `kind` ("post/topic")."""
        return self._run(lambda: self._ws().may(channel, kind))

    def search(self, query: str, *, limit: int = 50) -> Future[SearchResults]:
        """Messages (grouped by channel), channels and documents that `query` matches, in
        app.search's syntax (words, "phrases", in:#channel from:nick before:/after:DATE);
        a bad filter fails the future with SearchError, one line for the person."""
        return self._run(lambda: self._ws().search(query, limit=limit))

    def topic(self, channel: str, topic: str) -> Future[bytes]:
        return self._run(lambda: self._ws().topic(channel, topic).id)

    def join(self, channel: str) -> Future[bytes]:
        return self._run(lambda: self._ws().join(channel).id)

    def leave(self, channel: str) -> Future[bytes]:
        return self._run(lambda: self._ws().leave(channel).id)

    def delete(self, object_id: bytes) -> Future[bytes]:
        """Delete one of my posts (an admin: anyone's); the future holds the delete's id."""
        return self._run(lambda: self._ws().conversation.delete(object_id).id)

    # Conversation (app/conversation.py; `hearth edit`, `reply`, `thread`, `react`, ...) ------

    def edit(self, message_id: bytes, text: str) -> Future[bytes]:
        """Replace the text of one of my messages; the future holds the edit's id."""
        return self._run(lambda: self._ws().conversation.edit(message_id, text).id)

    def reply(self, message_id: bytes, text: str, *, broadcast: bool = False) -> Future[bytes]:
        """Reply in the thread of `message_id`; `broadcast` shows it in the channel too."""
        return self._run(lambda: self._ws().conversation.reply(message_id, text, broadcast=broadcast).id)

    def thread(self, message_id: bytes) -> Future[list[Message]]:
        """A thread: its first message, then its replies, oldest first."""
        return self._run(lambda: self._ws().conversation.thread(message_id))

    def versions(self, message_id: bytes) -> Future[list[MessageVersion]]:
        """The texts a message has had, oldest first."""
        return self._run(lambda: self._ws().conversation.versions(message_id))

    def react(self, message_id: bytes, emoji: str) -> Future[bytes]:
        return self._run(lambda: self._ws().conversation.react(message_id, emoji).id)

    def unreact(self, message_id: bytes, emoji: str) -> Future[bytes]:
        """Take my reaction back; the future holds the delete's id."""
        return self._run(lambda: self._ws().conversation.unreact(message_id, emoji).id)

    def mentions(self, limit: int = 50) -> Future[list[Message]]:
        """Messages by others that mention my nickname, newest first."""
        return self._run(lambda: self._ws().conversation.mentions(limit=limit))

    # Moderation (app/moderation.py; `hearth mod role`, `mod hide`, `mod log`, `block`, ...) --

    def moderates(self, channel: str, key: bytes | None = None) -> Future[bool]:
        """Whether `key` (default: me) moderates `channel`: an admin, or named for it."""
        return self._run(lambda: self._ws().moderation.moderates(channel, key))

    def moderators(self, channel: str) -> Future[list[bytes]]:
        """The moderators admins named for `channel` (admins moderate every channel)."""
        return self._run(lambda: self._ws().moderation.moderators(channel))

    def mod_role(self, channel: str, key: bytes, role: str,
                 reason: str = "") -> Future[bytes]:
        """Make `key` a moderator of `channel` ("moderator") or not ("none"); admins only.
        The future holds the role's id."""
        return self._run(lambda: self._ws().moderation.set_role(channel, key, role, reason).id)

    def mod_hide(self, channel: str, target: bytes, reason: str) -> Future[bytes]:
        """Hide a post (by id) or a member (by key) in `channel` for all but its moderators;
        the future holds the hide's id, or fails with WorkspaceError saying why not."""
        return self._run(lambda: self._ws().moderation.hide(channel, target, reason).id)

    def mod_unhide(self, channel: str, target: bytes, reason: str) -> Future[bytes]:
        return self._run(lambda: self._ws().moderation.unhide(channel, target, reason).id)

    def mod_log(self, channel: str | None = None, *,
                limit: int = 100) -> Future[ModerationLog]:
        """The newest `limit` moderation actions (of `channel`, or all), oldest first."""
        return self._run(lambda: self._ws().moderation.log(channel, limit=limit))

    def block(self, key: bytes) -> Future[None]:
        """Never show `key`'s posts on this computer, and stop storing what they send. The
        views change without new objects: reload what shows them when the future is done."""
        return self._run(lambda: self._ws().moderation.block(key))

    def unblock(self, key: bytes) -> Future[None]:
        return self._run(lambda: self._ws().moderation.unblock(key))

    def blocked(self) -> Future[list[BlockedKey]]:
        """The keys blocked on this computer, oldest block first."""
        return self._run(lambda: self._ws().moderation.blocked())

    def is_admin(self, key: bytes | None = None) -> Future[bool]:
        """Whether `key` (default: mine) is an admin of the workspace."""
        return self._run(lambda: self._ws().replica.is_admin(key or self.key))

    def typing(self, channel: str) -> None:
        """Tell the peers online now that I am typing in `channel` (never stored; the Node
        rate-limits what it sends). Returns at once, from any thread."""
        self._node.typing(channel)

    def presence(self, doc: bytes, branch: str, heads: list[str], anchor: int, at: int, *,
                 readers: Iterable[bytes] | None = None) -> None:
        """Tell the peers online now that I have document `doc` open on `branch`, my selection
        from `anchor` to `at` in codepoints of the text at commits `heads` (hex), and only
        those among `readers` when given (a private document's editors). Never stored;
        the Node sends the newest at most every so often. Returns at once, from any thread."""
        self._node.presence(doc, branch, heads, anchor, at, readers)

    def presence_left(self, doc: bytes) -> None:
        """Tell the peers that have my presence in `doc` that I closed it. Returns at once."""
        self._node.presence_left(doc)

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
        return self._node.peers()

    def removal(self) -> Future[Removal | None]:
        """This computer's key was removed from the workspace (by whom, when, why), as its own
        replica's membership view says; None while it is a member."""
        def removal() -> Removal | None:
            record = self._node.removal()
            if record is None:
                return None
            nick = self._ws().replica.nicknames().get(record.by)
            return Removal(record.by, nick, record.at_ms, record.reason)
        return self._run(removal)

    def online(self) -> Future[set[bytes]]:
        """Keys of the peers with an open session."""
        return self._node.online()

    def add_peer(self, host: str, port: int) -> Future[None]:
        """Dial HOST:PORT from now on and remember it (where discovery is blocked)."""
        return self._node.add_peer(host, port)

    # Members and invites (app/membership.py) -----------------------------------------------

    def invite(self, uses: int = 0, expires_ms: int = 0) -> Future[str]:
        """A new invite's code (it holds no secret): `uses` admissions at most (0: any), none
        after `expires_ms` (0: never)."""
        return self._run(lambda: self._ws().members.invite(uses=uses, expires_ms=expires_ms)[0])

    def invite_for(self, key: bytes) -> Future[str]:
        """A personal code for the person whose identity key is `key`."""
        return self._run(lambda: self._ws().members.invite_for(key))

    def invites(self) -> Future[list[InviteRecord]]:
        """Every invite held, newest first, with what became of it."""
        return self._run(lambda: self._ws().members.invites())

    def revoke_invite(self, ref: str) -> Future[None]:
        """Revoke the invite a code or an id names."""
        return self._run(lambda: (self._ws().members.revoke_invite(ref), None)[1])

    def remove_member(self, key: bytes, reason: str = "") -> Future[None]:
        """Remove a member (admins): they are refused from now on, and a new epoch's secret
        goes to everyone who remains."""
        def remove() -> None:
            self._ws().members.remove(key, reason)
            self._node.membership_changed()  # seen whole, now that all of it is in
        return self._run(remove)

    def removed_members(self) -> Future[list[RemovalRecord]]:
        """Everyone removed (and not admitted again), newest removal first."""
        return self._run(lambda: self._ws().members.removed())

    # Private channels and direct messages (app/private.py) ----------------------------------

    def private_channels(self) -> Future[list[PrivateChannel]]:
        """The private channels and direct messages I am in, with their names opened."""
        return self._run(lambda: self._ws().private.channels())

    def create_private_channel(self, name: str, members: list[bytes],
                               dm: bool = False) -> Future[bytes]:
        """A private channel of mine with `members`; its id."""
        return self._run(lambda: self._ws().private.create(name, members, dm=dm))

    def read_private(self, channel: bytes, limit: int = 50) -> Future[list[Message]]:
        """The newest messages of a private channel I am in, opened, oldest first."""
        return self._run(lambda: self._ws().private.read(channel, limit=limit))

    def post_private(self, channel: bytes, text: str) -> Future[bytes]:
        """A message in a private channel, boxed under its newest key; its id."""
        return self._run(lambda: self._ws().private.post(channel, text).id)

    # Files and images (app/attachments.py; `hearth attach`, `download`, `storage`) ----------

    def attach(self, channel: str, paths: list[str | Path], text: str = "") -> Future[bytes]:
        """Post files (1 to 4) to a public channel, with `text`; the new message's id."""
        return self._attach(lambda ws: ws.files.target(channel, text), paths, text)

    def attach_private(self, channel: bytes, paths: list[str | Path],
                       text: str = "") -> Future[bytes]:
        """Post files to a private channel or direct message, described inside the box."""
        return self._attach(lambda ws: ws.files.private_target(channel, text), paths, text)

    def _attach(self, target: Callable[[Workspace], AttachTarget], paths: list[str | Path],
                text: str) -> Future[bytes]:
        files = [Path(p) for p in paths]

        def seal(got: tuple[Workspace, AttachTarget]) -> tuple[Workspace, AttachTarget,
                                                               SealedFiles]:
            ws, where = got
            return ws, where, ws.files.seal(files, where.scope)

        def publish(got: tuple[Workspace, AttachTarget, SealedFiles]) -> bytes:
            ws, where, sealed = got
            return ws.files.publish(where, sealed, text).id

        def undo(got: tuple[Workspace, AttachTarget, SealedFiles]) -> None:
            got[0].files.chunks.remove(got[2].new)  # the Node stopped: nothing fetches or names them

        return self._off_loop(lambda: (self._ws(), target(self._ws())), seal, publish, undo)

    def download(self, message_id: bytes, index: int) -> Future[None]:
        """Fetch file `index` of a message from peers; done when it is complete here (progress
        comes as NodeEvent "files" with FileProgress)."""
        return self._node.download(message_id, index)

    def save_attachment(self, message_id: bytes, index: int, out_dir: str | Path,
                        name: str | None = None) -> Future[Path]:
        """Write a complete file into `out_dir` under a safe name; the path written."""
        return self._off_loop(lambda: (self._ws(), self._ws().files.ready(message_id, index)),
                              lambda got: got[0].files.save_ready(got[1], Path(out_dir), name))

    def open_attachment(self, message_id: bytes, index: int) -> Future[Path]:
        """A complete file decrypted for opening (only ever on the person's request)."""
        def opened(got: tuple[Workspace, Path, bytes]) -> Path:
            ws, path, list_id = got
            ws.files.opened(list_id)
            return path
        return self._off_loop(lambda: (self._ws(), self._ws().files.ready(message_id, index)),
                              lambda got: (got[0], got[0].files.open_ready(got[1]), got[1].ref.list),
                              opened)

    def storage_usage(self) -> Future[StorageUsage]:
        return self._run(lambda: self._ws().files.usage())

    def pin(self, message_id: bytes, index: int, pinned: bool = True) -> Future[None]:
        """Keep a file here whatever the quota (or no longer)."""
        return self._run(lambda: self._ws().files.pin(message_id, index, pinned))

    def file_preferences(self) -> Future[tuple[int, int]]:
        """(auto_download_mb, storage_quota_mb) of this data folder."""
        def load() -> tuple[int, int]:
            prefs = preferences.load(self.info.data)
            return prefs.auto_download_mb, prefs.storage_quota_mb
        return self._run(load)

    def set_file_preferences(self, *, auto_download_mb: int | None = None,
                             storage_quota_mb: int | None = None) -> Future[int]:
        """Change the sizes; a smaller quota evicts others' files at once (the bytes freed)."""
        return self.run(lambda ws: ws.files.set_preferences(auto_download_mb=auto_download_mb,
                                                            storage_quota_mb=storage_quota_mb))

    def add_private_member(self, channel: bytes, key: bytes) -> Future[None]:
        return self._run(lambda: self._ws().private.add_member(channel, key))

    def remove_private_member(self, channel: bytes, key: bytes) -> Future[None]:
        return self._run(lambda: self._ws().private.remove_member(channel, key))

    def direct_message(self, key: bytes, text: str) -> Future[bytes]:
        """A direct message to `key` (in the channel of us two, made the first time); its id."""
        return self._run(lambda: self._ws().private.direct_message(key, text).id)

    def dm_channel(self, key: bytes) -> Future[bytes | None]:
        """The direct messages between me and `key`, if either of us started them."""
        return self._run(lambda: self._ws().private.dm_channel(key))

    def workspace_members(self) -> Future[list[MemberRecord]]:
        """Every member, oldest first: nickname, key, admin, who admitted them and when."""
        return self._run(lambda: self._ws().members.all())

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

    # The window's preferences (app.preferences) ----------------------------------------------

    def appearance(self) -> Future[str]:
        """The window's appearance: "system", "light" or "dark" (app.preferences)."""
        return self._run(lambda: preferences.load(self.info.data).appearance)

    def set_appearance(self, appearance: str) -> Future[str]:
        return self._run(lambda: preferences.save(self.info.data,
                                                  appearance=appearance).appearance)

    # Analytics (`hearth analytics status`, `enable`, `disable`) --------------------------------

    def analytics_status(self) -> Future[AnalyticsStatus]:
        return self._run(self._node.recorder.status)

    def analytics_enable(self, collector: str | None = None) -> Future[None]:
        return self._run(lambda: self._node.recorder.enable(collector))

    def analytics_disable(self) -> Future[None]:
        """Stop recording, delete the spool, and ask the collector to delete the rest."""
        return self._run(self._node.recorder.disable)
