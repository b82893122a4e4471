"""The Node's facade: what the window (or any other thread) asks of a running Node
(docs/ARCHITECTURE.md "Desktop application and threading").

The library is the API: `facade.run(fn)` runs fn(the Workspace) on the Node's thread, the
replica's one writer, and returns a concurrent.futures.Future at once (Node.run), so the
window calls the code the `hearth` commands call: `facade.run(lambda ws:
ws.conversation.react(mid, emoji).id)` is `hearth react ID EMOJI`. A Node that is not running
answers with a future failed with NodeStopped.

What is named here does more than one library call: it tells the Node (keeping: sync asks for
what is kept anew; removing a member: the membership is seen whole), asks the Node's sessions
(peers, online, add_peer, download; live signals: `typing`, `typing_private`, `presence`,
`presence_left`, which return nothing), reads what is not the workspace's (the data folder's appearance, the
analytics recorder), or works in its own threads: attaching, saving and opening a file hash,
encrypt or decrypt up to 4 GiB in worker threads (FILE_WORKERS; the ChunkStore may be written
from any thread), between a first and a last step on the Node's thread (checking, then posting
and recording), so sync keeps serving meanwhile; a backup runs in one too (`off_loop`).

A few things answer without a future, because they never wait: `info` (who and where, fixed
once the Node started), `key`, `pending()` and `history()` (snapshots swapped whole), and
`focus` (which channel the window shows, so its history comes first). Events come by
`subscribe` (app/events.py: one dataclass per kind, saying what changed), on the Node's
thread. The records handed back are frozen values from app/records.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from . import keeping, preferences
from .attachments import AttachTarget, SealedFiles
from .errors import NodeStopped
from .paths import Paths
from .records import (
    AnalyticsStatus,
    HistoryProgress,
    Kept,
    NodeInfo,
)
from .workspace import Workspace

if TYPE_CHECKING:
    from .events import NodeEvent
    from .node import Node
    from .node_relays import Reach

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

    # Live signals, never stored (the Node rate-limits what it sends) --------------------------

    def typing(self, channel: str) -> None:
        """Tell the peers online now that I am typing in `channel` (never stored; the Node
        rate-limits what it sends). Returns at once, from any thread."""
        self._node.typing(channel)

    def typing_private(self, channel: bytes) -> None:
        """Tell the channel's other current members online now that I am typing in private
        channel `channel` (its id), if I am one; never through a relay. Returns at once."""
        self._node.typing_private(channel)

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

    # What this computer keeps (app.keeping; `hearth keep`): sync asks for it anew -------------

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
        def run(ws: Workspace) -> Kept:
            kept = change(ws)
            self._node.kept_changed()
            return kept
        return self.run(run)

    def history(self) -> HistoryProgress | None:
        """How fetching history is going (None: nothing is arriving); never waits."""
        return self._node.history()

    def focus(self, channel: str | None) -> None:
        """The window shows `channel`: its history comes first; never waits."""
        self._node.focus(channel)

    # Sync and membership (the Node's sessions and views) ----------------------------------

    def peers(self) -> Future[list[dict]]:
        """Known peers, each with `connected` (a session with it is open now), then the peers
        connected to us that we do not dial (source "incoming"); app/records.py says the
        fields."""
        return self._node.peers()

    def online(self) -> Future[set[bytes]]:
        """Keys of the members connected now (on the LAN or through a relay)."""
        return self._node.online()

    def reach(self) -> Future[Reach]:
        """Who is reached now: on the LAN, only through a relay, and the relays' states."""
        return self._node.reach()

    def add_peer(self, host: str, port: int) -> Future[None]:
        """Dial HOST:PORT from now on and remember it (where discovery is blocked)."""
        return self._node.add_peer(host, port)

    def removal(self) -> Future[Removal | None]:
        """This computer's key was removed from the workspace (by whom, when, why), as its own
        replica's membership view says; None while it is a member."""
        def removal(ws: Workspace) -> Removal | None:
            record = self._node.removal()
            if record is None:
                return None
            return Removal(record.by, ws.nicknames().get(record.by), record.at_ms, record.reason)
        return self.run(removal)

    def remove_member(self, key: bytes, reason: str = "") -> Future[None]:
        """Remove a member (admins): they are refused from now on, and a new epoch's secret
        goes to everyone who remains."""
        def remove(ws: Workspace) -> None:
            ws.members.remove(key, reason)
            self._node.membership_changed()  # seen whole, now that all of it is in
        return self.run(remove)

    # Files and images (app/attachments.py): hashed, encrypted, decrypted in the file workers --

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
            message = ws.files.publish(where, sealed, text).id
            self._node.relays.share_now()  # for members who are elsewhere
            return message

        def undo(got: tuple[Workspace, AttachTarget, SealedFiles]) -> None:
            got[0].files.chunks.remove(got[2].new)  # the Node stopped: nothing fetches or names them

        return self._off_loop(lambda: (self._ws(), target(self._ws())), seal, publish, undo)

    def download(self, message_id: bytes, index: int) -> Future[None]:
        """Fetch file `index` of a message from peers; done when it is complete here (progress
        comes as events with FileProgress)."""
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

    def off_loop(self, work: Callable[[Paths], T]) -> Future[T]:
        """work(the workspace's Paths) in a file worker, for a library call that reads the
        workspace's files through connections of its own, as a backup does (app/backup.py):
        sync keeps serving while it copies gigabytes of files."""
        return self._off_loop(lambda: self._ws().paths, work)

    # The data folder's preferences and analytics (not the workspace's) ----------------------

    def appearance(self) -> Future[str]:
        """The window's appearance: "system", "light" or "dark" (app.preferences)."""
        return self._run(lambda: preferences.load(self.info.data).appearance)

    def set_appearance(self, appearance: str) -> Future[str]:
        return self._run(lambda: preferences.save(self.info.data,
                                                  appearance=appearance).appearance)

    def analytics_status(self) -> Future[AnalyticsStatus]:
        return self._run(self._node.recorder.status)

    def analytics_enable(self, collector: str | None = None) -> Future[None]:
        return self._run(lambda: self._node.recorder.enable(collector))

    def analytics_disable(self) -> Future[None]:
        """Stop recording, delete the spool, and ask the collector to delete the rest."""
        return self._run(self._node.recorder.disable)
