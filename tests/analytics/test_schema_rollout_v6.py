"""Schema version 6 (channels_kept, history_fetched) rolls out without losing events, as versions
2 to 5 did (tests/analytics/test_schema_rollout.py and test_schema_rollout_v3.py to
test_schema_rollout_v5.py, whose helpers these tests share).

Real recorders, shippers and collectors on 127.0.0.1. A collector built to read versions 1 to 5
answers as a version-5 collector does ("schemas": [1, 2, 3, 4, 5], 400 for a version-6 line), so
it stands in for one; the first test checks that it does.
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
from .test_schema_rollout_v5 import v5_lines
from .test_shipper import FAST, running, stored

V5 = (1, 2, 3, 4, 5)
V6 = (1, 2, 3, 4, 5, 6)


def v6_lines(pid: str) -> list[str]:
    events = [{"event": "channels_kept", "schema": 6, "ts": "2024-05-02T10:00:00Z", "pid": pid,
               "all": False, "channels": 2, "documents": 1},
              {"event": "history_fetched", "schema": 6, "ts": "2024-05-02T10:00:00Z",
               "pid": pid, "objects": 10000, "seconds": 10, "kept_all": True}]
    return [json.dumps(e, sort_keys=True, separators=(",", ":")) for e in events]


def record_six_versions(rec: Recorder) -> list[str]:
    channel, branch = rec.hash_id(b"\x01" * 32), rec.hash_id(b"\x02" * 32)
    rec.record("message_sent", length=0)
    rec.record("history_fetched", objects=1000, seconds=3, kept_all=True)
    rec.record("doc_comment", stream=branch)
    rec.record("file_attached", size=0, kind="image", files=1, stream=channel)
    rec.record("channels_kept", all=False, channels=1, documents=0)
    rec.record("invite_created", uses="one", expires="week")
    rec.record("reaction_added", stream=channel)
    rec.record("channels_kept", all=True, channels=0, documents=0)
    rec.record("message_sent", length=16)
    return rec.take_batch(100)[1]


async def test_a_version_5_collector_and_a_version_6_one_answer_as_shippers_expect(tmp_path):
    old = await start(tmp_path / "old", schemas=V5)
    new = await start(tmp_path / "new", schemas=V6)
    pid = "a" * 32
    lines = [v1_line(pid), v2_line(pid), v3_line(pid), *v4_lines(pid), *v5_lines(pid, "b" * 32),
             *v6_lines(pid)]
    body = gzip.compress(("\n".join(lines) + "\n").encode())
    headers = {"Content-Encoding": "gzip"}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(old.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": list(V5)}
            async with http.post(old.url + "/v1/events", data=body, headers=headers) as resp:
                assert resp.status == 400
                assert "line 8: schema: version 6 is not read here" in (await resp.json())["error"]

            async with http.get(new.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": list(V6)}
            async with http.post(new.url + "/v1/events", data=body, headers=headers) as resp:
                assert await resp.json() == {"accepted": 9, "dropped": 0, "schemas": list(V6)}
            assert await async_collector_schemas(old.url, session=http) == set(V5)
            assert await async_collector_schemas(new.url, session=http) == set(V6)
    finally:
        await old.async_close()
        await new.async_close()
    assert stored(tmp_path / "old") == []
    assert stored(tmp_path / "new") == sorted(lines)


async def test_upgrading_a_version_5_collector_lets_the_kept_and_history_events_through(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record_six_versions(rec)
    assert [len(of_version(recorded, v)) for v in V6] == [2, 1, 1, 1, 1, 3]
    out = tmp_path / "events"
    v5 = await start(out, schemas=V5)
    port = v5.port
    shipper = Shipper(v5.url, spool, interval=3600, backoff=Backoff(**FAST),
                      schemas_recheck=0.0)
    v6 = None
    try:
        async with running(shipper):
            await spool.until(lambda: rec.status().spooled == 3, "the versions 1 to 5 to ship")
            assert stored(out) == sorted(text for text in recorded
                                         if json.loads(text)["schema"] < 6)
            assert rec.schemas() == [6] and shipper.schemas == set(V5)

            await v5.async_close()  # the maintainer upgrades the collector to version 6
            v6 = await start(out, port, schemas=V6)
            shipper.wake()
            await spool.until(spool.empty, "the kept and history events to ship after the upgrade")
    finally:
        for collector in (v5, v6):
            if collector is not None:
                await collector.async_close()
    assert stored(out) == sorted(recorded)
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == set(V6)
    assert sum(c.stats.rejected_batches for c in (v5, v6)) == 0


async def test_a_collector_downgraded_to_version_5_makes_the_kept_and_history_events_wait(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    out = tmp_path / "events"
    new = await start(out, schemas=V6)
    port = new.port
    shipper = Shipper(new.url, spool, interval=3600, backoff=Backoff(**FAST))
    old = None
    try:
        async with running(shipper):
            rec.record("message_sent", length=0)
            shipper.wake()
            await spool.until(spool.empty, "a first batch, whose answer names versions 1 to 6")
            assert shipper.schemas == set(V6)
            first = stored(out)

            await new.async_close()  # a version-5 collector takes its place
            old = await start(out, port, schemas=V5)
            recorded = record_six_versions(rec)
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == 3,
                              "the events of versions 1 to 5 to ship")
    finally:
        await new.async_close()
        if old is not None:
            await old.async_close()
    assert old.stats.rejected_batches == 1  # the mixed batch, once
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == set(V5)
    assert stored(out) == sorted(first + [text for text in recorded
                                          if json.loads(text)["schema"] < 6])
    assert sorted(rec.take_batch(10)[1]) == of_version(recorded, 6)
