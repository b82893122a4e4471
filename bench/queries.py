"""Query latency on a replica of 1,000,000 messages (50 channels, 200 authors).

Reports p50/p99 ms for: the latest 200 messages of a channel, channel state, channel list and
a full-text search; and bytes on disk per message. Targets: p50 <= 2 ms for the channel page
and state, <= 20 ms for search.
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import RESULTS, Target, options, report  # noqa: E402
from bench._corpus import WORDS, posts  # noqa: E402
from storage import Replica  # noqa: E402
from storage._schema import SCHEMA_VERSION  # noqa: E402

COUNT = int(os.environ.get("HEARTH_BENCH_MESSAGES", 1_000_000))
WORKSPACE = bytes(range(32))
TINY_COUNT = 2_000
RUNS = 200


def replica_path(count: int) -> Path:
    """Build the replica once through the real ingest path; later runs reuse the file."""
    path = RESULTS / "cache" / f"queries-{count}-v{SCHEMA_VERSION}.sqlite3"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".building")
    for stale in path.parent.glob(tmp.name + "*"):
        stale.unlink()
    replica = Replica.create(tmp, WORKSPACE, bytes(32))
    step = 200_000
    for start in range(0, count, step):
        raws = posts(min(step, count - start), workspace=WORKSPACE, offset=start)
        for i in range(0, len(raws), 5_000):
            replica.ingest(raws[i:i + 5_000])
    replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    replica.close()
    tmp.rename(path)
    return path


def timed(fn, runs: int = RUNS) -> dict:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 3),
            "p99_ms": round(samples[int(len(samples) * 0.99) - 1], 3)}


def main() -> None:
    path = replica_path(TINY_COUNT if options(__doc__).tiny else COUNT)
    rng = random.Random(1)
    with Replica(path) as replica:
        channels = [c.name for c in replica.channels()]
        messages = sum(c.messages for c in replica.channels())
        figures = {
            "messages": messages,
            "channel_page_200": timed(lambda: replica.messages(rng.choice(channels), limit=200)),
            "channel_state": timed(lambda: replica.channel_state(rng.choice(channels))),
            "channel_list": timed(replica.channels, runs=50),
            "search": timed(lambda: replica.search(f"{rng.choice(WORDS)} {rng.choice(WORDS)}",
                                                   limit=50)),
            "bytes_on_disk_per_message": round(path.stat().st_size / messages, 1),
        }
    report("queries", figures, [
        Target("messages", ">", 0),
        Target("channel_page_200.p50_ms", "<=", 2, at_scale=True),
        Target("channel_state.p50_ms", "<=", 2, at_scale=True),
        Target("search.p50_ms", "<=", 20, at_scale=True)])


if __name__ == "__main__":
    main()
