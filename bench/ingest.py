"""Ingest 200,000 signed posts (50 channels, 200 authors) as a node stores what peers send
(sync._storing itself): the signature helpers check each 250 objects as they come, while one
writer thread stores the batches before them (up to sync._storing.INGEST_BATCH in a
transaction, Replica.ingest_checked). Then, in the same run and into fresh replicas, the same
posts one `Replica.ingest` call of BATCH at a time (a check, then a store: how a command or the
window stores), and the same number of messages with a conversation mix among them
(bench/_corpus.Mix: reactions on 20% of messages, 5% of them taken back, 5% of messages edited;
about 1.47 objects per message), pipelined.

Reports posts/s and, in the same run, raw single-core Ed25519 verify/s; for the mix, objects/s,
messages/s and its per-object rate over the plain run's; for both, the rate over the 10,000
objects after 1k, 10k, 100k, ... are held (how the cost grows). Wall-clock rates swing with
whatever else runs on the machine, so each run also reports its CPU time (this process, and the
helper processes that check objects, one per core) per 1,000 objects, which does not. Targets:
ingest >= 1.0x raw verify (stretch: > 1.5x); the mix's per-object rate >= 0.9x the plain
run's, by wall clock and by CPU (no regression). HEARTH_BENCH_INGEST sets the number of
messages.
"""

from __future__ import annotations

import asyncio
import os
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nacl.signing import VerifyKey  # noqa: E402

from bench._common import Target, options, rate, report  # noqa: E402
from bench._corpus import conversation, posts  # noqa: E402
from core.objects import decode  # noqa: E402
from storage import IngestResult, Replica, _verify  # noqa: E402
from sync._storing import INGEST_BATCH, Storing  # noqa: E402

COUNT = int(os.environ.get("HEARTH_BENCH_INGEST", 200_000))
TINY_COUNT = 2_000
BATCH = 1_000
WINDOW = 10_000  # objects per growth figure
HELD = (1_000, 10_000, 100_000, 200_000, 500_000, 1_000_000)
WORKSPACE = bytes(range(32))


@dataclass(frozen=True)
class Run:
    objects: int
    seconds: float
    cpu_seconds: float  # this process
    helper_cpu_seconds: float  # the helper processes that check objects
    bytes_on_disk: int
    done: list[tuple[int, float, float]]  # (objects ingested, seconds, CPU seconds) per batch

    def cpu_ms_per_1000(self) -> float:
        return round((self.cpu_seconds + self.helper_cpu_seconds) / self.objects * 1e6, 1)

    def growth(self) -> tuple[dict[str, float], dict[str, float]]:
        """Objects/s, and this process's CPU ms per 1,000 objects, over at least WINDOW
        objects from when each of HELD are held (to the end of a batch), and over the last
        batches."""
        points = [(0, 0.0, 0.0), *self.done]
        starts = [next((p for p in points if p[0] >= held), None) for held in HELD]
        tail = [p for p in points if p[0] <= self.objects - WINDOW]
        starts.append(tail[-1] if tail else None)
        rates, cpu = {}, {}
        for first in starts:
            end = first and next((p for p in points if p[0] >= first[0] + WINDOW), None)
            if first is None or end is None:
                continue
            name = f"{first[0] // 1000}k_held"
            rates[name] = rate(end[0] - first[0], end[1] - first[1])
            cpu[name] = round((end[2] - first[2]) / (end[0] - first[0]) * 1e6, 1)
        return rates, cpu


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


Store = Callable[[Replica, list[bytes], Callable[[int], None]], None]


def one_call_at_a_time(replica: Replica, raws: list[bytes], done: Callable[[int], None]) -> None:
    for i in range(0, len(raws), BATCH):
        _added(replica.ingest(raws[i:i + BATCH]))
        done(min(i + BATCH, len(raws)))


class _Peer:
    """What sync._storing sees of the connection the objects came on."""

    def __init__(self) -> None:
        self.session = self
        self.rounds = self  # session.rounds.stored

    def stored(self, count: int) -> None:
        pass

    def wake(self) -> None:
        pass

    def close(self, reason: str) -> None:
        raise AssertionError(reason)

    protocol_error = close


def pipelined(replica: Replica, raws: list[bytes], done: Callable[[int], None]) -> None:
    """Through sync._storing, as a node stores what a peer sends: checks begin as each frame
    (SUB_BATCH objects) comes, and the writer thread stores one batch while the next ones'
    are checked."""
    held = 0

    def stored(frames: list, results: list[IngestResult]) -> None:
        nonlocal held
        _added(results)
        held += len(results)
        done(held)

    async def run() -> None:
        storing = Storing(replica, stored, lambda connection, event: None)
        peer = _Peer()
        try:
            for k in range(0, len(raws), _verify.SUB_BATCH):
                storing.objects(peer, raws[k:k + _verify.SUB_BATCH])
                await asyncio.sleep(0)  # the loop turns, as between frames
            await storing.async_drain()
        finally:
            storing.close()

    asyncio.run(run())


def _added(results: list[IngestResult]) -> None:
    assert all(r.status == "added" for r in results), results[0]


def ingest(raws: list[bytes], held: int, store: Store = pipelined) -> Run:
    """Ingest `raws` with `store` into a new replica that ends up holding `held`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replica.sqlite3"
        replica = Replica.create(path, WORKSPACE, bytes(32))
        done: list[tuple[int, float, float]] = []
        helper_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start, cpu_start = time.perf_counter(), time.process_time()
        store(replica, raws, lambda n: done.append(
            (n, time.perf_counter() - start, time.process_time() - cpu_start)))
        elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        _verify.shutdown()  # each run starts its own helpers; their CPU time counts once they exit
        helper = resource.getrusage(resource.RUSAGE_CHILDREN)
        helper_cpu = (helper.ru_utime + helper.ru_stime
                      - helper_before.ru_utime - helper_before.ru_stime)
        assert replica.count() == held, (replica.count(), held)
        size = sum(f.stat().st_size for f in Path(tmp).iterdir())
        replica.close()
    return Run(len(raws), elapsed, cpu, helper_cpu, size, done)


def main() -> None:
    count = TINY_COUNT if options(__doc__).tiny else COUNT
    raws = posts(count, workspace=WORKSPACE)
    mix = conversation(count, workspace=WORKSPACE)
    verify = raw_verify_rate(raws)
    plain = ingest(raws, count)
    calls = ingest(raws, count, one_call_at_a_time)
    del raws
    # Each removal (a post/delete) takes its reaction out of the replica; the delete stays.
    mixed = ingest(mix.raws, len(mix.raws) - mix.kinds["post/delete"])
    ingest_rate = rate(count, plain.seconds)
    calls_rate = rate(count, calls.seconds)
    objects_rate = rate(mixed.objects, mixed.seconds)
    plain_growth, plain_cpu_growth = plain.growth()
    mix_growth, mix_cpu_growth = mixed.growth()
    report("ingest", {
        "posts": count, "batch": INGEST_BATCH, "cores": os.cpu_count(),
        "helper_processes": _verify.processes(),
        "ingest_posts_per_s": ingest_rate,
        "raw_verify_per_s_single_core": verify,
        "ingest_vs_verify_ratio": round(ingest_rate / verify, 3),
        "seconds": round(plain.seconds, 2),
        "bytes_on_disk_per_post": round(plain.bytes_on_disk / count, 1),
        "cpu_seconds": {"this_process": round(plain.cpu_seconds, 2),
                        "helper": round(plain.helper_cpu_seconds, 2)},
        "cpu_ms_per_1000_posts": plain.cpu_ms_per_1000(),
        "posts_per_s_over_10k_once_held": plain_growth,
        "this_process_cpu_ms_per_1000_posts_over_10k_once_held": plain_cpu_growth,
        "one_call_at_a_time": {
            "batch": BATCH, "ingest_posts_per_s": calls_rate,
            "ingest_vs_verify_ratio": round(calls_rate / verify, 3),
            "cpu_ms_per_1000_posts": calls.cpu_ms_per_1000(),
        },
        "mix": {
            "messages": mix.messages, "objects": mixed.objects,
            "objects_by_kind": dict(sorted(mix.kinds.items())),
            "ingest_objects_per_s": objects_rate,
            "ingest_messages_per_s": rate(mix.messages, mixed.seconds),
            "ingest_vs_verify_ratio": round(objects_rate / verify, 3),
            "seconds": round(mixed.seconds, 2),
            "bytes_on_disk_per_message": round(mixed.bytes_on_disk / mix.messages, 1),
            "cpu_seconds": {"this_process": round(mixed.cpu_seconds, 2),
                            "helper": round(mixed.helper_cpu_seconds, 2)},
            "cpu_ms_per_1000_objects": mixed.cpu_ms_per_1000(),
            "objects_per_s_over_10k_once_held": mix_growth,
            "this_process_cpu_ms_per_1000_objects_over_10k_once_held": mix_cpu_growth,
        },
        "mix_vs_plain_per_object_ratio": round(objects_rate / ingest_rate, 3),
        "mix_vs_plain_per_object_cpu_ratio": round(
            plain.cpu_ms_per_1000() / mixed.cpu_ms_per_1000(), 3),
    }, [Target("ingest_vs_verify_ratio", ">=", 1.0, at_scale=True),
        Target("mix_vs_plain_per_object_ratio", ">=", 0.9, at_scale=True),
        Target("mix_vs_plain_per_object_cpu_ratio", ">=", 0.9, at_scale=True)])


if __name__ == "__main__":
    main()
