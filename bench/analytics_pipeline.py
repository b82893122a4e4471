"""The analytics report on 10,000,000 synthetic events, on local[*].

Generates the events once with `analytics.synth` (cached under bench/results/cache/), runs the
Spark pipeline (`analytics.report.run`: parse, check, tables, Parquet, HTML) and, in the same run,
the single-process pure-Python reference over the same files. Reports events, events_per_s
(pipeline only, session start excluded), session_start_s, total_s (session start + pipeline),
reference_s, ratio (reference_s / pipeline_s: how many times faster than one Python process),
whether every table equals the reference exactly, and the JVM's CPU seconds. Target:
total_s <= 120 on 2 cores.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench._common import RESULTS, Target, options, rate, report  # noqa: E402

EVENTS = int(os.environ.get("HEARTH_BENCH_EVENTS", 10_000_000))
TINY_EVENTS = 20_000
DAYS = 28
SEED = 1
SYNTH_VERSION = 8  # bump when analytics.synth changes what it writes
TARGET_TOTAL_S = 120


def installs(events: int) -> int:
    return max(events // 500, 50)


def logs(events: int) -> tuple[Path, float | None]:
    """The synthetic logs, generated on the first run; (folder, seconds spent generating)."""
    from analytics.synth import SynthConfig, generate

    path = RESULTS / "cache" / f"analytics-{events}-s{SEED}-v{SYNTH_VERSION}"
    if path.exists():
        return path, None
    path.parent.mkdir(parents=True, exist_ok=True)
    building = path.with_name(path.name + ".building")
    shutil.rmtree(building, ignore_errors=True)
    started = time.perf_counter()
    generate(SynthConfig(installs=installs(events), days=DAYS, out=building, seed=SEED,
                         events_target=events))
    seconds = time.perf_counter() - started
    building.rename(path)
    return path, seconds


def main() -> None:
    tiny = options(__doc__).tiny
    events = TINY_EVENTS if tiny else EVENTS
    logs_dir, generate_s = logs(events)
    from analytics import _reference
    from analytics import report as analytics_report

    with tempfile.TemporaryDirectory(prefix="bench-analytics-") as out:
        # The session the command line would build (local[*]), without the web UI.
        # (Tiny: as the tests' session, 2 shuffle partitions: the default 200 cost minutes.)
        args = analytics_report.parse_args(
            ["--input", str(logs_dir), "--output", out, "--conf", "spark.ui.enabled=false",
             *(["--conf", "spark.sql.shuffle.partitions=2"] if tiny else [])])
        started = time.perf_counter()
        spark = analytics_report.session(args)
        session_start_s = time.perf_counter() - started
        spark.sparkContext.setLogLevel("ERROR")
        jvm = spark._jvm
        cpu_before = jvm.ProcessHandle.current().info().totalCpuDuration().get().toMillis()
        started = time.perf_counter()
        result = analytics_report.run(spark, args)
        pipeline_s = time.perf_counter() - started
    jvm_cpu_s = (jvm.ProcessHandle.current().info().totalCpuDuration().get().toMillis()
                 - cpu_before) / 1000
    spark.stop()

    started = time.perf_counter()
    expected = _reference.compute(logs_dir)
    reference_s = time.perf_counter() - started

    outcome = result.outcome
    total_s = session_start_s + pipeline_s
    report("analytics_pipeline", {
        "events": outcome.lines,
        "bad_lines": sum(outcome.bad.values()),
        "days": DAYS,
        "installs": installs(events),
        "cores": os.cpu_count(),
        "master": "local[*]",
        "generate_s": None if generate_s is None else round(generate_s, 1),
        "session_start_s": round(session_start_s, 2),
        "pipeline_s": round(pipeline_s, 2),
        "events_per_s": rate(outcome.lines, pipeline_s),
        "total_s": round(total_s, 2),
        "jvm_cpu_s": round(jvm_cpu_s, 1),
        "reference_s": round(reference_s, 2),
        "reference_events_per_s": rate(expected.lines, reference_s),
        "ratio": round(reference_s / pipeline_s, 2),
        "tables_equal_reference": (outcome.rows == expected.rows
                                   and outcome.bad == expected.bad
                                   and outcome.suppressed == expected.suppressed),
    }, [Target("total_s", "<=", TARGET_TOTAL_S, at_scale=True),
        Target("tables_equal_reference", "==", True),
        Target("events", ">", 0)])


if __name__ == "__main__":
    main()
