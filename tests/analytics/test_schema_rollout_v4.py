"""Schema version 4 (invite_created, member_admitted) rolls out without losing events, as
versions 2 and 3 did (tests/analytics/test_schema_rollout.py and test_schema_rollout_v3.py,
whose helpers these tests share).

Real recorders, shippers and collectors on 127.0.0.1. A collector built to read versions 1 to 3
answers as a version-3 collector does ("schemas": [1, 2, 3], 400 for a version-4 line), so it
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
from .test_shipper import FAST, running, stored


def v4_lines(pid: str) -> list[str]:
    events = [{"event": "invite_created", "schema": 4, "ts": "2024-05-02T10:00:00Z", "pid": pid,
               "uses": "one", "expires": "week"},
              {"event": "member_admitted", "schema": 4, "ts": "2024-05-02T10:00:00Z", "pid": pid,
               "how": "invite"}]
    return [json.dumps(e, sort_keys=True, separators=(",", ":")) for e in events]


def record_four_versions(rec: Recorder) -> list[str]:
    channel, branch = rec.hash_id(b"\x01" * 32), rec.hash_id(b"\x02" * 32)
    rec.record("message_sent", length=16)
    rec.record("invite_created", uses="few", expires="day")
    rec.record("doc_comment", stream=branch)
    rec.record("member_admitted", how="invite")
    rec.record("reaction_added", stream=channel)
    rec.record("member_admitted", how="personal")
    rec.record("message_sent", length=256)
    return rec.take_batch(100)[1]


async def test_a_version_3_collector_and_a_version_4_one_answer_as_shippers_expect(tmp_path):
    old = await start(tmp_path / "old", schemas=(1, 2, 3))
    new = await start(tmp_path / "new", schemas=(1, 2, 3, 4))
    pid = "a" * 32
    lines = [v1_line(pid), v2_line(pid), v3_line(pid), *v4_lines(pid)]
    body = gzip.compress(("\n".join(lines) + "\n").encode())
    headers = {"Content-Encoding": "gzip"}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(old.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": [1, 2, 3]}
            async with http.post(old.url + "/v1/events", data=body, headers=headers) as resp:
                assert resp.status == 400
                assert "line 4: schema: version 4 is not read here" in (await resp.json())["error"]

            async with http.get(new.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": [1, 2, 3, 4]}
            async with http.post(new.url + "/v1/events", data=body, headers=headers) as resp:
                assert await resp.json() == {"accepted": 5, "dropped": 0, "schemas": [1, 2, 3, 4]}
            assert await async_collector_schemas(old.url, session=http) == {1, 2, 3}
            assert await async_collector_schemas(new.url, session=http) == {1, 2, 3, 4}
    finally:
        await old.async_close()
        await new.async_close()
    assert stored(tmp_path / "old") == []
    assert stored(tmp_path / "new") == sorted(lines)


async def test_upgrading_a_version_3_collector_lets_the_invite_events_through_and_none_is_lost(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record_four_versions(rec)
    assert [len(of_version(recorded, v)) for v in (1, 2, 3, 4)] == [2, 1, 1, 3]
    out = tmp_path / "events"
    v3 = await start(out, schemas=(1, 2, 3))
    port = v3.port
    shipper = Shipper(v3.url, spool, interval=3600, backoff=Backoff(**FAST),
                      schemas_recheck=0.0)
    v4 = None
    try:
        async with running(shipper):
            await spool.until(lambda: rec.status().spooled == 3, "the versions 1 to 3 to ship")
            assert stored(out) == sorted(of_version(recorded, 1) + of_version(recorded, 2)
                                         + of_version(recorded, 3))
            assert rec.schemas() == [4] and shipper.schemas == {1, 2, 3}

            await v3.async_close()  # the maintainer upgrades the collector to version 4
            v4 = await start(out, port, schemas=(1, 2, 3, 4))
            shipper.wake()
            await spool.until(spool.empty, "the invite events to ship after the upgrade")
    finally:
        for collector in (v3, v4):
            if collector is not None:
                await collector.async_close()
    assert stored(out) == sorted(recorded)
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == {1, 2, 3, 4}
    assert sum(c.stats.rejected_batches for c in (v3, v4)) == 0


async def test_a_collector_downgraded_to_version_3_makes_the_invite_events_wait(tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    out = tmp_path / "events"
    new = await start(out, schemas=(1, 2, 3, 4))
    port = new.port
    shipper = Shipper(new.url, spool, interval=3600, backoff=Backoff(**FAST))
    old = None
    try:
        async with running(shipper):
            rec.record("message_sent", length=0)
            shipper.wake()
            await spool.until(spool.empty, "a first batch, whose answer names versions 1 to 4")
            assert shipper.schemas == {1, 2, 3, 4}
            first = stored(out)

            await new.async_close()  # a version-3 collector takes its place
            old = await start(out, port, schemas=(1, 2, 3))
            recorded = record_four_versions(rec)
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == 3,
                              "the events of versions 1 to 3 to ship")
    finally:
        await new.async_close()
        if old is not None:
            await old.async_close()
    assert old.stats.rejected_batches == 1  # the mixed batch, once
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == {1, 2, 3}
    assert stored(out) == sorted(first + [text for text in recorded
                                          if json.loads(text)["schema"] < 4])
    assert sorted(rec.take_batch(10)[1]) == of_version(recorded, 4)
