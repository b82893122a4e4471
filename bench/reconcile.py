"""Range-based reconciliation over the replica's real index (storage.items in SQLite).

Two sets of 100,000 and 1,000,000 items with d = 0, 1, 100, 1,000, 10,000 differences split
between the sides, spread uniformly or clustered at recent timestamps. Reports round trips,
bytes each way, bytes per difference and ms. Targets: d=0 in 1 round trip under 512 bytes;
d=1 in at most 3; bytes per difference no more than the reference's (about 1.35 KB at d=1,000
of 1M, uniform) and far below it when the differences are recent; 1M identical in under 1 s.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import report  # noqa: E402
from storage import items  # noqa: E402
from storage._schema import _script  # noqa: E402
from sync.negentropy import Negentropy  # noqa: E402
from sync.session import NEG_BUCKETS, NEG_ID_LIST_THRESHOLD  # noqa: E402
from sync.store import ItemSnapshot  # noqa: E402

PARAMS = {"buckets": NEG_BUCKETS, "id_list_threshold": NEG_ID_LIST_THRESHOLD}

SIZES = [int(n) for n in os.environ.get("HEARTH_BENCH_RECONCILE", "100000,1000000").split(",")]
DIFFS = [0, 1, 100, 1_000, 10_000]
NOW = 1_800_000_000_000
SPAN = 90 * 24 * 3600 * 1000  # three months of history
RECENT = 3600 * 1000  # clustered differences: the last hour
REFERENCE_BYTES_PER_DIFF = 1350


def make_db(path: Path, rows: list[tuple[int, bytes]]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE objects (ts INTEGER, id BLOB)")
    conn.execute("CREATE TABLE tombstones (ts INTEGER, id BLOB)")
    _script(items.SCHEMA)(conn)
    rows.sort()
    items.add_items(conn, rows)
    conn.execute("COMMIT")
    conn.close()


def add(path: Path, rows: list[tuple[int, bytes]]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    items.add_items(conn, rows)
    conn.execute("COMMIT")
    return conn


def reconcile(client: sqlite3.Connection, server: sqlite3.Connection) -> dict:
    start = time.perf_counter()
    rounds = sent = received = 0
    have: list[bytes] = []
    need: list[bytes] = []
    client.execute("BEGIN")
    server.execute("BEGIN")
    client_items, server_items = items.ItemReader(client), items.ItemReader(server)
    try:
        message = Negentropy(ItemSnapshot(client_items), **PARAMS).initiate()
        while message is not None:
            rounds += 1
            sent += len(message)
            reply = Negentropy(ItemSnapshot(server_items), **PARAMS).reconcile_server(message)
            received += len(reply)
            message, h, n = Negentropy.resume_client(
                ItemSnapshot(client_items), **PARAMS).reconcile_client(reply)
            have += h
            need += n
    finally:
        client.execute("COMMIT")
        server.execute("COMMIT")
    return {"round_trips": rounds, "bytes_client_to_server": sent,
            "bytes_server_to_client": received, "have": len(have), "need": len(need),
            "ms": round((time.perf_counter() - start) * 1000, 1)}


def main() -> None:
    rng = random.Random(7)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for size in SIZES:
            base_path = tmp / f"base-{size}.sqlite3"
            make_db(base_path, [(NOW - rng.randrange(SPAN), os.urandom(32))
                                for _ in range(size)])
            for spread in ("uniform", "recent"):
                for d in DIFFS:
                    extra = [((NOW - rng.randrange(SPAN if spread == "uniform" else RECENT)),
                              os.urandom(32)) for _ in range(d)]
                    for side in ("client", "server"):
                        shutil.copy(base_path, tmp / f"{side}.sqlite3")
                    client = add(tmp / "client.sqlite3", extra[: d // 2])
                    server = add(tmp / "server.sqlite3", extra[d // 2:])
                    figures = reconcile(client, server)
                    client.close()
                    server.close()
                    assert figures["have"] + figures["need"] == d, figures
                    total = figures["bytes_client_to_server"] + figures["bytes_server_to_client"]
                    figures.update(items=size, differences=d, spread=spread,
                                   bytes_per_difference=round(total / d, 1) if d else None)
                    results.append(figures)
                    print(f"  {size:>8} {spread:<7} d={d:<6} {figures}", file=sys.stderr)
    big = max(SIZES)
    pick = {(r["items"], r["spread"], r["differences"]): r for r in results}
    summary = {
        "d0_round_trips": pick[(big, "uniform", 0)]["round_trips"],
        "d0_bytes": pick[(big, "uniform", 0)]["bytes_client_to_server"]
        + pick[(big, "uniform", 0)]["bytes_server_to_client"],
        "d0_ms": pick[(big, "uniform", 0)]["ms"],
        "d1_round_trips": pick[(big, "uniform", 1)]["round_trips"],
    }
    if (big, "uniform", 1000) in pick:
        summary["bytes_per_difference_d1000_uniform"] = pick[(big, "uniform", 1000)][
            "bytes_per_difference"]
        summary["bytes_per_difference_d1000_recent"] = pick[(big, "recent", 1000)][
            "bytes_per_difference"]
        summary["reference_bytes_per_difference_d1000_uniform"] = REFERENCE_BYTES_PER_DIFF
    summary["splitting"] = PARAMS
    report("reconcile", {"summary": summary, "runs": results})


if __name__ == "__main__":
    main()
