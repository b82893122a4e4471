"""The analytics collector: an aiohttp server that validates uploaded events and stores them.

`POST /v1/events` takes gzip-compressed JSON lines (or plain `application/x-ndjson`). A batch is
all or nothing: every line must follow the event schema, be of a schema version the collector
reads, and carry a time near the collector's own clock, or the answer is 400 naming the first bad
line and nothing is written. The answers to it and to `GET /v1/health` name the versions read
(`"schemas": [1, 2, 3, 4, 5, 6, 7, 8]`), which is how shippers know what they may send (see
`analytics.events`). Accepted events go to date-partitioned files (see `_collector_store`).
`POST /v1/delete` forgets every event of some pids, now and later; it takes the install's
per-day tokens, never pids (see `analytics.events.pid_of_token`), so only the install that made
a pid can have it deleted.

Every read is bounded in size and time, and nothing about an event or a client's address is
logged. A slow or greedy client costs only itself: a body is read without holding anything other
clients wait for, each client address has a few requests in progress at most (more get 429 at
once), and bodies in memory are counted as their bytes arrive, against one total.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import ipaddress
import logging
import signal
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any, TypeVar

from aiohttp import hdrs, web

from ._collector_batch import BatchError, Inflater, Plain, parse_batch, parse_deletion
from ._collector_store import EventStore
from .events import BASE_VERSIONS, SCHEMA_VERSIONS

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
MAX_DELETE_BODY_BYTES = 128 * 1024
MAX_DELETE_TOKENS = 1000  # one per day analytics was on
MAX_DELETED_PIDS = 100_000  # past it, the oldest entries of the deletion list are forgotten
# Event times accepted, around the collector's clock: a laptop may ship weeks late, and clocks
# drift. Older or later events are refused; so no batch can make folders for far-off dates.
MAX_EVENT_AGE = timedelta(days=400)
MAX_EVENT_AHEAD = timedelta(days=1)
MAX_DAYS_PER_BATCH = 32  # one file each; more is 413, and the shipper sends fewer events
# Requests of one client (an IPv4 address, an IPv6 /64) in progress at once; more get 429.
MAX_REQUESTS_PER_CLIENT = 4
IPV6_CLIENT_PREFIX = 64
# Request bodies held at once, all clients together, counted as their bytes arrive (so a slow
# sender holds only what it sent); a request that would go past it gets 503.
MAX_BUFFERED_BYTES = 64 * 1024 * 1024

BODY_READ_TIMEOUT_S = 15.0  # the whole body, however it trickles in
BUSY_RETRY_AFTER_S = 30
CLIENT_RETRY_AFTER_S = 5
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
    refused_busy: int = 0  # 429 and 503: a client over its share, or memory full


class Collector:
    """The collector server. `async_start` binds it, `async_close` stops it (idempotent).

    `clock` (seconds since the epoch) decides which event times are accepted. `schemas` are the
    contract versions it reads; with version 1 alone it answers exactly as a collector from
    before version 2 did (naming no versions), with versions 1 and 2 as one of version 2 does
    (which refuses a version-3 line for its unknown type rather than its version: a 400 either
    way), with versions 1 to 3 as one of version 3 does (likewise for a version-4 line), with
    versions 1 to 4 as one of version 4 does (likewise for a version-5 line), with versions 1
    to 5 as one of version 5 does (likewise for a version-6 line), with versions 1 to 6 as
    one of version 6 does (likewise for a version-7 line), and with versions 1 to 7 as one of
    version 7 does (likewise for a version-8 line), which the tests use as those older
    collectors."""

    def __init__(self, out_dir: Path, max_body: int = MAX_BODY_BYTES, *,
                 max_inflated: int = MAX_INFLATED_BYTES, max_lines: int = MAX_LINES,
                 max_deleted: int = MAX_DELETED_PIDS, max_buffered: int = MAX_BUFFERED_BYTES,
                 clock: Callable[[], float] = time.time,
                 schemas: Iterable[int] = SCHEMA_VERSIONS):
        self.out_dir = Path(out_dir)
        self.schemas = tuple(sorted(set(schemas)))
        if not self.schemas or not set(self.schemas) <= set(SCHEMA_VERSIONS):
            raise ValueError(f"schema versions {self.schemas}: this collector reads "
                             f"{SCHEMA_VERSIONS}")
        # What answers add: older collectors named no versions, which means version 1 alone.
        self._versions = ({} if set(self.schemas) == BASE_VERSIONS
                          else {"schemas": list(self.schemas)})
        self.stats = CollectorStats()
        self.host: str | None = None
        self.port: int | None = None
        self._max_body = max_body
        self._max_inflated = max_inflated
        self._max_lines = max_lines
        self._max_deleted = max_deleted
        self._clock = clock
        self._store: EventStore | None = None
        # One worker thread does all parsing and file work: the loop stays free, the store never
        # sees two changes at once, and requests reach it in the order their bodies arrived.
        # Nothing is held while a body is read.
        self._io: ThreadPoolExecutor | None = None
        self._runner: web.AppRunner | None = None
        self._per_client: dict[str, int] = {}
        self._buffered = _Budget(max_buffered)
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
            self._store = await self._in_worker(
                functools.partial(EventStore, today=self._today,
                                  keep_days=MAX_EVENT_AGE.days + 1),
                self.out_dir, self._max_deleted)
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

    def _now(self) -> datetime:
        return datetime.fromtimestamp(self._clock(), UTC)

    def _today(self) -> date:
        return self._now().date()

    async def _post_events(self, request: web.Request) -> web.Response:
        try:
            async with self._admitted(request) as charge:
                data = await self._read(request, self._upload_sink(request), self._max_body,
                                        charge)
                written, dropped = await self._in_worker(self._store_batch, data, self._now())
                del data
        except BatchError as exc:
            return self._refused("a batch", exc)
        except OSError:
            log.exception("could not store a batch")
            return _error(500, "the collector could not store the batch")
        self.stats.accepted += written
        self.stats.dropped += dropped
        log.debug("accepted %d events, dropped %d of deleted pids", written, dropped)
        return web.json_response({"accepted": written, "dropped": dropped} | self._versions)

    def _store_batch(self, data: bytes, now: datetime) -> tuple[int, int]:
        """In the worker: check the whole batch, then write it (one job, so it keeps its turn)."""
        assert self._store is not None
        earliest = (now - MAX_EVENT_AGE).replace(minute=0, second=0, microsecond=0)
        events = parse_batch(data, self._max_lines, MAX_LINE_BYTES, earliest=earliest,
                             latest=now + MAX_EVENT_AHEAD, max_days=MAX_DAYS_PER_BATCH,
                             versions=self.schemas)
        return self._store.write(events)

    async def _post_delete(self, request: web.Request) -> web.Response:
        try:
            async with self._admitted(request) as charge:
                if _encoding(request) != "identity":
                    raise BatchError("a deletion request is sent uncompressed", 415)
                limit = min(self._max_body, MAX_DELETE_BODY_BYTES)
                body = await self._read(request, Plain(limit), limit, charge)
                by_day = parse_deletion(body, MAX_DELETE_TOKENS)
                assert self._store is not None
                deleted = await self._in_worker(self._store.delete, by_day)
        except BatchError as exc:
            return self._refused("a deletion request", exc)
        except OSError:
            log.exception("could not carry out a deletion request")
            return _error(500, "the collector could not carry out the deletion")
        self.stats.deleted += deleted
        log.info("deleted %d stored events of %d pids", deleted,
                 sum(len(pids) for pids in by_day.values()))
        return web.json_response({"deleted": deleted})

    async def _get_health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True} | self._versions)

    def _refused(self, what: str, exc: BatchError) -> web.Response:
        if exc.status in (429, 503):
            self.stats.refused_busy += 1
            log.debug("turned away %s (%d): %s", what, exc.status, exc.reason)
        else:
            if what == "a batch":
                self.stats.rejected_batches += 1
            log.info("refused %s (%d): %s", what, exc.status, exc.reason)
        headers = ({hdrs.RETRY_AFTER: str(exc.retry_after)}
                   if exc.retry_after is not None else None)
        return _error(exc.status, exc.reason, headers)

    @contextlib.asynccontextmanager
    async def _admitted(self, request: web.Request):
        """One of the client's request slots (429 at once when it has none left) and a way to
        count its body against the shared memory limit; both given back at the end."""
        key = _client_key(request)
        if self._per_client.get(key, 0) >= MAX_REQUESTS_PER_CLIENT:
            raise BatchError(f"more than {MAX_REQUESTS_PER_CLIENT} requests at once from one "
                             "address; try again later", 429, retry_after=CLIENT_RETRY_AFTER_S)
        self._per_client[key] = self._per_client.get(key, 0) + 1
        held = 0

        def charge(size: int) -> None:
            nonlocal held
            if size > held:
                if not self._buffered.take(size - held):
                    raise BatchError("the collector is busy, try again later", 503,
                                     retry_after=BUSY_RETRY_AFTER_S)
                held = size

        try:
            yield charge
        finally:
            self._buffered.give(held)
            left = self._per_client.pop(key) - 1
            if left:
                self._per_client[key] = left

    def _upload_sink(self, request: web.Request) -> Inflater | Plain:
        encoding = _encoding(request)
        if encoding == "gzip":
            return Inflater(self._max_inflated)
        if encoding == "identity" and request.content_type == NDJSON:
            return Plain(self._max_body)
        raise BatchError(f"send gzip (Content-Encoding: gzip) or uncompressed {NDJSON}", 415)

    @staticmethod
    async def _read(request: web.Request, sink: Inflater | Plain, limit: int,
                    charge: Callable[[int], None]) -> bytes:
        """The body through `sink`, refusing more than `limit` bytes as sent, a body that takes
        longer than BODY_READ_TIMEOUT_S, or one that would go past the memory limit."""
        if request.content_length is not None and request.content_length > limit:
            raise BatchError(f"the body is larger than {limit} bytes", 413)
        size = 0
        try:
            async with asyncio.timeout(BODY_READ_TIMEOUT_S):
                while chunk := await request.content.readany():
                    size += len(chunk)
                    if size > limit:
                        raise BatchError(f"the body is larger than {limit} bytes", 413)
                    sink.feed(chunk)  # raises past its own limit: at most that much extra
                    charge(sink.size)
        except TimeoutError:
            raise BatchError(f"the body took longer than {BODY_READ_TIMEOUT_S:g} s",
                             408) from None
        except (ConnectionError, web.HTTPException) as exc:
            raise BatchError(f"the body was cut off ({type(exc).__name__})") from None
        if size == 0:
            raise BatchError("the body is empty")
        return sink.finish()


class _Budget:
    """A count of bytes shared by every request; only the event loop touches it."""

    def __init__(self, limit: int):
        self.limit = limit
        self.used = 0

    def take(self, n: int) -> bool:
        if self.used + n > self.limit:
            return False
        self.used += n
        return True

    def give(self, n: int) -> None:
        self.used -= n


def _client_key(request: web.Request) -> str:
    """Who a request counts against: its IPv4 address, or its IPv6 /64 (one host's share)."""
    remote = request.remote or ""
    try:
        ip = ipaddress.ip_address(remote.split("%", 1)[0])
    except ValueError:
        return remote
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/{IPV6_CLIENT_PREFIX}", strict=False))
    return str(ip)


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
