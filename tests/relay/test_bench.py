"""bench/relay.py runs, at a tiny size, and reports every figure it promises."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_relay_benchmark_runs_at_a_tiny_size() -> None:
    env = {**os.environ, "HEARTH_BENCH_RELAY_SHARED": "300", "HEARTH_BENCH_RELAY_BEHIND": "20",
           "HEARTH_BENCH_RELAY_LIVE": "5", "HEARTH_BENCH_RELAY_CROWD": "5",
           "HEARTH_BENCH_RELAY_CROWD_SHARED": "200"}
    run = subprocess.run([sys.executable, "bench/relay.py"], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    figures = json.loads(run.stdout.strip().splitlines()[-1])
    assert figures["benchmark"] == "relay" and figures["envelopes"] >= 320
    for name in ("envelope_overhead", "catch_up_s", "catch_up_bytes_ratio", "live_p50_ms",
                 "live_p99_ms", "relay_bytes_per_envelope", "upload_rate_per_s",
                 "relay_peak_rss_mb", "crowd_round_s"):
        assert isinstance(figures[name], (int, float)) and figures[name] > 0, name
    assert figures["relay_cpu_ms_per_member_round"] >= 0  # whole clock ticks: may be 0 here
