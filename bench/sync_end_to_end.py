"""Two `hearth serve` processes that share 100,000 posts, each with 1,000 newer posts the other
lacks (as after a day apart): wall time from connect to identical replicas (target <= 3 s), and
bytes on the wire as a ratio of the bytes of the objects that had to move (target <= 1.5).
The wire bytes are those B's log gives for its sessions (`serve --verbose`)."""

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

from bench._common import Target, options, report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from bench._workspaces import two_members  # noqa: E402
from storage import Replica  # noqa: E402

SHARED = int(os.environ.get("HEARTH_BENCH_SHARED", 100_000))
APART = 1_000
TINY_SHARED, TINY_APART = 2_000, 50
TIMEOUT_S = 120


def serve(paths, log: Path, *extra: str) -> subprocess.Popen:
    """`hearth serve`, its log (with each session's bytes: --verbose) in the file `log`."""
    with open(log, "w") as err:
        return subprocess.Popen(
            [sys.executable, "-m", "app", "--data", str(paths.data), "serve", "--no-mdns",
             "--verbose", "--interface", "127.0.0.1", *extra],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=err, text=True)


def port_of(proc: subprocess.Popen) -> int:
    line = proc.stdout.readline()
    match = re.search(r"on port (\d+)", line)
    if not match:
        raise RuntimeError(f"serve did not start: {line!r}")
    return int(match.group(1))


def count(path: Path) -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute("SELECT COUNT(*) FROM items").fetchone()[0]
    finally:
        conn.close()


def main() -> None:
    args = options(__doc__)
    shared_count, apart = (TINY_SHARED, TINY_APART) if args.tiny else (SHARED, APART)
    with tempfile.TemporaryDirectory() as tmp:
        a, b = two_members(Path(tmp))
        with Replica(a.replica) as ra:
            workspace = ra.workspace.id
        raws = posts(shared_count + 2 * apart, workspace=workspace)
        shared = raws[:shared_count]
        only_a, only_b = raws[shared_count:shared_count + apart], raws[shared_count + apart:]
        with Replica(a.replica) as ra, Replica(b.replica) as rb:
            # Each already holds the other's first objects (genesis, nicknames, joins), so
            # only the 2 x 1,000 posts differ when the clock starts.
            first_a = [row[0] for row in ra.conn.execute("SELECT raw FROM objects")]
            first_b = [row[0] for row in rb.conn.execute("SELECT raw FROM objects")]
            ra.ingest(first_b)
            rb.ingest(first_a)
            for replica, extra in ((ra, only_a), (rb, only_b)):
                for i in range(0, shared_count, 5000):
                    replica.ingest(shared[i:i + 5000])
                replica.ingest(extra)
        moved_bytes = sum(len(r) for r in only_a + only_b)
        target = count(a.replica) + len(only_b)
        proc_a = serve(a, Path(tmp) / "a.log")
        port = port_of(proc_a)
        proc_b = serve(b, Path(tmp) / "b.log", "--peer", f"127.0.0.1:{port}")
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
        proc_b.communicate(timeout=30)
        proc_a.communicate(timeout=30)
        log_b = (Path(tmp) / "b.log").read_text()
    sessions = re.findall(r"(\d+) B out, (\d+) B in", log_b)
    wire = sum(int(o) + int(i) for o, i in sessions)
    report("sync_end_to_end", {
        "shared_posts": shared_count, "posts_apart_each_side": apart,
        "seconds_connect_to_identical": round(elapsed, 3), "sessions": len(sessions),
        "wire_bytes": wire, "moved_object_bytes": moved_bytes,
        "wire_to_object_bytes_ratio": round(wire / moved_bytes, 3),
    }, [Target("seconds_connect_to_identical", "<=", 3, at_scale=True), Target("wire_bytes", ">", 0),
        Target("wire_to_object_bytes_ratio", ">", 1),  # the objects themselves crossed
        Target("wire_to_object_bytes_ratio", "<=", 1.5, at_scale=True)])


if __name__ == "__main__":
    main()
