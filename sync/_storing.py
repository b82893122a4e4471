"""What peers send, stored on a thread of its own while the loop goes on reading.

Objects received are checked from the moment they arrive (storage._verify.start: the
signature helpers work ahead), and stored in batches by one writer thread; the loop meanwhile
reads the next frames and asks for more, and sync reads through a connection of its own
(Replica._sync_read). Order is kept per connection: an event of a session that followed some of
its objects is handled once they are stored (it may say a round is over, or the session ended);
an event with none of its own objects before it is handled at once, whatever other peers sent
(a `Connected`, whose checks decide whether the peer is served at all, never waits). Memory is
bounded: the loop waits for the writer when MAX_QUEUED objects or MAX_QUEUED_BYTES are waiting.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from storage import IngestResult, Replica, _verify

log = logging.getLogger(__name__)

# Objects from peers stored in one transaction at most: a commit writes every page a batch
# touched, and the id index's pages are touched at random, so larger batches share them
# (bench/join.py, 1M posts: 62 s with 32,768 a batch, 70-72 s with 16,384; the joiner's peak
# RSS 262 MB, 234 MB). What waits to be stored is pushed to no peer it came from
# (SyncService._stored), whatever its session still remembers having received.
INGEST_BATCH = 32768
INGEST_BYTES = 64 << 20  # ... and at most this many bytes of objects
# A catch-up's first batches are smaller, so its newest objects (what the window shows first)
# are readable soon: each batch may hold twice the last, from FIRST_BATCH up to INGEST_BATCH,
# and they start small again once the writer has caught up.
FIRST_BATCH = 2048
INBOX_BULK = 256  # a batch of at least this many objects is a catch-up's: ...
INBOX_WAIT_S = 0.02  # ... and waits this long for the next frames, to be stored with them
MAX_QUEUED = INGEST_BATCH  # objects waiting to be stored (besides the batch being stored) ...
MAX_QUEUED_BYTES = INGEST_BYTES  # ... or bytes, before the loop waits for the writer


@dataclass
class _Batch:
    """Objects received, in order, as (connection, raws) per frame; checks begun so far."""

    cap: int = INGEST_BATCH  # objects it may hold
    frames: list[tuple[Any, list[bytes]]] = field(default_factory=list)
    count: int = 0
    size: int = 0  # bytes
    checking: list[_verify.Checking] = field(default_factory=list)
    unchecked: list[bytes] = field(default_factory=list)  # not yet sent to the helpers

    def add(self, connection: Any, raws: list[bytes], size: int) -> None:
        self.frames.append((connection, raws))
        self.count += len(raws)
        self.size += size
        self.unchecked.extend(raws)
        if len(self.unchecked) >= _verify.SUB_BATCH:
            self.start_checks()

    def start_checks(self, *, last: bool = False) -> None:
        """Send what is not yet checked to the helpers; the `last` few objects of a batch
        (a live message) are checked by the writer itself, sooner than a helper answers."""
        if self.unchecked:
            ahead = not last or len(self.unchecked) >= _verify.SUB_FIRST
            self.checking.append(_verify.start(self.unchecked, ahead=ahead))
            self.unchecked = []


@dataclass
class _Peer:
    """One connection's part: how many of its objects were queued and stored so far, its
    events waiting for the objects before them (with how many were queued then), and who
    waits for it to settle."""

    connection: Any
    queued: int = 0
    stored: int = 0
    waiting: deque[tuple[int, Any]] = field(default_factory=deque)
    settled: list[asyncio.Future] = field(default_factory=list)


Stored = Callable[[list[tuple[Any, list[bytes]]], list[IngestResult]], None]
Handle = Callable[[Any, Any], None]


class Storing:
    """Objects are stored by `replica.ingest_checked` on the writer thread, in the order they
    came; `stored(frames, results)` and `handle(connection, event)` are called on the loop."""

    def __init__(self, replica: Replica, stored: Stored, handle: Handle):
        self._replica = replica
        self._stored = stored
        self._handle = handle
        self._queue: deque[_Batch] = deque()
        self._queued = 0  # objects in the queue
        self._queued_bytes = 0
        self._cap = FIRST_BATCH  # objects the next batch may hold
        self._peers: dict[int, _Peer] = {}  # id(connection) -> its part, while it has one
        self._writing: tuple[Future, _Batch] | None = None
        self._due = False  # a pump is scheduled
        self._executor: ThreadPoolExecutor | None = None
        # Set from any thread when stopping is near: objects that arrive then are not queued
        # (nor waited for); peers send them again next time.
        self.closing = False

    @property
    def busy(self) -> bool:
        """A batch is being stored (the replica's main connection is the writer's)."""
        return self._writing is not None

    def objects(self, connection: Any, raws: list[bytes]) -> None:
        if self.closing:
            return
        size = sum(map(len, raws))
        peer = self._peers.get(id(connection))
        if peer is None:
            peer = self._peers[id(connection)] = _Peer(connection)
        peer.queued += len(raws)
        tail = self._queue[-1] if self._queue else None
        if tail is None or tail.count + len(raws) > tail.cap or tail.size + size > INGEST_BYTES:
            tail = _Batch(cap=self._cap)
            self._cap = min(2 * self._cap, INGEST_BATCH)
            self._queue.append(tail)
        tail.add(connection, raws, size)
        self._queued += len(raws)
        self._queued_bytes += size
        full = self._queued >= MAX_QUEUED or self._queued_bytes >= MAX_QUEUED_BYTES
        if full and self._writing is not None:
            self._wait_for_writer()  # the writer is behind: the loop waits for it
        if self._writing is None and (full or len(self._queue) > 1):
            self.pump()  # a full batch: no reason to wait
        elif self._writing is None and not self._due:
            # A few objects (live messages) are stored at once; a catch-up's frames wait a
            # moment for the next ones, to be stored together.
            self._due = True
            delay = INBOX_WAIT_S if tail.count >= INBOX_BULK else 0.0
            asyncio.get_running_loop().call_later(delay, self.pump)

    def event(self, connection: Any, event: Any, *, urgent: bool = True) -> None:
        """Handle `event` now, or once the objects its session sent before it are stored
        (`urgent`: those are stored now, rather than once their batch is due)."""
        peer = self._peers.get(id(connection))
        if peer is None or (peer.stored >= peer.queued and not peer.waiting):
            self._handle(connection, event)
            return
        peer.waiting.append((peer.queued, event))
        if urgent:
            self.pump()

    def pump(self) -> None:
        """Give the writer the next batch, unless it is busy (it pumps again when done)."""
        self._due = False
        if self._writing is None and self._queue:
            batch = self._queue.popleft()
            self._queued -= batch.count
            self._queued_bytes -= batch.size
            self._write(batch)
        elif self._writing is None:
            self._cap = FIRST_BATCH  # caught up: the next catch-up starts small again

    def _write(self, batch: _Batch) -> None:
        batch.start_checks(last=True)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(1, thread_name_prefix="hearth-store")
        loop = asyncio.get_running_loop()
        future = self._executor.submit(self._replica.ingest_checked, batch.checking)
        self._writing = (future, batch)
        future.add_done_callback(lambda done: loop.call_soon_threadsafe(self._written, done))

    def _written(self, future: Future) -> None:
        if self._writing is None or self._writing[0] is not future:
            return  # _wait_for_writer has taken care of it
        batch = self._writing[1]
        self._writing = None
        try:
            self._finish(future, batch)
        finally:
            # After a turn of the loop: what waited for the replica (a window's read, run on
            # the loop) goes before the writer takes it again.
            asyncio.get_running_loop().call_soon(self.pump)

    def _wait_for_writer(self) -> None:
        assert self._writing is not None
        future, batch = self._writing
        self._writing = None
        concurrent.futures.wait([future])
        self._finish(future, batch)

    def _finish(self, future: Future, batch: _Batch) -> None:
        """The batch's results reach the service, then the events that waited for it."""
        try:
            results = future.result()
        except Exception:
            # Not stored, or not wholly followed up: the sessions that sent it end, and their
            # peers send what is missing next time.
            log.exception("storing %d objects from peers failed", batch.count)
            for connection in {id(c): c for c, _ in batch.frames}.values():
                connection.session.close("could not store what was sent")
                connection.wake()
        else:
            try:
                self._stored(batch.frames, results)
            except Exception:
                log.exception("following up %d objects stored from peers failed", batch.count)
        touched: dict[int, _Peer] = {}
        for connection, raws in batch.frames:
            peer = self._peers[id(connection)]
            peer.stored += len(raws)
            connection.session.rounds.stored(len(raws))
            touched[id(connection)] = peer
        for peer in touched.values():
            self._release(peer)
            peer.connection.wake()  # its session may answer what waited for these

    def _release(self, peer: _Peer) -> None:
        """Handle the peer's events whose objects are all stored now, in order."""
        while peer.waiting and peer.waiting[0][0] <= peer.stored:
            _, event = peer.waiting.popleft()
            self._deferred(peer.connection, event)
        if peer.stored >= peer.queued and not peer.waiting:
            del self._peers[id(peer.connection)]
            for waiter in peer.settled:
                if not waiter.done():
                    waiter.set_result(None)

    def _deferred(self, connection: Any, event: Any) -> None:
        """Handle an event that waited (as Connection does when it hands one over: a bug in
        a handler must not leave the peer hanging, nor stop the queue)."""
        try:
            self._handle(connection, event)
        except Exception:
            log.exception("sync event handler failed on %s", type(event).__name__)
            connection.session.protocol_error("internal error")
            connection.wake()

    async def async_settled(self, connection: Any) -> None:
        """Wait until what `connection` sent is stored and its events are handled."""
        peer = self._peers.get(id(connection))
        if peer is None:
            return
        waiter = asyncio.get_running_loop().create_future()
        peer.settled.append(waiter)
        self.pump()
        await waiter

    async def async_drain(self) -> None:
        """Wait until everything queued now is stored and its events handled."""
        while self._writing is not None or self._queue:
            if self._writing is not None:
                await asyncio.wait([asyncio.wrap_future(self._writing[0])])
                await asyncio.sleep(0)  # _written runs
            else:
                self.pump()

    def close(self) -> None:
        """Stop the writer thread (after async_drain; idempotent)."""
        if self._executor is not None:
            self._executor.shutdown(wait=True)
            self._executor = None
