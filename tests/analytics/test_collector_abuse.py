"""The collector against abuse by other clients (issue #12, item 11), over real HTTP on 127.0.0.1:
deleting what is not theirs, oversized and slow bodies, too many requests at once."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path

import aiohttp
import pytest

from analytics import collector as collector_module
from analytics.collector import Collector
from tests.support import FakeClock

from .conftest import COLLECTOR_NOW
from .test_collector import (
    CLIENT_TIMEOUT_S,
    DAY2,
    GOOD,
    PID_A,
    PID_B,
    PID_C,
    TOKEN_A,
    TOKEN_B,
    TOKEN_C,
    canonical,
    delete,
    event,
    gz_lines,
    post,
    stored,
    tokens,
    written_files,
)

# Abuse by other clients (issue #12, item 11) --------------------------------------------------

def deleted_list(out: Path) -> list[str]:
    path = out / "_deleted_pids.txt"
    return path.read_text().splitlines() if path.exists() else []


async def test_a_pid_alone_cannot_delete_anything(collector, http):
    """Pids are in every stored event; only the token behind a pid, which never leaves its
    install until it asks for deletion, can have it deleted."""
    batch = [event(PID_A), event(PID_B)]
    assert (await post(http, collector.url, gz_lines([json.dumps(e) for e in batch])))[0] == 200

    status, answer = await delete(http, collector.url, {"pids": [PID_A]})
    assert status == 400 and "not accepted" in answer["error"]
    # A well-formed request with someone else's tokens, or the right token on another day.
    stranger = tokens(("d" * 64, "2024-05-01"), (TOKEN_A, "2024-05-02"))
    assert await delete(http, collector.url, stranger) == (200, {"deleted": 0})
    assert stored(collector.out_dir) == {"date=2024-05-01": [canonical(e) for e in batch]}
    assert deleted_list(collector.out_dir) == []

    assert await delete(http, collector.url, tokens((TOKEN_A, "2024-05-01"))) == (
        200, {"deleted": 1})
    assert stored(collector.out_dir) == {"date=2024-05-01": [canonical(event(PID_B))]}
    assert deleted_list(collector.out_dir) == [f"2024-05-01 {PID_A}"]


async def test_junk_deletions_neither_fill_the_list_nor_block_real_ones(tmp_path, http):
    out = tmp_path / "events"
    c = Collector(out, max_deleted=10, clock=FakeClock(COLLECTOR_NOW))
    await c.async_start("127.0.0.1", 0)
    try:
        batch = [json.dumps(event(PID_A)), json.dumps(event(PID_B))]
        assert (await post(http, c.url, gz_lines(batch)))[0] == 200
        for n in range(100):  # 10 times the list's size, in tokens nobody's events came from
            junk = tokens(*((os.urandom(32).hex(), "2024-05-01") for _ in range(10)))
            assert await delete(http, c.url, junk) == (200, {"deleted": 0}), n
        assert deleted_list(out) == []
        assert await delete(http, c.url, tokens((TOKEN_A, "2024-05-01"))) == (200, {"deleted": 1})
    finally:
        await c.async_close()

    again = Collector(out, max_deleted=10, clock=FakeClock(COLLECTOR_NOW))  # also after a restart
    await again.async_start("127.0.0.1", 0)
    try:
        assert await delete(http, again.url, tokens((TOKEN_B, "2024-05-01"))) == (
            200, {"deleted": 1})
        assert stored(out) == {}
        assert sorted(deleted_list(out)) == [f"2024-05-01 {PID_A}", f"2024-05-01 {PID_B}"]
    finally:
        await again.async_close()


async def test_a_full_deletion_list_forgets_its_oldest_entry_instead_of_refusing(tmp_path, http):
    """Anyone may upload events and then delete them: that must not block anyone else's
    deletion either. Past its size, the list forgets its oldest pids."""
    out = tmp_path / "events"
    c = Collector(out, max_deleted=2, clock=FakeClock(COLLECTOR_NOW))
    await c.async_start("127.0.0.1", 0)
    try:
        batch = gz_lines([json.dumps(event(pid)) for pid in (PID_A, PID_B, PID_C)])
        assert (await post(http, c.url, batch))[0] == 200
        for token in (TOKEN_A, TOKEN_B, TOKEN_C):
            assert await delete(http, c.url, tokens((token, "2024-05-01"))) == (
                200, {"deleted": 1})
        assert deleted_list(out) == [f"2024-05-01 {PID_B}", f"2024-05-01 {PID_C}"]
        assert await post(http, c.url, batch) == (200, {"accepted": 1, "dropped": 2})
    finally:
        await c.async_close()


async def test_deleted_pids_are_forgotten_once_their_day_is_out_of_the_window(tmp_path, http):
    out = tmp_path / "events"
    out.mkdir()
    # An older collector's list (a pid a line) is read, and kept for a whole window from now.
    (out / "_deleted_pids.txt").write_text(f"{PID_C}\n")
    clock = FakeClock(COLLECTOR_NOW)
    c = Collector(out, clock=clock)
    await c.async_start("127.0.0.1", 0)
    try:
        assert deleted_list(out) == [f"2024-05-03 {PID_C}"]
        assert (await post(http, c.url, gz_lines([json.dumps(event(PID_A, ts=DAY2))])))[0] == 200
        assert await delete(http, c.url, tokens((TOKEN_A, "2024-05-02"))) == (200, {"deleted": 1})
        assert await post(http, c.url, gz_lines([json.dumps(event(PID_C))])) == (
            200, {"accepted": 0, "dropped": 1})
    finally:
        await c.async_close()
    assert deleted_list(out) == [f"2024-05-03 {PID_C}", f"2024-05-02 {PID_A}"]

    # 2024-05-02 is now older than any event the collector accepts: nothing left to drop.
    clock.now += (collector_module.MAX_EVENT_AGE.days + 1) * 86_400
    later = Collector(out, clock=clock)
    await later.async_start("127.0.0.1", 0)
    await later.async_close()
    assert deleted_list(out) == [f"2024-05-03 {PID_C}"]


@pytest.mark.parametrize("ts", ["0001-01-01T00:00:00Z", "9999-12-31T23:00:00Z",
                                "2023-03-30T11:00:00Z", "2024-05-04T13:00:00Z"])
async def test_event_times_far_from_the_collectors_clock_are_refused(collector, http, ts):
    """The collector's clock is 2024-05-03T12:00Z: it takes events from 400 days back,
    2023-03-30T12:00Z, to a day ahead, 2024-05-04T12:00Z."""
    body = gz_lines([GOOD, json.dumps(event(ts=ts))])
    status, answer = await post(http, collector.url, body)
    assert status == 400
    assert f"line 2: ts {ts} is outside the accepted window" in answer["error"]
    assert "2023-03-30T12:00:00Z to 2024-05-04T12:00:00Z" in answer["error"]
    assert list(collector.out_dir.iterdir()) == []


async def test_events_at_the_edges_of_the_window_are_accepted(collector, http):
    edges = [event(ts="2023-03-30T12:00:00Z"), event(ts="2024-05-04T12:00:00Z")]
    status, answer = await post(http, collector.url, gz_lines([json.dumps(e) for e in edges]))
    assert (status, answer) == (200, {"accepted": 2, "dropped": 0})
    assert sorted(stored(collector.out_dir)) == ["date=2023-03-30", "date=2024-05-04"]


async def test_one_batch_makes_at_most_max_days_folders(collector, http):
    from datetime import date, timedelta

    limit = collector_module.MAX_DAYS_PER_BATCH
    days = [(date(2024, 5, 3) - timedelta(days=n)).isoformat() for n in range(limit + 1)]
    lines = [json.dumps(event(ts=f"{day}T10:00:00Z")) for day in days]
    status, answer = await post(http, collector.url, gz_lines(lines))
    assert status == 413
    assert f"line {limit + 1}: the batch spans more than {limit} days" in answer["error"]
    assert list(collector.out_dir.iterdir()) == []

    assert await post(http, collector.url, gz_lines(lines[:limit] * 3)) == (
        200, {"accepted": 3 * limit, "dropped": 0})
    assert len(stored(collector.out_dir)) == limit


class SlowUpload:
    """A client whose upload trickles in and never ends: one byte of a valid gzip body every
    TRICKLE_S (pacing a simulated sender, not waiting for anything), from its own address."""

    TRICKLE_S = 0.2

    def __init__(self, port: int, address: str):
        self.port, self.address = port, address
        self.answer: asyncio.Task | None = None
        self._trickle: asyncio.Task | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def start(self) -> SlowUpload:
        """Returns once the collector's handler has started reading the body."""
        reader, self._writer = await asyncio.open_connection(
            "127.0.0.1", self.port, local_addr=(self.address, 0))
        body = gz_lines([json.dumps(event(f"{i:064x}"[:32])) for i in range(2000)])
        self._writer.write(b"POST /v1/events HTTP/1.1\r\nHost: collector\r\n"
                           b"Content-Encoding: gzip\r\nExpect: 100-continue\r\n"
                           b"Content-Length: %d\r\n\r\n" % len(body))
        await self._writer.drain()
        status = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), CLIENT_TIMEOUT_S)
        assert status.startswith(b"HTTP/1.1 100 "), status
        self.answer = asyncio.ensure_future(reader.readuntil(b"\r\n\r\n"))
        self._trickle = asyncio.ensure_future(self._send(body))
        return self

    async def _send(self, body: bytes) -> None:
        assert self._writer is not None
        for i in range(len(body) - 1):  # never the last byte
            self._writer.write(body[i:i + 1])
            await self._writer.drain()
            await asyncio.sleep(self.TRICKLE_S)

    async def close(self) -> None:
        for task in (self._trickle, self.answer):
            if task is not None:
                task.cancel()
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(ConnectionError):
                await self._writer.wait_closed()


@contextlib.asynccontextmanager
async def slow_uploads(port: int, addresses: list[str]):
    uploads: list[SlowUpload] = []
    try:
        for address in addresses:
            uploads.append(await SlowUpload(port, address).start())
        yield uploads
    finally:
        for upload in uploads:
            await upload.close()


@contextlib.asynccontextmanager
async def client_at(address: str):
    """An HTTP client whose connections come from this loopback address."""
    connector = aiohttp.TCPConnector(local_addr=(address, 0))
    async with aiohttp.ClientSession(
            connector=connector, timeout=aiohttp.ClientTimeout(total=CLIENT_TIMEOUT_S)) as s:
        yield s


async def test_slow_uploads_do_not_hold_up_other_clients(collector, http):
    """Eight uploads from four addresses trickle in; another client's batch is answered at once,
    while they are all still open."""
    addresses = [f"127.0.0.{2 + i // 2}" for i in range(8)]
    async with slow_uploads(collector.port, addresses) as slow:
        status, answer = await post(http, collector.url, gz_lines([GOOD]))
        assert (status, answer) == (200, {"accepted": 1, "dropped": 0})
        assert not any(upload.answer.done() for upload in slow)


async def test_one_address_gets_only_its_share_of_requests(collector, http):
    share = collector_module.MAX_REQUESTS_PER_CLIENT
    async with slow_uploads(collector.port, ["127.0.0.2"] * share) as slow:
        async with client_at("127.0.0.2") as same:
            async with same.post(collector.url + "/v1/events", data=gz_lines([GOOD]),
                                 headers={"Content-Encoding": "gzip"}) as resp:
                assert resp.status == 429, await resp.text()
                assert "requests at once" in (await resp.json())["error"]
                assert int(resp.headers["Retry-After"]) > 0
            assert (await delete(same, collector.url, tokens((TOKEN_A, "2024-05-01"))))[0] == 429
        assert await post(http, collector.url, gz_lines([GOOD])) == (
            200, {"accepted": 1, "dropped": 0})
        assert not any(upload.answer.done() for upload in slow)


async def test_a_body_that_never_ends_is_cut_off_and_frees_its_slot(collector, monkeypatch):
    monkeypatch.setattr(collector_module, "BODY_READ_TIMEOUT_S", 0.5)
    share = collector_module.MAX_REQUESTS_PER_CLIENT
    async with slow_uploads(collector.port, ["127.0.0.2"] * share) as slow:
        for upload in slow:
            head = await asyncio.wait_for(upload.answer, CLIENT_TIMEOUT_S)
            assert head.startswith(b"HTTP/1.1 408 "), head
        async with client_at("127.0.0.2") as same:
            assert await post(same, collector.url, gz_lines([GOOD])) == (
                200, {"accepted": 1, "dropped": 0})


async def test_bodies_held_in_memory_are_bounded_for_all_clients_together(tmp_path, http):
    c = Collector(tmp_path / "events", max_buffered=64 * 1024, clock=FakeClock(COLLECTOR_NOW))
    await c.async_start("127.0.0.1", 0)
    try:
        big = [json.dumps(event(length=64)) for _ in range(2000)]  # about 160 kB inflated
        async with http.post(c.url + "/v1/events", data=gz_lines(big),
                             headers={"Content-Encoding": "gzip"}) as resp:
            assert resp.status == 503 and "busy" in (await resp.json())["error"]
            assert int(resp.headers["Retry-After"]) > 0
        assert written_files(c.out_dir) == []
        # What that request held was given back.
        for _ in range(3):
            assert await post(http, c.url, gz_lines(big[:500])) == (
                200, {"accepted": 500, "dropped": 0})
    finally:
        await c.async_close()
