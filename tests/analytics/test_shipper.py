"""The shipper against a real collector (and a few misbehaving servers) on 127.0.0.1.

The spool here is an in-memory double of the recorder's spool interface (see
analytics.shipper.Spool); tests wait on its calls instead of sleeping.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import socket
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from aiohttp import web

from analytics.collector import MAX_DAYS_PER_BATCH, Collector
from analytics.events import pid_of_token
from analytics.recorder import Recorder
from analytics.shipper import (
    Backoff,
    ShipError,
    Shipper,
    async_request_deletion,
    async_ship,
)
from tests.support import FakeClock

from .conftest import COLLECTOR_NOW

# A pid is the hash of its install's deletion token of the day (analytics.events).
TOKEN_A = "a" * 64
TOKEN_B = "b" * 64
PID_A = pid_of_token(TOKEN_A)
PID_B = pid_of_token(TOKEN_B)
DAY = "2024-05-01"
WAIT_S = 20.0
FAST = dict(initial=0.01, max=0.05, jitter=0.0)


def line(pid: str = PID_A, length: int = 16, ts: str = "2024-05-01T10:00:00Z") -> str:
    return json.dumps({"event": "message_sent", "schema": 1, "ts": ts, "pid": pid,
                       "length": length}, sort_keys=True, separators=(",", ":"))


def lines(n: int, start: int = 0) -> list[str]:
    return [line(f"{i:032x}") for i in range(start, start + n)]


def stored(out: Path) -> list[str]:
    return sorted(text for path in out.glob("date=*/*.jsonl")
                  for text in path.read_text().splitlines())


def version(text: str) -> int:
    """A line's schema version, as the recorder spools it (a line that is not an event: 1)."""
    try:
        return int(json.loads(text)["schema"])
    except (ValueError, KeyError, TypeError):
        return 1


class MemorySpool:
    """The spool interface in memory: un-acked lines stay at the head and are offered again."""

    def __init__(self, events: list[str] = (), deletions: list[list[str]] = ()):
        self.lines = list(events)
        self.deletions = [list(d) for d in deletions]
        self.log: list[tuple[str, list[str]]] = []
        self.taken = 0
        self._offered: dict[int, int] = {}
        self._next_id = 0
        self._poked = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    def _poke(self) -> None:  # the shipper may call the spool from a worker thread
        self._loop.call_soon_threadsafe(self._poked.set)

    def schemas(self) -> set[int]:
        return {version(text) for text in self.lines}

    def take_batch(self, max_lines: int, schemas=None) -> tuple[int, list[str]] | None:
        self.taken += 1
        self._poke()
        picked = [i for i, text in enumerate(self.lines)
                  if schemas is None or version(text) in schemas][:max_lines]
        if not picked:
            return None
        self._next_id += 1
        self._offered = {self._next_id: picked}  # only the latest offer can be acked
        return self._next_id, [self.lines[i] for i in picked]

    def ack(self, batch_id: int) -> None:
        picked = self._offered.pop(batch_id)
        self.log.append(("ack", [self.lines[i] for i in picked]))
        for i in reversed(picked):
            del self.lines[i]
        self._poke()

    def pending_deletions(self) -> list[list[str]]:
        return [list(d) for d in self.deletions]

    def ack_deletion(self, index: int) -> None:
        self.log.append(("ack_deletion", self.deletions.pop(index)))
        self._poke()

    def empty(self) -> bool:
        return not self.lines and not self.deletions

    async def until(self, predicate: Callable[[], bool], what: str) -> None:
        """Wait, woken by each spool call, until predicate() holds."""
        try:
            async with asyncio.timeout(WAIT_S):
                while not predicate():
                    self._poked.clear()
                    await self._poked.wait()
        except TimeoutError:
            raise AssertionError(f"timed out waiting for {what}") from None


class AsyncSpool(MemorySpool):
    """The same spool with coroutine methods: the shipper accepts either kind."""

    async def schemas(self) -> set[int]:
        return super().schemas()

    async def take_batch(self, max_lines: int, schemas=None):
        return super().take_batch(max_lines, schemas)

    async def ack(self, batch_id: int) -> None:
        super().ack(batch_id)

    async def pending_deletions(self) -> list[list[str]]:
        return super().pending_deletions()

    async def ack_deletion(self, index: int) -> None:
        super().ack_deletion(index)


@contextlib.asynccontextmanager
async def running(shipper: Shipper) -> AsyncIterator[asyncio.Task]:
    stop = asyncio.Event()
    task = asyncio.ensure_future(shipper.async_run(stop))
    try:
        yield task
    finally:
        stop.set()
        await asyncio.wait_for(task, WAIT_S)


@contextlib.asynccontextmanager
async def fake_collector(handler) -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/v1/events", handler)
    app.router.add_post("/v1/delete", handler)
    runner = web.AppRunner(app, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_ships_the_spool_in_batches_and_acks(collector):
    spool = MemorySpool(lines(1200))
    shipper = Shipper(collector.url, spool, interval=3600)
    async with running(shipper):
        await spool.until(spool.empty, "the spool to be shipped")
        assert stored(collector.out_dir) == sorted(lines(1200))
        assert [len(batch) for _, batch in spool.log] == [500, 500, 200]
        assert (shipper.stats.batches, shipper.stats.shipped) == (3, 1200)

        # Idle until woken (the interval is an hour), also from another thread.
        spool.lines.extend(lines(3, start=5000))
        await asyncio.get_running_loop().run_in_executor(None, shipper.wake)
        await spool.until(spool.empty, "the woken shipper to ship")
    assert len(stored(collector.out_dir)) == 1203


async def test_collector_down_retries_with_backoff_then_delivers(tmp_path):
    port = free_port()
    spool = MemorySpool(lines(10))
    shipper = Shipper(f"http://127.0.0.1:{port}/", spool, backoff=Backoff(**FAST))
    async with running(shipper):
        await spool.until(lambda: spool.taken >= 3, "a few failed attempts")
        assert shipper.stats.failures >= 2 and "cannot reach" in shipper.stats.last_error
        assert len(spool.lines) == 10 and spool.log == []

        collector = Collector(tmp_path / "events", clock=FakeClock(COLLECTOR_NOW))
        await collector.async_start("127.0.0.1", port)
        try:
            await spool.until(spool.empty, "delivery once the collector is up")
        finally:
            await collector.async_close()
    assert stored(collector.out_dir) == sorted(lines(10))


async def test_refused_batch_is_dropped_and_the_queue_goes_on(collector):
    bad = line().replace('"length":16', '"length":17')
    spool = MemorySpool([bad, *lines(3)])
    shipper = Shipper(collector.url, spool, batch_lines=2, backoff=Backoff(**FAST))
    async with running(shipper):
        await spool.until(spool.empty, "the queue to drain past the bad batch")
    assert spool.log == [("ack", [bad, lines(1)[0]]), ("ack", lines(2, start=1))]
    assert stored(collector.out_dir) == sorted(lines(2, start=1))
    assert shipper.stats.dropped_batches == 1 and shipper.stats.failures == 0


async def test_deletions_are_shipped_before_batches(collector):
    assert await async_ship(None, collector.url, [line(PID_A)]) == 1
    spool = MemorySpool([line(PID_A, length=64), line(PID_B)], deletions=[[[DAY, TOKEN_A]]])
    shipper = Shipper(collector.url, spool)
    async with running(shipper):
        await spool.until(spool.empty, "the deletion and the batch")
    assert [what for what, _ in spool.log] == ["ack_deletion", "ack"]
    assert collector.stats.deleted == 1
    assert collector.stats.dropped == 1  # PID_A's spooled event arrived after the deletion
    assert stored(collector.out_dir) == [line(PID_B)]
    assert shipper.stats.deletions == 1


async def test_async_spool_methods_are_awaited(collector):
    spool = AsyncSpool(lines(5), deletions=[[[DAY, TOKEN_B]]])
    async with running(Shipper(collector.url, spool)):
        await spool.until(spool.empty, "shipping from a coroutine spool")
    assert stored(collector.out_dir) == sorted(lines(5))


async def test_spool_can_be_called_in_a_worker_thread(collector):
    spool = MemorySpool(lines(700), deletions=[[[DAY, TOKEN_B]]])
    async with running(Shipper(collector.url, spool, spool_in_thread=True)):
        await spool.until(spool.empty, "shipping from a threaded spool")
    assert stored(collector.out_dir) == sorted(lines(700))
    assert [what for what, _ in spool.log] == ["ack_deletion", "ack", "ack"]


async def test_too_large_batches_are_split_until_they_fit(tmp_path):
    collector = Collector(tmp_path / "events", max_body=400, clock=FakeClock(COLLECTOR_NOW))
    await collector.async_start("127.0.0.1", 0)
    events = [line(f"{random.getrandbits(128):032x}") for _ in range(40)]
    spool = MemorySpool(events)
    shipper = Shipper(collector.url, spool, batch_lines=40, backoff=Backoff(**FAST))
    try:
        async with running(shipper):
            await spool.until(spool.empty, "every event in smaller batches")
    finally:
        await collector.async_close()
    assert stored(collector.out_dir) == sorted(events)
    assert shipper.stats.dropped_batches == 0
    assert max(len(batch) for _, batch in spool.log) < 40


async def test_spool_error_is_survived(collector):
    spool = MemorySpool(lines(2))
    real_take = spool.take_batch
    calls = []

    def flaky_take(max_lines: int, schemas):
        calls.append(max_lines)
        if len(calls) == 1:
            spool._poke()
            raise OSError("disk hiccup")
        return real_take(max_lines, schemas)

    spool.take_batch = flaky_take
    shipper = Shipper(collector.url, spool, backoff=Backoff(**FAST))
    async with running(shipper):
        await spool.until(spool.empty, "shipping after the spool recovered")
    assert shipper.stats.failures == 1 and "disk hiccup" in shipper.stats.last_error


async def test_close_is_idempotent_and_bounded_while_a_request_hangs():
    arrived, release = asyncio.Event(), asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        arrived.set()
        await release.wait()
        return web.json_response({"accepted": 0})

    async with fake_collector(hang) as url:
        spool = MemorySpool(lines(1))
        shipper = Shipper(url, spool, timeout=WAIT_S * 3)
        task = asyncio.ensure_future(shipper.async_run(asyncio.Event()))
        await asyncio.wait_for(arrived.wait(), WAIT_S)
        await shipper.async_close()
        assert task.done() and task.exception() is None
        await shipper.async_close()
        await shipper.async_run(asyncio.Event())  # returns at once once closed
        release.set()
    assert spool.lines == lines(1)  # not acked: shipped again next time
    await Shipper(url, MemorySpool()).async_close()  # never run


class SignallingBackoff(Backoff):
    """A Backoff that tells when the shipper starts backing off."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.asked = asyncio.Event()

    def next_delay(self) -> float:
        self.asked.set()
        return super().next_delay()


async def test_stop_event_ends_the_run_while_backing_off():
    spool = MemorySpool(lines(1))
    backoff = SignallingBackoff(initial=3600, max=3600, jitter=0)
    shipper = Shipper(f"http://127.0.0.1:{free_port()}", spool, backoff=backoff)
    async with running(shipper):
        await asyncio.wait_for(backoff.asked.wait(), WAIT_S)
    assert shipper.stats.failures == 1 and spool.lines == lines(1)


async def test_async_ship_classifies_errors(collector):
    with pytest.raises(ShipError) as bad:
        await async_ship(None, collector.url, [line(), "{}"])
    assert not bad.value.retryable and bad.value.status == 400 and "line 2" in bad.value.reason

    with pytest.raises(ShipError) as broken:
        await async_ship(None, collector.url, ["{}\n{}"])
    assert not broken.value.retryable and broken.value.status is None

    with pytest.raises(ShipError) as down:
        await async_ship(None, f"http://127.0.0.1:{free_port()}", [line()])
    assert down.value.retryable and down.value.status is None

    assert await async_ship(None, collector.url, []) == 0
    assert await async_ship(None, collector.url, [line() + "\n"]) == 1


@pytest.mark.parametrize("status, body, headers, retry_after", [
    (503, {"error": "busy"}, {"Retry-After": "7"}, 7.0),
    (500, None, {}, None),
    (413, {"error": "too big"}, {}, None),
    (404, None, {}, None),
    (200, None, {}, None),  # not a collector's answer
])
async def test_server_trouble_is_retryable(status, body, headers, retry_after):
    async def answer(request: web.Request) -> web.Response:
        if body is None:
            return web.Response(status=status, text="<html>nope</html>", headers=headers)
        return web.json_response(body, status=status, headers=headers)

    async with fake_collector(answer) as url:
        with pytest.raises(ShipError) as err:
            await async_ship(None, url, [line()])
    assert err.value.retryable and err.value.status == status
    assert err.value.retry_after == retry_after


async def test_timeout_is_retryable():
    release = asyncio.Event()

    async def hang(request: web.Request) -> web.Response:
        await release.wait()
        return web.json_response({"accepted": 1})

    async with fake_collector(hang) as url:
        try:
            with pytest.raises(ShipError) as err:
                await async_ship(None, url, [line()], timeout=0.2)
            assert err.value.retryable and "within" in err.value.reason
            with pytest.raises(ShipError) as err:
                await async_request_deletion(url, [(DAY, TOKEN_A)], timeout=0.2)
            assert err.value.retryable
        finally:
            release.set()


@pytest.mark.parametrize("bad", [
    [(DAY, PID_A)],  # a pid is not a token
    [(DAY, TOKEN_A), ("2024-13-01", TOKEN_B)],
    [(DAY, TOKEN_A), (DAY, TOKEN_B, "extra")],
    [PID_A],  # an older version's queued request: pids only, which cannot be authenticated
])
async def test_request_deletion_refuses_what_is_not_a_day_and_token_pair(collector, bad):
    with pytest.raises(ShipError) as err:
        await async_request_deletion(collector.url, bad)
    assert not err.value.retryable and "pair" in err.value.reason


async def test_request_deletion_splits_large_requests(collector):
    await async_ship(None, collector.url, [line(PID_A), line(PID_B)])
    junk = [(DAY, f"{i:064x}") for i in range(1500)]  # nobody's: the collector keeps nothing
    assert await async_request_deletion(collector.url, junk + [(DAY, TOKEN_A)] * 2) == 1
    assert (collector.out_dir / "_deleted_pids.txt").read_text().split() == [DAY, PID_A]
    assert stored(collector.out_dir) == [line(PID_B)]


async def test_a_batch_spanning_too_many_days_is_split_until_it_fits(collector):
    from datetime import date, timedelta

    days = [date(2024, 5, 3) - timedelta(days=n) for n in range(MAX_DAYS_PER_BATCH * 2)]
    events = [line(ts=f"{day.isoformat()}T10:00:00Z") for day in days]
    spool = MemorySpool(events)
    shipper = Shipper(collector.url, spool, batch_lines=len(events), backoff=Backoff(**FAST))
    async with running(shipper):
        await spool.until(spool.empty, "every event in batches of fewer days")
    assert stored(collector.out_dir) == sorted(events)
    assert shipper.stats.dropped_batches == 0
    assert max(len(batch) for _, batch in spool.log) <= MAX_DAYS_PER_BATCH


class RecorderSpool(MemorySpool):
    """A real recorder behind the spool interface, poking the test after each call."""

    def __init__(self, recorder: Recorder):
        super().__init__()
        self.recorder = recorder

    def schemas(self):
        self._poke()
        return self.recorder.schemas()

    def take_batch(self, max_lines: int, schemas=None):
        self._poke()
        return self.recorder.take_batch(max_lines, schemas)

    def ack(self, batch_id) -> None:
        self.recorder.ack(batch_id)
        self._poke()

    def pending_deletions(self):
        return self.recorder.pending_deletions()

    def ack_deletion(self, index: int) -> None:
        self.recorder.ack_deletion(index)
        self._poke()

    def empty(self) -> bool:
        status = self.recorder.status()
        return status.spooled == 0 and status.pending_deletions == 0


async def test_an_install_can_have_its_events_deleted_and_nobody_else_can(collector, tmp_path):
    """The recorder, the shipper and the collector agree on tokens: an install's deletion
    request removes what it shipped, and only that, now and when it is sent again."""
    clock = FakeClock(COLLECTOR_NOW - 86_400)
    mine = RecorderSpool(Recorder(tmp_path / "mine", clock=clock))
    other = RecorderSpool(Recorder(tmp_path / "other", clock=clock))
    for spool in (mine, other):
        spool.recorder.enable(collector.url)
        spool.recorder.record("message_sent", length=16)
    clock.now += 3600
    mine.recorder.record("message_sent", length=64)
    for spool in (mine, other):
        async with running(Shipper(collector.url, spool)):
            await spool.until(spool.empty, "the events shipped")
    everything = stored(collector.out_dir)
    assert len(everything) == 3

    other.recorder.disable()
    async with running(Shipper(collector.url, other)):
        await other.until(other.empty, "the other install's deletion")
    mine_only = stored(collector.out_dir)
    assert len(mine_only) == 2 and {json.loads(text)["pid"] for text in mine_only} != {
        json.loads(text)["pid"] for text in everything if text not in mine_only}

    mine.recorder.disable()
    async with running(Shipper(collector.url, mine)):
        await mine.until(mine.empty, "this install's deletion")
    assert stored(collector.out_dir) == []
    assert collector.stats.deleted == 3
    # A batch shipped again after the deletion (its acknowledgement was lost) is dropped.
    assert await async_ship(None, collector.url, everything) == 0
    assert stored(collector.out_dir) == []


def test_backoff_doubles_up_to_max_and_resets():
    backoff = Backoff(initial=1, max=8, jitter=0)
    assert [backoff.next_delay() for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    backoff.reset()
    assert backoff.next_delay() == 1


def test_backoff_jitter_stays_within_its_fraction():
    backoff = Backoff(initial=1, max=64, jitter=0.5, rng=random.Random(7))
    delays = [backoff.next_delay() for _ in range(10)]
    bases = [1, 2, 4, 8, 16, 32, 64, 64, 64, 64]
    assert all(base / 2 <= d <= base for d, base in zip(delays, bases, strict=True))
    assert len(set(delays)) == len(delays)


async def test_shipper_wants_an_http_url():
    with pytest.raises(ValueError):
        Shipper("collector.example:8080", MemorySpool())
