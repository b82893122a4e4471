"""The Node: one workspace's replica and its sync, on its own thread with an asyncio loop.

This module is the Node's lifecycle: the data-folder lock, the thread and its loop, the sync
service and the analytics shipper, and the events it emits. What others may ask of a running
Node is its facade (`Node.facade`, app/facade.py): named methods that run on the Node's thread
(one writer) and return concurrent.futures.Futures, which is all the window uses. Subscribers
get its events (app/events.py) on the Node's thread (the window's Qt bridge hands them on).

`run(fn)` runs any library call on the Node's thread: fn gets the Workspace, the caller a
Future (the facade's named methods are built on it; tests and scripts use it directly).

Attached files travel through the sync service's fetcher (sync.fetcher): `download` fetches one
on request, and files of at most the `auto_download_mb` preference in the person's channels are
fetched by themselves when objects arrive and when a peer connects (`_auto_fetch`). Another
process on the same data folder (`hearth download` beside a running Node) asks by leaving a
request file in `<workspace dir>/downloads/`; the Node answers in a status file beside it
(app/download_requests.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from concurrent.futures import Future
from pathlib import Path
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
    SessionEnded,
    SyncEvent,
)
from sync.peers import PeerBook
from sync.service import PRESENCE_TTL_S as PRESENCE_TTL_S  # for the window's cursors
from sync.service import TYPING_TTL_S as TYPING_TTL_S  # for the window's indicator
from sync.service import Admission, Interest, SyncService
from sync.session import PRESENCE_REFRESH_S as PRESENCE_REFRESH_S  # how often a window repeats

from . import keeping, preferences, sync_status
from .activity import Activity
from .arrivals import Arrivals
from .download_requests import DOWNLOADS, DownloadRequests
from .errors import NodeError as NodeError
from .errors import NodeLocked as NodeLocked
from .errors import NodeStopped as NodeStopped
from .events import FileProgressed, HistoryProgressed, KeptChanged, NodeEvent, Removed
from .facade import NodeFacade
from .membership import RemovalRecord, session_secrets
from .paths import Paths
from .records import FileProgress, HistoryProgress, Kept, NodeInfo
from .version import app_version
from .workspace import Workspace, WorkspaceError, genesis_name, read_secret

if TYPE_CHECKING:
    from sync.fetcher import Fetcher

    from .documents import Documents

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
MAX_TOLD_CACHED = 16  # removed members whose removal objects are kept at hand (_tell)
MEMBERSHIP_KINDS = frozenset({"member/admit", "member/remove", "member/kept", "workspace/key",
                              "invite/create", "invite/revoke"})
COLLECTOR_CHECK_S = 5.0  # how soon a collector URL set in the settings is used
AUTO_FETCH_DELAY_S = 0.5  # arrivals within this are looked at together for files to fetch
AUTO_RETRY_S = 60.0  # a file that could not be fetched by itself is tried again after this
T = TypeVar("T")




def _pass_failure(started: Future, result: Future) -> None:
    """A download that could not start (no such file, a stopped Node) fails with its reason."""
    error = started.exception()
    if error is not None and result.set_running_or_notify_cancel():
        result.set_exception(error)


class DataLock:
    """An exclusive lock on a data folder (flock; released if the process dies). The file
    says who holds it: the pid, and on a second line the workspace it is held for."""

    def __init__(self, path: Path, workspace: str = ""):
        self.path = path
        self.workspace = workspace
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lines = os.read(fd, 256).decode(errors="replace").splitlines()
            os.close(fd)
            pid = lines[0].strip() if lines and lines[0].strip() else "?"
            workspace = lines[1].strip() if len(lines) > 1 else ""
            raise NodeLocked(
                f"another Hearth (pid {pid}) is running on {self.path.parent}; "
                "commands like `hearth post` still work beside it",
                pid=pid, workspace=workspace) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{self.workspace}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


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
        self._membership_version: tuple[int, int] = (0, 0)
        self._rotating = False
        self._keys_epoch = 0  # the epoch whose document keys this Node saw to
        self._info: NodeInfo | None = None
        self._pending: frozenset[bytes] = frozenset()
        self._history: HistoryProgress | None = None
        self._history_began: tuple[float, int] | None = None  # monotonic, objects here then
        self._kept_seen: Kept | None = None  # the kept set last told to analytics
        self._stopped = False
        self._removal: RemovalRecord | None = None  # this computer's key was removed
        self._told: tuple[object, dict[bytes, list[bytes]]] | None = None  # see _tell
        self._running = False  # the facade takes work: started, and not stopping
        self._outstanding: set[Future] = set()  # facade futures not yet run
        self._outstanding_lock = threading.Lock()
        self._auto_pending = False
        self._auto_failed: dict[tuple[bytes, int], float] = {}  # (list, size) -> when to retry
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
                admission=Admission(ws.members.join_key_for, self._admit, self._allow, self._tell),
                chunks=ws.files.chunks, interest=Interest(keeping.streams(ws)))
            self._service.on_outside_write = self._kept_changed  # `hearth keep` meanwhile
            self._removal = ws.members.view().removed.get(ws.key)
            if self._removal is not None:  # removed while this computer was away
                self._service.retired = True
            self._kept_seen = ws.replica.kept.get()
            self._membership_version = ws.replica.membership.version()
            for host, port in self._initial_peers:
                self._service.add_peer(host, port)
            self._pending = frozenset(ws.replica.outbox.undelivered(ws.key))
            self._info = NodeInfo(ws.key, ws.id, self.paths.workspace,
                                  genesis_name(ws.replica) or self.paths.workspace,
                                  self.paths.data)
            self.activity = Activity(self.recorder, self._types_and_times)
            ws.on_created = self._created
            ws.on_merged = self.activity.merged_document
            self._arrivals = Arrivals(ws)
            start_signature_helper()  # a catch-up's first large batch need not wait for it
            await self._service.async_start()
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
            self._fetch_file, self._file_progress).async_run(self._stop))
        self._schedule_auto_fetch()
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
        if self._service is not None:
            await self._service.async_stop()
            sync_status.remove(self.paths.workspace_dir)
        if self._workspace is not None:
            self._workspace.close()
        self.recorder.close()

    def _allow(self, key: bytes, old_epoch: bool) -> str | None:
        """Whether a peer whose identity a session's hello proved may stay (on the Node's
        thread): the library's rule (app.membership.Membership.refusal)."""
        return self._workspace.members.refusal(key, old_epoch=old_epoch)

    def _tell(self, key: bytes) -> list[bytes]:
        """What a refused peer is handed first (on the Node's thread): for a removed member,
        the signed removal and its kept lists, so their computer learns it from the objects
        themselves (never from the close's words); nothing for anyone else."""
        view = self._workspace.members.view()
        removal = view.removed.get(key)
        if removal is None:
            return []
        if self._told is not None and self._told[0] is view and key in self._told[1]:
            return self._told[1][key]
        replica = self._workspace.replica
        kept = [obj.raw for obj in replica.membership.objects(frozenset({"member/kept"}))
                if obj.body["removal"] == removal.removal and obj.author == removal.by]
        raw = replica.get(removal.removal)
        told = ([raw] if raw is not None else []) + kept
        if self._told is None or self._told[0] is not view:
            self._told = (view, {})
        if len(self._told[1]) < MAX_TOLD_CACHED:
            self._told[1][key] = told
        return told

    def removal(self) -> RemovalRecord | None:
        """This computer's key was removed from the workspace (who, when, why), as its own
        replica's membership view says; None while it is a member."""
        return self._removal

    def _membership_changed(self) -> None:
        """Membership objects arrived or were made: a repair rotation (admins), the secrets
        sessions use, and the end of the sessions of anyone removed."""
        ws, service = self._workspace, self._service
        version = ws.replica.membership.version()
        if (service is None or version == self._membership_version or self._rotating
                or ws.members.busy):
            return
        self._membership_version = version
        self._rotating = True
        try:
            if ws.members.rotate_if_stale():
                log.info("started a new epoch: the last one reached someone removed since")
        finally:
            self._rotating = False
        view = ws.members.view()
        removal = view.removed.get(ws.key)
        if removal is not None and self._removal is None:
            self._removed(removal)
            return
        service.set_secrets(*session_secrets(ws.members))
        # Sessions of keys that are no longer let in end: the removed (handed their removal),
        # and admissions that stopped counting (an invite used at two computers at once).
        for key in service.online():
            reason = self._allow(key, False)
            if reason is not None:
                service.end_sessions({key}, reason)
        if ws.private.after_removal():
            log.info("new keys for private channels someone left")
        epoch = ws.members.view().epoch
        # Documents I edit get keys the removed never had, published under the new secret
        # (so not before mine has arrived: a rotation's seals may come in one by one).
        if epoch > self._keys_epoch and epoch in ws.members.secrets():
            self._keys_epoch = epoch
            made = self.documents().refresh_for_epoch()
            if made:
                log.info("new keys for %d document branches after a removal", made)

    def _removed(self, removal: RemovalRecord) -> None:
        """My own replica says my key was removed: stop dialing, end every session, and tell
        the window and `hearth serve` (a "removed" event: `by`, `at_ms`, `reason`, `nick`:
        the remover's nickname, or None)."""
        self._removal = removal
        self._service.retire()
        nick = self._workspace.replica.nicknames().get(removal.by)
        log.info("this computer was removed from the workspace by %s", removal.by.hex()[:8])
        self._emit(Removed(removal.by, removal.at_ms, removal.reason, nick))

    def _admit(self, key: bytes, tag: bytes) -> str | None:
        """A newcomer proved an invite's code in a join session (on the Node's thread)."""
        reason = self._workspace.members.admit(key, tag)
        if reason is None:
            log.info("admitted %s with an invite", key.hex()[:8])
        return reason

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

    # Attached files ---------------------------------------------------------------------------

    def download(self, message_id: bytes, index: int) -> Future[None]:
        """Fetch file `index` of message `message_id` from the connected peers; the future is
        done when every chunk is here (ws.files.complete), or fails with a one-line
        reason: no such file, no connected peer has it, the disk refused it (what was stored
        stays). Progress comes as "files" events. From any thread, never waits."""
        result: Future[None] = Future()

        def start() -> None:
            ref = self._workspace.files.ref(message_id, index)
            self._fetch_file(ref.attachment.list, ref.attachment.size, result)

        started = self._submit(start)
        started.add_done_callback(lambda f: _pass_failure(f, result))
        return result

    def _fetch_file(self, list_id: bytes, size: int, result: Future[None] | None) -> None:
        """Start (or join) the fetch of a file (its list and the size its message says), on the
        Node's thread; whatever fails ends `result` with the reason."""
        try:
            if self._recorded(list_id, size):
                if result is not None and result.set_running_or_notify_cancel():
                    result.set_result(None)
                return
            fetching = self._fetcher.fetch(list_id, size)
        except Exception as exc:
            log.exception("a file fetch could not start")
            self._fetch_ended(list_id, size, exc, result)
            return
        fetching.add_done_callback(lambda task: self._fetched(list_id, size, task, result))

    @property
    def _fetcher(self) -> Fetcher:
        fetcher = self._service.fetcher
        assert fetcher is not None  # a Node's service has the workspace's chunk store
        return fetcher

    def _recorded(self, list_id: bytes, size: int) -> bool:
        """Whether the file is complete here (recorded); the eviction that may follow spares
        it and every file being fetched."""
        keep = [list_id, *(lst for lst, _ in self._fetcher.active)]
        return self._workspace.files.complete(list_id, size, keep=keep)

    def _fetched(self, list_id: bytes, size: int, task: asyncio.Future,
                 result: Future[None] | None) -> None:
        error = (NodeStopped("the node stopped") if task.cancelled()
                 else task.exception())
        if error is None:
            try:
                if not self._recorded(list_id, size):
                    error = NodeError("the file is still incomplete here")
            except Exception as exc:  # a full disk's sqlite error, say
                log.exception("a fetched file could not be recorded")
                error = exc
        self._fetch_ended(list_id, size, error, result)

    def _fetch_ended(self, list_id: bytes, size: int, error: BaseException | None,
                     result: Future[None] | None) -> None:
        if result is None:  # fetched by itself: a failure is tried again later
            if error is not None:
                self._auto_failed[(list_id, size)] = time.monotonic() + AUTO_RETRY_S
            return
        if not result.set_running_or_notify_cancel():
            return
        if error is None:
            result.set_result(None)
        else:
            result.set_exception(error if isinstance(error, NodeError) else NodeError(str(error)))

    def _file_progress(self, list_id: bytes, report: Callable[[int, int], None]
                       ) -> Callable[[], None]:
        """Call `report(have, size)` as the file `list_id` arrives; returns the unsubscribe."""
        def progress(event: NodeEvent) -> None:
            if isinstance(event, FileProgressed) and event.progress.list == list_id:
                report(event.progress.have, event.progress.size)

        return self.subscribe(progress)

    def _schedule_auto_fetch(self) -> None:
        if self._auto_pending or self._loop is None or self._service is None:
            return
        self._auto_pending = True
        self._loop.call_later(AUTO_FETCH_DELAY_S, self._auto_fetch)

    def _auto_fetch(self) -> None:
        """Fetch the files of my channels no larger than the auto_download_mb preference."""
        self._auto_pending = False
        if not self._running:
            return
        limit = preferences.load(self.paths.data).auto_download_mb << 20
        now, active = time.monotonic(), set(self._fetcher.active)
        for wanted in self._workspace.files.wanted(limit):
            key = (wanted.list, wanted.size)
            if key in active or self._auto_failed.get(key, 0.0) > now:
                continue
            self._fetch_file(wanted.list, wanted.size, None)

    # Peers (the facade's `peers`, `online`, `add_peer`; from any thread) -------------------

    def peers(self) -> Future[list[dict]]:
        """Known peers, each with `connected`, then those connected to us that we do not dial
        (source "incoming"); app/records.py says the fields."""
        return self._submit(lambda: self._sync().peer_records())

    def online(self) -> Future[set[bytes]]:
        """Keys of the peers with an open session."""
        return self._submit(lambda: set(self._sync().online()))

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
        self._membership_changed()

    def _sync(self) -> SyncService:
        assert self._service is not None  # set before the Node runs anything
        return self._service

    # The Node's own thread ------------------------------------------------------------------

    def _created(self, obj: Object) -> None:
        self._pending = self._pending | {obj.id}
        self._service.announce()
        self.activity.created(obj)
        if obj.type in MEMBERSHIP_KINDS:
            self._membership_changed()

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
            self._membership_changed()
            self._schedule_auto_fetch()
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
            self._emit(FileProgressed(self._file_fetched(event)))
            return
        if isinstance(event, PeerConnected):
            self._auto_failed.clear()  # a new peer may have what the others lacked
            self._schedule_auto_fetch()
        elif isinstance(event, Delivered):
            ws = self._workspace
            self._pending = frozenset(ws.replica.outbox.undelivered(ws.key))
        elif isinstance(event, SessionEnded):
            self.activity.session(event)
        elif isinstance(event, ObjectRejected):
            self.activity.rejected(event.reason)
        self._emit(event)

    def _file_fetched(self, fetch: FileFetch) -> FileProgress:
        done, error = fetch.done, fetch.error
        if done:  # recorded before anyone hears of it
            try:
                self._recorded(fetch.list, fetch.size)
            except Exception as exc:  # the fetch's future says so too (_fetched)
                log.exception("a fetched file could not be recorded")
                done, error = False, str(exc)
        return FileProgress(fetch.list, fetch.have, fetch.size, done, error)

    def _emit(self, node_event: NodeEvent) -> None:
        for callback in list(self._subscribers):
            try:
                callback(node_event)
            except Exception:
                log.exception("a node subscriber failed")
