"""The Node: one workspace's replica and its sync, on its own thread with an asyncio loop.

The CLI's `serve`, and later the window, use it through a thread-safe facade: calls that write
run on the Node's thread (one writer), reads go straight to the replica, and subscribers get
NodeEvents on the Node's thread (the window's Qt bridge re-emits them as signals).
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import logging
import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from analytics.recorder import Recorder
from analytics.shipper import Shipper
from core.objects import Object
from storage import Message, NotFound, start_signature_helper
from sync.peers import PeerBook
from sync.service import SyncEvent, SyncService

from .activity import Activity
from .paths import Paths
from .workspace import Workspace, WorkspaceError, read_secret

log = logging.getLogger(__name__)

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0
CALL_TIMEOUT_S = 60.0
COLLECTOR_CHECK_S = 5.0  # how soon a collector URL set in the settings is used
T = TypeVar("T")


class NodeError(Exception):
    """The Node cannot start or do what was asked; the message is for a person."""


class NodeLocked(NodeError):
    """Another process runs a Node on this data folder."""


@dataclass(frozen=True)
class NodeEvent:
    """kind: objects (new objects stored: detail["ids"]), peers (detail["online"]),
    synced (a reconciliation round finished), delivered (my objects reached a peer:
    Node.pending() shrank)."""

    kind: str
    detail: dict


class DataLock:
    """An exclusive lock on a data folder (flock; released if the process dies)."""

    def __init__(self, path: Path):
        self.path = path
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "?"
            os.close(fd)
            raise NodeLocked(
                f"another Hearth (pid {holder}) is running on {self.path.parent}; "
                "commands like `hearth post` still work beside it") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
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
                 mdns: bool = True, peers: list[tuple[str, int]] = (),
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
        self.activity: Activity | None = None
        self._shipper: Shipper | None = None
        self._lock = DataLock(paths.data / "node.lock")
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._ready = threading.Event()
        self._stop: asyncio.Event | None = None
        self._start_error: BaseException | None = None
        self._subscribers: list[Callable[[NodeEvent], None]] = []
        self.workspace: Workspace | None = None
        self.service: SyncService | None = None
        self._pending: frozenset[bytes] = frozenset()
        self._stopped = False

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
        if self._loop is not None and self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
            if self._thread.is_alive():
                log.warning("the node thread did not stop within %.0f s", STOP_TIMEOUT_S)
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
            loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            self.workspace = Workspace.open(self.paths, clock=self._clock)
            secret = read_secret(self.paths)
            book = PeerBook(self.paths.workspace_dir / "peers.json")
            self.service = SyncService(
                self.workspace.replica, self.workspace.identity, secret,
                port=self._port, interfaces=self._interfaces, mdns=self._mdns, peers=book,
                on_event=self._on_sync_event, reconcile_interval=self._reconcile_interval)
            for host, port in self._initial_peers:
                self.service.add_peer(host, port)
            self._pending = frozenset(self.workspace.replica.outbox.undelivered(self.workspace.key))
            self.activity = Activity(self.recorder, self._types_and_times)
            self.workspace.on_created = self._created
            self.workspace.on_merged = self.activity.merged_document
            start_signature_helper()  # a catch-up's first large batch need not wait for it
            await self.service.async_start()
        except BaseException as exc:  # reported to start()'s caller
            self._start_error = exc
            await self._shutdown()
            self._ready.set()
            return
        self._ready.set()
        from .cli import app_version

        self.activity.started(app_version(), self._ui)
        shipping = asyncio.ensure_future(self._async_ship_loop())
        await self._stop.wait()
        shipping.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await shipping
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
            self._shipper = Shipper(url, self.recorder, spool_in_thread=True)
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
        if self.service is not None:
            await self.service.async_stop()
        if self.workspace is not None:
            self.workspace.close()
        self.recorder.close()

    # Facade ---------------------------------------------------------------------------------

    @property
    def port(self) -> int:
        assert self.service is not None
        return self.service.port

    @property
    def key(self) -> bytes:
        assert self.workspace is not None
        return self.workspace.key

    def call(self, fn: Callable[..., T], *args: Any, timeout: float = CALL_TIMEOUT_S) -> T:
        """Run fn(*args) on the Node's thread and wait for its result (thread-safe)."""
        return self.submit(fn, *args).result(timeout)

    def submit(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """Run fn(*args) on the Node's thread without waiting (the window never blocks)."""
        if self._loop is None or self._stopped:
            raise NodeError("the node is not running")
        future: Future[T] = Future()

        def run() -> None:
            try:
                future.set_result(fn(*args))
            except BaseException as exc:
                future.set_exception(exc)

        self._loop.call_soon_threadsafe(run)
        return future

    def post(self, channel: str, text: str) -> bytes:
        return self.call(lambda: self.workspace.post(channel, text).id)

    def read(self, channel: str, *, limit: int = 50, before: str | None = None) -> list[Message]:
        assert self.workspace is not None
        return self.workspace.read(channel, limit=limit, before=before)

    def add_peer(self, host: str, port: int) -> None:
        self.call(lambda: self.service.add_peer(host, port))

    def peers(self) -> list[dict]:
        return self.call(lambda: self.service.peers.as_records())

    def online(self) -> set[bytes]:
        return self.call(lambda: self.service.online())

    def pending(self) -> frozenset[bytes]:
        """Ids of my objects no peer has received yet (safe from any thread)."""
        return self._pending

    def _created(self, obj: Object) -> None:
        self._pending = self._pending | {obj.id}
        self.service.announce()
        self.activity.created(obj)

    def _types_and_times(self, ids: list[bytes]) -> list[tuple[str, int]]:
        out = []
        for object_id in ids:
            with contextlib.suppress(NotFound):
                obj = self.workspace.replica.object(object_id)
                out.append((obj.type, obj.ts))
        return out

    def subscribe(self, callback: Callable[[NodeEvent], None]) -> Callable[[], None]:
        """Call `callback` (on the Node's thread) with every NodeEvent; returns unsubscribe."""
        self._subscribers.append(callback)
        return lambda: self._subscribers.remove(callback)

    def _on_sync_event(self, event: SyncEvent) -> None:
        if event.kind == "delivered":
            self._pending = frozenset(self.workspace.replica.outbox.undelivered(self.workspace.key))
        elif event.kind == "session":
            self.activity.session(event.detail)
        elif event.kind == "rejected":
            self.activity.rejected(event.detail["reason"])
        node_event = NodeEvent(event.kind, event.detail)
        for callback in list(self._subscribers):
            try:
                callback(node_event)
            except Exception:
                log.exception("a node subscriber failed")
