"""A new computer joins a big workspace (issue 20): member A's replica holds 1,000,000 posts
(50 channels, 200 authors); member B has joined and holds the workspace's first objects but none
of the posts. Two `hearth serve` processes on 127.0.0.1, B dialling A.

Time 0 is when B's serve log prints its "connected to" line (as this process reads it). From
then: seconds until the newest 50 posts of A's busiest channel are readable in B's replica
(target <= 3 s), and until B holds every object A holds (target <= 45 s at 1M); the join rate in
posts/s and its ratio to one core's raw Ed25519 verify rate in the same run (target >= 1.0,
stretch 1.6); each serve process's peak RSS (VmHWM), alone and summed with its helper processes
(target <= 400 MB); how newest-first B's arrivals were (of the first 10% of posts B stored, the
share among the newest 10% of their channel on A: 1.0 newest-first, about 0.1 in any order);
CPU seconds per process and B's last log lines (where the time goes).

Run at 10k, 100k and HEARTH_BENCH_JOIN_POSTS posts (default 1M), or the sizes
HEARTH_BENCH_JOIN_SIZES lists ("10000,100000,1000000"). The two members' folders are built once
per size and schema (bench/results/cache/) and copied for each run; HEARTH_BENCH_JOIN_TIMEOUT
bounds each size's sync (seconds; one that runs out is reported with what B held by then).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.paths import Paths  # noqa: E402
from bench._common import RESULTS, options, rate, report  # noqa: E402
from bench._common import Target as Check  # noqa: E402
from bench._corpus import posts  # noqa: E402
from bench._workspaces import two_members  # noqa: E402
from bench.ingest import raw_verify_rate  # noqa: E402
from storage import Replica  # noqa: E402
from storage._schema import SCHEMA_VERSION  # noqa: E402

POSTS = int(os.environ.get("HEARTH_BENCH_JOIN_POSTS", 1_000_000))
SIZES = sorted({int(s) for s in os.environ.get(
    "HEARTH_BENCH_JOIN_SIZES", f"10000,100000,{POSTS}").split(",") if s.strip()})
TINY_SIZES = [1_000]
TIMEOUT_S = float(os.environ.get("HEARTH_BENCH_JOIN_TIMEOUT", 600))
START_TIMEOUT_S = 120
STOP_TIMEOUT_S = 30
POLL_S = 0.02
NEWEST = 50
SHARES = (0.01, 0.1, 0.5)  # newest-first is measured when B holds this share of the posts
HELD = (0.1, 0.5, 0.9, 1.0)
CHUNK = 200_000  # posts generated at a time while building
BATCH = 5_000
LOG_TAIL = 12
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Line:
    at: float  # time.perf_counter() when this process read it
    stream: str
    text: str


class Serve:
    """One `hearth serve` in a process group of its own (so its helpers stop with it), its
    output lines timed as they are read."""

    def __init__(self, paths: Paths, *extra: str):
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "app", "--data", str(paths.data), "serve", "--no-mdns",
             "--verbose", "--interface", "127.0.0.1", *extra],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=True)
        self.lines: list[Line] = []
        self._changed = threading.Condition()
        self._readers = [threading.Thread(target=self._read, args=(stream, name), daemon=True)
                         for stream, name in ((self.proc.stdout, "out"),
                                              (self.proc.stderr, "err"))]
        for reader in self._readers:
            reader.start()

    def _read(self, stream, name: str) -> None:
        for text in stream:
            with self._changed:
                self.lines.append(Line(time.perf_counter(), name, text.rstrip("\n")))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def line(self, pattern: str, timeout: float | None = None) -> Line | None:
        """The first line matching `pattern`, waiting up to `timeout` s (None: do not wait)."""
        deadline = time.monotonic() + (timeout or 0)
        with self._changed:
            while True:
                for line in self.lines:
                    if re.search(pattern, line.text):
                        return line
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    return None
                self._changed.wait(min(left, 0.1))

    def port(self) -> int:
        line = self.line(r"on port \d+", START_TIMEOUT_S)
        if line is None:
            self.stop()
            raise RuntimeError("serve did not start:\n" + "\n".join(self.tail(LOG_TAIL)))
        return int(re.search(r"on port (\d+)", line.text).group(1))

    def usage(self) -> dict:
        """Peak RSS (MB) and CPU seconds of the serve process and of its helper processes
        (every descendant, read now; helpers that already ended count in its children's CPU)."""
        helpers = _descendants(self.proc.pid)
        own = _status_mb(self.proc.pid)
        rss = [_status_mb(pid) for pid in helpers]
        stat = _cpu(self.proc.pid)
        return {
            "peak_rss_mb": {"serve": own, "helpers": rss, "sum": round(own + sum(rss), 1)},
            "cpu_seconds": {"serve": round(stat[0], 2),
                            "helpers": round(stat[1] + sum(_cpu(pid)[0] for pid in helpers), 2)},
        }

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(STOP_TIMEOUT_S)
        with contextlib.suppress(ProcessLookupError):  # helpers left, or a serve that hung
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        for reader in self._readers:
            reader.join(5)

    def tail(self, count: int, since: float | None = None) -> list[str]:
        with self._changed:
            lines = sorted(self.lines, key=lambda line: line.at)[-count:]
        return [(f"{line.at - since:+.3f}s " if since is not None else "") + line.text
                for line in lines]


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _status_mb(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    return round(int(match.group(1)) / 1024, 1) if match else 0.0


def _cpu(pid: int) -> tuple[float, float]:
    """(own, ended children's) CPU seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0, 0.0
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    return (utime + stime) / CLOCK_TICKS, (cutime + cstime) / CLOCK_TICKS


@dataclass
class Members:
    """Both members' data folders for `posts` posts, built once and kept in the cache."""

    posts: int
    folder: Path
    build_seconds: float
    built_now: bool

    @classmethod
    def cached(cls, count: int) -> Members:
        cache = RESULTS / "cache"
        # The schema's source is in the name too (the migrations and the item index's code).
        source = b"".join(path.read_bytes() for path in [
            *sorted((ROOT / "storage" / "migrations").glob("*.py")),
            ROOT / "storage" / "items.py"])
        name = f"join-{count}-v{SCHEMA_VERSION}-{hashlib.blake2b(source).hexdigest()[:10]}"
        folder = cache / name
        if (folder / "setup.json").exists():
            setup = json.loads((folder / "setup.json").read_text())
            return cls(count, folder, setup["seconds"], False)
        for stale in cache.glob(f"join-{count}-*"):
            shutil.rmtree(stale)
        building = cache / (name + ".building")
        start = time.perf_counter()
        a, b = two_members(building)
        with Replica(a.replica) as ra, Replica(b.replica) as rb:
            # Each holds the other's first objects (genesis, nicknames, admission): only the
            # posts differ when the clock starts.
            first_a = [row[0] for row in ra.conn.execute("SELECT raw FROM objects")]
            first_b = [row[0] for row in rb.conn.execute("SELECT raw FROM objects")]
            ra.ingest(first_b)
            rb.ingest(first_a)
            workspace = ra.workspace.id
            for offset in range(0, count, CHUNK):
                raws = posts(min(CHUNK, count - offset), workspace=workspace, offset=offset)
                for i in range(0, len(raws), BATCH):
                    ra.ingest(raws[i:i + BATCH])
            for replica in (ra, rb):
                replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        seconds = round(time.perf_counter() - start, 1)
        (building / "setup.json").write_text(json.dumps({"seconds": seconds}) + "\n")
        building.rename(folder)
        return cls(count, folder, seconds, True)

    def copy(self, root: Path) -> tuple[Paths, Paths]:
        for name in ("a", "b"):
            shutil.copytree(self.folder / name, root / name)
        return Paths.resolve(root / "a", "default"), Paths.resolve(root / "b", "default")


@dataclass
class Target:
    """What B must come to hold, read from A's replica before serving."""

    objects: int  # A's objects
    base: int  # B's objects (and highest oid) before the posts
    channel: str
    newest: list[bytes]
    newest_since: int  # the oldest of `newest`'s ts
    sample: list[bytes] = field(repr=False)  # raw posts, for the raw verify rate


def target_of(a: Paths, b: Paths) -> Target:
    with _readonly(a.replica) as conn:
        objects = conn.execute("SELECT COUNT(*) FROM objects").fetchone()[0]
        channel = conn.execute(
            "SELECT key FROM channels ORDER BY messages DESC, key LIMIT 1").fetchone()[0]
        newest = conn.execute("SELECT id, ts FROM messages WHERE channel = ? AND hidden = 0 "
                              "ORDER BY ts DESC, id DESC LIMIT ?", (channel, NEWEST)).fetchall()
        sample = [row[0] for row in conn.execute(
            "SELECT raw FROM objects WHERE type = 'post/text' LIMIT 20000")]
    with _readonly(b.replica) as conn:
        base, top = conn.execute("SELECT COUNT(*), MAX(oid) FROM objects").fetchone()
    assert base == top, "B's oids have gaps: its count is not its highest oid"
    return Target(objects, base, channel, [row[0] for row in newest],
                  min(row[1] for row in newest), sample)


def _readonly(path: Path) -> contextlib.closing[sqlite3.Connection]:
    return contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True))


@dataclass
class Watch:
    """B's replica, read every POLL_S while it syncs: when each figure was reached."""

    samples: list[tuple[float, int]] = field(default_factory=list)  # (when, posts held)
    newest_at: float | None = None
    all_at: float | None = None


def watch(b: Paths, target: Target, deadline: float, alive: Callable[[], bool]) -> Watch:
    """Poll B's replica read-only until it holds every object A holds, `deadline` passes or
    a serve process ends. Nothing is removed during a join, so B's highest oid counts its
    objects (cheaply)."""
    seen = Watch()
    ids = ",".join("?" * len(target.newest))
    newest_query = (f"SELECT COUNT(*) FROM messages WHERE channel = ? AND hidden = 0 "
                    f"AND ts >= ? AND id IN ({ids})")
    with _readonly(b.replica) as conn:
        while time.monotonic() < deadline and alive():
            now = time.perf_counter()
            top = conn.execute("SELECT MAX(oid) FROM objects").fetchone()[0]
            seen.samples.append((now, top - target.base))
            if seen.newest_at is None and conn.execute(
                    newest_query, (target.channel, target.newest_since, *target.newest)
            ).fetchone()[0] == len(target.newest):
                seen.newest_at = now
            if top >= target.objects and conn.execute(
                    "SELECT COUNT(*) FROM objects").fetchone()[0] >= target.objects:
                seen.all_at = now
                break
            time.sleep(POLL_S)
    return seen


def newest_first(a: Paths, b: Paths, target: Target, held: int) -> dict[str, float]:
    """For each share p: of the first p of the posts B stored (by oid: arrival order), the
    fraction among the newest p of their channel's posts on A."""
    count = target.objects - target.base
    shares = {}
    with _readonly(a.replica) as conn_a, _readonly(b.replica) as conn_b:
        ranked = conn_a.execute(
            "SELECT id, ROW_NUMBER() OVER (PARTITION BY channel ORDER BY ts DESC, id DESC), "
            "COUNT(*) OVER (PARTITION BY channel) FROM messages").fetchall()
        for share in SHARES:
            first = int(count * share)
            if not first or first > held:
                continue
            newest = {oid for oid, rank, total in ranked if rank <= total * share}
            arrived = [row[0] for row in conn_b.execute(
                "SELECT id FROM objects WHERE oid > ? ORDER BY oid LIMIT ?",
                (target.base, first))]
            shares[f"{share:.0%}"] = round(sum(oid in newest for oid in arrived) / first, 3)
    return shares


def missing(a: Paths, b: Paths) -> int:
    """A's objects B does not hold (after the run)."""
    with _readonly(a.replica) as conn:
        conn.execute("ATTACH ? AS b", (f"file:{b.replica}?mode=ro",))
        return conn.execute("SELECT COUNT(*) FROM objects WHERE id NOT IN "
                            "(SELECT id FROM b.objects)").fetchone()[0]


def session_of(lines: list[str]) -> dict:
    """The last sync session B's log summed up (logged when it ends), if any."""
    for text in reversed(lines):
        match = re.search(r"(\d+) rounds, (\d+) B out, (\d+) B in, (\d+) objects out, "
                          r"(\d+) in, (\d+) ms", text)
        if match:
            rounds, out, got, objects_out, objects_in, ms = (int(g) for g in match.groups())
            return {"rounds": rounds, "bytes_out": out, "bytes_in": got,
                    "objects_out": objects_out, "objects_in": objects_in, "ms": ms}
    return {}


def run(count: int) -> dict:
    members = Members.cached(count)
    with tempfile.TemporaryDirectory(prefix="hearth-join-") as tmp:
        start = time.perf_counter()
        a, b = members.copy(Path(tmp))
        copy_seconds = time.perf_counter() - start
        target = target_of(a, b)
        verify = raw_verify_rate(target.sample)
        serve_a = serve_b = None
        try:
            serve_a = Serve(a)
            port = serve_a.port()
            a_start = time.perf_counter() - serve_a.started
            serve_b = Serve(b, "--peer", f"127.0.0.1:{port}")
            serve_b.port()
            seen = watch(b, target, time.monotonic() + TIMEOUT_S,
                         lambda: serve_a.proc.poll() is None and serve_b.proc.poll() is None)
            usage = {"a": serve_a.usage(), "b": serve_b.usage()}
        finally:
            for serve in (serve_b, serve_a):
                if serve is not None:
                    serve.stop()
        connected = serve_b.line(r"connected to ")
        serving = serve_b.line(r"on port \d+")
        zero = connected.at if connected else serving.at
        held = seen.samples[-1][1] if seen.samples else 0
        held = min(held, count)
        shares = newest_first(a, b, target, held)
        lacking = missing(a, b)
    b_lines = serve_b.tail(10_000)

    def after(at: float | None) -> float | None:
        return round(at - zero, 3) if at is not None else None

    took = seen.all_at - zero if seen.all_at is not None else None
    join_rate = rate(count, took) if took else None
    return {
        "posts": count,
        "setup": {"built_now": members.built_now,
                  "build_seconds": members.build_seconds,
                  "copy_seconds": round(copy_seconds, 2)},
        "a_serve_start_seconds": round(a_start, 2),
        "b_serving_to_connected_seconds":
            round(connected.at - serving.at, 3) if connected else None,
        "completed": seen.all_at is not None and lacking == 0,
        "posts_held_at_end": held, "objects_b_lacks_after": lacking,
        "seconds_newest_50": after(seen.newest_at),
        "busiest_channel": target.channel,
        "seconds_all": after(seen.all_at),
        "seconds_to_hold": {f"{share:.0%}": after(next(
            (at for at, n in seen.samples if n >= count * share), None)) for share in HELD},
        "join_posts_per_s": join_rate,
        "raw_verify_per_s_single_core": verify,
        "join_vs_verify_ratio": round(join_rate / verify, 3) if join_rate else None,
        "newest_first": shares,
        "peak_rss_mb": {side: usage[side]["peak_rss_mb"] for side in usage},
        "cpu_seconds": {side: usage[side]["cpu_seconds"] for side in usage},
        "b_session": session_of(b_lines),
        "b_log_tail": serve_b.tail(LOG_TAIL, since=zero),
        "a_log_tail": serve_a.tail(LOG_TAIL // 2, since=zero),
    }


def main() -> None:
    runs = []
    for count in TINY_SIZES if options(__doc__).tiny else SIZES:
        start = time.perf_counter()
        figures = run(count)
        figures["wall_seconds"] = round(time.perf_counter() - start, 1)
        runs.append(figures)
        print(json.dumps({"size": count, **{k: v for k, v in figures.items()
                                            if not k.endswith("_tail")}}), file=sys.stderr)
    largest = runs[-1]
    report("join", {
        "posts": largest["posts"], "channels": 50, "authors": 200, "cores": os.cpu_count(),
        "time_zero": "B's serve log line 'connected to ...', as read from its stdout",
        "peak_rss": "VmHWM per process read just before stopping; sum = serve + its helpers",
        "completed": largest["completed"],
        "seconds_newest_50": largest["seconds_newest_50"],
        "seconds_all": largest["seconds_all"],
        "join_vs_verify_ratio": largest["join_vs_verify_ratio"], "stretch_ratio": 1.6,
        "peak_rss_mb_sum": max(side["sum"] for side in largest["peak_rss_mb"].values()),
        "sizes": runs,
    }, [Check("completed", "==", True), Check("seconds_newest_50", "<=", 3, at_scale=True),
        Check("seconds_all", "<=", 45, at_scale=True),
        Check("join_vs_verify_ratio", ">=", 1.0, at_scale=True),
        Check("peak_rss_mb_sum", "<=", 400)])


if __name__ == "__main__":
    main()
