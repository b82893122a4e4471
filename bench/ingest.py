"""Ingest 200,000 signed posts (50 channels, 200 authors) in sync-sized batches.

Reports posts/s and, in the same run, raw single-core Ed25519 verify/s. Target: ingest >= 0.8x
raw verify; stretch: > 1.5x by verifying on both cores.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nacl.signing import VerifyKey  # noqa: E402

from bench._common import rate, report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from core.objects import decode  # noqa: E402
from storage import Replica  # noqa: E402

COUNT = int(os.environ.get("HEARTH_BENCH_INGEST", 200_000))
BATCH = 1_000
WORKSPACE = bytes(range(32))


def raw_verify_rate(raws: list[bytes]) -> float:
    """Single-core pynacl verify/s over the same objects' signatures."""
    sample = [decode(raw) for raw in raws[:20_000]]
    triples = []
    for o in sample:
        i = o.raw.index(b"\x63sig")
        triples.append((o.author, b"\xa7" + o.raw[1:i] + o.raw[i + 70:], o.sig))
    start = time.perf_counter()
    for author, message, sig in triples:
        VerifyKey(author).verify(message, sig)
    return rate(len(triples), time.perf_counter() - start)


def main() -> None:
    raws = posts(COUNT, workspace=WORKSPACE)
    verify = raw_verify_rate(raws)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replica.sqlite3"
        replica = Replica.create(path, WORKSPACE, bytes(32))
        start = time.perf_counter()
        for i in range(0, len(raws), BATCH):
            results = replica.ingest(raws[i:i + BATCH])
            assert all(r.status == "added" for r in results), results[0]
        elapsed = time.perf_counter() - start
        assert replica.count() == COUNT
        size = sum(f.stat().st_size for f in Path(tmp).iterdir())
        replica.close()
    ingest = rate(COUNT, elapsed)
    report("ingest", {
        "posts": COUNT, "batch": BATCH, "cores": os.cpu_count(),
        "ingest_posts_per_s": ingest,
        "raw_verify_per_s_single_core": verify,
        "ingest_vs_verify_ratio": round(ingest / verify, 3),
        "target_ratio": 0.8, "stretch_ratio": 1.5,
        "seconds": round(elapsed, 2),
        "bytes_on_disk_per_post": round(size / COUNT, 1),
    })


if __name__ == "__main__":
    main()
