"""A Node's attached files (`node.files`): fetching one on request (`download`), fetching by
themselves those of my channels no larger than the auto_download_mb preference when objects
arrive and when a peer connects, and recording a fetched file as complete, all through the
sync service's fetcher (sync.fetcher) on the Node's thread."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from sync.events import FileFetch

from . import preferences
from .errors import NodeError, NodeStopped
from .events import FileProgressed, NodeEvent
from .records import FileProgress

if TYPE_CHECKING:
    from sync.fetcher import Fetcher

    from .node import Node

log = logging.getLogger(__name__)

AUTO_FETCH_DELAY_S = 0.5  # arrivals within this are looked at together for files to fetch
AUTO_RETRY_S = 60.0  # a file that could not be fetched by itself is tried again after this


def _pass_failure(started: Future, result: Future) -> None:
    """A download that could not start (no such file, a stopped Node) fails with its reason."""
    error = started.exception()
    if error is not None and result.set_running_or_notify_cancel():
        result.set_exception(error)


class NodeFiles:
    def __init__(self, node: Node):
        self.node = node
        self._auto_pending = False
        self._auto_failed: dict[tuple[bytes, int], float] = {}  # (list, size) -> when to retry

    def download(self, message_id: bytes, index: int) -> Future[None]:
        """Fetch file `index` of message `message_id` from the connected peers; the future is
        done when every chunk is here (ws.files.complete), or fails with a one-line
        reason: no such file, no connected peer has it, the disk refused it (what was stored
        stays). Progress comes as FileProgressed events. From any thread, never waits."""
        result: Future[None] = Future()

        def start() -> None:
            ref = self.node.workspace.files.ref(message_id, index)
            self.fetch(ref.attachment.list, ref.attachment.size, result)

        started = self.node.run(lambda ws: start())
        started.add_done_callback(lambda f: _pass_failure(f, result))
        return result

    def fetch(self, list_id: bytes, size: int, result: Future[None] | None) -> None:
        """Start (or join) the fetch of a file (its list and the size its message says), on the
        Node's thread; whatever fails ends `result` with the reason."""
        try:
            if self._recorded(list_id, size):
                if result is not None and result.set_running_or_notify_cancel():
                    result.set_result(None)
                return
            node = self.node
            if node.relays.connected and not node.service.lan_online():
                node.relays.fetch(list_id, size,
                                  lambda error: self._ended(list_id, size, error, result))
                return
            fetching = self._fetcher.fetch(list_id, size)
        except Exception as exc:
            log.exception("a file fetch could not start")
            self._ended(list_id, size, exc, result)
            return
        fetching.add_done_callback(lambda task: self._fetched(list_id, size, task, result))

    @property
    def _fetcher(self) -> Fetcher:
        fetcher = self.node.service.fetcher
        assert fetcher is not None  # a Node's service has the workspace's chunk store
        return fetcher

    def _recorded(self, list_id: bytes, size: int) -> bool:
        """Whether the file is complete here (recorded); the eviction that may follow spares
        it and every file being fetched."""
        keep = [list_id, *(lst for lst, _ in self._fetcher.active)]
        return self.node.workspace.files.complete(list_id, size, keep=keep)

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
        self._ended(list_id, size, error, result)

    def _ended(self, list_id: bytes, size: int, error: BaseException | None,
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

    def progress(self, list_id: bytes, report: Callable[[int, int], None]
                 ) -> Callable[[], None]:
        """Call `report(have, size)` as the file `list_id` arrives; returns the unsubscribe."""
        def progressed(event: NodeEvent) -> None:
            if isinstance(event, FileProgressed) and event.progress.list == list_id:
                report(event.progress.have, event.progress.size)

        return self.node.subscribe(progressed)

    def fetched(self, fetch: FileFetch) -> FileProgress:
        """What sync's FileFetch says, once a done file is recorded here."""
        done, error = fetch.done, fetch.error
        if done:  # recorded before anyone hears of it
            try:
                self._recorded(fetch.list, fetch.size)
            except Exception as exc:  # the fetch's future says so too (_fetched)
                log.exception("a fetched file could not be recorded")
                done, error = False, str(exc)
        return FileProgress(fetch.list, fetch.have, fetch.size, done, error)

    def peer_connected(self) -> None:
        """A new peer may have what the others lacked."""
        self._auto_failed.clear()
        self.schedule_auto()

    def schedule_auto(self) -> None:
        loop = self.node.loop
        if self._auto_pending or loop is None:
            return
        self._auto_pending = True
        loop.call_later(AUTO_FETCH_DELAY_S, self._auto_fetch)

    def _auto_fetch(self) -> None:
        """Fetch the files of my channels no larger than the auto_download_mb preference."""
        self._auto_pending = False
        if not self.node.running:
            return
        limit = preferences.load(self.node.paths.data).auto_download_mb << 20
        now, active = time.monotonic(), set(self._fetcher.active)
        for wanted in self.node.workspace.files.wanted(limit):
            key = (wanted.list, wanted.size)
            if key in active or self._auto_failed.get(key, 0.0) > now:
                continue
            self.fetch(wanted.list, wanted.size, None)
