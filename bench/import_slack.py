"""Import a Slack export of 1,000,000 messages in 200 channels (`hearth import-slack`,
app/slack_import.py) into a fresh workspace: 400 Slack users, about a tenth of messages
replies in threads, a fifth with reactions, one in twenty edited, with Slack markup (bold,
mentions, links) to convert. The export is built first, in Slack's layout, as a zip.

Reports messages/s of the import (the whole of it: the check pass that reads every day file,
then converting and signing, in the import's helper processes (app/slack_workers.py), and
storing, in this one), with progress as it goes, and the peak resident memory of this process
and its helpers together while it runs; and, in the same run and at the same count, bench/ingest.py's rate: signed
posts stored as a node stores what peers send (sync._storing, pipelined). Both also as CPU
time per 1,000 (this process and its helpers: the import's, or ingest's signature helpers),
which a busy machine does not move as it moves wall-clock rates. Targets: the import >= 0.8x
that rate; peak memory <= 400 MB. HEARTH_BENCH_SLACK sets the number of messages.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import resource
import sys
import tempfile
import threading
import time
import zipfile
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import Target, options, rate, report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from bench.ingest import WORKSPACE, ingest  # noqa: E402
from storage import _verify  # noqa: E402

COUNT = int(os.environ.get("HEARTH_BENCH_SLACK", 1_000_000))
TINY_COUNT = 4_000
CHANNELS = 200
TINY_CHANNELS = 8
USERS = 400
PER_DAY = 50  # messages per day file
T0 = 1_500_000_000
WORDS = ("ship", "review", "lunch", "deploy", "bug", "release", "plan", "meeting", "design",
         "docs", "café", "日本", "test", "merge", "coffee", "Friday", "demo", "sprint")


def build_export(path: Path, count: int, channels: int, seed: int = 7) -> None:
    """A Slack export of `count` messages spread over `channels` channels, as a zip."""
    rng = random.Random(seed)
    users = [{"id": f"U{n:06d}", "name": f"user{n}", "profile": {"display_name": f"user {n}"}}
             for n in range(USERS)]
    listing = [{"id": f"C{n:06d}", "name": f"channel-{n}", "created": T0, "members": [],
                "topic": {"value": f"topic {n}"}, "purpose": {"value": ""}}
               for n in range(channels)]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        zf.writestr("users.json", json.dumps(users))
        zf.writestr("channels.json", json.dumps(listing))
        for c in range(channels):
            n = count // channels + (1 if c < count % channels else 0)
            day, ts, roots, batch = 0, T0, [], []
            for k in range(n):
                ts += rng.randint(1, 60)
                user = f"U{rng.randrange(USERS):06d}"
                words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
                text = f"*{words}* <@U{rng.randrange(USERS):06d}> see <https://example.org/{k}|this>"
                msg: dict = {"type": "message", "user": user, "ts": f"{ts}.{k % 1000000:06d}",
                             "text": text}
                if roots and rng.random() < 0.1:
                    msg["thread_ts"] = rng.choice(roots[-20:])
                elif rng.random() < 0.05:
                    msg["thread_ts"] = msg["ts"]
                    roots.append(msg["ts"])
                if rng.random() < 0.2:
                    msg["reactions"] = [{"name": rng.choice(["thumbsup", "tada", "eyes"]),
                                         "users": [user], "count": rng.randint(1, 5)}]
                if rng.random() < 0.05:
                    msg["edited"] = {"user": user, "ts": f"{ts + 5}.000000"}
                batch.append(msg)
                if len(batch) == PER_DAY or k == n - 1:
                    date = time.strftime("%Y-%m-%d", time.gmtime(T0 + day * 86400))
                    zf.writestr(f"channel-{c}/{date}.json", json.dumps(batch))
                    batch, day = [], day + 1


class PeakMemory:
    """The peak resident set size of this process and its children while it is entered
    (sampled)."""

    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _rss(self) -> int:
        """This process's resident set and its children's (the import's helpers)."""
        pids = ["self"]
        with contextlib.suppress(OSError):
            for task in os.listdir("/proc/self/task"):
                with open(f"/proc/self/task/{task}/children") as f:
                    pids += f.read().split()
        pages = 0
        for pid in pids:
            with contextlib.suppress(OSError, IndexError, ValueError), \
                    open(f"/proc/{pid}/statm") as f:
                pages += int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")

    def _sample(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, self._rss())

    def __enter__(self) -> PeakMemory:
        self.peak = self._rss()
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())


def run_import(export: Path, count: int) -> tuple[float, int, int, float]:
    """(seconds, peak RSS bytes, messages imported, CPU seconds with the signature helpers')
    of one import into a new workspace."""
    from app.paths import Paths
    from app.slack_import import import_slack
    from app.workspace import Workspace

    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths.resolve(Path(tmp), "default")
        Workspace.init(paths, "importer").close()
        shown = [0]

        def progress(done: int, total: int) -> None:
            if done * 10 // max(total, 1) != shown[0]:
                shown[0] = done * 10 // max(total, 1)
                print(f"import: {done}/{total} messages", file=sys.stderr, flush=True)

        helper_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        with Workspace.open(paths) as ws, PeakMemory() as memory:
            start, cpu_start = time.perf_counter(), time.process_time()
            summary = import_slack(ws, export, progress=progress)
            seconds, cpu = time.perf_counter() - start, time.process_time() - cpu_start
        _verify.shutdown()  # the helpers' CPU time counts once they exit
        helper = resource.getrusage(resource.RUSAGE_CHILDREN)
        helper_cpu = (helper.ru_utime + helper.ru_stime
                      - helper_before.ru_utime - helper_before.ru_stime)
        assert summary.messages == count, summary
    return seconds, memory.peak, summary.messages, cpu + helper_cpu


def main() -> None:
    small = options(__doc__).tiny
    count, channels = (TINY_COUNT, TINY_CHANNELS) if small else (COUNT, CHANNELS)
    with tempfile.TemporaryDirectory() as tmp:
        export = Path(tmp) / "slack-export.zip"
        start = time.perf_counter()
        build_export(export, count, channels)
        built = time.perf_counter() - start
        size = export.stat().st_size
        seconds, peak, imported, cpu = run_import(export, count)
    import_rate = rate(imported, seconds)
    raws = posts(count, channels=channels, workspace=WORKSPACE)
    baseline = ingest(raws, count)
    del raws
    ingest_rate = rate(count, baseline.seconds)
    report("import_slack", {
        "messages": count, "channels": channels, "export_bytes": size,
        "export_build_seconds": round(built, 1),
        "import_seconds": round(seconds, 2),
        "import_messages_per_s": import_rate,
        "ingest_posts_per_s_same_run": ingest_rate,
        "import_vs_ingest_ratio": round(import_rate / ingest_rate, 3),
        "cpu_ms_per_1000_messages": {"import": round(cpu / imported * 1e6, 1),
                                     "ingest": baseline.cpu_ms_per_1000()},
        "import_vs_ingest_cpu_ratio": round(baseline.cpu_ms_per_1000() * imported
                                            / (cpu * 1e6), 3),
        "peak_rss_mb": round(peak / 1e6, 1),
    }, [Target("import_vs_ingest_ratio", ">=", 0.8, at_scale=True),
        Target("peak_rss_mb", "<=", 400, at_scale=True)])


if __name__ == "__main__":
    main()
