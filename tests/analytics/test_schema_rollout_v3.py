"""Schema version 3 (doc_comment) rolls out without losing events, as version 2 did
(tests/analytics/test_schema_rollout.py, whose helpers these tests share).

Real recorders, shippers and collectors on 127.0.0.1. A collector built to read versions 1 and 2
answers as a version-2 collector does ("schemas": [1, 2], 400 for a version-3 line), so it
stands in for one; the first test checks that it does.
"""

from __future__ import annotations

import gzip
import json

import aiohttp

from analytics.recorder import Recorder
from analytics.shipper import Backoff, Shipper, async_collector_schemas

from .test_schema_rollout import app_spool, of_version, start, v1_line, v2_line
from .test_shipper import FAST, running, stored


def v3_line(pid: str) -> str:
    return json.dumps({"event": "doc_comment", "schema": 3, "ts": "2024-05-02T10:00:00Z",
                       "pid": pid, "stream": "cd" * 16}, sort_keys=True, separators=(",", ":"))


def record_three_versions(rec: Recorder) -> list[str]:
    channel, branch = rec.hash_id(b"\x01" * 32), rec.hash_id(b"\x02" * 32)
    rec.record("message_sent", length=16)
    rec.record("doc_comment", stream=branch)
    rec.record("doc_commit", stream=branch, size=512)
    rec.record("thread_reply", length=16, broadcast=False, stream=channel)
    rec.record("doc_comment", stream=branch)
    rec.record("reaction_added", stream=channel)
    rec.record("message_sent", length=256)
    return rec.take_batch(100)[1]


async def test_a_version_2_collector_and_a_version_3_one_answer_as_shippers_expect(tmp_path):
    old = await start(tmp_path / "old", schemas=(1, 2))
    new = await start(tmp_path / "new", schemas=(1, 2, 3))
    pid = "a" * 32
    body = gzip.compress(f"{v1_line(pid)}\n{v2_line(pid)}\n{v3_line(pid)}\n".encode())
    headers = {"Content-Encoding": "gzip"}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(old.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": [1, 2]}
            async with http.post(old.url + "/v1/events", data=body, headers=headers) as resp:
                assert resp.status == 400
                assert "line 3: schema: version 3 is not read here" in (await resp.json())["error"]

            async with http.get(new.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": [1, 2, 3]}
            async with http.post(new.url + "/v1/events", data=body, headers=headers) as resp:
                assert await resp.json() == {"accepted": 3, "dropped": 0, "schemas": [1, 2, 3]}
            assert await async_collector_schemas(old.url, session=http) == {1, 2}
            assert await async_collector_schemas(new.url, session=http) == {1, 2, 3}
    finally:
        await old.async_close()
        await new.async_close()
    assert stored(tmp_path / "old") == []
    assert stored(tmp_path / "new") == sorted([v1_line(pid), v2_line(pid), v3_line(pid)])


async def test_each_upgrade_of_the_collector_lets_the_next_version_through_and_none_is_lost(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record_three_versions(rec)
    assert [len(of_version(recorded, v)) for v in (1, 2, 3)] == [3, 2, 2]
    out = tmp_path / "events"
    v1 = await start(out, schemas=(1,))
    port = v1.port
    shipper = Shipper(v1.url, spool, interval=3600, backoff=Backoff(**FAST),
                      schemas_recheck=0.0)
    v2 = v3 = None
    try:
        async with running(shipper):
            await spool.until(lambda: rec.status().spooled == 4, "the version-1 events to ship")
            assert stored(out) == of_version(recorded, 1)
            assert rec.schemas() == [2, 3]

            await v1.async_close()  # the maintainer upgrades the collector to version 2
            v2 = await start(out, port, schemas=(1, 2))
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == 2, "the version-2 events to ship")
            assert stored(out) == sorted(of_version(recorded, 1) + of_version(recorded, 2))
            assert rec.schemas() == [3] and shipper.schemas == {1, 2}

            await v2.async_close()  # and then to version 3
            v3 = await start(out, port, schemas=(1, 2, 3))
            shipper.wake()
            await spool.until(spool.empty, "the doc_comment events to ship after the upgrade")
    finally:
        for collector in (v1, v2, v3):
            if collector is not None:
                await collector.async_close()
    assert stored(out) == sorted(recorded)
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == {1, 2, 3}
    assert sum(c.stats.rejected_batches for c in (v1, v2, v3)) == 0


async def test_a_collector_downgraded_to_version_2_makes_doc_comment_wait_instead_of_dropping(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    out = tmp_path / "events"
    new = await start(out, schemas=(1, 2, 3))
    port = new.port
    shipper = Shipper(new.url, spool, interval=3600, backoff=Backoff(**FAST))
    old = None
    try:
        async with running(shipper):
            rec.record("message_sent", length=0)
            shipper.wake()
            await spool.until(spool.empty, "a first batch, whose answer names versions 1 to 3")
            assert shipper.schemas == {1, 2, 3}
            first = stored(out)

            await new.async_close()  # a version-2 collector takes its place
            old = await start(out, port, schemas=(1, 2))
            recorded = record_three_versions(rec)
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == 2,
                              "the version-1 and version-2 events to ship")
    finally:
        await new.async_close()
        if old is not None:
            await old.async_close()
    assert old.stats.rejected_batches == 1  # the mixed batch, once
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == {1, 2}
    assert stored(out) == sorted(first + of_version(recorded, 1) + of_version(recorded, 2))
    assert sorted(rec.take_batch(10)[1]) == of_version(recorded, 3)
