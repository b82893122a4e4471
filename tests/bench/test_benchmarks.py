"""Every benchmark runs to the end at a tiny size (`--tiny`), so none rots: exit 0, and the
figures it reports are there, numbers where they must be (bench/_common.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bench._common import Target, report

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench"
RUN_TIMEOUT_S = 900

# Per benchmark: figures (dotted paths, as bench._common.Target) that must be positive numbers.
POSITIVE = {
    "analytics_pipeline": ["events", "events_per_s"],
    "attachments": ["one_to_one_mb_s", "chacha20poly1305_mb_s", "chat_posts_s"],
    "backup": ["files_mb", "cp_ms", "backup_ms", "backup_peak_rss_mb", "restore_ms"],
    "bundle": ["sizes.1000.import.objects_per_s", "largest_import_above_baseline_mb"],
    "core_objects": ["decode_validate_per_s", "raw_verify_per_s", "decode_vs_verify_ratio"],
    "doc_concurrent": ["commits", "seconds", "time_ratio"],
    "doc_history": ["commits", "open_and_render_ms", "growth_last_over_first"],
    "doc_junk": ["orphan_commit_chain.1.open_ms", "root_junk_and_commits_naming_it.1.open_ms"],
    "doc_open": ["commits", "open_and_render_ms.median"],
    "doc_review": ["diff.diff_ms", "merge.detection_ms", "unalike.diff_ms"],
    "doc_trace": ["commits", "envelope_bytes_per_commit", "stored_ratio"],
    "import_slack": ["import_messages_per_s", "ingest_posts_per_s_same_run", "peak_rss_mb"],
    "ingest": ["ingest_posts_per_s", "mix.ingest_objects_per_s", "ingest_vs_verify_ratio"],
    "join": ["posts", "seconds_all", "peak_rss_mb_sum"],
    "live_latency": ["post_to_peer_replica_ms.p50", "start_to_first_sync_via_mdns_s"],
    "members": ["sizes.100.view_ms", "growth.10->100.view_ms"],
    "package": ["bundle_mb", "first_window_offscreen.packaged.median_ms"],
    "queries": ["messages", "channel_page_200.p50_ms", "search.p50_ms", "private_messages",
                "private_page_200.p50_ms", "private_search.p50_ms"],
    "reconcile": ["summary.d0_bytes", "summary.bytes_per_difference_uniform",
                  "summary.reference_bytes_per_difference_uniform"],
    "relay": ["envelopes", "envelope_overhead", "live_p99_ms", "relay_peak_rss_mb",
              "catch_up_time_vs_lan", "catch_up_bytes_vs_lan", "growth.1.round_ms"],
    "removal": ["removed_members_posts.200.remove_ms", "removed_members_posts.200.sync_after_ms"],
    "sync_end_to_end": ["wire_bytes", "moved_object_bytes", "wire_to_object_bytes_ratio"],
    "ui_channel": ["first_page_ms", "peak_rss_mb", "longest_gui_stall_ms"],
}


def _lookup(figures: dict, path: str):
    value = figures
    for part in path.split("."):
        value = value[int(part)] if isinstance(value, list) else value[part]
    return value


def _takes_tiny(name: str) -> bool:
    """Whether bench/NAME.py reads --tiny (bench._common.options, or its own parser)."""
    source = (BENCH / f"{name}.py").read_text()
    return "options(__doc__" in source or '"--tiny"' in source


def _skip_reason(name: str) -> str | None:
    if not _takes_tiny(name):  # it would run at full size
        return f"bench/{name}.py takes no --tiny yet"
    if name == "package" and not (ROOT / "dist" / "hearth" / "hearth").exists():
        return "no bundle: `make package` first (make package-test)"
    if name == "analytics_pipeline" and not (shutil.which("java") or os.environ.get("JAVA_HOME")):
        return "Java is not installed: the Spark pipeline needs a JVM"
    return None


def test_every_benchmark_is_listed():
    scripts = {p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    assert scripts == set(POSITIVE)
    lacking = {name for name in scripts if not _takes_tiny(name)}
    assert lacking == set()


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 60)
@pytest.mark.parametrize("name", sorted(POSITIVE))
def test_benchmark_runs_at_a_tiny_size(name):
    if reason := _skip_reason(name):
        pytest.skip(reason)
    argv = [sys.executable, str(BENCH / f"{name}.py"), "--tiny"]
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S, check=False)
    assert done.returncode == 0, f"{name} exited {done.returncode}:\n{done.stderr[-4000:]}"
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    figures = json.loads(lines[-1])
    assert figures["benchmark"] == name
    for path in POSITIVE[name]:
        value = _lookup(figures, path)
        assert isinstance(value, int | float) and value > 0, (path, value)
    for target in figures.get("targets", []):
        assert not target["checked"] or target["met"], target


def test_a_missed_target_fails_the_benchmark(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr("bench._common.RESULTS", tmp_path)
    report("example", {"figures": {"ms": 12}}, [Target("figures.ms", "<=", 20)])
    assert json.loads(capsys.readouterr().out)["targets"][0]["met"]
    with pytest.raises(SystemExit) as exit_:
        report("example", {"figures": {"ms": 30}}, [Target("figures.ms", "<=", 20)])
    assert exit_.value.code == 1
    assert "figures.ms = 30 misses its target <= 20" in capsys.readouterr().err
    assert json.loads((tmp_path / "example.json").read_text())["targets"][0]["met"] is False
