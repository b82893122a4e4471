"""Shared by the benchmarks: where results go and how they are printed."""

from __future__ import annotations

import json
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def report(name: str, figures: dict) -> None:
    """Write bench/results/NAME.json and print a one-line summary."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    record = {"benchmark": name, "python": platform.python_version(),
              "machine": platform.machine(), "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
              **figures}
    (RESULTS / f"{name}.json").write_text(json.dumps(record, indent=2) + "\n")
    print(json.dumps({"benchmark": name, **figures}, separators=(",", ":")))


def rate(count: int, seconds: float) -> float:
    return round(count / seconds, 1) if seconds > 0 else float("inf")
