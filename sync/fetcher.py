"""The fetcher: gets the chunks of attached files from the connected peers, like a swarm
(docs/ARCHITECTURE.md "Attachments").

A fetch names a file by its list chunk's id and the size its message claims; a message with a
wrong size for a list gets a fetch of its own, which fails. The list chunk comes first (it says
which chunks the file has); then every chunk not yet in the chunk store is spread over the
connected peers that announced `files`, at most FETCH_WINDOW asked of each at a time (asked
again once ASK_BATCH are free), in file order. What is stored is never asked again, so a fetch
started after a restart, or after the peers went away, resumes. A peer that lacks a chunk is
not asked for it again in this fetch; a session that ends gives its chunks back to the others.
Files whose lists share a chunk ask for it once, and what is said of it applies to every one.

Chunks are hashed and written by threads (ChunkStore.put, atomic), at most MAX_STORING at a
time, so the loop neither hashes nor waits on the disk: the sessions the fetcher asks leave the
hash to it (`check_chunks`), and a chunk that does not hash to its id is never stored and cuts
its peer off as a fault, as the session would have. A fetch fails with a one-line reason when
every connected peer lacks a chunk, when no peer with the capability is connected for
FETCH_WAIT_S, when a chunk's length is not the one its place in a file of that size has (the
list lies: it is not stored), or when the disk refuses a write; what was stored stays. Its
future is always done at the end, before the last progress is reported.

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
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from core.attachments import TAG_SIZE, AttachmentError, chunk_id, chunk_size, parse_list
from storage.chunks import BadChunk, ChunkStore

from ._files import BAD_CHUNK, FETCH_WINDOW, ChunkArrived, ChunksLacking
from .connection import Connection

log = logging.getLogger(__name__)

FETCH_WAIT_S = 10.0  # how long a fetch waits for a peer that can be asked before it fails
PROGRESS_INTERVAL_S = 0.25
MAX_STORING = 32  # chunks received and not yet written (8 MiB of 256 KiB chunks)
# Hashing and appending to a pack both run without the GIL: two threads overlap them.
STORE_THREADS = 2
# A peer is asked again once this many of its window are free, so a get carries several ids
# rather than one per chunk answered (each frame costs both sides a wake-up and a send).
ASK_BATCH = FETCH_WINDOW // 2


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

    @property
    def key(self) -> tuple[bytes, int]:
        return self.list_id, self.size

    def plain(self, cid: bytes) -> int:
        if self.index is None or cid not in self.index:
            return 0
        return chunk_size(self.index[cid], self.size) - TAG_SIZE

    def fits(self, cid: bytes, data: bytes | memoryview) -> bool:
        """Whether a chunk's length is the one its place in this file has."""
        if self.index is None or cid not in self.index:
            return True  # the list chunk: parse_list checks it against the size
        return len(data) == chunk_size(self.index[cid], self.size)


class Fetcher:
    def __init__(self, chunks: ChunkStore, connections: Callable[[], Iterable[Connection]],
                 on_progress: Callable[[dict], None]):
        self.chunks = chunks
        self._connections = connections
        self._on_progress = on_progress
        self._fetches: dict[tuple[bytes, int], _Fetch] = {}  # by (list id, size), oldest first
        self._wanted: dict[bytes, list[_Fetch]] = {}  # chunk id -> the fetches that want it
        self._storing = 0
        self._executor = ThreadPoolExecutor(STORE_THREADS, thread_name_prefix="hearth-chunks")
        self._closed = False

    # Asking for files ------------------------------------------------------------------------

    def fetch(self, list_id: bytes, size: int) -> asyncio.Future:
        """Get every chunk of a file into the chunk store; the future is done when they are
        all there, or fails with FetchFailed. The same file (list and size) asked twice shares
        one fetch."""
        current = self._fetches.get((list_id, size))
        if current is not None:
            return current.future
        loop = asyncio.get_running_loop()
        fetch = _Fetch(list_id, size, loop.create_future())
        if self._closed:
            fetch.future.set_exception(FetchFailed("the node is stopping"))
            return fetch.future
        self._fetches[fetch.key] = fetch
        fetch.future.add_done_callback(lambda f: f.cancelled() or f.exception())  # no warning
        try:
            data = self.chunks.read(list_id)
        except OSError as exc:
            self._fail(fetch, f"cannot read the file's chunks here: {exc.strerror or exc}")
            return fetch.future
        if data is None:
            self._want(fetch, [list_id])
            self.pump()
        else:
            self._spawn(self._listed(fetch, data), [fetch])
        return fetch.future

    @property
    def active(self) -> list[tuple[bytes, int]]:
        """The files being fetched: (list id, size)."""
        return list(self._fetches)

    def _want(self, fetch: _Fetch, ids: Iterable[bytes]) -> None:
        """Add chunks to a fetch's todo; one asked already for another fetch stays asked."""
        for cid in dict.fromkeys(ids):  # a list may name a chunk twice
            wanting = self._wanted.setdefault(cid, [])
            asked = next((f.asked[cid] for f in wanting if cid in f.asked), None)
            wanting.append(fetch)
            if asked is not None:
                fetch.asked[cid] = asked
            else:
                fetch.todo[cid] = None

    def _unwant(self, fetch: _Fetch, cid: bytes) -> None:
        wanting = self._wanted.get(cid)
        if wanting is not None and fetch in wanting:
            wanting.remove(fetch)
            if not wanting:
                del self._wanted[cid]

    async def _listed(self, fetch: _Fetch, data: bytes) -> None:
        """The list chunk is held: what is still missing is asked for."""
        try:
            ids = parse_list(data, fetch.size)
        except AttachmentError as exc:
            self._fail(fetch, f"the file's chunk list is not what its message says ({exc})")
            return
        loop = asyncio.get_running_loop()
        try:
            missing = await loop.run_in_executor(self._executor, self.chunks.missing, ids)
        except OSError as exc:
            self._fail(fetch, f"cannot read the file's chunks here: {exc.strerror or exc}")
            return
        if fetch.future.done():
            return
        fetch.index = {cid: i for i, cid in enumerate(ids)}
        self._want(fetch, missing)
        fetch.have = fetch.size - sum(fetch.plain(cid) for cid in set(missing))
        self._report(fetch, force=True)
        self._check(fetch)
        self.pump()

    # Spreading the asks ----------------------------------------------------------------------

    def pump(self) -> None:
        """Ask every ready peer for chunks until its window is full."""
        if self._closed or not self._fetches:
            return
        now = time.monotonic()
        ready = [c for c in self._connections() if c.session.files.ready]
        for connection in ready:
            session = connection.session
            room = FETCH_WINDOW - session.files.in_flight
            if room < ASK_BATCH and session.files.in_flight or self._storing >= MAX_STORING:
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
                    for wanting in self._wanted.get(cid, ()):
                        if cid in wanting.todo:
                            del wanting.todo[cid]
                            wanting.asked[cid] = id(connection)
                if len(picked) >= room:
                    break
            if picked:
                session.files.check_chunks = False  # _store hashes each in a thread
                session.files.request_chunks(picked, now)
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
        cid = event.id
        fetches = [f for f in self._wanted.get(cid, ()) if f.asked.pop(cid, None) is not None]
        unfit = [f for f in fetches if not f.fits(cid, event.data)]
        if unfit and not event.checked and chunk_id(event.data) != cid:
            self._bad_chunk(connection, fetches, cid)  # the peer lies, not the list
            return
        for fetch in unfit:
            fetches.remove(fetch)  # its author's list lies, not this peer
            self._fail(fetch, "the file's chunk list does not match its size")
        if not fetches:
            self.pump()  # a fetch that ended meanwhile, or a lying list: nothing to keep
            return
        if self._closed:  # the node is stopping: its fetches failed already
            return
        for fetch in fetches:
            fetch.storing.add(cid)
        self._storing += 1
        data, loop = event.data, asyncio.get_running_loop()
        # A store thread hashes (unless the session did) and writes; its end comes back to
        # the loop with one call, not a task and a wrapped future a chunk (the loop's thread
        # is the transfer's busiest).
        writing = self._executor.submit(self._put, cid, data, event.checked)
        writing.add_done_callback(lambda done: _call_soon(
            loop, self._stored, connection, fetches, cid, data, done))
        self.pump()

    def _stored(self, connection: Connection, fetches: list[_Fetch], cid: bytes,
                data: bytes | memoryview, done: Future[bool]) -> None:
        """A chunk's write ended (in the loop); a step that raises fails its fetches, with
        the reason."""
        self._storing -= 1
        for fetch in fetches:
            fetch.storing.discard(cid)
        try:
            self._after_store(connection, fetches, cid, data, done)
        except Exception as exc:  # noqa: BLE001 - as a failed step of _spawn's
            log.error("a chunk fetch step failed", exc_info=exc)
            for fetch in fetches:
                self._fail(fetch, f"the fetch failed here: {exc}")

    def _after_store(self, connection: Connection, fetches: list[_Fetch], cid: bytes,
                     data: bytes | memoryview, done: Future[bool]) -> None:
        exc = done.exception()
        if isinstance(exc, BadChunk):
            self._bad_chunk(connection, fetches, cid)
            return
        if isinstance(exc, OSError):
            for fetch in fetches:
                self._fail(fetch, f"cannot store the file here: {exc.strerror or exc}")
            return
        if exc is not None:
            raise exc
        for fetch in fetches:
            if fetch.future.done():
                continue
            self._unwant(fetch, cid)
            if cid == fetch.list_id and fetch.index is None:
                self._spawn(self._listed(fetch, bytes(data)), [fetch])
                continue
            fetch.have += fetch.plain(cid)
            self._report(fetch)
            self._check(fetch)
        self.pump()

    def _put(self, cid: bytes, data: bytes | memoryview, checked: bool) -> bool:
        return self.chunks.put(cid, data, checked=checked)

    def _bad_chunk(self, connection: Connection, fetches: list[_Fetch], cid: bytes) -> None:
        """A chunk that does not hash to its id: its peer is cut off (a fault, so the guard
        refuses it for a while) and the chunk is asked of the others."""
        connection.session.protocol_error(BAD_CHUNK)
        connection.wake()
        for fetch in fetches:
            if not fetch.future.done():
                fetch.todo[cid] = None
                fetch.todo.move_to_end(cid, last=False)
        self.pump()

    def lacking(self, connection: Connection, event: ChunksLacking) -> None:
        key = connection.session.peer_key
        assert key is not None  # chunks are asked of open sessions only
        for cid in event.ids:
            for fetch in self._wanted.get(cid, ()):
                if fetch.asked.pop(cid, None) is None:
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
            if fetch.future.done():
                return
            self._end(fetch)
            fetch.future.set_result(None)
            self._report(fetch, force=True)

    def _fail(self, fetch: _Fetch, reason: str) -> None:
        if fetch.future.done():
            return
        self._end(fetch)
        fetch.future.set_exception(FetchFailed(reason))
        self._report(fetch, error=reason)

    def _end(self, fetch: _Fetch) -> None:
        self._stop_waiting(fetch)
        if self._fetches.get(fetch.key) is fetch:
            del self._fetches[fetch.key]
        for cid in [*fetch.todo, *fetch.asked, fetch.list_id]:
            self._unwant(fetch, cid)

    def _report(self, fetch: _Fetch, *, force: bool = False, error: str | None = None) -> None:
        now = time.monotonic()
        if not force and error is None and now - fetch.reported < PROGRESS_INTERVAL_S:
            return
        fetch.reported = now
        done = error is None and fetch.index is not None and not fetch.todo and not fetch.busy
        try:
            self._on_progress({"list": fetch.list_id, "have": fetch.have, "size": fetch.size,
                               "done": done, "error": error})
        except Exception:  # the fetch goes on (or has ended): its future says how
            log.exception("reporting a fetch's progress failed")

    def _spawn(self, coro, fetches: list[_Fetch]) -> None:
        """Run a step of these fetches; one that raises fails them, with the reason."""
        task = asyncio.ensure_future(coro)
        task.add_done_callback(lambda t: self._step_done(t, fetches))

    def _step_done(self, task: asyncio.Task, fetches: list[_Fetch]) -> None:
        if task.cancelled() or task.exception() is None:
            return
        exc = task.exception()
        log.error("a chunk fetch step failed", exc_info=exc)
        for fetch in fetches:
            self._fail(fetch, f"the fetch failed here: {exc}")

    async def close(self) -> None:
        """Fail every fetch (the node is stopping) and wait for the writes under way."""
        self._closed = True
        for fetch in list(self._fetches.values()):
            self._fail(fetch, "the node is stopping")
        loop = asyncio.get_running_loop()
        with contextlib.suppress(Exception):
            await loop.run_in_executor(None, self._executor.shutdown, True)


def _call_soon(loop: asyncio.AbstractEventLoop, *call) -> None:
    """From a store thread: run `call` in the loop, unless the loop has closed (the Node
    stopped; its fetches failed already)."""
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(*call)
