"""Ingest 200,000 signed posts (50 channels, 200 authors) in sync-sized batches, then, in the
same run and into a fresh replica, the same number of messages with a conversation mix among
them (bench/_corpus.Mix: reactions on 20% of messages, 5% of them taken back, 5% of messages
edited; about 1.47 objects per message).

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

import os
import resource
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from nacl.signing import VerifyKey  # noqa: E402

from bench._common import rate, report  # noqa: E402
from bench._corpus import conversation, posts  # noqa: E402
from core.objects import decode  # noqa: E402
from storage import Replica, _verify  # noqa: E402

COUNT = int(os.environ.get("HEARTH_BENCH_INGEST", 200_000))
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
        """Objects/s, and this process's CPU ms per 1,000 objects, over the WINDOW objects
        after each of HELD are held, and over the last WINDOW."""
        starts = [n for n in HELD if n + WINDOW <= self.objects]
        starts.append((self.objects - WINDOW) // BATCH * BATCH)
        at = {held: (wall, cpu) for held, wall, cpu in [(0, 0.0, 0.0), *self.done]}
        rates, cpu = {}, {}
        for start in sorted(set(starts)):
            if start < 0 or start not in at:
                continue
            end = min(start + WINDOW, self.objects)
            name = f"{start // 1000}k_held"
            rates[name] = rate(end - start, at[end][0] - at[start][0])
            cpu[name] = round((at[end][1] - at[start][1]) / (end - start) * 1e6, 1)
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


def ingest(raws: list[bytes], held: int) -> Run:
    """Ingest `raws` in BATCH-sized batches into a new replica that ends up holding `held`."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "replica.sqlite3"
        replica = Replica.create(path, WORKSPACE, bytes(32))
        done = []
        helper_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start, cpu_start = time.perf_counter(), time.process_time()
        for i in range(0, len(raws), BATCH):
            results = replica.ingest(raws[i:i + BATCH])
            assert all(r.status == "added" for r in results), results[0]
            done.append((min(i + BATCH, len(raws)), time.perf_counter() - start,
                         time.process_time() - cpu_start))
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
    raws = posts(COUNT, workspace=WORKSPACE)
    mix = conversation(COUNT, workspace=WORKSPACE)
    verify = raw_verify_rate(raws)
    plain = ingest(raws, COUNT)
    del raws
    # Each removal (a post/delete) takes its reaction out of the replica; the delete stays.
    mixed = ingest(mix.raws, len(mix.raws) - mix.kinds["post/delete"])
    ingest_rate = rate(COUNT, plain.seconds)
    objects_rate = rate(mixed.objects, mixed.seconds)
    plain_growth, plain_cpu_growth = plain.growth()
    mix_growth, mix_cpu_growth = mixed.growth()
    report("ingest", {
        "posts": COUNT, "batch": BATCH, "cores": os.cpu_count(),
        "helper_processes": _verify.processes(),
        "ingest_posts_per_s": ingest_rate,
        "raw_verify_per_s_single_core": verify,
        "ingest_vs_verify_ratio": round(ingest_rate / verify, 3),
        "target_ratio": 1.0, "stretch_ratio": 1.5,
        "seconds": round(plain.seconds, 2),
        "bytes_on_disk_per_post": round(plain.bytes_on_disk / COUNT, 1),
        "cpu_seconds": {"this_process": round(plain.cpu_seconds, 2),
                        "helper": round(plain.helper_cpu_seconds, 2)},
        "cpu_ms_per_1000_posts": plain.cpu_ms_per_1000(),
        "posts_per_s_over_10k_once_held": plain_growth,
        "this_process_cpu_ms_per_1000_posts_over_10k_once_held": plain_cpu_growth,
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
        "target_mix_vs_plain_per_object_ratio": 0.9,
    })


if __name__ == "__main__":
    main()
