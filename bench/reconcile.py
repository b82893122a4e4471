"""Reconciliation under sync protocol 3, over the replica's real index (storage.items in SQLite).

Two sides share 100,000 and 1,000,000 items in 50 channels' streams, with d = 0, 1, 100,
1,000, 10,000 differences split between the sides, spread uniformly over three months or
clustered in the last hour. A round as sync/_rounds.py runs it: a summary of every stream
each way (`sums`), then negentropy newest first over each stream that differs, 16 streams in
flight, Hearth's splitting (12 buckets, id lists below 24), every frame encoded as on the
wire (encrypted framing excluded). Reports round trips, bytes each way, bytes per difference
and ms; and, in the same run over the same items, the bytes per difference of the negentropy
reference (hoytech's defaults, 16 buckets and id lists below 32) and of protocol 2 (Hearth's
splitting), both over the whole set at once.
Targets: d=0 in 1 round trip and at most 80 bytes per stream; d=1 in at most 4 round trips
(the summary, then at most 3); bytes per difference at d=1,000 no more than the reference's,
and below it when the differences are recent; 1M identical in under 1 s. Protocol 2
reconciled the whole set at once: 625 bytes per difference at d=1,000 of 1M (issue 20, the
turn-2 figure), reported beside these for comparison.
"""

from __future__ import annotations

import os
import random
import shutil
import sqlite3
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import Target, options, report  # noqa: E402
from core.kinds import CHANNEL_CLASS  # noqa: E402
from storage import items  # noqa: E402
from storage._schema import migrate  # noqa: E402
from sync._files import encode_frame  # noqa: E402
from sync._rounds import NEED_HIGH, NEG_STREAMS  # noqa: E402
from sync.negentropy import (  # noqa: E402
    DEFAULT_BUCKETS,
    DEFAULT_ID_LIST_THRESHOLD,
    FRAME_SIZE_MARGIN,
    Negentropy,
    VectorStorage,
    fingerprint_from_sum,
)
from sync.session import NEG_PARAMS  # noqa: E402
from sync.store import ItemSnapshot  # noqa: E402

REFERENCE = {"buckets": DEFAULT_BUCKETS, "id_list_threshold": DEFAULT_ID_LIST_THRESHOLD}
WHOLE_SET_PARAMS = {k: NEG_PARAMS[k] for k in ("buckets", "id_list_threshold")}
CHANNELS = 50
DIFFS = [0, 1, 100, 1_000, 10_000]
NOW = 1_800_000_000_000
SPAN = 90 * 24 * 3600 * 1000  # three months of history
RECENT = 3600 * 1000  # clustered differences: the last hour
PROTOCOL_2_BYTES_PER_DIFF = 625  # whole-set reconciliation, d=1,000 of 1M (the turn-2 figure)
EMPTY_FINGERPRINT = fingerprint_from_sum(0, 0)
REPLY_LIMIT = NEED_HIGH * 32 + FRAME_SIZE_MARGIN  # what an initiator with room asks for
ID_SIZE = 32


def make_db(path: Path, rows: list[items.Item]) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    migrate(conn)  # the replica's schema; only the item index is filled
    conn.execute("BEGIN")
    rows.sort()
    for start in range(0, len(rows), 50_000):
        items.add_items(conn, rows[start:start + 50_000])
    conn.execute("COMMIT")
    conn.close()


def add(path: Path, rows: list[items.Item]) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    items.add_items(conn, rows)
    conn.execute("COMMIT")
    return conn


def streams(reader: items.ItemReader) -> dict[bytes, tuple[int, int, bytes, int]]:
    """stream -> (class, count, fingerprint, newest), as sync.store.ReplicaStore.streams."""
    return {stream: (klass, count, fingerprint_from_sum(total, count), newest)
            for stream, klass, count, total, newest in reader.streams()}


def protocol_3(client: sqlite3.Connection, server: sqlite3.Connection) -> dict:
    """One round between two replicas' indexes, both sides interested in every stream."""
    start = time.perf_counter()
    sent = received = 0
    have: list[bytes] = []
    need: list[bytes] = []
    client.execute("BEGIN")
    server.execute("BEGIN")
    try:
        mine, theirs = items.ItemReader(client), items.ItemReader(server)
        own, other = streams(mine), streams(theirs)
        summary = encode_frame({"t": "sums", "r": 1, "ss": [
            [s, fp, count, klass] for s, (klass, count, fp, _) in own.items()]})
        sent += len(summary)
        empty = (0, 0, EMPTY_FINGERPRINT, 0)
        differ = []
        for stream in own.keys() | other.keys():
            klass, count, fp, newest = other.get(stream, empty)
            if own.get(stream, empty)[2] != fp:
                differ.append([stream, fp, count, klass or own[stream][0], newest])
        differ.sort(key=lambda e: -e[4])
        received += len(encode_frame({"t": "sums", "r": 1, "ss": differ}))
        rounds = 1
        queue = deque(e[0] for e in differ)
        active: dict[bytes, bytes] = {}  # stream -> the client's message in flight
        while queue or active:
            while queue and len(active) < NEG_STREAMS:
                stream = queue.popleft()
                active[stream] = Negentropy(ItemSnapshot(mine, stream, newest_first=True),
                                            **NEG_PARAMS).initiate()
            rounds += 1
            for stream, message in list(active.items()):
                frame = {"t": "neg", "r": 1, "s": stream, "d": 1, "l": REPLY_LIMIT, "m": message}
                sent += len(encode_frame(frame))
                reply = Negentropy(ItemSnapshot(theirs, stream, newest_first=True), REPLY_LIMIT,
                                   **NEG_PARAMS).reconcile_server(message)
                received += len(encode_frame({**frame, "m": reply}))
                step = Negentropy.resume_client(ItemSnapshot(mine, stream, newest_first=True),
                                                **NEG_PARAMS).reconcile_client(reply)
                have += step.have
                need += step.need
                if step.next_message is None:
                    del active[stream]
                else:
                    active[stream] = step.next_message
    finally:
        client.execute("COMMIT")
        server.execute("COMMIT")
    return {"round_trips": rounds, "bytes_client_to_server": sent,
            "bytes_server_to_client": received, "have": len(have), "need": len(need),
            "streams": len(own), "ms": round((time.perf_counter() - start) * 1000, 1)}


def whole_set(client_rows: list[items.Item], server_rows: list[items.Item],
              params: dict[str, int]) -> int:
    """Bytes both ways of negentropy over the two whole sets at once, split by `params`."""
    sides = []
    for rows in (client_rows, server_rows):
        storage = VectorStorage()
        for _, ts, item_id, _ in rows:
            storage.insert(ts, item_id)
        storage.seal()
        sides.append(storage)
    total = 0
    message = Negentropy(sides[0], **params).initiate()
    while message is not None:
        reply = Negentropy(sides[1], **params).reconcile_server(message)
        total += len(message) + len(reply)
        message = Negentropy.resume_client(sides[0], **params).reconcile_client(
            reply).next_message
    return total


def main() -> None:
    args = options(__doc__)
    sizes = [2_000] if args.tiny else [
        int(n) for n in os.environ.get("HEARTH_BENCH_RECONCILE", "100000,1000000").split(",")]
    diffs = [0, 1, 100] if args.tiny else DIFFS
    rng = random.Random(7)
    channels = [rng.randbytes(32) for _ in range(CHANNELS)]

    def item(span: int) -> items.Item:
        return (rng.choice(channels), NOW - rng.randrange(span), rng.randbytes(32), CHANNEL_CLASS)

    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for size in sizes:
            base_rows = [item(SPAN) for _ in range(size)]
            base_path = tmp / f"base-{size}.sqlite3"
            make_db(base_path, list(base_rows))
            for spread in ("uniform", "recent"):
                for d in diffs:
                    extra = [item(SPAN if spread == "uniform" else RECENT) for _ in range(d)]
                    for side in ("client", "server"):
                        shutil.copy(base_path, tmp / f"{side}.sqlite3")
                    client = add(tmp / "client.sqlite3", extra[: d // 2])
                    server = add(tmp / "server.sqlite3", extra[d // 2:])
                    figures = protocol_3(client, server)
                    client.close()
                    server.close()
                    if figures["have"] + figures["need"] != d:
                        raise SystemExit(f"reconciliation found {figures['have']} + "
                                         f"{figures['need']} differences of {d}")
                    total = figures["bytes_client_to_server"] + figures["bytes_server_to_client"]
                    figures.update(items=size, differences=d, spread=spread,
                                   bytes_per_difference=round(total / d, 1) if d else None)
                    if d:
                        sides = (base_rows + extra[: d // 2], base_rows + extra[d // 2:])
                        ref = whole_set(*sides, REFERENCE)
                        figures["reference_bytes_per_difference"] = round(ref / d, 1)
                        old = whole_set(*sides, WHOLE_SET_PARAMS)
                        figures["protocol_2_bytes_per_difference"] = round(old / d, 1)
                    results.append(figures)
                    print(f"  {size:>8} {spread:<7} d={d:<6} {figures}", file=sys.stderr)
    big = max(sizes)
    pick = {(r["items"], r["spread"], r["differences"]): r for r in results}
    d0 = pick[(big, "uniform", 0)]
    mid = 1_000 if (big, "uniform", 1_000) in pick else max(diffs)
    summary = {
        "items": big, "streams": d0["streams"],
        "d0_round_trips": d0["round_trips"],
        "d0_bytes": d0["bytes_client_to_server"] + d0["bytes_server_to_client"],
        "d0_bytes_per_stream": round((d0["bytes_client_to_server"]
                                      + d0["bytes_server_to_client"]) / d0["streams"], 1),
        "d0_ms": d0["ms"],
        "d1_round_trips": pick[(big, "uniform", 1)]["round_trips"],
        "differences": mid,
        "bytes_per_difference_uniform": pick[(big, "uniform", mid)]["bytes_per_difference"],
        "bytes_per_difference_recent": pick[(big, "recent", mid)]["bytes_per_difference"],
        "reference_bytes_per_difference_uniform":
            pick[(big, "uniform", mid)]["reference_bytes_per_difference"],
        "protocol_2_bytes_per_difference_uniform":
            pick[(big, "uniform", mid)]["protocol_2_bytes_per_difference"],
        "protocol_2_bytes_per_difference_d1000_of_1m_turn_2": PROTOCOL_2_BYTES_PER_DIFF,
        "splitting": {k: NEG_PARAMS[k] for k in ("buckets", "id_list_threshold")},
    }
    report("reconcile", {"summary": summary, "runs": results}, [
        Target("summary.d0_round_trips", "==", 1),
        Target("summary.d0_bytes_per_stream", "<=", 80),
        Target("summary.d0_ms", "<", 1000, at_scale=True),
        Target("summary.d1_round_trips", "<=", 4),
        Target("summary.bytes_per_difference_uniform", "<=",
               summary["reference_bytes_per_difference_uniform"], at_scale=True),
        Target("summary.bytes_per_difference_recent", "<=",
               summary["reference_bytes_per_difference_uniform"], at_scale=True),
    ])


if __name__ == "__main__":
    main()
