"""Each schema version rolls out without losing events (analytics.events, "Versions").

Real recorders, shippers and collectors on 127.0.0.1. A collector built to read versions 1 to
N-1 answers as a collector of version N-1 does; one built to read version 1 alone answers as the
collectors before version 2 did (no "schemas" in its answers, 400 for a version-2 line), so they
stand in for the older collectors; the first tests check that they do. Versions 2 to 6 are the
same tests over the table below (VERSION_LINES, RECORDED), with version 2's own cases (collectors
that predate "schemas", an older app's spool) beside them.
"""

from __future__ import annotations

import gzip
import json
import sqlite3
from pathlib import Path

import aiohttp
import pytest
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


def line(event: dict) -> str:
    return json.dumps(event, sort_keys=True, separators=(",", ":"))


def v1_line(pid: str, length: int = 16) -> str:
    return line({"event": "message_sent", "schema": 1, "ts": "2024-05-02T10:00:00Z",
                 "pid": pid, "length": length})


def v2_line(pid: str) -> str:
    return line({"event": "reaction_added", "schema": 2, "ts": "2024-05-02T10:00:00Z",
                 "pid": pid, "stream": "ab" * 16})


def version_lines(version: int, pid: str) -> list[str]:
    """A line of each type of events `version` brought (one for versions 1 to 3)."""
    day = {"schema": version, "ts": "2024-05-02T10:00:00Z", "pid": pid}
    return [line({"event": name} | day | fields) for name, fields in VERSION_LINES[version]]


VERSION_LINES: dict[int, list[tuple[str, dict]]] = {
    1: [("message_sent", {"length": 16})],
    2: [("reaction_added", {"stream": "ab" * 16})],
    3: [("doc_comment", {"stream": "cd" * 16})],
    4: [("invite_created", {"uses": "one", "expires": "week"}),
        ("member_admitted", {"how": "invite"})],
    5: [("file_attached", {"size": 1048576, "kind": "image", "files": 2, "stream": "b" * 32}),
        ("private_channel_created", {"dm": True})],
    6: [("channels_kept", {"all": False, "channels": 2, "documents": 1}),
        ("history_fetched", {"objects": 10000, "seconds": 10, "kept_all": True})],
}


def upto(version: int) -> tuple[int, ...]:
    return tuple(range(1, version + 1))


def lines_upto(version: int, pid: str) -> list[str]:
    return [text for v in upto(version) for text in version_lines(v, pid)]


async def start(out: Path, port: int = 0, *, schemas=(1, 2)) -> Collector:
    collector = Collector(out, clock=FakeClock(COLLECTOR_NOW), schemas=schemas)
    await collector.async_start("127.0.0.1", port)
    return collector


def app_spool(folder: Path) -> RecorderSpool:
    """An opted-in install whose events are of the hour before the collectors' clock."""
    recorder = Recorder(folder, clock=FakeClock(COLLECTOR_NOW - HOUR))
    recorder.enable("http://127.0.0.1:9")
    return RecorderSpool(recorder)


CHANNEL, BRANCH = "<channel>", "<branch>"  # the recorder's hash of a channel's, a branch's id
# What an app records when a collector of version N is rolled out: events of every version to N.
RECORDED: dict[int, list[tuple[str, dict]]] = {
    2: [("message_sent", {"length": 16}),
        ("thread_reply", {"length": 16, "broadcast": False, "stream": CHANNEL}),
        ("channel_joined", {"stream": CHANNEL}),
        ("reaction_added", {"stream": CHANNEL}),
        ("message_edited", {"length": 64, "stream": CHANNEL}),
        ("message_sent", {"length": 256})],
    3: [("message_sent", {"length": 16}),
        ("doc_comment", {"stream": BRANCH}),
        ("doc_commit", {"stream": BRANCH, "size": 512}),
        ("thread_reply", {"length": 16, "broadcast": False, "stream": CHANNEL}),
        ("doc_comment", {"stream": BRANCH}),
        ("reaction_added", {"stream": CHANNEL}),
        ("message_sent", {"length": 256})],
    4: [("message_sent", {"length": 16}),
        ("invite_created", {"uses": "few", "expires": "day"}),
        ("doc_comment", {"stream": BRANCH}),
        ("member_admitted", {"how": "invite"}),
        ("reaction_added", {"stream": CHANNEL}),
        ("member_admitted", {"how": "personal"}),
        ("message_sent", {"length": 256})],
    5: [("message_sent", {"length": 0}),
        ("file_attached", {"size": 102400, "kind": "document", "files": 1, "stream": CHANNEL}),
        ("doc_comment", {"stream": BRANCH}),
        ("private_channel_created", {"dm": False}),
        ("invite_created", {"uses": "one", "expires": "week"}),
        ("reaction_added", {"stream": CHANNEL}),
        ("file_attached", {"size": 0, "kind": "image", "files": 1, "stream": CHANNEL}),
        ("message_sent", {"length": 16})],
    6: [("message_sent", {"length": 0}),
        ("history_fetched", {"objects": 1000, "seconds": 3, "kept_all": True}),
        ("doc_comment", {"stream": BRANCH}),
        ("file_attached", {"size": 0, "kind": "image", "files": 1, "stream": CHANNEL}),
        ("channels_kept", {"all": False, "channels": 1, "documents": 0}),
        ("invite_created", {"uses": "one", "expires": "week"}),
        ("reaction_added", {"stream": CHANNEL}),
        ("channels_kept", {"all": True, "channels": 0, "documents": 0}),
        ("message_sent", {"length": 16})],
}
# How many events of each version RECORDED[N] holds, versions 1 to N.
RECORDED_PER_VERSION = {2: [3, 3], 3: [3, 2, 2], 4: [2, 1, 1, 3], 5: [2, 1, 1, 1, 3],
                        6: [2, 1, 1, 1, 1, 3]}


def record(rec: Recorder, version: int) -> list[str]:
    """Record RECORDED[version]; the lines the recorder spooled."""
    hashed = {CHANNEL: rec.hash_id(b"\x01" * 32), BRANCH: rec.hash_id(b"\x02" * 32)}
    for name, fields in RECORDED[version]:
        rec.record(name, **{k: hashed.get(v, v) if isinstance(v, str) else v
                            for k, v in fields.items()})
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
    recorded = record(rec, 2)
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
    recorded = record(spool.recorder, 2)
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


# Versions 3 to 6 as version 2, and each version's downgrade -------------------------------------


@pytest.mark.parametrize("version", [3, 4, 5, 6])
async def test_the_collectors_before_and_of_a_version_answer_as_shippers_expect(tmp_path, version):
    old = await start(tmp_path / "old", schemas=upto(version - 1))
    new = await start(tmp_path / "new", schemas=upto(version))
    pid = "a" * 32
    lines = lines_upto(version, pid)
    first_new = len(lines_upto(version - 1, pid)) + 1
    body = gzip.compress(("\n".join(lines) + "\n").encode())
    headers = {"Content-Encoding": "gzip"}
    try:
        async with aiohttp.ClientSession() as http:
            async with http.get(old.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": list(upto(version - 1))}
            async with http.post(old.url + "/v1/events", data=body, headers=headers) as resp:
                assert resp.status == 400
                assert (f"line {first_new}: schema: version {version} is not read here"
                        in (await resp.json())["error"])

            async with http.get(new.url + "/v1/health") as resp:
                assert await resp.json() == {"ok": True, "schemas": list(upto(version))}
            async with http.post(new.url + "/v1/events", data=body, headers=headers) as resp:
                assert await resp.json() == {"accepted": len(lines), "dropped": 0,
                                             "schemas": list(upto(version))}
            assert await async_collector_schemas(old.url, session=http) == set(upto(version - 1))
            assert await async_collector_schemas(new.url, session=http) == set(upto(version))
    finally:
        await old.async_close()
        await new.async_close()
    assert stored(tmp_path / "old") == []
    assert stored(tmp_path / "new") == sorted(lines)


async def test_each_upgrade_of_the_collector_lets_the_next_version_through_and_none_is_lost(
        tmp_path):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record(rec, 3)
    assert [len(of_version(recorded, v)) for v in (1, 2, 3)] == RECORDED_PER_VERSION[3]
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


@pytest.mark.parametrize("version", [4, 5, 6])
async def test_upgrading_the_collector_lets_a_versions_events_through_and_none_is_lost(
        tmp_path, version):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    recorded = record(rec, version)
    assert [len(of_version(recorded, v)) for v in upto(version)] == RECORDED_PER_VERSION[version]
    out = tmp_path / "events"
    old = await start(out, schemas=upto(version - 1))
    port = old.port
    shipper = Shipper(old.url, spool, interval=3600, backoff=Backoff(**FAST),
                      schemas_recheck=0.0)
    new = None
    try:
        async with running(shipper):
            await spool.until(lambda: rec.status().spooled == 3,
                              f"the versions 1 to {version - 1} to ship")
            assert stored(out) == sorted(text for text in recorded
                                         if json.loads(text)["schema"] < version)
            assert rec.schemas() == [version] and shipper.schemas == set(upto(version - 1))

            await old.async_close()  # the maintainer upgrades the collector to `version`
            new = await start(out, port, schemas=upto(version))
            shipper.wake()
            await spool.until(spool.empty, f"the version-{version} events to ship after the upgrade")
    finally:
        for collector in (old, new):
            if collector is not None:
                await collector.async_close()
    assert stored(out) == sorted(recorded)
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == set(upto(version))
    assert sum(c.stats.rejected_batches for c in (old, new)) == 0


@pytest.mark.parametrize("version", [2, 3, 4, 5, 6])
async def test_a_downgraded_collector_makes_a_versions_events_wait_instead_of_dropping(
        tmp_path, version):
    spool = app_spool(tmp_path / "app")
    rec = spool.recorder
    out = tmp_path / "events"
    new = await start(out, schemas=upto(version))
    port = new.port
    shipper = Shipper(new.url, spool, interval=3600, backoff=Backoff(**FAST))
    old = None
    try:
        async with running(shipper):
            rec.record("message_sent", length=0)
            shipper.wake()
            await spool.until(spool.empty,
                              f"a first batch, whose answer names versions 1 to {version}")
            assert shipper.schemas == set(upto(version))
            first = stored(out)

            await new.async_close()  # an older collector takes its place
            old = await start(out, port, schemas=upto(version - 1))
            recorded = record(rec, version)
            waiting = RECORDED_PER_VERSION[version][-1]
            shipper.wake()
            await spool.until(lambda: rec.status().spooled == waiting,
                              f"the events of versions 1 to {version - 1} to ship")
    finally:
        await new.async_close()
        if old is not None:
            await old.async_close()
    assert old.stats.rejected_batches == 1  # the mixed batch, once
    assert shipper.stats.dropped_batches == 0 and shipper.schemas == set(upto(version - 1))
    assert stored(out) == sorted(first + [text for text in recorded
                                          if json.loads(text)["schema"] < version])
    assert sorted(rec.take_batch(10)[1]) == of_version(recorded, version)
