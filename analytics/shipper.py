"""Uploading the local spool to a collector, without ever slowing or breaking the app.

`async_ship`, `async_request_deletion` and `async_collector_schemas` make one bounded request
each and raise `ShipError`, which says whether trying again later can help. `Shipper` drives them
from the recorder's spool: deletions first, then batches; it acks what the collector took, drops
what it refused as malformed (so one bad batch never blocks the queue), and backs off while the
collector is away.

It sends only the schema versions its collector reads (see `analytics.events`): it learns them
from every answer to a batch, and asks `GET /v1/health` when events of another version wait
(again every `schemas_recheck` seconds while they do); a collector that answers that request
with an error (a proxy may pass on only the paths older shippers used) reads version 1 alone,
so version-1 events never wait on it. Before dropping a refused batch that held
a version beyond 1, it asks again: if the collector no longer reads that version, the batch is
not dropped, and its events of the versions still read go in the next batch.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import inspect
import json
import logging
import random
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp
from aiohttp import hdrs

from ._collector_batch import is_day
from .collector import DELETE_PATH, EVENTS_PATH, HEALTH_PATH, MAX_DELETE_TOKENS, NDJSON
from .events import BASE_VERSIONS, is_token

log = logging.getLogger(__name__)

SHIP_TIMEOUT_S = 10.0
SHIP_INTERVAL_S = 60.0
CLOSE_TIMEOUT_S = 5.0
BATCH_LINES = 500
BACKOFF_INITIAL_S = 2.0
BACKOFF_MAX_S = 600.0
BACKOFF_JITTER = 0.5
MAX_ANSWER_BYTES = 64 * 1024
# While events of a version the collector does not read wait, how often to ask it again.
SCHEMAS_RECHECK_S = 600.0
USER_AGENT = "hearth-analytics/1"


class ShipError(Exception):
    """A request the collector did not carry out. `retryable` is False only when sending the
    same thing again cannot succeed (HTTP 400: the batch itself is bad)."""

    def __init__(self, reason: str, *, retryable: bool, status: int | None = None,
                 retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


@dataclass
class Backoff:
    """Exponential backoff: each `next_delay()` doubles up to `max`; `jitter` is the fraction
    of the delay drawn at random (0.5: between half and all of it), so clients spread out."""

    initial: float = BACKOFF_INITIAL_S
    max: float = BACKOFF_MAX_S
    jitter: float = BACKOFF_JITTER
    factor: float = 2.0
    rng: random.Random = field(default_factory=random.Random, repr=False)
    _next: float | None = field(default=None, init=False, repr=False)

    def next_delay(self) -> float:
        base = min(self.initial if self._next is None else self._next, self.max)
        self._next = min(base * self.factor, self.max)
        return base * (1.0 - self.jitter * self.rng.random())

    def reset(self) -> None:
        self._next = None


class Spool(Protocol):
    """What the shipper needs from the recorder's spool. Each method may also be a coroutine.

    - `schemas()`: the schema versions of the unacknowledged events (a collection of ints).
    - `take_batch(max_lines, schemas)`: the oldest unacknowledged events of those schema
      versions, at most `max_lines` JSON lines, as `(batch_id, lines)`, or None when there are
      none. Until acked, the same events are offered again by the next call (possibly fewer of
      them, if `max_lines` shrank or `schemas` changed).
    - `ack(batch_id)`: the batch is done (delivered, or refused for good): remove its events,
      and no event of another version.
    - `pending_deletions()`: the deletion requests not yet delivered, oldest first, each a list
      of (day, token) pairs: the install's deletion token of each UTC day it sent events.
    - `ack_deletion(index)`: remove the request at this index of the list the latest
      `pending_deletions()` returned; the shipper always sends and acks index 0.
    """

    def schemas(self) -> Any: ...

    def take_batch(self, max_lines: int, schemas: Sequence[int]) -> Any: ...

    def ack(self, batch_id: Hashable) -> Any: ...

    def pending_deletions(self) -> Any: ...

    def ack_deletion(self, index: int) -> Any: ...


async def async_ship(session: aiohttp.ClientSession | None, url: str, lines: list[str],
                     timeout: float = SHIP_TIMEOUT_S) -> int:
    """POST the lines gzipped to `url`/v1/events; returns how many events the collector kept."""
    if not lines:
        return 0
    async with _session(session) as http:
        answer = await _post_lines(http, url, lines, timeout)
    return _count(answer, "accepted")


async def async_collector_schemas(url: str, timeout: float = SHIP_TIMEOUT_S, *,
                                  session: aiohttp.ClientSession | None = None) -> frozenset[int]:
    """The schema versions the collector at `url` reads, from its health answer."""
    async with _session(session) as http:
        return schemas_of(await _request(http, "GET", _base(url) + HEALTH_PATH, None, {},
                                         timeout))


def schemas_of(answer: dict) -> frozenset[int]:
    """The versions a collector's answer names; none (a collector from before version 2, or an
    answer that makes no sense) means version 1 alone."""
    value = answer.get("schemas")
    if isinstance(value, list) and value and all(type(v) is int and v >= 1 for v in value):
        return frozenset(value)
    return BASE_VERSIONS


async def _post_lines(http: aiohttp.ClientSession, url: str, lines: list[str],
                      timeout: float) -> dict:
    body = gzip.compress(_join(lines), mtime=0)
    headers = {hdrs.CONTENT_ENCODING: "gzip", hdrs.CONTENT_TYPE: NDJSON}
    return await _post(http, _base(url) + EVENTS_PATH, body, headers, timeout)


async def async_request_deletion(url: str, tokens: Iterable[Sequence[str]],
                                 timeout: float = SHIP_TIMEOUT_S, *,
                                 session: aiohttp.ClientSession | None = None) -> int:
    """Ask the collector to forget the pids of these (day, token) pairs (in requests of at
    most MAX_DELETE_TOKENS, each with its own timeout); returns how many stored events it
    deleted. The tokens are secrets of the install: they are never logged."""
    unique: list[tuple[str, str]] = []
    for i, pair in enumerate(tokens):
        if (not isinstance(pair, list | tuple) or len(pair) != 2 or not is_day(pair[0])
                or not is_token(pair[1])):
            raise ShipError(f"deletion entry #{i} is not a (YYYY-MM-DD, 64 hex digits) pair",
                            retryable=False)
        unique.append((pair[0], pair[1]))
    unique = list(dict.fromkeys(unique))
    deleted = 0
    headers = {hdrs.CONTENT_TYPE: "application/json"}
    async with _session(session) as http:
        for start in range(0, len(unique), MAX_DELETE_TOKENS):
            chunk = unique[start:start + MAX_DELETE_TOKENS]
            body = json.dumps({"tokens": [{"day": day, "token": token}
                                          for day, token in chunk]}).encode()
            answer = await _post(http, _base(url) + DELETE_PATH, body, headers, timeout)
            deleted += _count(answer, "deleted")
    return deleted


@dataclass
class ShipperStats:
    shipped: int = 0  # events the collector kept
    batches: int = 0
    dropped_batches: int = 0  # refused for good
    deletions: int = 0
    failures: int = 0
    last_error: str | None = None


class Shipper:
    """Moves the spool to the collector at `url` until `async_run`'s stop event is set.

    `wake()` asks for a shipment now (for example after a flush; not for every event); else
    the spool is looked at every `interval` seconds. `schemas` are the versions the collector
    reads, as far as the shipper knows. Nothing here waits without a timeout.
    With `spool_in_thread`, the spool's (then plain, thread-safe) methods run in a worker
    thread, so a spool that touches the disk never holds up the event loop.
    """

    def __init__(self, url: str, spool: Spool, *, batch_lines: int = BATCH_LINES,
                 interval: float = SHIP_INTERVAL_S, timeout: float = SHIP_TIMEOUT_S,
                 backoff: Backoff | None = None, session: aiohttp.ClientSession | None = None,
                 spool_in_thread: bool = False, schemas_recheck: float = SCHEMAS_RECHECK_S):
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"the collector URL must start with http:// or https://: {url!r}")
        self.url = _base(url)
        self.stats = ShipperStats()
        self._spool = spool
        self._max_lines = batch_lines
        self._interval = interval
        self._timeout = timeout
        self._backoff = backoff or Backoff()
        self._session = session
        self._spool_in_thread = spool_in_thread
        self._wakeup = asyncio.Event()
        self._closing = asyncio.Event()
        self._finished = asyncio.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._running = False
        self._failing = False
        self._schemas_recheck = schemas_recheck
        self.schemas = BASE_VERSIONS  # what the collector reads, as far as we know
        self._learned: float | None = None  # when (monotonic) the collector last said it

    def wake(self) -> None:
        """Ship now rather than at the next interval; callable from any thread."""
        loop = self._loop
        if loop is None or threading.get_ident() == self._loop_thread:
            self._wakeup.set()
            return
        with contextlib.suppress(RuntimeError):  # the loop is closed: nothing to wake
            loop.call_soon_threadsafe(self._wakeup.set)

    async def async_run(self, stop: asyncio.Event) -> None:
        """Ship until `stop` is set or `async_close` is called; never raises for network trouble."""
        if self._running:
            raise RuntimeError("the shipper is already running")
        self._running = True
        self._finished.clear()
        self._loop, self._loop_thread = asyncio.get_running_loop(), threading.get_ident()
        http = self._session or _new_session()
        try:
            while not (stop.is_set() or self._closing.is_set()):
                step = asyncio.ensure_future(self._step(http))
                await _first([step, stop.wait(), self._closing.wait()])
                if not step.done() or step.cancelled():
                    break
                delay = step.result()
                if delay is None:  # nothing to ship: sleep until woken
                    await _first([stop.wait(), self._closing.wait(), self._wakeup.wait()],
                                 self._interval)
                elif delay > 0:  # backing off: a wake() must not bring the next attempt closer
                    await _first([stop.wait(), self._closing.wait()], delay)
        finally:
            if http is not self._session:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(http.close(), CLOSE_TIMEOUT_S)
            self._running = False
            self._finished.set()

    async def async_close(self) -> None:
        """Stop `async_run` and wait for it to end (idempotent, bounded)."""
        self._closing.set()
        if self._running:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._finished.wait(), CLOSE_TIMEOUT_S)

    async def _step(self, http: aiohttp.ClientSession) -> float | None:
        """Ship one deletion request or one batch. Returns how long to wait before the next
        step: 0 for no wait, None when there was nothing to ship."""
        self._wakeup.clear()
        try:
            deletions = await self._call(self._spool.pending_deletions)
            if deletions:
                await self._ship_deletion(http, list(deletions[0]))
                return 0.0
            spooled = frozenset(await self._call(self._spool.schemas))
            if not spooled <= self.schemas and self._stale():
                await self._learn(http)
            wanted = sorted(spooled & self.schemas)
            if not wanted:  # nothing, or only events the collector does not read yet
                return None
            taken = await self._call(self._spool.take_batch, self._max_lines, wanted)
            if taken is None:
                return None
            batch_id, lines = taken
            await self._ship_batch(http, batch_id, list(lines), frozenset(wanted))
            return 0.0
        except ShipError as exc:
            return self._failed(exc)
        except Exception as exc:  # a spool bug must not stop analytics for good, nor the app
            if not self._failing:
                log.exception("analytics shipping failed")
            return self._failed(ShipError(f"internal error: {exc!r}", retryable=True))

    async def _ship_deletion(self, http: aiohttp.ClientSession, tokens: list) -> None:
        try:
            deleted = await async_request_deletion(self.url, tokens, self._timeout, session=http)
        except ShipError as exc:
            if exc.retryable:
                raise
            log.warning("the collector refused a deletion request, dropping it: %s", exc.reason)
        else:
            log.info("the collector deleted %d events of %d days", deleted, len(tokens))
            self.stats.deletions += 1
            self._succeeded()
        await self._call(self._spool.ack_deletion, 0)

    def _stale(self) -> bool:
        return (self._learned is None
                or time.monotonic() - self._learned >= self._schemas_recheck)

    def _learnt(self, schemas: frozenset[int]) -> None:
        if schemas != self.schemas:
            log.info("the analytics collector reads schema versions %s",
                     ", ".join(map(str, sorted(schemas))))
        self.schemas, self._learned = schemas, time.monotonic()

    async def _learn(self, http: aiohttp.ClientSession) -> None:
        try:
            schemas = await async_collector_schemas(self.url, self._timeout, session=http)
        except ShipError as exc:
            if exc.status is None:  # no answer: the collector is away
                raise
            schemas = BASE_VERSIONS
        self._learnt(schemas)

    async def _ship_batch(self, http: aiohttp.ClientSession, batch_id: Hashable,
                          lines: list[str], versions: frozenset[int]) -> None:
        try:
            answer = await _post_lines(http, self.url, lines, self._timeout)
            accepted = _count(answer, "accepted")
        except ShipError as exc:
            if exc.status == 413 and len(lines) > 1:
                # Too big for this collector: the spool offers the same events again, fewer.
                self._max_lines = max(1, len(lines) // 2)
                log.info("the collector found %d events too large; sending at most %d",
                         len(lines), self._max_lines)
                return
            if exc.status == 400 and not versions <= BASE_VERSIONS:
                # Perhaps for a version this collector no longer reads (it was downgraded):
                # then the batch waits, and is not dropped. A failure to ask raises: it waits.
                await self._learn(http)
                if not versions <= self.schemas:
                    log.info("the collector refused events of a schema version it no longer "
                             "reads; they wait in the spool")
                    return
            if exc.retryable and exc.status != 413:
                raise
            log.warning("the collector refused a batch of %d events, dropping it: %s",
                        len(lines), exc.reason)
            self.stats.dropped_batches += 1
        else:
            self._learnt(schemas_of(answer))
            log.debug("shipped %d events, the collector kept %d", len(lines), accepted)
            self.stats.batches += 1
            self.stats.shipped += accepted
            self._succeeded()
        await self._call(self._spool.ack, batch_id)

    async def _call(self, method: Callable[..., Any], *args: Any) -> Any:
        if self._spool_in_thread:
            return await asyncio.to_thread(method, *args)
        return await _maybe(method(*args))

    def _succeeded(self) -> None:
        self._backoff.reset()
        if self._failing:
            log.info("the analytics collector is reachable again")
        self._failing = False

    def _failed(self, exc: ShipError) -> float:
        self.stats.failures += 1
        self.stats.last_error = exc.reason
        delay = self._backoff.next_delay()
        if exc.retry_after is not None:
            delay = max(delay, min(exc.retry_after, self._backoff.max))
        # Said once per outage; the retries that follow are only debug noise.
        level = logging.DEBUG if self._failing else logging.WARNING
        log.log(level, "analytics shipping failed, retrying in %.1f s: %s", delay, exc.reason)
        self._failing = True
        return delay


def _base(url: str) -> str:
    return url.rstrip("/")


def _join(lines: list[str]) -> bytes:
    parts = []
    for n, line in enumerate(lines, 1):
        line = line.removesuffix("\n").removesuffix("\r")
        if "\n" in line or "\r" in line:
            raise ShipError(f"line {n} contains a line break", retryable=False)
        parts.append(line)
    try:
        return ("\n".join(parts) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        raise ShipError("a line is not valid Unicode", retryable=False) from None


def _new_session() -> aiohttp.ClientSession:
    return aiohttp.ClientSession(headers={hdrs.USER_AGENT: USER_AGENT})


@contextlib.asynccontextmanager
async def _session(session: aiohttp.ClientSession | None) -> AsyncIterator[aiohttp.ClientSession]:
    if session is not None:
        yield session
        return
    own = _new_session()
    try:
        yield own
    finally:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(own.close(), CLOSE_TIMEOUT_S)


async def _post(http: aiohttp.ClientSession, url: str, body: bytes, headers: dict[str, str],
                timeout: float) -> dict:
    return await _request(http, "POST", url, body, headers, timeout)


async def _request(http: aiohttp.ClientSession, method: str, url: str, body: bytes | None,
                   headers: dict[str, str], timeout: float) -> dict:
    try:
        async with asyncio.timeout(timeout):
            async with http.request(method, url, data=body, headers=headers,
                                    allow_redirects=False,
                                    timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
                raw = await _read_bounded(resp)
                status, retry_after = resp.status, resp.headers.get(hdrs.RETRY_AFTER)
    except TimeoutError:
        raise ShipError(f"no answer from the collector within {timeout:g} s",
                        retryable=True) from None
    except (aiohttp.ClientError, OSError) as exc:
        raise ShipError(f"cannot reach the collector: {exc}", retryable=True) from None
    return _answer(status, raw, retry_after)


async def _read_bounded(resp: aiohttp.ClientResponse) -> bytes:
    raw = bytearray()
    while chunk := await resp.content.readany():
        raw += chunk
        if len(raw) > MAX_ANSWER_BYTES:
            raise ShipError("the collector's answer is too large", retryable=True,
                            status=resp.status)
    return bytes(raw)


def _answer(status: int, raw: bytes, retry_after: str | None) -> dict:
    try:
        answer = json.loads(raw)
    except ValueError:
        answer = None
    if 200 <= status < 300:
        if not isinstance(answer, dict):
            raise ShipError(f"HTTP {status} with an answer that is not a JSON object",
                            retryable=True, status=status)
        return answer
    error = answer.get("error") if isinstance(answer, dict) else None
    reason = f"HTTP {status}: {error}" if isinstance(error, str) else f"HTTP {status}"
    raise ShipError(" ".join(reason.split())[:300], retryable=status != 400, status=status,
                    retry_after=_seconds(retry_after))


def _count(answer: dict, key: str) -> int:
    value = answer.get(key)
    if type(value) is not int or value < 0:
        raise ShipError(f"the collector's answer has no {key!r} count", retryable=True)
    return value


def _seconds(header: str | None) -> float | None:
    """Retry-After in seconds; its HTTP-date form is rare enough to ignore."""
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None


async def _maybe(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


async def _first(waits: list[Awaitable[Any]], timeout: float | None = None) -> None:
    """Wait until one of `waits` ends or `timeout` passes, then cancel the others."""
    tasks = [asyncio.ensure_future(w) for w in waits]
    try:
        await asyncio.wait(tasks, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        pending = [t for t in tasks if not t.done()]
        for task in pending:
            task.cancel()
        if pending:
            await asyncio.wait(pending, timeout=CLOSE_TIMEOUT_S)
