"""The usage report: collector logs in, Parquet tables and a static HTML page out, on Spark.

    python -m analytics.report --input DIR --output OUT [--since D] [--until D]
        [--master URL] [--conf k=v]... [--min-cohort K]
    spark-submit [--master URL] analytics/report.py --input DIR --output OUT ...

Runs on `local[*]` unless told otherwise (`--master`, or spark-submit's own `--master`, which
wins). Reads `DIR/date=YYYY-MM-DD/*.jsonl` (only the days from --since to --until, inclusive),
counts the lines that are not valid events instead of failing on them (lines of every schema
version, 1 to 8, are read alike, each by its type's rules), and writes:

- `OUT/tables/daily_active`: date, installs (distinct pids; pids rotate daily, so one per install)
- `OUT/tables/events_daily`: date, event, count, installs (every event type of every schema
  version: reactions, edits and thread replies beside messages sent, document comments beside
  commits, invites made and members admitted, files attached and private channels made,
  changes to what a computer keeps and history fetches, notification settings changed,
  relays named and taken back, data imported, archived, backed up and restored)
- `OUT/tables/sync_sessions`: date, sessions, installs, duration_ms_p50/p95/p99, rounds_p50,
  bytes_p50, objects_p50
- `OUT/tables/conflicts`: date, kind, count, installs, heads_1 ... heads_50plus (conflicts by
  head count, buckets of `analytics.events.HEAD_BUCKETS`)
- `OUT/tables/convergence`: date, count, installs, ms_p50/p90/p99
- `OUT/tables/rejections`: date, reason, count, installs
- `OUT/summary.json`: lines read, bad lines by reason, suppressed groups per table
- `OUT/report.html`: the plots (base64 PNG) and tables, with no external resource

Percentiles are Spark's exact `percentile` (linear interpolation). A row whose group has fewer
than `--min-cohort` distinct pids (default 5) is left out of the tables and the plots; the report
says how many were.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import sys
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from urllib.parse import urlparse

if __package__ in (None, ""):  # `spark-submit analytics/report.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from analytics import _contract as C  # noqa: E402
from analytics import _html, _pipeline  # noqa: E402

DEFAULT_MIN_COHORT = 5
APP_NAME = "hearth-analytics-report"


@dataclass(frozen=True)
class Report:
    """What one run produced: the pipeline's counts and rows, the summary and the figures."""

    outcome: _pipeline.Outcome
    summary: dict
    plots: list[_html.Plot]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m analytics.report",
        description="Usage report over the analytics collector's files, on Spark.")
    parser.add_argument("--input", required=True, help="the collector's folder (date=.../*.jsonl)")
    parser.add_argument("--output", required=True, help="where tables/, summary.json and "
                        "report.html go")
    parser.add_argument("--since", type=_day, help="first day, YYYY-MM-DD (inclusive)")
    parser.add_argument("--until", type=_day, help="last day, YYYY-MM-DD (inclusive)")
    parser.add_argument("--master", help="Spark master URL (default local[*]; ignored under "
                        "spark-submit, whose --master applies)")
    parser.add_argument("--conf", action="append", default=[], type=_conf, metavar="KEY=VALUE",
                        help="a Spark setting, repeatable")
    parser.add_argument("--min-cohort", type=_cohort, default=DEFAULT_MIN_COHORT, metavar="K",
                        help="leave out groups with fewer distinct installs (default %(default)s)")
    args = parser.parse_args(argv)
    if args.since and args.until and args.since > args.until:
        parser.error(f"--since {args.since} is after --until {args.until}")
    return args


def _day(text: str) -> date:
    try:
        if re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", text):
            return date.fromisoformat(text)
    except ValueError:
        pass
    raise argparse.ArgumentTypeError(f"{text!r} is not a YYYY-MM-DD date")


def _conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"{text!r} is not KEY=VALUE")
    return key.strip(), value


def _cohort(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def under_spark_submit() -> bool:
    """spark-submit starts the JVM first and hands its gateway to the Python driver."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def session(args: argparse.Namespace):
    """The SparkSession for a command-line run: local[*] unless a master is given."""
    from pyspark.sql import SparkSession

    # Spark's advice on HotSpot, which never compiles a method over 8000 bytes: the checks of
    # every event field make one, so without it the parsing runs interpreted, a third slower.
    builder = SparkSession.builder.appName(APP_NAME).config(
        "spark.sql.codegen.hugeMethodLimit", "8000")
    if not under_spark_submit():  # spark-submit's own --master must win
        builder = builder.master(args.master or "local[*]").config(
            "spark.ui.showConsoleProgress", "false")
    for key, value in args.conf:
        builder = builder.config(key, value)
    return builder.getOrCreate()


def run(spark, args: argparse.Namespace) -> Report:
    """Run the report on an existing session (main() wraps this with its own session)."""
    opts = _pipeline.Options(input=args.input, output=args.output, since=args.since,
                             until=args.until, min_cohort=args.min_cohort)
    outcome = _pipeline.run(spark, opts)
    summary = {
        "input": args.input, "since": _iso(args.since), "until": _iso(args.until),
        "min_cohort": args.min_cohort,
        "days": [p.removeprefix(C.PARTITION_PREFIX) for p in outcome.partitions],
        "lines": outcome.lines, "valid": outcome.valid,
        "bad": {"total": sum(outcome.bad.values()), **outcome.bad},
        "suppressed": outcome.suppressed,
        "rows": {name: len(rows) for name, rows in outcome.rows.items()},
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "spark_version": spark.version,
    }
    figures = _html.plots(outcome.rows)
    out = args.output.rstrip("/")
    _write_text(spark, f"{out}/summary.json", json.dumps(summary, indent=2) + "\n")
    _write_text(spark, f"{out}/report.html", _html.page(summary, outcome.rows, figures))
    return Report(outcome=outcome, summary=summary, plots=figures)


def _iso(day: date | None) -> str | None:
    return day.isoformat() if day else None


def _write_text(spark, path: str, text: str) -> None:
    """A small file next to the tables: local paths directly, others through Hadoop's FS."""
    if _is_local(path):
        target = Path(urlparse(path).path if path.startswith("file:") else path)
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(text, encoding="utf-8")
        tmp.replace(target)
        return
    jvm = spark.sparkContext._jvm
    hpath = jvm.org.apache.hadoop.fs.Path(path)
    stream = hpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()).create(hpath, True)
    try:
        stream.write(bytearray(text.encode("utf-8")))
    finally:
        stream.close()


def _is_local(path: str) -> bool:
    scheme = urlparse(path).scheme
    return scheme in ("", "file") or len(scheme) == 1  # one letter: a Windows drive


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if _is_local(args.input) and not Path(urlparse(args.input).path if args.input.startswith(
            "file:") else args.input).is_dir():
        print(f"report: input folder {args.input} does not exist", file=sys.stderr)
        return 2
    if args.master and under_spark_submit():
        print(f"report: --master {args.master} ignored: spark-submit's --master applies",
              file=sys.stderr)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger("analytics").setLevel(logging.INFO)
    spark = session(args)
    try:
        report = run(spark, args)
    except _pipeline.InputError as exc:
        print(f"report: {exc}", file=sys.stderr)
        return 2
    finally:
        spark.stop()
    s = report.summary
    print(f"{s['lines']} lines, {s['bad']['total']} bad, "
          f"{sum(s['suppressed'].values())} groups suppressed; "
          f"wrote {args.output.rstrip('/')}/report.html")
    return 0


if __name__ == "__main__":
    sys.exit(main())
