"""Live updates through the Node facade: p50/p99 from a post on one node to the object being in
the other's replica (target p99 <= 50 ms), and from the start of a second node to its first
completed sync found by mDNS on the loopback interface (target <= 3 s)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.events import ObjectsStored, Synced  # noqa: E402
from app.node import Node  # noqa: E402
from bench._common import Target, options, report  # noqa: E402
from bench._workspaces import two_members  # noqa: E402

POSTS = 300
TINY_POSTS = 30
TIMEOUT_S = 30


def main() -> None:
    count = TINY_POSTS if options(__doc__).tiny else POSTS
    with tempfile.TemporaryDirectory() as tmp:
        a, b = two_members(Path(tmp))
        loopback = ["127.0.0.1"]
        node_a = Node(a, interfaces=loopback, mdns=True, reconcile_interval=None).start()
        synced = threading.Event()
        node_b = Node(b, interfaces=loopback, mdns=True, reconcile_interval=None)
        node_b.subscribe(lambda e: isinstance(e, Synced) and synced.set())
        started = time.perf_counter()
        node_b.start()
        if not synced.wait(TIMEOUT_S):
            raise RuntimeError("no sync through mDNS")
        discovery_s = time.perf_counter() - started

        arrived: dict[bytes, float] = {}
        cond = threading.Condition()

        def on_event(event) -> None:
            if isinstance(event, ObjectsStored):
                now = time.perf_counter()
                with cond:
                    for oid in event.ids:
                        arrived.setdefault(oid, now)
                    cond.notify_all()

        node_b.subscribe(on_event)
        latencies = []
        for n in range(count):
            sent = time.perf_counter()
            text = f"latency probe {n}"
            oid = node_a.facade.run(lambda ws, t=text: ws.post("general", t).id).result(TIMEOUT_S)
            with cond:
                if not cond.wait_for(lambda oid=oid: oid in arrived, TIMEOUT_S):
                    raise RuntimeError("a post never arrived")
            latencies.append((arrived[oid] - sent) * 1000)
        node_b.stop()
        node_a.stop()
    latencies.sort()
    report("live_latency", {
        "posts": count,
        "post_to_peer_replica_ms": {"p50": round(statistics.median(latencies), 2),
                                    "p99": round(latencies[int(count * 0.99) - 1], 2),
                                    "max": round(latencies[-1], 2)},
        "start_to_first_sync_via_mdns_s": round(discovery_s, 3),
    }, [Target("post_to_peer_replica_ms.p99", "<=", 50, at_scale=True),
        Target("start_to_first_sync_via_mdns_s", "<=", 3, at_scale=True)])


if __name__ == "__main__":
    main()
