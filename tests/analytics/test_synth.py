"""Synthetic analytics logs: contract, realism (skew, cycles, tails), rotation, determinism."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from collections import Counter, defaultdict
from datetime import date
from pathlib import Path

import numpy as np
import pytest

from analytics import synth
from analytics.events import (
    EXPIRY_BUCKETS,
    FILE_KINDS,
    FILE_SIZE_BUCKETS,
    HEAD_BUCKETS,
    KEPT_BUCKETS,
    OBJECTS_BUCKETS,
    SECONDS_BUCKETS,
    USES_BUCKETS,
    EventError,
    validate,
)

REPO = Path(__file__).resolve().parents[2]
START = date(2025, 3, 3)  # a Monday
SUBPROCESS_TIMEOUT_S = 120


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> tuple[synth.SynthConfig, synth.SynthResult, list[tuple[str, str]]]:
    cfg = synth.SynthConfig(installs=60, days=14, out=tmp_path_factory.mktemp("s") / "logs",
                            seed=5, start=START, workers=1)
    result = synth.generate(cfg)
    lines = [(path.parent.name.removeprefix("date="), text)
             for path in sorted(cfg.out.glob("date=*/*.jsonl"))
             for text in path.read_text().splitlines()]
    return cfg, result, lines


@pytest.fixture(scope="module")
def checked(logs) -> tuple[list[tuple[str, dict]], Counter]:
    """(day, event) of every valid line, and the kinds of the malformed ones."""
    good, bad = [], Counter()
    for day, text in logs[2]:
        try:
            event = json.loads(text)
        except ValueError:
            bad["truncated"] += 1
            continue
        try:
            good.append((day, validate(event)))
        except EventError:
            bad["unknown event" if event["event"] == "screen_viewed" else
                "extra field" if "user" in event else "other"] += 1
            continue
        assert text == json.dumps(event, sort_keys=True, separators=(",", ":"))
    return good, bad


def events(checked) -> list[tuple[str, dict]]:
    return checked[0]


def test_every_line_follows_the_contract_but_the_intended_few(logs, checked):
    _, result, lines = logs
    good, kinds = checked
    assert all(event["ts"][:10] == day for day, event in good)
    assert len(lines) == result.lines == len(good) + sum(kinds.values())
    assert sum(kinds.values()) == result.malformed
    assert kinds["other"] == 0 and min(kinds.values()) >= 3 and len(kinds) == 3


def test_a_few_installs_make_most_of_the_events(checked):
    per_pid_day = sorted(Counter((day, e["pid"]) for day, e in events(checked)).values(),
                         reverse=True)
    top = per_pid_day[: len(per_pid_day) // 10]
    assert sum(top) > 0.3 * sum(per_pid_day)
    assert per_pid_day[0] > 5 * statistics.median(per_pid_day)


def test_fewer_events_at_weekends_and_at_night(checked):
    evs = events(checked)
    per_day = Counter(day for day, _ in evs)
    weekend = [n for d, n in per_day.items() if date.fromisoformat(d).weekday() >= 5]
    weekday = [n for d, n in per_day.items() if date.fromisoformat(d).weekday() < 5]
    assert len(weekend) == 4 and statistics.mean(weekday) > 1.3 * statistics.mean(weekend)
    per_hour = Counter(int(e["ts"][11:13]) for _, e in evs)
    assert len(per_hour) == 24 and min(per_hour.values()) < 0.5 * max(per_hour.values())


def test_pid_is_a_keyed_hash_of_the_install_and_the_day(logs, checked):
    cfg = logs[0]
    pop = synth.population(cfg.installs, cfg.days, cfg.seed)
    by_day: dict[str, set[str]] = defaultdict(set)
    for day, e in events(checked):
        by_day[day].add(e["pid"])
        assert all(len(e[k]) == 32 for k in ("pid", "stream") if k in e)
    assert len(by_day) == cfg.days
    days = sorted(by_day)
    for a, b in zip(days, days[1:], strict=False):
        assert not by_day[a] & by_day[b], "a pid must not survive the day"
    for day in days:
        expected = {synth.pid(secret, date.fromisoformat(day)) for secret in pop.secrets}
        assert by_day[day] <= expected
    secret = pop.secrets[0]
    assert len({synth.pid(secret, date.fromisoformat(d)) for d in days}) == len(days)


def test_conflicts_bring_their_convergence(logs):
    _, result, lines = logs
    texts = [text for _, text in lines]
    conflicts = unmatched = 0
    for i, text in enumerate(texts[:-1]):
        if '"event":"conflict"' not in text or '"user"' in text:
            continue
        conflicts += 1
        try:
            first, then = json.loads(text), json.loads(texts[i + 1])
        except ValueError:
            unmatched += 1
            continue
        if then.get("event") != "convergence" or (then["pid"], then["stream"]) != (
                first["pid"], first["stream"]) or then["ts"] != first["ts"]:
            unmatched += 1
    assert conflicts > 100 and unmatched <= result.malformed


def test_heads_are_mostly_two_and_rarely_fifty_or_more():
    heads = synth._heads(np.random.default_rng(1), 200_000)
    assert heads.min() >= 2
    assert 0.75 < np.mean(heads == 2) < 0.85
    assert 0.001 < np.mean(heads >= HEAD_BUCKETS[-1]) < 0.005
    assert np.mean((heads > 2) & (heads < 10)) > 0.1


def test_sync_sessions_have_a_long_tail(checked):
    durations = sorted(e["duration_ms"] for _, e in events(checked)
                       if e["event"] == "sync_session")
    p50, p99 = durations[len(durations) // 2], durations[int(len(durations) * 0.99)]
    assert p99 > 10 * p50
    kinds = Counter(e["event"] for _, e in events(checked))
    assert all(kinds[name] > 0 for name in ("doc_commit", "doc_fork", "doc_merge", "rejection",
                                            "channel_joined", "app_started", "message_sent"))


def test_every_schema_version_is_written_doc_comment_beside_doc_commit(checked):
    evs = [e for _, e in events(checked)]
    by_version = Counter(e["schema"] for e in evs)
    assert set(by_version) == {1, 2, 3, 4, 5, 6, 7, 8}
    kinds = Counter(e["event"] for e in evs)
    assert {e["event"] for e in evs if e["schema"] == 3} == {"doc_comment"}
    assert 0 < kinds["doc_comment"] < kinds["doc_commit"]
    streams = Counter(e["stream"] for e in evs if e["event"] == "doc_comment")
    assert len(streams) > 10  # spread over the installs' streams, not one


def test_invites_and_admissions_are_written_rarer_than_comments_in_every_bucket(checked):
    evs = [e for _, e in events(checked)]
    kinds = Counter(e["event"] for e in evs)
    assert {e["event"] for e in evs if e["schema"] == 4} == {"invite_created", "member_admitted"}
    assert 0 < kinds["invite_created"] < kinds["doc_comment"]
    assert 0 < kinds["member_admitted"] < kinds["doc_comment"]
    invites = [e for e in evs if e["event"] == "invite_created"]
    assert {e["uses"] for e in invites} == set(USES_BUCKETS) == set(synth.USES)
    assert {e["expires"] for e in invites} == set(EXPIRY_BUCKETS) == set(synth.EXPIRIES)
    how = Counter(e["how"] for e in evs if e["event"] == "member_admitted")
    assert set(how) == {"invite", "personal"} and how["invite"] > how["personal"]


def test_files_attached_are_mostly_small_and_private_channels_rarer_still(checked):
    evs = [e for _, e in events(checked)]
    kinds = Counter(e["event"] for e in evs)
    assert {e["event"] for e in evs if e["schema"] == 5} == {"file_attached",
                                                            "private_channel_created"}
    assert 0 < kinds["private_channel_created"] < kinds["file_attached"] < kinds["doc_comment"]
    files = [e for e in evs if e["event"] == "file_attached"]
    assert {e["kind"] for e in files} == set(FILE_KINDS) == set(synth.FILE_KINDS)
    assert {e["files"] for e in files} == {1, 2, 3, 4}
    sizes = Counter(e["size"] for e in files)
    assert set(sizes) <= set(FILE_SIZE_BUCKETS) and len(sizes) >= 4
    assert sizes[0] + sizes[100 << 10] > len(files) / 2  # most are under a mebibyte
    assert len({e["stream"] for e in files}) > 10
    dm = Counter(e["dm"] for e in evs if e["event"] == "private_channel_created")
    assert dm[True] > dm[False] > 0


def test_kept_sets_and_history_fetches_are_written_with_their_buckets_going_together(checked):
    evs = [e for _, e in events(checked)]
    kinds = Counter(e["event"] for e in evs)
    assert {e["event"] for e in evs if e["schema"] == 6} == {"channels_kept", "history_fetched"}
    assert 0 < kinds["channels_kept"] < kinds["file_attached"]
    assert 0 < kinds["history_fetched"] < kinds["file_attached"]
    kept = [e for e in evs if e["event"] == "channels_kept"]
    assert all((e["channels"], e["documents"]) == (0, 0) for e in kept if e["all"])
    some = [e for e in kept if not e["all"]]
    assert len(kept) - len(some) > 0 and len(some) > len(kept) / 2
    assert {e["channels"] for e in some} == set(KEPT_BUCKETS)
    assert {e["documents"] for e in some} <= set(KEPT_BUCKETS) and len(
        {e["documents"] for e in some}) >= 3
    fetched = [e for e in evs if e["event"] == "history_fetched"]
    objects, seconds = Counter(e["objects"] for e in fetched), Counter(e["seconds"] for e in fetched)
    assert set(objects) <= set(OBJECTS_BUCKETS) and len(objects) >= 4
    assert set(seconds) <= set(SECONDS_BUCKETS) and len(seconds) >= 4
    # More objects take longer, and a computer keeping everything fetches more.
    big = [e["seconds"] for e in fetched if e["objects"] >= 10_000]
    small = [e["seconds"] for e in fetched if e["objects"] <= 100]
    assert big and small and statistics.median(big) > statistics.median(small)
    keeping_all = Counter(e["kept_all"] for e in fetched)
    assert keeping_all[True] > keeping_all[False] > 0
    assert statistics.median(e["objects"] for e in fetched if e["kept_all"]) > statistics.median(
        e["objects"] for e in fetched if not e["kept_all"])


def _snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.jsonl"))}


def test_same_seed_same_files_whatever_the_processes(tmp_path):
    def run(name: str, seed: int, workers: int) -> dict[str, bytes]:
        synth.generate(synth.SynthConfig(installs=25, days=3, out=tmp_path / name, seed=seed,
                                         start=START, workers=workers))
        return _snapshot(tmp_path / name)

    one = run("a", 7, 1)
    assert one == run("b", 7, 2)
    assert one != run("c", 8, 1)


def test_events_target_is_met_exactly(tmp_path):
    result = synth.generate(synth.SynthConfig(installs=30, days=5, out=tmp_path, seed=3,
                                              events_target=4321, workers=1))
    assert result.lines == 4321
    assert sum(len(p.read_text().splitlines()) for p in tmp_path.rglob("*.jsonl")) == 4321


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "analytics.synth", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)


def test_command_line(tmp_path):
    done = _cli("--installs", "5", "--days", "2", "--out", str(tmp_path / "o"), "--seed", "1",
                "--start", "2025-01-01")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (tmp_path / "o").iterdir()) == [
        "date=2025-01-01", "date=2025-01-02"]
    bad = _cli("--installs", "0", "--days", "2", "--out", str(tmp_path / "x"))
    assert bad.returncode == 2 and "at least 1" in bad.stderr
    assert not (tmp_path / "x").exists()


def test_notification_settings_changes_are_written_without_what_they_are_about(checked):
    evs = [e for _, e in events(checked)]
    kinds = Counter(e["event"] for e in evs)
    assert {e["event"] for e in evs if e["schema"] == 7} == {
        "notify_level_set", "notify_dnd_set", "notify_option_set"}
    assert 0 < kinds["notify_option_set"] < kinds["notify_level_set"] < kinds["file_attached"]
    levels = [e for e in evs if e["event"] == "notify_level_set"]
    assert {e["level"] for e in levels} == set(synth.LEVELS_SET)
    assert {e["kind"] for e in levels} == set(synth.LEVEL_KINDS)
    assert not any(e["timed"] for e in levels if e["level"] == "default")
    assert {e["option"] for e in evs if e["event"] == "notify_option_set"} == set(synth.OPTIONS)
    assert {(e["paused"], e["scheduled"]) for e in evs if e["event"] == "notify_dnd_set"} == {
        (True, True), (True, False), (False, True), (False, False)}


def test_relay_and_data_events_are_written_without_where_or_what(checked):
    evs = [e for _, e in events(checked)]
    assert {e["event"] for e in evs if e["schema"] == 8} == {"relay_changed", "data_moved"}
    moved = [e for e in evs if e["event"] == "data_moved"]
    assert {e["what"] for e in moved} <= set(synth.MOVES)
    assert all(e["messages"] == 0 for e in moved if e["what"] in ("backup", "restore"))
    assert all(e["messages"] & (e["messages"] - 1) == 0 for e in moved)  # powers of two
    assert {e["added"] for e in evs if e["event"] == "relay_changed"} == {True, False}
