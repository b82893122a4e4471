"""Schema version 2 rolls out without losing events (analytics.events, "Versions").

Real recorders, shippers and collectors on 127.0.0.1. A collector built to read version 1 alone
answers as the collectors before version 2 did (no "schemas" in its answers, 400 for a version-2
line), so it stands in for an old collector; the first test checks that it does.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import aiohttp
from aiohttp import web

from analytics.collector import Collector
from analytics.recorder import Recorder
from analytics.shipper import Backoff, Shipper, async_collector_schemas, async_ship
from tests.support import FakeClock

from .conftest import COLLECTOR_NOW
from .test_shipper import FAST, RecorderSpool, fake_collector, running, stored

HOUR = 3600.0
OLD_SPOOL_TABLE = ("CREATE TABLE IF NOT EXISTS events "  # the recorder's table before version 2
                   "(seq INTEGER PRIMARY KEY AUTOINCREMENT, line TEXT NOT NULL)")


def v1_line(pid: str, length: int = 16) -> str:
    return json.dumps({"event": "message_sent", "schema": 1, "ts": "2024-05-02T10:00:00Z",
                       "pid": pid, "length": length}, sort_keys=True, separators=(",", ":"))


def v2_line(pid: str) -> str:
    return json.dumps({"event": "reaction_added", "schema": 2, "ts": "2024-05-02T10:00:00Z",
                       "pid": pid, "stream": "ab" * 16}, sort_keys=True, separators=(",", ":"))


async def start(out: Path, port: int = 0, *, schemas=(1, 2)) -> Collector:
    collector = Collector(out, clock=FakeClock(COLLECTOR_NOW), schemas=schemas)
    await collector.async_start("127.0.0.1", port)
    return collector


def app_spool(folder: Path) -> RecorderSpool:
    """An opted-in install whose events are of the hour before the collectors' clock."""
    recorder = Recorder(folder, clock=FakeClock(COLLECTOR_NOW - HOUR))
    recorder.enable("http://127.0.0.1:9")
    return RecorderSpool(recorder)


def record_both_versions(rec: Recorder) -> list[str]:
    stream = rec.hash_id(b"\x01" * 32)
    rec.record("message_sent", length=16)
    rec.record("thread_reply", length=16, broadcast=False, stream=stream)
    rec.record("channel_joined", stream=stream)
    rec.record("reaction_added", stream=stream)
    rec.record("message_edited", length=64, stream=stream)
    rec.record("message_sent", length=256)
    return rec.take_batch(100)[1]


def of_version(lines: list[str], version: int) -> list[str]:
    return sorted(text for text in lines if json.loads(text)["schema"] == version)


async def test_an_old_collector_and_a_new_one_answer_as_shippers_expect(tmp_path):
    old = await start(tmp_path / "old", schemas=(1,))
    new = await start(tmp_path / "new")
    body = gzip.compress(f"{v1_line('a' * 32)}\n{v2_line('a' * 32)}\n".encode())
    headers = {"Content-Encoding": "gzip"}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(old.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True}  # as before version 2
            async with http.post(old.url + "/v1/events", data=body, headers=headers) as resp:
                assert resp.status == 400
                assert "line 2: schema: version 2 is not read here" in (await resp.json())["error"]
            async with http.post(old.url + "/v1/events", data=gzip.compress(
                    v1_line("a" * 32).encode()), headers=headers) as resp:
                assert await resp.json() == {"accepted": 1, "dropped": 0}

            async with http.get(new.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": [1, 2]}
            async with http.post(new.url + "/v1/events", data=body, headers=headers) as resp:
                assert await resp.json() == {"accepted": 2, "dropped": 0, "schemas": [1, 2]}
            assert await async_collector_schemas(old.url, session=http) == {1}
            assert await async_collector_schemas(new.url, session=http) == {1, 2}
        # What an older shipper sends and reads: version-1 lines, the "accepted" count.
        assert await async_ship(None, new.url, [v1_line("b" * 32)]) == 1
    finally:
        await old.async_close()
        await new.async_close()
    assert stored(tmp_path / "new") == sorted([v1_line("a" * 32), v2_line("a" * 32),
                                               v1_line("b" * 32)])


async def test_an_old_collector_gets_version_1_and_the_rest_waits_for_its_upgrade(tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record_both_versions(rec)
    out = tmp_path / "events"
    old = await start(out, schemas=(1,))
    port = old.port
    shipper = Shipper(old.url, spool, interval=3600, backoff=Backoff(**FAST),
                      schemas_recheck=0.0)
    new = None
    try:
        async with running(shipper):
            await spool.until(lambda: rec.status().spooled == 3, "the version-1 events to ship")
            assert stored(out) == of_version(recorded, 1)
            assert rec.schemas() == [2]
            assert old.stats.rejected_batches == 0 and shipper.stats.dropped_batches == 0

            await old.async_close()  # the maintainer upgrades the collector
            new = await start(out, port)
            shipper.wake()
            await spool.until(spool.empty, "the version-2 events to ship after the upgrade")
    finally:
        await old.async_close()
        if new is not None:
            await new.async_close()
    assert stored(out) == sorted(recorded)
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == {1, 2}


async def test_a_downgraded_collector_makes_version_2_events_wait_instead_of_dropping(tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    out = tmp_path / "events"
    new = await start(out)
    port = new.port
    shipper = Shipper(new.url, spool, interval=3600, backoff=Backoff(**FAST))
    old = None
    try:
        async with running(shipper):
            rec.record("message_sent", length=0)
            shipper.wake()
            await spool.until(spool.empty, "a first batch, whose answer names versions 1 and 2")
            assert shipper.schemas == {1, 2}
            first = stored(out)

            await new.async_close()  # an older collector takes its place
            old = await start(out, port, schemas=(1,))
            recorded = record_both_versions(rec)
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == 3, "the version-1 events to ship")
    finally:
        await new.async_close()
        if old is not None:
            await old.async_close()
    assert old.stats.rejected_batches == 1  # the mixed batch, once
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == {1}
    assert stored(out) == sorted(first + of_version(recorded, 1))
    assert sorted(rec.take_batch(10)[1]) == of_version(recorded, 2)


async def test_a_collector_whose_health_path_is_not_passed_on_still_gets_version_1(tmp_path):
    """A proxy in front of an old collector may pass on only the paths older shippers used
    (here: no GET /v1/health, a 404); version-1 events must not wait on that."""
    received: list[str] = []

    async def old_collector(request: web.Request) -> web.Response:
        lines = (await request.text()).splitlines()  # aiohttp inflates it
        if any(json.loads(text)["schema"] != 1 for text in lines):
            return web.json_response({"error": "line 1: schema: 1 was expected"}, status=400)
        received.extend(lines)
        return web.json_response({"accepted": len(lines), "dropped": 0})

    spool = app_spool(tmp_path / "app")
    recorded = record_both_versions(spool.recorder)
    async with fake_collector(old_collector) as url:
        shipper = Shipper(url, spool, interval=3600, backoff=Backoff(**FAST),
                          schemas_recheck=0.0)
        async with running(shipper):
            await spool.until(lambda: spool.recorder.status().spooled == 3,
                              "the version-1 events to ship")
    assert sorted(received) == of_version(recorded, 1)
    assert sorted(spool.recorder.take_batch(10)[1]) == of_version(recorded, 2)
    assert shipper.stats.failures == 0 and shipper.stats.dropped_batches == 0


def test_an_older_apps_spool_is_taken_over_and_an_older_app_never_sees_version_2(tmp_path):
    folder = tmp_path / "analytics"
    folder.mkdir()
    old_lines = [v1_line("c" * 32, n) for n in (0, 16, 64)]
    with sqlite3.connect(folder / "spool.sqlite3") as conn:  # what the older recorder wrote
        conn.execute(OLD_SPOOL_TABLE)
        conn.executemany("INSERT INTO events (line) VALUES (?)", [(t,) for t in old_lines])
    conn.close()
    rec = Recorder(tmp_path)
    rec.enable()
    assert rec.record("reaction_added", stream=rec.hash_id(b"\x01" * 32))
    assert rec.schemas() == [1, 2] and rec.status().spooled == 4
    batch_id, lines = rec.take_batch(10, [1])
    assert lines == old_lines
    rec.ack(batch_id)
    assert rec.schemas() == [2]
    rec.close()

    # The older app again, on the same data folder: its spool table is empty, and what it
    # records there is version 1, taken over by the next upgrade after the waiting event.
    with sqlite3.connect(folder / "spool.sqlite3") as conn:
        conn.execute(OLD_SPOOL_TABLE)
        assert conn.execute("SELECT line FROM events ORDER BY seq").fetchall() == []
        conn.execute("INSERT INTO events (line) VALUES (?)", (v1_line("d" * 32),))
    conn.close()
    lines = Recorder(tmp_path).take_batch(10)[1]
    assert [json.loads(text)["event"] for text in lines] == ["reaction_added", "message_sent"]
    assert lines[1] == v1_line("d" * 32)
