"""Schema version 5 (file_attached, private_channel_created) rolls out without losing events, as
versions 2 to 4 did (tests/analytics/test_schema_rollout.py, test_schema_rollout_v3.py and
test_schema_rollout_v4.py, whose helpers these tests share).

Real recorders, shippers and collectors on 127.0.0.1. A collector built to read versions 1 to 4
answers as a version-4 collector does ("schemas": [1, 2, 3, 4], 400 for a version-5 line), so it
stands in for one; the first test checks that it does.
"""

from __future__ import annotations

import gzip
import json

import aiohttp

from analytics.recorder import Recorder
from analytics.shipper import Backoff, Shipper, async_collector_schemas

from .test_schema_rollout import app_spool, of_version, start, v1_line, v2_line
from .test_schema_rollout_v3 import v3_line
from .test_schema_rollout_v4 import v4_lines
from .test_shipper import FAST, running, stored

V4 = (1, 2, 3, 4)
V5 = (1, 2, 3, 4, 5)


def v5_lines(pid: str, stream: str) -> list[str]:
    events = [{"event": "file_attached", "schema": 5, "ts": "2024-05-02T10:00:00Z", "pid": pid,
               "size": 1048576, "kind": "image", "files": 2, "stream": stream},
              {"event": "private_channel_created", "schema": 5, "ts": "2024-05-02T10:00:00Z",
               "pid": pid, "dm": True}]
    return [json.dumps(e, sort_keys=True, separators=(",", ":")) for e in events]


def record_five_versions(rec: Recorder) -> list[str]:
    channel, branch = rec.hash_id(b"\x01" * 32), rec.hash_id(b"\x02" * 32)
    rec.record("message_sent", length=0)
    rec.record("file_attached", size=102400, kind="document", files=1, stream=channel)
    rec.record("doc_comment", stream=branch)
    rec.record("private_channel_created", dm=False)
    rec.record("invite_created", uses="one", expires="week")
    rec.record("reaction_added", stream=channel)
    rec.record("file_attached", size=0, kind="image", files=1, stream=channel)
    rec.record("message_sent", length=16)
    return rec.take_batch(100)[1]


async def test_a_version_4_collector_and_a_version_5_one_answer_as_shippers_expect(tmp_path):
    old = await start(tmp_path / "old", schemas=V4)
    new = await start(tmp_path / "new", schemas=V5)
    pid = "a" * 32
    lines = [v1_line(pid), v2_line(pid), v3_line(pid), *v4_lines(pid), *v5_lines(pid, "b" * 32)]
    body = gzip.compress(("\n".join(lines) + "\n").encode())
    headers = {"Content-Encoding": "gzip"}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(old.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": list(V4)}
            async with http.post(old.url + "/v1/events", data=body, headers=headers) as resp:
                assert resp.status == 400
                assert "line 6: schema: version 5 is not read here" in (await resp.json())["error"]

            async with http.get(new.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": list(V5)}
            async with http.post(new.url + "/v1/events", data=body, headers=headers) as resp:
                assert await resp.json() == {"accepted": 7, "dropped": 0, "schemas": list(V5)}
            assert await async_collector_schemas(old.url, session=http) == set(V4)
            assert await async_collector_schemas(new.url, session=http) == set(V5)
    finally:
        await old.async_close()
        await new.async_close()
    assert stored(tmp_path / "old") == []
    assert stored(tmp_path / "new") == sorted(lines)


async def test_upgrading_a_version_4_collector_lets_the_file_events_through_and_none_is_lost(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record_five_versions(rec)
    assert [len(of_version(recorded, v)) for v in V5] == [2, 1, 1, 1, 3]
    out = tmp_path / "events"
    v4 = await start(out, schemas=V4)
    port = v4.port
    shipper = Shipper(v4.url, spool, interval=3600, backoff=Backoff(**FAST),
                      schemas_recheck=0.0)
    v5 = None
    try:
        async with running(shipper):
            await spool.until(lambda: rec.status().spooled == 3, "the versions 1 to 4 to ship")
            assert stored(out) == sorted(text for text in recorded
                                         if json.loads(text)["schema"] < 5)
            assert rec.schemas() == [5] and shipper.schemas == set(V4)

            await v4.async_close()  # the maintainer upgrades the collector to version 5
            v5 = await start(out, port, schemas=V5)
            shipper.wake()
            await spool.until(spool.empty, "the file and channel events to ship after the upgrade")
    finally:
        for collector in (v4, v5):
            if collector is not None:
                await collector.async_close()
    assert stored(out) == sorted(recorded)
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == set(V5)
    assert sum(c.stats.rejected_batches for c in (v4, v5)) == 0


async def test_a_collector_downgraded_to_version_4_makes_the_file_events_wait(tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    out = tmp_path / "events"
    new = await start(out, schemas=V5)
    port = new.port
    shipper = Shipper(new.url, spool, interval=3600, backoff=Backoff(**FAST))
    old = None
    try:
        async with running(shipper):
            rec.record("message_sent", length=0)
            shipper.wake()
            await spool.until(spool.empty, "a first batch, whose answer names versions 1 to 5")
            assert shipper.schemas == set(V5)
            first = stored(out)

            await new.async_close()  # a version-4 collector takes its place
            old = await start(out, port, schemas=V4)
            recorded = record_five_versions(rec)
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == 3,
                              "the events of versions 1 to 4 to ship")
    finally:
        await new.async_close()
        if old is not None:
            await old.async_close()
    assert old.stats.rejected_batches == 1  # the mixed batch, once
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == set(V4)
    assert stored(out) == sorted(first + [text for text in recorded
                                          if json.loads(text)["schema"] < 5])
    assert sorted(rec.take_batch(10)[1]) == of_version(recorded, 5)
