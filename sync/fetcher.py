"""The fetcher: gets the chunks of attached files from the connected peers, like a swarm
(docs/ARCHITECTURE.md "Attachments").

A fetch names a file by its list chunk's id and the size its message claims. The list chunk
comes first (it says which chunks the file has); then every chunk not yet in the chunk store is
spread over the connected peers that announced `files`, at most FETCH_WINDOW asked of each at a
time, in file order. What is stored is never asked again, so a fetch started after a restart,
or after the peers went away, resumes. A peer that lacks a chunk is not asked for it again in
this fetch; a session that ends gives its chunks back to the others. Chunks are written by a
thread (ChunkStore.put, atomic), at most MAX_STORING at a time, so the loop never waits on the
disk. A fetch fails with a one-line reason when every connected peer lacks a chunk, when no
peer with the capability is connected for FETCH_WAIT_S, or when the disk refuses a write; what
was stored stays.

Progress goes to `on_progress` (list, have, size, done, error; `have` and `size` in bytes of
the file) at most every PROGRESS_INTERVAL_S per file, and always at the start and the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from core.attachments import TAG_SIZE, AttachmentError, chunk_size, parse_list
from storage.chunks import BadChunk, ChunkStore

from ._files import FETCH_WINDOW, ChunkArrived, ChunksLacking
from .connection import Connection

log = logging.getLogger(__name__)

FETCH_WAIT_S = 10.0  # how long a fetch waits for a peer that can be asked before it fails
PROGRESS_INTERVAL_S = 0.25
MAX_STORING = 32  # chunks received and not yet written (8 MiB of 256 KiB chunks)
STORE_THREADS = 2  # creating and writing a file is the kernel's work, without the GIL: two overlap


class FetchFailed(Exception):
    """A fetch could not finish; the message says why, in one line."""


@dataclass
class _Fetch:
    list_id: bytes
    size: int
    future: asyncio.Future
    index: dict[bytes, int] | None = None  # chunk id -> its index, once the list is held
    todo: OrderedDict[bytes, None] = field(default_factory=OrderedDict)  # not asked yet
    asked: dict[bytes, int] = field(default_factory=dict)  # chunk -> id(connection) asked
    storing: set[bytes] = field(default_factory=set)
    lacking: dict[bytes, set[bytes]] = field(default_factory=dict)  # chunk -> peers lacking
    have: int = 0  # bytes of the file held
    reported: float = 0.0
    waiting: asyncio.TimerHandle | None = None

    @property
    def busy(self) -> bool:
        return bool(self.asked or self.storing) or self.index is None and not self.todo

    def plain(self, cid: bytes) -> int:
        if self.index is None or cid not in self.index:
            return 0
        return chunk_size(self.index[cid], self.size) - TAG_SIZE


class Fetcher:
    def __init__(self, chunks: ChunkStore, connections: Callable[[], Iterable[Connection]],
                 on_progress: Callable[[dict], None]):
        self.chunks = chunks
        self._connections = connections
        self._on_progress = on_progress
        self._fetches: dict[bytes, _Fetch] = {}  # by list id, oldest first
        self._wanted: dict[bytes, _Fetch] = {}  # chunk id -> the fetch it belongs to
        self._storing = 0
        self._executor = ThreadPoolExecutor(STORE_THREADS, thread_name_prefix="hearth-chunks")
        self._closed = False

    # Asking for files ------------------------------------------------------------------------

    def fetch(self, list_id: bytes, size: int) -> asyncio.Future:
        """Get every chunk of a file into the chunk store; the future is done when they are
        all there, or fails with FetchFailed. The same file asked twice shares one fetch."""
        current = self._fetches.get(list_id)
        if current is not None:
            return current.future
        loop = asyncio.get_running_loop()
        fetch = _Fetch(list_id, size, loop.create_future())
        if self._closed:
            fetch.future.set_exception(FetchFailed("the node is stopping"))
            return fetch.future
        self._fetches[list_id] = fetch
        fetch.future.add_done_callback(lambda f: f.cancelled() or f.exception())  # no warning
        data = self.chunks.read(list_id)
        if data is None:
            fetch.todo[list_id] = None
            self._wanted[list_id] = fetch
            self.pump()
        else:
            self._spawn(self._listed(fetch, data))
        return fetch.future

    @property
    def active(self) -> list[bytes]:
        """The list ids of the files being fetched."""
        return list(self._fetches)

    async def _listed(self, fetch: _Fetch, data: bytes) -> None:
        """The list chunk is held: what is still missing is asked for."""
        try:
            ids = parse_list(data, fetch.size)
        except AttachmentError as exc:
            self._fail(fetch, f"the file's chunk list is not what its message says ({exc})")
            return
        loop = asyncio.get_running_loop()
        missing = await loop.run_in_executor(self._executor, self.chunks.missing, ids)
        if fetch.future.done():
            return
        fetch.index = {cid: i for i, cid in enumerate(ids)}
        fetch.todo = OrderedDict.fromkeys(missing)
        fetch.have = fetch.size - sum(fetch.plain(cid) for cid in missing)
        for cid in missing:
            self._wanted[cid] = fetch
        self._report(fetch, force=True)
        self._check(fetch)
        self.pump()

    # Spreading the asks ----------------------------------------------------------------------

    def pump(self) -> None:
        """Ask every ready peer for chunks until its window is full."""
        if self._closed or not self._fetches:
            return
        now = time.monotonic()
        ready = [c for c in self._connections() if c.session.files_ready]
        for connection in ready:
            session = connection.session
            room = FETCH_WINDOW - session.in_flight
            if room <= 0 or self._storing >= MAX_STORING:
                continue
            key = session.peer_key
            picked: list[bytes] = []
            for fetch in self._fetches.values():
                for cid in fetch.todo:
                    if len(picked) >= room:
                        break
                    if key not in fetch.lacking.get(cid, ()):
                        picked.append(cid)
                for cid in picked:
                    if cid in fetch.todo:
                        del fetch.todo[cid]
                        fetch.asked[cid] = id(connection)
                if len(picked) >= room:
                    break
            if picked:
                session.request_chunks(picked, now)
                connection.wake()
        for fetch in list(self._fetches.values()):
            self._check_stalled(fetch, ready)

    def _check_stalled(self, fetch: _Fetch, ready: list[Connection]) -> None:
        """A fetch with nothing asked and nothing being written: fail it when every ready peer
        lacks what it needs; wait a while for a peer when none is connected."""
        if fetch.future.done() or fetch.busy or not fetch.todo:
            self._stop_waiting(fetch)
            return
        keys = {c.session.peer_key for c in ready}
        if ready and all(keys <= fetch.lacking.get(cid, set()) for cid in fetch.todo):
            self._fail(fetch, "no connected peer has all of this file")
        elif not ready and fetch.waiting is None:
            loop = asyncio.get_running_loop()
            fetch.waiting = loop.call_later(FETCH_WAIT_S, self._gave_up, fetch)
        elif ready:
            self._stop_waiting(fetch)

    def _gave_up(self, fetch: _Fetch) -> None:
        fetch.waiting = None
        if not fetch.future.done() and not fetch.busy:
            self._fail(fetch, "no peer that has it is connected")

    def _stop_waiting(self, fetch: _Fetch) -> None:
        if fetch.waiting is not None:
            fetch.waiting.cancel()
            fetch.waiting = None

    # What sessions say -------------------------------------------------------------------------

    def peer_ready(self, connection: Connection) -> None:
        self.pump()

    def arrived(self, connection: Connection, event: ChunkArrived) -> None:
        fetch = self._wanted.get(event.id)
        if fetch is None or fetch.asked.pop(event.id, None) is None:
            self.pump()  # a fetch that ended meanwhile: nothing to keep
            return
        fetch.storing.add(event.id)
        self._storing += 1
        self._spawn(self._store(fetch, event.id, event.data))
        self.pump()

    async def _store(self, fetch: _Fetch, cid: bytes, data: bytes) -> None:
        loop = asyncio.get_running_loop()
        try:
            await loop.run_in_executor(self._executor, self._put_checked, cid, data)
        except BadChunk:  # the session checked it: only a bug gets here
            fetch.todo[cid] = None
            return
        except OSError as exc:
            self._fail(fetch, f"cannot store the file here: {exc.strerror or exc}")
            return
        finally:
            self._storing -= 1
            fetch.storing.discard(cid)
        if fetch.future.done():
            return
        self._wanted.pop(cid, None)
        if cid == fetch.list_id and fetch.index is None:
            await self._listed(fetch, data)
            return
        fetch.have += fetch.plain(cid)
        self._report(fetch)
        self._check(fetch)
        self.pump()

    def _put_checked(self, cid: bytes, data: bytes) -> bool:
        return self.chunks.put(cid, data, checked=True)  # ChunkArrived: the session hashed it

    def lacking(self, connection: Connection, event: ChunksLacking) -> None:
        key = connection.session.peer_key
        for cid in event.ids:
            fetch = self._wanted.get(cid)
            if fetch is None or fetch.asked.pop(cid, None) is None:
                continue
            fetch.lacking.setdefault(cid, set()).add(key)
            fetch.todo[cid] = None
            fetch.todo.move_to_end(cid, last=False)
        self.pump()

    def peer_gone(self, connection: Connection) -> None:
        """A session ended: what it was asked goes back to the others."""
        gone = id(connection)
        for fetch in self._fetches.values():
            back = [cid for cid, asked in fetch.asked.items() if asked == gone]
            for cid in reversed(back):
                del fetch.asked[cid]
                fetch.todo[cid] = None
                fetch.todo.move_to_end(cid, last=False)
        self.pump()

    # Ends ------------------------------------------------------------------------------------

    def _check(self, fetch: _Fetch) -> None:
        if fetch.index is not None and not fetch.todo and not fetch.busy:
            self._end(fetch)
            self._report(fetch, force=True)
            if not fetch.future.done():
                fetch.future.set_result(None)

    def _fail(self, fetch: _Fetch, reason: str) -> None:
        if fetch.future.done():
            return
        self._end(fetch)
        self._report(fetch, error=reason)
        fetch.future.set_exception(FetchFailed(reason))

    def _end(self, fetch: _Fetch) -> None:
        self._stop_waiting(fetch)
        self._fetches.pop(fetch.list_id, None)
        for cid in [*fetch.todo, *fetch.asked, fetch.list_id]:
            if self._wanted.get(cid) is fetch:
                del self._wanted[cid]

    def _report(self, fetch: _Fetch, *, force: bool = False, error: str | None = None) -> None:
        now = time.monotonic()
        if not force and error is None and now - fetch.reported < PROGRESS_INTERVAL_S:
            return
        fetch.reported = now
        done = error is None and fetch.index is not None and not fetch.todo and not fetch.busy
        self._on_progress({"list": fetch.list_id, "have": fetch.have, "size": fetch.size,
                           "done": done, "error": error})

    def _spawn(self, coro) -> None:
        task = asyncio.ensure_future(coro)
        task.add_done_callback(_log_failure)

    async def close(self) -> None:
        """Fail every fetch (the node is stopping) and wait for the writes under way."""
        self._closed = True
        for fetch in list(self._fetches.values()):
            self._fail(fetch, "the node is stopping")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            await loop.run_in_executor(None, self._executor.shutdown, True)


def _log_failure(task: asyncio.Task) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("a chunk fetch step failed", exc_info=task.exception())
