"""Syncing through a relay (relay/, sync.relay_client) on loopback, in one process: a member
BEHIND objects behind a SHARED-object workspace catches up through the relay (time; bytes on
the wire as a ratio of the bytes of the objects that moved), a live message from A to B
through the relay (p50/p99 from `offer` to B's ingest; target p99 <= 50 ms), the envelope
overhead (envelope bytes / object bytes; target <= 1.15) and the relay's file per envelope.

Sizes: HEARTH_BENCH_RELAY_SHARED (default 100,000), HEARTH_BENCH_RELAY_BEHIND (1,000),
HEARTH_BENCH_RELAY_LIVE (200 messages)."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import relays  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from bench._workspaces import two_members  # noqa: E402
from core.encoding import dumps  # noqa: E402
from core.objects import decode_trusted  # noqa: E402
from core.relay_seal import EpochKeys  # noqa: E402
from relay.server import DB_FILE, RelayServer  # noqa: E402
from sync.relay_client import RelayAddress  # noqa: E402

SHARED = int(os.environ.get("HEARTH_BENCH_RELAY_SHARED", 100_000))
BEHIND = int(os.environ.get("HEARTH_BENCH_RELAY_BEHIND", 1_000))
LIVE = int(os.environ.get("HEARTH_BENCH_RELAY_LIVE", 200))
TIMEOUT_S = 600.0


async def _round(ws: Workspace, address: RelayAddress, **kwargs) -> tuple[float, int]:
    """One link's first round: (seconds, bytes both ways)."""
    link = relays.link_for(ws, lambda: [address], **kwargs)
    start, wall = time.monotonic(), time.time()
    await link.start()
    try:
        if not await link.wait_synced(address, wall, TIMEOUT_S):
            raise RuntimeError(f"no round with the relay: {link.states.get(address)}")
        state = link.states[address]
        return time.monotonic() - start, state.bytes_sent + state.bytes_received
    finally:
        await link.close()


async def _live(a: Workspace, b: Workspace, address: RelayAddress) -> list[float]:
    """Per message: seconds from A's offer to the object in B's replica."""
    waiting: dict[bytes, float] = {}
    took: list[float] = []
    arrived = asyncio.Event()

    def ingest(raws: list[bytes]) -> None:
        b.replica.ingest(raws)
        for raw in raws:
            sent = waiting.pop(decode_trusted(raw).id, None)
            if sent is not None:
                took.append(time.perf_counter() - sent)
                arrived.set()
    link_a = relays.link_for(a, lambda: [address])
    link_b = relays.link_for(b, lambda: [address], on_objects=ingest)
    await link_a.start()
    await link_b.start()
    try:
        for link in (link_a, link_b):
            assert await link.wait_synced(address, 0, TIMEOUT_S)
        for n in range(LIVE):
            obj = a.post("general", f"live {n}")
            arrived.clear()
            waiting[obj.id] = time.perf_counter()
            link_a.offer([obj.raw])
            await asyncio.wait_for(arrived.wait(), 10)
    finally:
        await link_a.close()
        await link_b.close()
    return took


async def _bench(a: Workspace, b: Workspace, folder: Path, moved: int) -> dict:
    server = RelayServer(folder, quota=1 << 40)
    port = await server.start("127.0.0.1", 0)
    address = RelayAddress("127.0.0.1", port, server.key)
    try:
        upload_s, upload_bytes = await _round(a, address)
        catch_up_s, catch_up_bytes = await _round(b, address)
        live = await _live(a, b, address)
        envelopes = server.store.space(server.store.spaces()[0].space)
        assert envelopes is not None
        count = envelopes.count
    finally:
        await server.close()
    db = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith(DB_FILE))
    live_ms = sorted(t * 1000 for t in live)
    return {
        "envelopes": count, "upload_s": round(upload_s, 2),
        "upload_rate_per_s": round(count / upload_s) if upload_s else None,
        "catch_up_s": round(catch_up_s, 3), "catch_up_bytes": catch_up_bytes,
        "catch_up_bytes_ratio": round(catch_up_bytes / moved, 3) if moved else None,
        "live_p50_ms": round(statistics.median(live_ms), 2),
        "live_p99_ms": round(live_ms[min(len(live_ms) - 1, int(len(live_ms) * 0.99))], 2),
        "relay_bytes_per_envelope": round(db / count, 1) if count else None,
    }


def main() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = two_members(Path(tmp))
        with Workspace.open(pa) as a, Workspace.open(pb) as b:
            a.create_channel("general", public=True)
            corpus = posts(SHARED + BEHIND, workspace=a.id, workers=2)
            a.replica.ingest(corpus)
            b.replica.ingest(corpus[:SHARED])
            b.replica.ingest([row[0] for row in a.replica.conn.execute(
                "SELECT raw FROM objects WHERE type != 'post/text'")])  # both hold them
            moved = sum(len(raw) for raw in corpus[SHARED:])
            keys = EpochKeys.derive(*a.newest_secret())
            sample = corpus[:2000]
            sealed = sum(len(dumps([e.opaque, e.bucket, e.box])) for e in
                         (keys.seal(raw, decode_trusted(raw).ts) for raw in sample))
            figures = asyncio.run(_bench(a, b, Path(tmp) / "relay", moved))
    figures = {"shared": SHARED, "behind": BEHIND, "live_messages": LIVE,
               "envelope_overhead": round(sealed / sum(map(len, sample)), 3), **figures}
    report("relay", figures)
    return figures


if __name__ == "__main__":
    main()
