"""Two `hearth serve` processes that share 100,000 posts, each with 1,000 newer posts the other
lacks (as after a day apart): wall time from connect to identical replicas (target <= 3 s), and
bytes on the wire as a ratio of the bytes of the objects that had to move (target <= 1.5)."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench._common import report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from bench._workspaces import two_members  # noqa: E402
from storage import Replica  # noqa: E402

SHARED = int(os.environ.get("HEARTH_BENCH_SHARED", 100_000))
APART = 1_000
TIMEOUT_S = 120


def serve(paths, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "app", "--data", str(paths.data), "serve", "--no-mdns",
         "--interface", "127.0.0.1", *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def port_of(proc: subprocess.Popen) -> int:
    line = proc.stdout.readline()
    match = re.search(r"on port (\d+)", line)
    if not match:
        raise RuntimeError(f"serve did not start: {line!r} {proc.stderr.read()}")
    return int(match.group(1))


def count(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    finally:
        conn.close()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = two_members(Path(tmp))
        with Replica(a.replica) as ra:
            workspace = ra.workspace.id
        raws = posts(SHARED + 2 * APART, workspace=workspace)
        shared, only_a, only_b = raws[:SHARED], raws[SHARED:SHARED + APART], raws[SHARED + APART:]
        with Replica(a.replica) as ra, Replica(b.replica) as rb:
            # Each already holds the other's first objects (genesis, nicknames, joins), so
            # only the 2 x 1,000 posts differ when the clock starts.
            first_a = [row[0] for row in ra.conn.execute("SELECT raw FROM objects")]
            first_b = [row[0] for row in rb.conn.execute("SELECT raw FROM objects")]
            ra.ingest(first_b)
            rb.ingest(first_a)
            for replica, extra in ((ra, only_a), (rb, only_b)):
                for i in range(0, SHARED, 5000):
                    replica.ingest(shared[i:i + 5000])
                replica.ingest(extra)
        moved_bytes = sum(len(r) for r in only_a + only_b)
        target = count(a.replica) + len(only_b)
        proc_a = serve(a)
        port = port_of(proc_a)
        proc_b = serve(b, "--peer", f"127.0.0.1:{port}")
        port_of(proc_b)  # B dials as soon as it serves
        start = time.perf_counter()
        deadline = time.monotonic() + TIMEOUT_S
        while not (count(a.replica) == count(b.replica) == target):
            if time.monotonic() > deadline:
                raise RuntimeError("replicas did not converge")
            time.sleep(0.01)
        elapsed = time.perf_counter() - start
        for proc in (proc_b, proc_a):
            proc.send_signal(signal.SIGTERM)
        log_b = proc_b.communicate(timeout=30)[1]
        proc_a.communicate(timeout=30)
    sessions = re.findall(r"(\d+) B out, (\d+) B in", log_b)
    wire = sum(int(o) + int(i) for o, i in sessions)
    report("sync_end_to_end", {
        "shared_posts": SHARED, "posts_apart_each_side": APART,
        "seconds_connect_to_identical": round(elapsed, 3), "target_seconds": 3,
        "wire_bytes": wire, "moved_object_bytes": moved_bytes,
        "wire_to_object_bytes_ratio": round(wire / moved_bytes, 3), "target_ratio": 1.5,
    })


if __name__ == "__main__":
    main()
