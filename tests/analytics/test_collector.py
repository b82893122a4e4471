"""The collector over real HTTP on 127.0.0.1 (docs/ARCHITECTURE.md "Analytics", "Conventions").

Each test starts a Collector on a free port, talks to it with a real aiohttp client and reads
the files it wrote.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import re
import signal
import sys
import tracemalloc
import zlib
from pathlib import Path

import aiohttp
import pytest

from analytics.collector import MAX_DELETE_TOKENS, Collector
from analytics.events import pid_of_token
from tests.support import FakeClock

from .conftest import CLIENT_TIMEOUT_S, COLLECTOR_NOW

# Each pid is the hash of its install's deletion token of the day (analytics.events).
TOKEN_A = "a" * 64
TOKEN_B = "b" * 64
TOKEN_C = "c" * 64
PID_A = pid_of_token(TOKEN_A)
PID_B = pid_of_token(TOKEN_B)
PID_C = pid_of_token(TOKEN_C)
DAY1 = "2024-05-01T10:00:00Z"
DAY2 = "2024-05-02T23:00:00Z"
REPO = Path(__file__).resolve().parents[2]


def event(pid: str = PID_A, ts: str = DAY1, **fields) -> dict:
    return {"event": "message_sent", "schema": 1, "ts": ts, "pid": pid, "length": 16} | fields


def canonical(ev: dict) -> str:
    return json.dumps(ev, sort_keys=True, separators=(",", ":"))


def gz_lines(lines: list[str]) -> bytes:
    return gzip.compress(("\n".join(lines) + "\n").encode())


def stored(out: Path) -> dict[str, list[str]]:
    """The stored lines per partition folder, in file order."""
    found: dict[str, list[str]] = {}
    for path in sorted(out.glob("date=*/*.jsonl")):
        found.setdefault(path.parent.name, []).extend(path.read_text().splitlines())
    return found


def written_files(out: Path) -> list[Path]:
    return [p for p in out.rglob("*") if p.is_file() and p.name != "_deleted_pids.txt"]


async def post(http: aiohttp.ClientSession, url: str, body, *, gz: bool = True,
               headers: dict | None = None) -> tuple[int, dict]:
    if headers is None:
        headers = ({"Content-Encoding": "gzip"} if gz
                   else {"Content-Type": "application/x-ndjson"})
    async with http.post(url + "/v1/events", data=body, headers=headers) as resp:
        answer = await resp.json()
    answer.pop("schemas", None)  # the versions the collector reads: tested on their own
    return resp.status, answer


async def delete(http: aiohttp.ClientSession, url: str, payload) -> tuple[int, dict]:
    async with http.post(url + "/v1/delete", json=payload) as resp:
        return resp.status, await resp.json()


def tokens(*pairs: tuple[str, str]) -> dict:
    """A deletion request's body for these (token, day) pairs."""
    return {"tokens": [{"day": day, "token": token} for token, day in pairs]}


async def healthy(http: aiohttp.ClientSession, url: str) -> bool:
    async with http.get(url + "/v1/health") as resp:
        return resp.status == 200 and (await resp.json())["ok"] is True


async def test_accepted_batch_lands_in_date_partition_as_canonical_lines(collector, http):
    events = [event(), event(PID_B, length=64), event(ts="2024-05-01T00:00:00Z", length=0)]
    # Spaces and an unsorted key order on the wire; the files hold the canonical form.
    lines = [json.dumps(dict(reversed(e.items())), indent=None) for e in events]
    status, answer = await post(http, collector.url, gz_lines(lines))

    assert (status, answer) == (200, {"accepted": 3, "dropped": 0})
    files = list(collector.out_dir.glob("date=*/*.jsonl"))
    assert [f.parent.name for f in files] == ["date=2024-05-01"]
    assert stored(collector.out_dir) == {"date=2024-05-01": [canonical(e) for e in events]}
    assert not [p for p in collector.out_dir.rglob(".*")]  # no temporary file left


async def test_uncompressed_ndjson_is_accepted(collector, http):
    status, answer = await post(http, collector.url, canonical(event()).encode(), gz=False)
    assert (status, answer) == (200, {"accepted": 1, "dropped": 0})
    assert stored(collector.out_dir) == {"date=2024-05-01": [canonical(event())]}


async def test_batch_spanning_two_dates_writes_one_file_per_date(collector, http):
    events = [event(ts=DAY1), event(PID_B, ts=DAY2), event(PID_C, ts=DAY1)]
    status, answer = await post(http, collector.url, gz_lines([json.dumps(e) for e in events]))

    assert (status, answer) == (200, {"accepted": 3, "dropped": 0})
    assert stored(collector.out_dir) == {
        "date=2024-05-01": [canonical(events[0]), canonical(events[2])],
        "date=2024-05-02": [canonical(events[1])],
    }
    assert len(list(collector.out_dir.glob("date=*/*.jsonl"))) == 2


async def test_batches_go_to_separate_files(collector, http):
    for pid in (PID_A, PID_B):
        assert (await post(http, collector.url, gz_lines([json.dumps(event(pid))])))[0] == 200
    assert len(list(collector.out_dir.glob("date=2024-05-01/*.jsonl"))) == 2


GOOD = json.dumps(event())
MALFORMED = {
    "bad gzip": (b"\x1f\x8b\x08\x00garbage", "gzip"),
    "truncated gzip": (gz_lines([GOOD])[:-6], "truncated"),
    "non-JSON line": (gz_lines([GOOD, "{not json"]), "line 2 is not JSON"),
    "not UTF-8": (gzip.compress(GOOD.encode() + b"\n" + b'{"event": "\xff"}\n'), "line 2 is not UTF-8"),
    "extra field": (gz_lines([GOOD, GOOD, json.dumps(event(text="hello"))]), "line 3"),
    "missing field": (gz_lines([json.dumps({k: v for k, v in event().items() if k != "length"})]),
                      "line 1"),
    "ts not on the hour": (gz_lines([json.dumps(event(ts="2024-05-01T10:30:00Z"))]), "line 1: ts"),
    "ts not a date": (gz_lines([json.dumps(event(ts="2024-02-30T10:00:00Z"))]), "line 1: ts"),
    "unknown event": (gz_lines([GOOD, json.dumps(event() | {"event": "keystroke"})]), "line 2"),
    "wrong schema version": (gz_lines([json.dumps(event(schema=2))]), "line 1"),
    "not an object": (gz_lines(["[1, 2]"]), "line 1"),
    "duplicate key": (gz_lines([GOOD[:-1] + ', "length": 64}']), "line 1"),
    "blank line": (gz_lines([GOOD, "", GOOD]), "line 2 is blank"),
    "empty batch": (gzip.compress(b""), "empty"),
    "only a newline": (gzip.compress(b"\n"), "empty"),
    "empty body": (b"", "empty"),
    "line too long": (gz_lines([GOOD, " " * 3000 + GOOD]), "line 2 is longer"),
    "too many lines": (gz_lines([GOOD] * 10_001), "more than 10000 lines"),
}


@pytest.mark.parametrize("name", MALFORMED)
async def test_malformed_batch_is_refused_whole_and_nothing_is_written(collector, http, name):
    body, reason = MALFORMED[name]
    status, answer = await post(http, collector.url, body)

    assert status == 400
    assert set(answer) == {"error"} and reason in answer["error"]
    assert "\n" not in answer["error"]
    assert written_files(collector.out_dir) == []
    assert collector.stats.rejected_batches == 1
    assert await healthy(http, collector.url)


async def test_unsupported_encoding_or_type_is_refused(collector, http):
    body = canonical(event()).encode()
    for headers in ({"Content-Type": "application/json"}, {"Content-Encoding": "br"}):
        status, answer = await post(http, collector.url, body, headers=headers)
        assert status == 415 and "gzip" in answer["error"]
    assert written_files(collector.out_dir) == []


async def test_oversized_compressed_body_is_refused_with_413(tmp_path, http):
    c = Collector(tmp_path / "events", max_body=4096)
    await c.async_start("127.0.0.1", 0)
    try:
        big = gzip.compress(os.urandom(20_000))  # incompressible: ~20 kB on the wire
        status, answer = await post(http, c.url, big)
        assert status == 413 and "larger than 4096" in answer["error"]

        async def chunked():  # no Content-Length: the limit is counted while reading
            for start in range(0, len(big), 1024):
                yield big[start:start + 1024]

        status, answer = await post(http, c.url, chunked())
        assert status == 413
        assert written_files(c.out_dir) == []
        assert await healthy(http, c.url)
    finally:
        await c.async_close()


async def test_gzip_bomb_is_refused_without_inflating_it(collector, http):
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    megabyte = bytes(1024 * 1024)
    bomb = b"".join(packer.compress(megabyte) for _ in range(50)) + packer.flush()
    assert len(bomb) < 100_000  # 50 MB of zeros

    tracemalloc.start()
    try:
        status, answer = await post(http, collector.url, bomb)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert status == 413 and "inflates to more than" in answer["error"]
    assert peak < 16 * 1024 * 1024  # a fraction of the 50 MB it would take to inflate
    assert written_files(collector.out_dir) == []
    assert await healthy(http, collector.url)


async def test_deletion_removes_stored_events_and_drops_later_ones(collector, http):
    first = [event(PID_A), event(PID_B), event(PID_A, ts=DAY2)]
    second = [event(PID_A, length=64)]
    for batch in (first, second):
        assert (await post(http, collector.url, gz_lines([json.dumps(e) for e in batch])))[0] == 200

    request = tokens((TOKEN_A, "2024-05-01"), (TOKEN_A, "2024-05-02"), (TOKEN_C, "2024-05-01"))
    status, answer = await delete(http, collector.url, request)

    assert (status, answer) == (200, {"deleted": 3})
    # Files that held only PID_A's events are gone (and the emptied 05-02 folder), not left empty.
    assert stored(collector.out_dir) == {"date=2024-05-01": [canonical(event(PID_B))]}
    assert len(list(collector.out_dir.glob("date=*/*.jsonl"))) == 1
    assert written_files(collector.out_dir) == list(collector.out_dir.glob("date=*/*.jsonl"))

    # PID_A's late events are dropped; PID_C had nothing stored, so it was not remembered.
    late = [event(PID_A, length=256), event(PID_C), event(PID_B, ts=DAY2)]
    status, answer = await post(http, collector.url, gz_lines([json.dumps(e) for e in late]))
    assert (status, answer) == (200, {"accepted": 2, "dropped": 1})
    assert {day: sorted(lines) for day, lines in stored(collector.out_dir).items()} == {
        "date=2024-05-01": sorted([canonical(event(PID_B)), canonical(event(PID_C))]),
        "date=2024-05-02": [canonical(event(PID_B, ts=DAY2))]}
    assert collector.stats.dropped == 1

    # Asking again changes nothing and still succeeds (a retried request).
    again = tokens((TOKEN_A, "2024-05-01"), (TOKEN_A, "2024-05-02"))
    assert await delete(http, collector.url, again) == (200, {"deleted": 0})


async def test_deleted_pids_are_remembered_across_restarts(tmp_path, http):
    out = tmp_path / "events"
    batch = gz_lines([json.dumps(event(PID_A)), json.dumps(event(PID_B))])
    first = Collector(out, clock=FakeClock(COLLECTOR_NOW))
    await first.async_start("127.0.0.1", 0)
    assert await post(http, first.url, batch) == (200, {"accepted": 2, "dropped": 0})
    assert await delete(http, first.url, tokens((TOKEN_A, "2024-05-01"))) == (200, {"deleted": 1})
    await first.async_close()

    second = Collector(out, clock=FakeClock(COLLECTOR_NOW))
    await second.async_start("127.0.0.1", 0)
    try:
        # The same batch again (its acknowledgement was lost): PID_A's event stays deleted.
        assert await post(http, second.url, batch) == (200, {"accepted": 1, "dropped": 1})
        assert stored(out) == {"date=2024-05-01": [canonical(event(PID_B))] * 2}
    finally:
        await second.async_close()


GOOD_TOKEN = {"day": "2024-05-01", "token": TOKEN_A}


@pytest.mark.parametrize("payload, reason", [
    ([GOOD_TOKEN], "exactly one field"),
    ({"pids": [PID_A]}, "deletion by pid is not accepted"),
    ({"tokens": GOOD_TOKEN}, "non-empty list"),
    ({"tokens": []}, "non-empty list"),
    ({"tokens": [GOOD_TOKEN, TOKEN_A]}, "tokens[1] must be an object"),
    ({"tokens": [GOOD_TOKEN, GOOD_TOKEN | {"pid": PID_A}]}, "tokens[1] must be an object"),
    ({"tokens": [GOOD_TOKEN, {"day": "2024-05-01", "token": "A" * 64}]}, "tokens[1].token"),
    ({"tokens": [GOOD_TOKEN, {"day": "2024-05-01", "token": PID_A}]}, "tokens[1].token"),
    ({"tokens": [GOOD_TOKEN, {"day": "2024-05-01", "token": 7}]}, "tokens[1].token"),
    ({"tokens": [GOOD_TOKEN, {"day": "2024-02-30", "token": TOKEN_A}]}, "tokens[1].day"),
    ({"tokens": [GOOD_TOKEN, {"day": "20240501", "token": TOKEN_A}]}, "tokens[1].day"),
    ({"tokens": [GOOD_TOKEN, {"day": "../../x", "token": TOKEN_A}]}, "tokens[1].day"),
    ({"tokens": [GOOD_TOKEN], "all": True}, "exactly one field"),
    ({"tokens": [{"day": "2024-05-01", "token": f"{i:064x}"}
                 for i in range(MAX_DELETE_TOKENS + 1)]}, f"at most {MAX_DELETE_TOKENS}"),
])
async def test_bad_deletion_request_is_refused(collector, http, payload, reason):
    await post(http, collector.url, gz_lines([json.dumps(event(PID_A))]))
    status, answer = await delete(http, collector.url, payload)
    assert status == 400 and reason in answer["error"]
    assert len(stored(collector.out_dir)["date=2024-05-01"]) == 1
    assert not (collector.out_dir / "_deleted_pids.txt").exists()


async def test_deletion_body_that_is_not_json_is_refused(collector, http):
    async with http.post(collector.url + "/v1/delete", data=b"\xff{") as resp:
        assert resp.status == 400 and "JSON" in (await resp.json())["error"]


async def test_server_keeps_serving_after_bad_requests(collector, http):
    await post(http, collector.url, b"not gzip at all")
    await post(http, collector.url, gz_lines(["{}"]))
    await delete(http, collector.url, {"nope": 1})
    # Not even HTTP: the server answers 400 and closes that connection only.
    reader, writer = await asyncio.open_connection("127.0.0.1", collector.port)
    writer.write(b"\x00\x01 this is not HTTP\r\n\r\n")
    await writer.drain()
    answer = await asyncio.wait_for(reader.read(), CLIENT_TIMEOUT_S)
    assert answer.split(b"\r\n")[0].split()[1] == b"400"
    writer.close()

    assert await healthy(http, collector.url)
    assert await post(http, collector.url, gz_lines([GOOD])) == (200, {"accepted": 1, "dropped": 0})


async def test_close_is_idempotent_and_frees_the_port(tmp_path, http):
    c = Collector(tmp_path / "events")
    port = await c.async_start("127.0.0.1", 0)
    assert await healthy(http, c.url)
    await c.async_close()
    await c.async_close()
    with pytest.raises(aiohttp.ClientConnectionError):
        await healthy(http, f"http://127.0.0.1:{port}")
    with pytest.raises(RuntimeError):
        await c.async_start("127.0.0.1", 0)
    await Collector(tmp_path / "never-started").async_close()


async def test_port_in_use_raises_and_cleans_up(collector, tmp_path):
    other = Collector(tmp_path / "other")
    with pytest.raises(OSError):
        await other.async_start("127.0.0.1", collector.port)
    await other.async_close()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
async def test_run_prints_its_url_and_stops_on_signal(tmp_path, http, sig):
    code = "import sys; from analytics.collector import run; run('127.0.0.1', 0, sys.argv[1])"
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, str(tmp_path / "events"), cwd=REPO,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), CLIENT_TIMEOUT_S)).decode()
        url = re.search(r"http://127\.0\.0\.1:\d+", line)
        assert url, line
        assert await healthy(http, url.group())
        proc.send_signal(sig)
        assert await asyncio.wait_for(proc.wait(), CLIENT_TIMEOUT_S) == 0
        assert await proc.stdout.read() == b""  # exactly one line
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
