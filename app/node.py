"""The Node: one workspace's replica and its sync, on its own thread with an asyncio loop.

This module is the Node's lifecycle: the data-folder lock (app/data_lock.py), the thread and
its loop, the sync service and the analytics shipper, and the events it emits (app/events.py,
to subscribers on the Node's thread; the window's Qt bridge hands them on). `run(fn)` runs any
library call on the Node's thread (one writer): fn gets the Workspace, the caller a Future.
The facade (`Node.facade`, app/facade.py) adds what needs thread work or events of its own.

Its parts: `node.files` (app/node_files.py) fetches attached files, on request and by
themselves; `node.members` (app/node_members.py) does what membership changes call for.
Another process on the same data folder (`hearth download` beside a running Node) asks for a
file by leaving a request in `<workspace dir>/downloads/` (app/download_requests.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar, cast

from analytics.recorder import Recorder
from analytics.shipper import Shipper, Spool
from core import kinds
from core.objects import Object
from storage import NotFound, start_signature_helper
from sync.events import (
    Delivered,
    FileFetch,
    HistoryFetch,
    ObjectRejected,
    ObjectsStored,
    PeerConnected,
    PeerPrivateTyping,
    SessionEnded,
    SyncEvent,
)
from sync.peers import PeerBook
from sync.service import PRESENCE_TTL_S as PRESENCE_TTL_S  # for the window's cursors
from sync.service import TYPING_TTL_S as TYPING_TTL_S  # for the window's indicator
from sync.service import Admission, Interest, SyncService
from sync.session import PRESENCE_REFRESH_S as PRESENCE_REFRESH_S  # how often a window repeats

from . import keeping, sync_status
from .activity import Activity
from .arrivals import Arrivals
from .data_lock import DataLock
from .download_requests import DOWNLOADS, DownloadRequests
from .errors import NodeError as NodeError
from .errors import NodeLocked as NodeLocked
from .errors import NodeStopped as NodeStopped
from .events import FileProgressed, HistoryProgressed, KeptChanged, NodeEvent
from .facade import NodeFacade
from .membership import RemovalRecord, session_secrets
from .node_files import NodeFiles
from .node_members import KINDS as member_kinds
from .node_members import NodeMembers
from .node_relays import NodeRelays, Reach
from .paths import Paths
from .records import HistoryProgress, Kept, NodeInfo
from .version import app_version
from .workspace import Workspace, WorkspaceError, genesis_name, read_secret

if TYPE_CHECKING:

    from .documents import Documents

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
COLLECTOR_CHECK_S = 5.0  # how soon a collector URL set in the settings is used
HELPER_START_S = 2.0  # after the start, the signature helpers start (storage._verify)
T = TypeVar("T")




class Node:
    def __init__(self, paths: Paths, *, port: int = 0, interfaces: list[str] | None = None,
                 mdns: bool = True, peers: Iterable[tuple[str, int]] = (),
                 reconcile_interval: float | None = 30.0,
                 clock: Callable[[], float] = time.time, ui: str = "serve"):
        self.paths = paths
        self._port = port
        self._interfaces = interfaces
        self._mdns = mdns
        self._initial_peers = list(peers)
        self._reconcile_interval = reconcile_interval
        self._clock = clock
        self._ui = ui
        self.recorder = Recorder(paths.data, clock=clock)
        # Made as the Node starts, on its thread, before any work of its runs (None until).
        self.activity: Activity = None  # type: ignore[assignment]
        self._shipper: Shipper | None = None
        self._helpers: asyncio.TimerHandle | None = None  # starts the signature helpers
        self._lock = DataLock(paths.data / "node.lock", paths.workspace)
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event = None  # type: ignore[assignment]  # as activity
        self._start_error: BaseException | None = None
        self._subscribers: list[Callable[[NodeEvent], None]] = []
        self._workspace: Workspace = None  # type: ignore[assignment]  # as activity
        self._service: SyncService = None  # type: ignore[assignment]  # as activity
        self._arrivals: Arrivals = None  # type: ignore[assignment]  # as activity
        self._info: NodeInfo | None = None
        self._pending: frozenset[bytes] = frozenset()
        self._history: HistoryProgress | None = None
        self._history_began: tuple[float, int] | None = None  # monotonic, objects here then
        self._kept_seen: Kept | None = None  # the kept set last told to analytics
        self._stopped = False
        self._running = False  # the facade takes work: started, and not stopping
        self._outstanding: set[Future] = set()  # facade futures not yet run
        self._outstanding_lock = threading.Lock()
        self.files = NodeFiles(self)
        self.members = NodeMembers(self)
        self.relays = NodeRelays(self)
        self.facade = NodeFacade(self)

    # Lifecycle ------------------------------------------------------------------------------

    def start(self) -> Node:
        self._lock.acquire()
        self._thread = threading.Thread(target=self._run, name="hearth-node", daemon=True)
        self._thread.start()
        if not self._ready.wait(START_TIMEOUT_S):
            self.stop()
            raise NodeError("the node did not start in time")
        if self._start_error is not None:
            error = self._start_error
            self.stop()
            if isinstance(error, WorkspaceError | NodeError):
                raise NodeError(str(error)) from None
            raise NodeError(f"cannot start: {error}") from error
        return self

    def stop(self) -> None:
        """Close connections, stop the loop and release the data folder (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._running = False
        if self._service is not None:
            self._service.stopping()  # the loop may be waiting for the writer: it stops waiting
        if self._loop is not None and self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
            if self._thread.is_alive():
                log.warning("the node thread did not stop within %.0f s", STOP_TIMEOUT_S)
        self.facade.close()
        self._lock.release()

    def __enter__(self) -> Node:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        self._loop = loop
        try:
            loop.run_until_complete(self._main())
        finally:
            self._running = False
            loop.close()
            with self._outstanding_lock:
                left, self._outstanding = self._outstanding, set()
            for future in left:  # asked for while the Node stopped: never left hanging
                if future.set_running_or_notify_cancel():
                    future.set_exception(NodeStopped("the node stopped"))

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            self._workspace = ws = Workspace.open(self.paths, clock=self._clock)
            read_secret(self.paths)  # refused here when missing or readable by others
            newest, older = session_secrets(ws.members)
            book = PeerBook(self.paths.workspace_dir / "peers.json")
            self._service = SyncService(
                ws.replica, ws.identity, newest, older_secrets=older,
                port=self._port, interfaces=self._interfaces, mdns=self._mdns, peers=book,
                on_event=self._on_sync_event, reconcile_interval=self._reconcile_interval,
                admission=Admission(ws.members.join_key_for, self.members.admit,
                                    self.members.allow, self.members.tell),
                chunks=ws.files.chunks, interest=Interest(keeping.streams(ws)))
            self._service.on_outside_write = self._kept_changed  # `hearth keep` meanwhile
            self.members.started()
            if self.members.removal is not None:  # removed while this computer was away
                self._service.retired = True
            self._kept_seen = ws.replica.kept.get()
            for host, port in self._initial_peers:
                self._service.add_peer(host, port)
            self._pending = frozenset(ws.replica.outbox.undelivered(ws.key))
            self._info = NodeInfo(ws.key, ws.id, self.paths.workspace,
                                  genesis_name(ws.replica) or self.paths.workspace,
                                  self.paths.data)
            self.activity = Activity(self.recorder, self._types_and_times)
            ws.on_created = self._created
            ws.on_merged = self.activity.merged_document
            ws.private.conversation.on_sealed = self.activity.sealed
            self._arrivals = Arrivals(ws)
            # Soon, not now: a catch-up's first large batch need not wait for the helpers, and
            # their start-up (two interpreters) does not compete with the window's first page.
            self._helpers = asyncio.get_running_loop().call_later(
                HELPER_START_S, start_signature_helper)
            await self._service.async_start()
            await self.relays.start()
        except BaseException as exc:  # reported to start()'s caller
            self._start_error = exc
            await self._shutdown()
            self._ready.set()
            return
        self._running = True
        self._ready.set()
        self.activity.started(app_version(), self._ui)
        shipping = asyncio.ensure_future(self._async_ship_loop())
        requests = asyncio.ensure_future(DownloadRequests(
            self.paths.workspace_dir / DOWNLOADS,
            lambda message_id, index: self._workspace.files.ref(message_id, index).attachment,
            self.files.fetch, self.files.progress).async_run(self._stop))
        self.files.schedule_auto()
        await self._stop.wait()
        for task in (shipping, requests):
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            except Exception:  # the shutdown still happens
                log.exception("a node task failed")
        await self._shutdown()

    async def _async_ship_loop(self) -> None:
        """Send spooled events (and deletion requests) to the collector the settings name; a
        collector that is down or slow only delays them."""
        while not self._stop.is_set():
            url = self.recorder.collector
            if url is None:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), COLLECTOR_CHECK_S)
                continue
            changed = asyncio.Event()
            # The recorder's batch ids are the tuples it handed out (Spool.ack takes them back).
            spool = cast(Spool, self.recorder)
            self._shipper = Shipper(url, spool, spool_in_thread=True)
            watch = asyncio.ensure_future(self._async_watch_collector(url, changed))
            try:
                await self._shipper.async_run(changed)
            finally:
                watch.cancel()
                await self._shipper.async_close()
                self._shipper = None

    async def _async_watch_collector(self, url: str, changed: asyncio.Event) -> None:
        while self.recorder.collector == url and not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), COLLECTOR_CHECK_S)
        changed.set()

    def flush_analytics(self) -> None:
        """Send what the spool holds now rather than at the next interval."""
        shipper = self._shipper
        if shipper is not None:
            shipper.wake()

    async def _shutdown(self) -> None:
        if self._helpers is not None:
            self._helpers.cancel()
        if self._service is not None:
            await self._service.async_stop()
            sync_status.remove(self.paths.workspace_dir)
        if self._workspace is not None:
            self._workspace.close()
        self.recorder.close()

    # Running work on the Node's thread ------------------------------------------------------

    def _submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run fn(*args) on the Node's thread; never waits, never raises. A Node that is not
        running answers with a future failed with NodeStopped. (The facade's one door.)"""
        future: Future[T] = Future()
        loop = self._loop
        if loop is None or not self._running:
            future.set_exception(NodeStopped("the node is not running"))
            return future

        def run() -> None:
            with self._outstanding_lock:
                self._outstanding.discard(future)
            if not future.set_running_or_notify_cancel():
                return
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)

        with self._outstanding_lock:
            self._outstanding.add(future)
        try:
            loop.call_soon_threadsafe(run)
        except RuntimeError:  # the loop has just closed
            with self._outstanding_lock:
                self._outstanding.discard(future)
            if future.set_running_or_notify_cancel():
                future.set_exception(NodeStopped("the node is not running"))
        return future

    def run(self, fn: Callable[[Workspace], T]) -> Future[T]:
        """Run fn(the Workspace) on the Node's thread, the replica's one writer: any library
        call, from any thread. Never waits, never raises: a Node that is not running answers
        with a future failed with NodeStopped."""
        return self._submit(lambda: fn(self.workspace))

    @property
    def workspace(self) -> Workspace:
        """The Workspace the Node runs: touch it only on the Node's thread (inside `run`)."""
        if self._workspace is None:
            raise NodeStopped("the node has not started")
        return self._workspace

    def documents(self) -> Documents:
        """The workspace's documents as this Node holds them open (on the Node's thread)."""
        return self.workspace.documents

    # Fixed once started ---------------------------------------------------------------------

    @property
    def info(self) -> NodeInfo:
        if self._info is None:
            raise NodeStopped("the node has not started")
        return self._info

    @property
    def port(self) -> int:
        assert self._service is not None
        return self._service.port

    @property
    def key(self) -> bytes:
        return self.info.key

    @property
    def workspace_id(self) -> bytes:
        return self.info.workspace_id

    def pending(self) -> frozenset[bytes]:
        """Ids of my objects no peer has received yet: a snapshot swapped whole, so any thread
        reads it without waiting."""
        return self._pending

    def history(self) -> HistoryProgress | None:
        """How fetching history from peers is going (None: nothing is being fetched), a
        snapshot swapped whole like `pending`."""
        return self._history

    def focus(self, channel: str | None) -> None:
        """The window shows `channel` (None: no channel): its history is fetched first."""
        loop, service = self._loop, self._service
        if loop is None or service is None or not self._running:
            return

        def run() -> None:
            service.focus(None if channel is None else self._channel_stream(channel))
        with contextlib.suppress(RuntimeError):  # the loop has just closed
            loop.call_soon_threadsafe(run)

    def _channel_stream(self, channel: str) -> bytes:
        return kinds.channel_stream(self._workspace.id, channel)

    def _kept_changed(self) -> None:
        """The channels and documents kept here changed (or what they stand for may have: a
        document's new branch, a new private channel): sync hears of it (on the Node's thread)."""
        interest = Interest(keeping.streams(self._workspace))
        if interest != self._service.interest:
            self._service.set_interest(interest)
        kept = self._workspace.replica.kept.get()
        if kept != self._kept_seen:
            self._kept_seen = kept
            self.activity.kept_changed(kept)
            self._emit(KeptChanged(kept))

    def _history_moved(self, fetch: HistoryFetch) -> HistoryProgress:
        names = {self._channel_stream(info.name): kinds.channel_key(info.name)
                 for info in self._workspace.channels()} if fetch.pending else {}
        progress = HistoryProgress(fetch.here, fetch.total, fetch.done, frozenset(
            names[s] for s in fetch.pending if s in names))
        self._history = None if progress.done else progress
        if not progress.done and self._history_began is None:
            self._history_began = (time.monotonic(), progress.here)
        elif progress.done and self._history_began is not None:
            began, here = self._history_began
            self._history_began = None
            self.activity.history_fetched(progress.here - here, time.monotonic() - began,
                                          self._workspace.replica.kept.get().all)
        try:
            if progress.done:
                sync_status.remove(self.paths.workspace_dir)
            else:
                sync_status.write(self.paths.workspace_dir, progress)
        except OSError:
            log.warning("could not write the sync status file")
        return progress

    def typing(self, channel: str) -> None:
        """Tell the connected peers this person is typing in `channel`; from any thread, never
        waits, never raises (a Node that is not running, or a name no channel could have,
        sends nothing). Rate-limited per peer and channel (sync.session)."""
        loop, service = self._loop, self._service
        if loop is None or service is None or not self._running:
            return
        with contextlib.suppress(RuntimeError):  # the loop has just closed
            loop.call_soon_threadsafe(service.typing, channel)

    def typing_private(self, channel: bytes) -> None:
        """Tell the connected peers that are current members of private channel `channel` (its
        id) that this person is typing there; from any thread, never waits, never raises (a
        channel not held here, or one I am not in, sends nothing). Never through a relay."""
        loop, service = self._loop, self._service
        if loop is None or service is None or not self._running:
            return
        with contextlib.suppress(RuntimeError):  # the loop has just closed
            loop.call_soon_threadsafe(lambda: service.typing_private(
                channel, self._workspace.private.others_in(channel)))

    def presence(self, doc: bytes, branch: str, heads: Iterable[str], anchor: int, at: int,
                 readers: Iterable[bytes] | None = None) -> None:
        """Tell the connected peers among `readers` (None: every member) that this person has
        document `doc` open on `branch`, the selection from `anchor` to `at` in codepoints of
        the text at the commits `heads` (hex ids). From any thread, never waits, never raises:
        a Node that is not running, or ids that are not hex, send nothing. Each peer gets the
        newest at most once per interval (sync.session)."""
        loop, service = self._loop, self._service
        if loop is None or service is None or not self._running:
            return
        try:
            ids = [bytes.fromhex(head) for head in heads]
        except (TypeError, ValueError):
            return
        keys = None if readers is None else frozenset(readers)
        with contextlib.suppress(RuntimeError):  # the loop has just closed
            loop.call_soon_threadsafe(service.presence, doc, branch, ids, anchor, at, keys)

    def presence_left(self, doc: bytes) -> None:
        """Tell the peers that have this person's presence in `doc` that they closed it; from
        any thread, never waits, never raises."""
        loop, service = self._loop, self._service
        if loop is None or service is None or not self._running:
            return
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(service.presence_left, doc)

    # Attached files (node.files: app/node_files.py) ---------------------------------------

    def download(self, message_id: bytes, index: int) -> Future[None]:
        """Fetch a message's file from the connected peers (NodeFiles.download)."""
        return self.files.download(message_id, index)

    # Membership (node.members: app/node_members.py) ------------------------------------------

    def removal(self) -> RemovalRecord | None:
        """This computer's key was removed from the workspace (who, when, why), as its own
        replica's membership view says; None while it is a member."""
        return self.members.removal

    # Peers (the facade's `peers`, `online`, `add_peer`; from any thread) -------------------

    def peers(self) -> Future[list[dict]]:
        """Known peers, each with `connected`, then those connected to us that we do not dial
        (source "incoming"); app/records.py says the fields."""
        return self._submit(lambda: self._sync().peer_records())

    def online(self) -> Future[set[bytes]]:
        """Keys of the members connected now (on the LAN or through a relay)."""
        return self._submit(lambda: set(self._sync().online()))

    def reach(self) -> Future[Reach]:
        return self._submit(lambda: (self._sync(), self.relays.reach())[1])

    def add_peer(self, host: str, port: int) -> Future[None]:
        """Dial HOST:PORT from now on and remember it (where discovery is blocked)."""
        def dial() -> None:
            self._sync().add_peer(host, port)
        return self._submit(dial)

    @property
    def mdns(self) -> bool:
        """Whether this Node advertises and browses on the network (`--no-mdns`: not)."""
        return self._mdns

    def kept_changed(self) -> None:
        """On the Node's thread: what this computer keeps was changed (`app.keeping`)."""
        self._kept_changed()

    def membership_changed(self) -> None:
        """On the Node's thread: a membership change of mine is complete (a removal)."""
        if self._service is not None:
            self.members.changed()

    def _sync(self) -> SyncService:
        assert self._service is not None  # set before the Node runs anything
        return self._service

    @property
    def service(self) -> SyncService:
        """The sync service (on the Node's thread; the Node's parts use it)."""
        return self._sync()

    @property
    def loop(self) -> asyncio.AbstractEventLoop | None:
        return self._loop

    @property
    def running(self) -> bool:
        """Started, and not stopping: the Node takes work."""
        return self._running

    def emit(self, node_event: NodeEvent) -> None:
        """Hand an event to every subscriber (on the Node's thread)."""
        self._emit(node_event)

    # The Node's own thread ------------------------------------------------------------------

    def _created(self, obj: Object) -> None:
        self._pending = self._pending | {obj.id}
        self._service.announce()
        self.activity.created(obj)
        if obj.type in member_kinds:
            self.members.changed()

    def _types_and_times(self, ids: list[bytes]) -> list[tuple[str, int]]:
        out = []
        for object_id in ids:
            with contextlib.suppress(NotFound):
                obj = self._workspace.replica.object(object_id)
                out.append((obj.type, obj.ts))
        return out

    def subscribe(self, callback: Callable[[NodeEvent], None]) -> Callable[[], None]:
        """Call `callback` (on the Node's thread) with every NodeEvent; returns unsubscribe."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def _on_sync_event(self, event: SyncEvent) -> None:
        """Sync's events go on to the subscribers, with what changed after new objects, and the
        Node's own readings of files' and history's progress."""
        if isinstance(event, ObjectsStored):
            self.members.changed()
            self.files.schedule_auto()
            if not self._workspace.replica.kept.get().all:
                self._kept_changed()
            self._emit(event)
            for change in self._arrivals.changes(event.ids):
                self._emit(change)
            return
        if isinstance(event, HistoryFetch):
            self._emit(HistoryProgressed(self._history_moved(event)))
            return
        if isinstance(event, FileFetch):
            self._emit(FileProgressed(self.files.fetched(event)))
            return
        if isinstance(event, PeerConnected):
            self.files.peer_connected()
        elif isinstance(event, Delivered):
            ws = self._workspace
            self._pending = frozenset(ws.replica.outbox.undelivered(ws.key))
        elif isinstance(event, SessionEnded):
            self.activity.session(event)
        elif isinstance(event, ObjectRejected):
            self.activity.rejected(event.reason)
        elif isinstance(event, PeerPrivateTyping) \
                and event.key not in self._workspace.private.others_in(event.channel):
            return  # a non-member's, or a removed member's, or one for a channel I am not in
        self._emit(event)

    def _emit(self, node_event: NodeEvent) -> None:
        for callback in list(self._subscribers):
            try:
                callback(node_event)
            except Exception:
                log.exception("a node subscriber failed")
