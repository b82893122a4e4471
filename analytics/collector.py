"""The analytics collector: an aiohttp server that validates uploaded events and stores them.

`POST /v1/events` takes gzip-compressed JSON lines (or plain `application/x-ndjson`). A batch is
all or nothing: every line must follow the event schema, or the answer is 400 naming the first
bad line and nothing is written. Accepted events go to date-partitioned files (see
`_collector_store`). `POST /v1/delete` forgets every event of some pids, now and later.
Every read is bounded in size and time, and nothing about an event or a client's address is
logged.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import signal
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import hdrs, web

from ._collector_batch import BatchError, Inflater, Plain, parse_batch, parse_deletion
from ._collector_store import DeletionListFull, EventStore

log = logging.getLogger(__name__)

EVENTS_PATH = "/v1/events"
DELETE_PATH = "/v1/delete"
HEALTH_PATH = "/v1/health"
NDJSON = "application/x-ndjson"
DEFAULT_HOST = "127.0.0.1"

MAX_BODY_BYTES = 1024 * 1024  # as sent, compressed or not
MAX_INFLATED_BYTES = 4 * 1024 * 1024
MAX_LINES = 10_000
MAX_LINE_BYTES = 2048
MAX_DELETE_BODY_BYTES = 64 * 1024
MAX_DELETE_PIDS = 1000
MAX_DELETED_PIDS = 100_000
# Uploads handled at once; each may hold up to MAX_INFLATED_BYTES while it is checked.
MAX_CONCURRENT_UPLOADS = 8

READ_TIMEOUT_S = 30.0
BUSY_TIMEOUT_S = 5.0
BUSY_RETRY_AFTER_S = 30
KEEPALIVE_TIMEOUT_S = 15.0
LINGER_S = 2.0
SHUTDOWN_TIMEOUT_S = 2.0
CLOSE_TIMEOUT_S = 5.0

_T = TypeVar("_T")


@dataclass
class CollectorStats:
    accepted: int = 0
    dropped: int = 0  # valid events of deleted pids
    rejected_batches: int = 0
    deleted: int = 0


class Collector:
    """The collector server. `async_start` binds it, `async_close` stops it (idempotent)."""

    def __init__(self, out_dir: Path, max_body: int = MAX_BODY_BYTES, *,
                 max_inflated: int = MAX_INFLATED_BYTES, max_lines: int = MAX_LINES,
                 max_deleted: int = MAX_DELETED_PIDS):
        self.out_dir = Path(out_dir)
        self.stats = CollectorStats()
        self.host: str | None = None
        self.port: int | None = None
        self._max_body = max_body
        self._max_inflated = max_inflated
        self._max_lines = max_lines
        self._max_deleted = max_deleted
        self._store: EventStore | None = None
        # One worker thread does all parsing and file work: the loop stays free, and the store
        # never sees two changes at once.
        self._io: ThreadPoolExecutor | None = None
        self._runner: web.AppRunner | None = None
        self._uploads = asyncio.Semaphore(MAX_CONCURRENT_UPLOADS)
        self._closed = False

    @property
    def url(self) -> str:
        if self.port is None or self.host is None:
            raise RuntimeError("the collector is not started")
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    async def async_start(self, host: str = DEFAULT_HOST, port: int = 0) -> int:
        """Listen on host:port (0 picks a free port); returns the bound port."""
        if self._runner is not None or self._closed:
            raise RuntimeError("a Collector can be started once")
        self._io = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-collector")
        app = web.Application(client_max_size=self._max_body)
        app.add_routes([web.post(EVENTS_PATH, self._post_events),
                        web.post(DELETE_PATH, self._post_delete),
                        web.get(HEALTH_PATH, self._get_health)])
        self._runner = web.AppRunner(
            app, handle_signals=False, access_log=None, auto_decompress=False,
            keepalive_timeout=KEEPALIVE_TIMEOUT_S, lingering_time=LINGER_S,
            shutdown_timeout=SHUTDOWN_TIMEOUT_S)
        try:
            self._store = await self._in_worker(EventStore, self.out_dir, self._max_deleted)
            await self._runner.setup()
            await web.TCPSite(self._runner, host, port).start()
        except BaseException:
            await self.async_close()
            raise
        self.host, self.port = host, self._runner.addresses[0][1]
        log.info("analytics collector listening on %s, writing to %s", self.url, self.out_dir)
        return self.port

    async def async_close(self) -> None:
        """Stop serving, let requests in flight finish, join the worker (idempotent, bounded)."""
        if self._closed:
            return
        self._closed = True
        if self._runner is not None:
            try:
                await asyncio.wait_for(self._runner.cleanup(), CLOSE_TIMEOUT_S)
            except Exception:
                log.warning("the collector did not stop cleanly", exc_info=True)
        if self._io is not None:
            io = self._io
            try:
                await asyncio.wait_for(asyncio.to_thread(io.shutdown, wait=True), CLOSE_TIMEOUT_S)
            except TimeoutError:
                log.warning("the collector's file worker is still busy after %s s", CLOSE_TIMEOUT_S)

    async def _in_worker(self, fn: Callable[..., _T], *args: Any) -> _T:
        assert self._io is not None
        return await asyncio.get_running_loop().run_in_executor(
            self._io, functools.partial(fn, *args))

    async def _post_events(self, request: web.Request) -> web.Response:
        try:
            async with asyncio.timeout(BUSY_TIMEOUT_S):
                await self._uploads.acquire()
        except TimeoutError:
            return _error(503, "the collector is busy, try again later",
                          headers={hdrs.RETRY_AFTER: str(BUSY_RETRY_AFTER_S)})
        try:
            data = await self._read(request, self._upload_sink(request), self._max_body)
            assert self._store is not None
            events = await self._in_worker(parse_batch, data, self._max_lines, MAX_LINE_BYTES)
            del data
            written, dropped = await self._in_worker(self._store.write, events)
        except BatchError as exc:
            self.stats.rejected_batches += 1
            log.info("refused a batch (%d): %s", exc.status, exc.reason)
            return _error(exc.status, exc.reason)
        except OSError:
            log.exception("could not store a batch")
            return _error(500, "the collector could not store the batch")
        finally:
            self._uploads.release()
        self.stats.accepted += written
        self.stats.dropped += dropped
        log.debug("accepted %d events, dropped %d of deleted pids", written, dropped)
        return web.json_response({"accepted": written, "dropped": dropped})

    async def _post_delete(self, request: web.Request) -> web.Response:
        try:
            if _encoding(request) != "identity":
                raise BatchError("a deletion request is sent uncompressed", 415)
            limit = min(self._max_body, MAX_DELETE_BODY_BYTES)
            pids = parse_deletion(await self._read(request, Plain(limit), limit), MAX_DELETE_PIDS)
            assert self._store is not None
            deleted = await self._in_worker(self._store.delete, pids)
        except BatchError as exc:
            log.info("refused a deletion request (%d): %s", exc.status, exc.reason)
            return _error(exc.status, exc.reason)
        except DeletionListFull as exc:
            log.error("refused a deletion request: %s", exc)
            return _error(503, "the collector's deletion list is full")
        except OSError:
            log.exception("could not carry out a deletion request")
            return _error(500, "the collector could not carry out the deletion")
        self.stats.deleted += deleted
        log.info("deleted %d stored events of %d pids", deleted, len(pids))
        return web.json_response({"deleted": deleted})

    async def _get_health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True})

    def _upload_sink(self, request: web.Request) -> Inflater | Plain:
        encoding = _encoding(request)
        if encoding == "gzip":
            return Inflater(self._max_inflated)
        if encoding == "identity" and request.content_type == NDJSON:
            return Plain(self._max_body)
        raise BatchError(f"send gzip (Content-Encoding: gzip) or uncompressed {NDJSON}", 415)

    @staticmethod
    async def _read(request: web.Request, sink: Inflater | Plain, limit: int) -> bytes:
        """The body through `sink`, refusing more than `limit` bytes as sent or a slow sender."""
        if request.content_length is not None and request.content_length > limit:
            raise BatchError(f"the body is larger than {limit} bytes", 413)
        size = 0
        try:
            async with asyncio.timeout(READ_TIMEOUT_S):
                while chunk := await request.content.readany():
                    size += len(chunk)
                    if size > limit:
                        raise BatchError(f"the body is larger than {limit} bytes", 413)
                    sink.feed(chunk)
        except TimeoutError:
            raise BatchError(f"the body took longer than {READ_TIMEOUT_S:g} s", 408) from None
        if size == 0:
            raise BatchError("the body is empty")
        return sink.finish()


def _encoding(request: web.Request) -> str:
    return request.headers.get(hdrs.CONTENT_ENCODING, "identity").strip().lower() or "identity"


def _error(status: int, reason: str, headers: dict[str, str] | None = None) -> web.Response:
    return web.json_response({"error": reason}, status=status, headers=headers)


def run(host: str, port: int, out_dir: Path) -> None:
    """Serve until SIGINT or SIGTERM, for `hearth analytics collect`; prints the URL once.

    Raises OSError when the address cannot be bound or the folder cannot be created.
    """
    with contextlib.suppress(KeyboardInterrupt):  # where signal handlers are not available
        asyncio.run(_serve(host, port, Path(out_dir)))


async def _serve(host: str, port: int, out_dir: Path) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    handled: list[signal.Signals] = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(sig, stop.set)
            handled.append(sig)
    collector = Collector(out_dir)
    try:
        await collector.async_start(host, port)
        print(f"Collecting analytics events on {collector.url} into {out_dir}"
              " (Ctrl-C stops)", flush=True)
        await stop.wait()
    finally:
        await collector.async_close()
        for sig in handled:
            loop.remove_signal_handler(sig)
