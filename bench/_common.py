"""Shared by the benchmarks: the command line, where results go, how they are printed, and the
targets each figure must meet (a benchmark exits 1 when one is missed)."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"

_tiny = False


def options(doc: str | None, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """Parse the command line: every benchmark takes `--tiny` (a size that runs in seconds,
    so tests/bench/test_benchmarks.py keeps each one running; its figures mean little)."""
    parser = parser or argparse.ArgumentParser(
        description=(doc or "").strip().splitlines()[0] if doc else None)
    parser.add_argument("--tiny", action="store_true",
                        help="run at a tiny size (a smoke test: the figures mean little)")
    args = parser.parse_args()
    global _tiny
    _tiny = args.tiny
    return args


def tiny() -> bool:
    """Whether this run is `--tiny`."""
    return _tiny


@dataclass(frozen=True)
class Target:
    """A figure's target: `figure` is a dotted path into the reported figures, `op` one of
    <=, <, >=, >, ==. A target about speed or scale (times, rates, ratios against fixed costs,
    growth with size) is `at_scale`: checked at the benchmark's real size, reported but not
    checked in a tiny run (whose figures mean little, on whatever machine runs the tests)."""

    figure: str
    op: str
    limit: float
    at_scale: bool = False


_OPS = {"<=": lambda v, t: v <= t, "<": lambda v, t: v < t, ">=": lambda v, t: v >= t,
        ">": lambda v, t: v > t, "==": lambda v, t: v == t}


def _lookup(figures: dict, path: str) -> Any:
    value: Any = figures
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def report(name: str, figures: dict, targets: Sequence[Target] = ()) -> None:
    """Write bench/results/NAME.json and print a one-line summary; with `targets`, record
    whether each is met, and exit 1 (after writing) when one checked is missed."""
    checked = []
    for target in targets:
        value = _lookup(figures, target.figure)
        applies = not (target.at_scale and _tiny)
        met = value is not None and _OPS[target.op](value, target.limit)
        checked.append({"figure": target.figure, "value": value, "op": target.op,
                        "target": target.limit, "met": met, "checked": applies})
    if checked:
        figures = {**figures, "targets": checked}
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "python": platform.python_version(),
              "machine": platform.machine(), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
              "tiny": _tiny, **figures}
    (RESULTS / f"{name}{'-tiny' if _tiny else ''}.json").write_text(
        json.dumps(record, indent=2) + "\n")
    print(json.dumps({"benchmark": name, **figures}, separators=(",", ":")))
    missed = [c for c in checked if c["checked"] and not c["met"]]
    for c in missed:
        print(f"{name}: {c['figure']} = {c['value']} misses its target {c['op']} {c['target']}",
              file=sys.stderr)
    if missed:
        sys.exit(1)


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")
