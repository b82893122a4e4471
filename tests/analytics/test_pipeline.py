"""The Spark report against the pure-Python reference (docs/ARCHITECTURE.md "Analytics").

The pipeline runs on the session-wide local[2] SparkSession through `report.run`, the function
`main()` wraps. The command line's refusals are tested here in subprocesses; its full runs (with
--min-cohort, --master, and through spark-submit) are in test_standalone_cluster.py.
"""

from __future__ import annotations

import base64
import json
import os
import random
import re
import subprocess
import sys
from collections import Counter
from datetime import date, datetime
from pathlib import Path

import pytest

from analytics import _reference
from analytics.events import EventError, validate, version_of

from .conftest import write_logs

REPO = Path(__file__).resolve().parents[2]
DAY = "2025-03-03"
NEXT = "2025-03-04"
PID = "0123456789abcdef" * 2
STREAM = "fedcba9876543210" * 2
SUBPROCESS_TIMEOUT_S = 240


def line(event: str = "message_sent", *, ts: str = f"{DAY}T10:00:00Z", pid: str = PID,
         **fields: object) -> str:
    defaults = {
        "message_sent": {"length": 16},
        "sync_session": {"peers": 2, "rounds": 3, "bytes": 1024, "objects": 5,
                         "duration_ms": 250},
        "conflict": {"kind": "concurrent_heads", "heads": 2, "stream": STREAM},
        "convergence": {"ms": 120, "stream": STREAM},
        "rejection": {"reason": "policy"},
        "reaction_added": {"stream": STREAM},
        "message_edited": {"length": 64, "stream": STREAM},
        "thread_reply": {"length": 16, "broadcast": False, "stream": STREAM},
        "doc_comment": {"stream": STREAM},
        "invite_created": {"uses": "one", "expires": "week"},
        "member_admitted": {"how": "invite"},
        "file_attached": {"size": 102400, "kind": "image", "files": 1, "stream": STREAM},
        "private_channel_created": {"dm": False},
        "channels_kept": {"all": False, "channels": 2, "documents": 0},
        "history_fetched": {"objects": 1000, "seconds": 3, "kept_all": True},
        "notify_level_set": {"level": "none", "kind": "channel", "timed": False},
        "notify_dnd_set": {"paused": True, "scheduled": False},
        "notify_option_set": {"option": "keywords", "on": True},
        "relay_changed": {"added": True},
        "data_moved": {"what": "slack_import", "messages": 1024},
    }
    body = {"event": event, "schema": version_of(event), "ts": ts, "pid": pid} | defaults.get(
        event, {})
    return json.dumps(body | fields, separators=(",", ":"))


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


GOOD = line()
# (line, reason it is not counted or None): every reason, and the odd but valid.
LINES = [
    (GOOD, None),
    (edit(GOOD, '"length":16', '"length":16.0'), None),  # JSON Schema: 16.0 is an integer
    (edit(GOOD, '"schema":1', '"schema":1.0'), None),
    (edit(GOOD, ":", " : ").replace(",", " , ") + "  ", None),
    (line(pid="0123456789" * 3 + "01"), None),  # all digits, but a string
    (line("sync_session", objects=-0.0), None),
    (line("conflict", heads=60), None),
    (line("reaction_added"), None),
    (line("message_edited"), None),
    (line("thread_reply", broadcast=True), None),
    (edit(line("thread_reply"), '"schema":2', '"schema":2.0'), None),
    (line("doc_comment"), None),
    (edit(line("doc_comment"), '"schema":3', '"schema":3.0'), None),
    (line("invite_created"), None),
    (line("invite_created", uses="any", expires="never"), None),
    (line("member_admitted", how="personal"), None),
    (edit(line("member_admitted"), '"schema":4', '"schema":4.0'), None),
    (line("file_attached"), None),
    (line("file_attached", size=0, kind="other", files=4), None),
    (line("file_attached", size=1073741824, kind="archive", files=2.0), None),
    (edit(line("file_attached"), '"size":102400', '"size":102400.0'), None),
    (edit(line("file_attached"), '"schema":5', '"schema":5.0'), None),
    (line("private_channel_created", dm=True), None),
    (line("channels_kept"), None),
    (line("channels_kept", all=True, channels=0, documents=0), None),
    (line("channels_kept", channels=21, documents=6.0), None),
    (edit(line("channels_kept"), '"schema":6', '"schema":6.0'), None),
    (line("history_fetched"), None),
    (line("history_fetched", objects=0, seconds=0, kept_all=False), None),
    (line("history_fetched", objects=1000000, seconds=100.0), None),
    (edit(line("history_fetched"), '"objects":1000', '"objects":1e3'), None),
    ("this is not json", "not_json"),
    (GOOD[:40], "not_json"),
    ("", "not_json"),
    ("[1, 2]", "not_json"),
    ("null", "not_json"),
    (GOOD + " trailing", "not_json"),
    (GOOD + GOOD, "not_json"),
    (GOOD.replace('"', "'"), "not_json"),
    (edit(GOOD, '"length":16', '"length":NaN'), "not_json"),
    (edit(GOOD, '"length":16', '"length":016'), "not_json"),
    (edit(GOOD, "message_sent", "screen_viewed"), "unknown_event"),
    (edit(GOOD, '"message_sent"', "5"), "unknown_event"),
    (edit(GOOD, ',"length":16', ""), "invalid"),
    (edit(GOOD, '"length":16', '"length":16,"text":"hello"'), "invalid"),
    (edit(GOOD, '"length":16', '"length":16,"length":16'), "invalid"),
    (edit(GOOD, '"length":16', '"length":"16"'), "invalid"),
    (edit(GOOD, '"length":16', '"length":17'), "invalid"),
    (edit(GOOD, '"length":16', '"length":true'), "invalid"),
    (edit(GOOD, '"schema":1', '"schema":2'), "invalid"),
    (line(pid=PID.upper()), "invalid"),
    (edit(GOOD, f'"{PID}"', "12345678901234567890123456789012"), "invalid"),
    (line(ts=f"{DAY}T10:30:00Z"), "invalid"),
    (line(ts=f"{DAY} 10:00:00"), "invalid"),
    (edit(GOOD, '"event":"message_sent"', '"event":null'), "invalid"),
    ("{}", "invalid"),
    (line("conflict", heads=1), "invalid"),
    (line("sync_session", peers=0), "invalid"),
    (line("sync_session", rounds=1.5), "invalid"),
    (line("rejection", reason="too_slow"), "invalid"),
    (line("reaction_added", schema=1), "invalid"),
    (line("reaction_added", emoji="x"), "invalid"),
    (line("message_edited", text="hello"), "invalid"),
    (line("message_edited", length=20), "invalid"),
    (line("thread_reply", broadcast="true"), "invalid"),
    (line("thread_reply", broadcast=1), "invalid"),
    (line("thread_reply", broadcast=None), "invalid"),
    (edit(line("thread_reply"), ',"broadcast":false', ""), "invalid"),
    (line("doc_comment", schema=2), "invalid"),
    (line("doc_comment", text="hello"), "invalid"),
    (line("doc_comment", length=16), "invalid"),
    (line("doc_comment", stream=PID.upper()), "invalid"),
    (edit(line("doc_comment"), f',"stream":"{STREAM}"', ""), "invalid"),
    (edit(GOOD, '"schema":1', '"schema":3'), "invalid"),
    (edit(line("thread_reply"), '"schema":2', '"schema":3'), "invalid"),
    (line("invite_created", uses=1), "invalid"),
    (line("invite_created", uses="1"), "invalid"),
    (line("invite_created", uses=True), "invalid"),
    (line("invite_created", expires=1_741_000_000_000), "invalid"),
    (line("invite_created", expires="month"), "invalid"),
    (line("invite_created", tag="ab" * 16), "invalid"),
    (edit(line("invite_created"), ',"expires":"week"', ""), "invalid"),
    (line("invite_created", schema=3), "invalid"),
    (line("member_admitted", how="code"), "invalid"),
    (line("member_admitted", how=None), "invalid"),
    (line("member_admitted", key="ef" * 32), "invalid"),
    (line("member_admitted", uses="one"), "invalid"),
    (edit(line("member_admitted"), ',"how":"invite"', ""), "invalid"),
    (edit(line("doc_comment"), '"schema":3', '"schema":4'), "invalid"),
    (edit(GOOD, '"schema":1', '"schema":4'), "invalid"),
    (line("file_attached", size=3141592), "invalid"),
    (line("file_attached", size="102400"), "invalid"),
    (line("file_attached", size="<1MB"), "invalid"),
    (line("file_attached", size=102400.5), "invalid"),
    (line("file_attached", kind="image/png"), "invalid"),
    (line("file_attached", kind="concurrent_heads"), "invalid"),
    (line("file_attached", kind=1), "invalid"),
    (line("file_attached", files=0), "invalid"),
    (line("file_attached", files=5), "invalid"),
    (line("file_attached", files=1.5), "invalid"),
    (line("file_attached", files="1"), "invalid"),
    (line("file_attached", files=True), "invalid"),
    (line("file_attached", stream="x" * 32), "invalid"),
    (line("file_attached", name="payroll.xlsx"), "invalid"),
    (line("file_attached", type="image/png"), "invalid"),
    (edit(line("file_attached"), f',"stream":"{STREAM}"', ""), "invalid"),
    (line("file_attached", schema=4), "invalid"),
    (line("private_channel_created", dm="true"), "invalid"),
    (line("private_channel_created", dm=1), "invalid"),
    (line("private_channel_created", dm=None), "invalid"),
    (line("private_channel_created", members=2), "invalid"),
    (line("private_channel_created", name="secret-plans"), "invalid"),
    (edit(line("private_channel_created"), ',"dm":false', ""), "invalid"),
    (edit(line("member_admitted"), '"schema":4', '"schema":5'), "invalid"),
    (edit(GOOD, '"schema":1', '"schema":5'), "invalid"),
    (line("channels_kept", channels=3), "invalid"),
    (line("channels_kept", channels=37), "invalid"),
    (line("channels_kept", channels="2-5"), "invalid"),
    (line("channels_kept", channels=True), "invalid"),
    (line("channels_kept", documents=1.5), "invalid"),
    (line("channels_kept", documents=None), "invalid"),
    (line("channels_kept", all="false"), "invalid"),
    (line("channels_kept", all=0), "invalid"),
    (line("channels_kept", names="general"), "invalid"),
    (line("channels_kept", stream=STREAM), "invalid"),
    (edit(line("channels_kept"), '"all":false,', ""), "invalid"),
    (line("channels_kept", schema=5), "invalid"),
    (line("history_fetched", objects=1234), "invalid"),
    (line("history_fetched", objects=-1), "invalid"),
    (line("history_fetched", objects="1000"), "invalid"),
    (line("history_fetched", seconds=2.5), "invalid"),
    (line("history_fetched", seconds=5), "invalid"),
    (line("history_fetched", seconds=True), "invalid"),
    (line("history_fetched", kept_all=1), "invalid"),
    (line("history_fetched", kept_all=None), "invalid"),
    (line("history_fetched", peers=2), "invalid"),
    (line("history_fetched", bytes=1024), "invalid"),
    (edit(line("history_fetched"), ',"kept_all":true', ""), "invalid"),
    (line("history_fetched", schema=1), "invalid"),
    (edit(line("private_channel_created"), '"schema":5', '"schema":6'), "invalid"),
    (edit(GOOD, '"schema":1', '"schema":6'), "invalid"),
    (line(ts="2025-02-30T10:00:00Z"), "bad_ts"),
    (line(ts=f"{DAY}T24:00:00Z"), "bad_ts"),
    (line(ts=f"{NEXT}T00:00:00Z"), "wrong_partition"),
]
# Bad for both, but each names the reason its own way (documented in _pipeline's checks).
BAD_EITHER_WAY = [
    edit(GOOD, "message_sent", "message}sent"),
    edit(GOOD, '"length":16', '"length":16,"x":{"y":1}'),
]


def _unique(pairs: list) -> dict:
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("a key appears twice")
    return dict(pairs)


def _no_constant(name: str) -> None:
    raise ValueError(name)


def contract_verdict(text: str, part: str) -> bool:
    """Whether the collector would have stored the line in that partition: strict JSON, one
    value per key, `events.validate`, a real hour of that day."""
    try:
        event = validate(json.loads(text, object_pairs_hook=_unique, parse_constant=_no_constant))
        when = datetime.strptime(event["ts"], "%Y-%m-%dT%H:%M:%SZ")
    except (ValueError, EventError):
        return False
    except TypeError:  # validate() itself fails on an unhashable "event" (a list or an object)
        return False
    return when.date().isoformat() == part


def test_reference_follows_the_contract(synth_logs):
    root, _ = synth_logs
    samples = [text for text, _ in LINES] + BAD_EITHER_WAY
    part = root / f"date={DAY}"
    samples += list(_reference.lines(part))[:3000]
    for text in samples:
        reason, _ = _reference.classify(text, DAY)
        assert (reason is None) == contract_verdict(text, DAY), text
    for text, reason in LINES:
        assert _reference.classify(text, DAY)[0] == reason, text


def test_spark_names_each_bad_line_like_the_reference(spark):
    from analytics import _pipeline

    rows = [(i, text, DAY) for i, (text, _) in enumerate(LINES)]
    rows += [(len(rows) + i, text, DAY) for i, text in enumerate(BAD_EITHER_WAY)]
    df = spark.createDataFrame(rows, "i int, value string, part string")
    got = {r["i"]: r["bad"] for r in _pipeline.parse(df, [DAY], keep=["i"]).collect()}
    for i, (text, reason) in enumerate(LINES):
        assert got[i] == reason, text
    for i in range(len(LINES), len(rows)):
        assert got[i] is not None


def mutations(texts: list[str], count: int, seed: int = 1) -> list[str]:
    """Small random edits of valid lines: characters, values, keys, spacing, number forms."""
    rng = random.Random(seed)
    tokens = ["16.5", "true", "null", '"x"', "1e3", "-1", "[]", "{}", '"16"', "0", "1.0",
              '"' + PID.upper() + '"', '"2025-03-03T10:00:00Z"']
    out = []
    while len(out) < count:
        text = rng.choice(texts)
        kind = rng.randrange(7)
        if kind == 0:
            i = rng.randrange(len(text))
            out.append(text[:i] + text[i + 1:])
        elif kind == 1:
            i = rng.randrange(len(text) + 1)
            out.append(text[:i] + rng.choice(',{}":0a -.eE\\t') + text[i:])
        elif kind == 2:
            values = list(re.finditer(r':("[^"]*"|[^,}]+)', text))
            m = rng.choice(values)
            out.append(text[:m.start(1)] + rng.choice(tokens) + text[m.end(1):])
        elif kind == 3:
            pairs = re.findall(r'"[a-z_]+":(?:"[^"]*"|[^,}]+)', text)
            extra = rng.choice(pairs + ['"extra":1'])
            out.append(text[:-1] + "," + extra + "}")
        elif kind == 4:
            pairs = re.findall(r'"[a-z_]+":(?:"[^"]*"|[^,}]+)', text)
            drop = rng.choice(pairs)
            out.append(text.replace("," + drop, "").replace(drop + ",", ""))
        elif kind == 5:
            seps = [m.end() for m in re.finditer(r'[,:{]"|"[,:}]', text)]
            i = rng.choice(seps) - 1
            out.append(text[:i] + rng.choice([" ", "\t", "  "]) + text[i:])
        else:
            numbers = list(re.finditer(r":(-?[0-9]+)(?=[,}])", text))
            m = rng.choice(numbers)
            out.append(text[:m.end(1)] + rng.choice([".0", "e0", ".00", ".5", "E1"])
                       + text[m.end(1):])
    return out


def test_spark_the_reference_and_the_contract_agree_on_mutated_lines(spark, synth_logs):
    from analytics import _pipeline

    root, _ = synth_logs
    valid = [t for t in _reference.lines(root / f"date={DAY}")
             if _reference.classify(t, DAY)[0] is None]
    by_event = {json.loads(t)["event"]: t for t in valid}
    texts = mutations(list(by_event.values()), 800)
    df = spark.createDataFrame([(i, t, DAY) for i, t in enumerate(texts)],
                               "i int, value string, part string")
    got = {r["i"]: r["bad"] for r in _pipeline.parse(df, [DAY], keep=["i"]).collect()}
    verdicts = Counter()
    for i, text in enumerate(texts):
        counted = contract_verdict(text, DAY)
        verdicts[counted] += 1
        assert (_reference.classify(text, DAY)[0] is None) == counted, text
        assert (got[i] is None) == counted, text
    assert verdicts[True] > 100 and verdicts[False] > 300


@pytest.fixture(scope="module")
def synth_report(synth_logs, run_report, tmp_path_factory):
    root, _ = synth_logs
    out = tmp_path_factory.mktemp("report") / "out"
    return out, run_report("--input", str(root), "--output", str(out))


def test_every_table_matches_the_reference(spark, synth_logs, synth_report):
    from pyspark.testing import assertDataFrameEqual

    from analytics import _contract, _pipeline

    root, synth = synth_logs
    out, report = synth_report
    expected = _reference.compute(root)
    assert report.outcome.lines == expected.lines == synth.lines
    assert report.outcome.bad == expected.bad
    assert sum(expected.bad.values()) == synth.malformed
    assert report.outcome.suppressed == expected.suppressed
    for name in _contract.TABLES:
        assert expected.rows[name], f"the synthetic logs should fill {name}"
        written = spark.read.parquet(str(out / "tables" / name))
        want = spark.createDataFrame(expected.rows[name], _pipeline.table_schema(name))
        assertDataFrameEqual(written, want, rtol=0.0, atol=0.0)
        assert report.outcome.rows[name] == expected.rows[name]  # same order, exact floats


def test_summary_counts_bad_lines_and_suppressed_groups(synth_report):
    out, report = synth_report
    summary = json.loads((out / "summary.json").read_text())
    assert summary == json.loads(json.dumps(report.summary))
    assert summary["bad"]["total"] == sum(report.outcome.bad.values()) > 0
    assert summary["valid"] + summary["bad"]["total"] == summary["lines"]
    assert set(summary["suppressed"]) == set(report.outcome.rows)
    assert len(summary["days"]) == 9


def test_report_page_is_self_contained(synth_report):
    out, report = synth_report
    page = (out / "report.html").read_text(encoding="utf-8")
    images = re.findall(r'<img [^>]*src="data:image/png;base64,([A-Za-z0-9+/=]+)"', page)
    assert len(images) == len(report.plots) >= 7
    for data in images:
        assert base64.b64decode(data).startswith(b"\x89PNG\r\n\x1a\n")
    without_images = re.sub(r"base64,[A-Za-z0-9+/=]+", "", page)
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", without_images)
    assert "http://" not in without_images and "https://" not in without_images
    assert "@import" not in without_images and "url(" not in without_images
    for name in report.outcome.rows:
        assert name in page
    assert "Suppressed groups" in page


def test_bad_lines_are_counted_not_fatal(tmp_path, run_report):
    root = write_logs(tmp_path / "logs", {DAY: [text for text, _ in LINES],
                                          NEXT: [line(ts=f"{NEXT}T08:00:00Z")]})
    report = run_report("--input", str(root), "--output", str(tmp_path / "out"),
                        "--min-cohort", "1")
    expected = Counter(reason for _, reason in LINES if reason)
    reference = _reference.compute(root, min_cohort=1)
    assert report.outcome.bad == reference.bad == {r: expected[r] for r in report.outcome.bad}
    assert report.outcome.rows == reference.rows
    valid = sum(1 for _, reason in LINES if reason is None) + 1
    assert sum(r[2] for r in report.outcome.rows["events_daily"]) == valid
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["bad"] == {"total": len(LINES) + 1 - valid, **expected} | {
        r: 0 for r in report.outcome.bad if r not in expected}


def test_groups_below_min_cohort_are_suppressed_everywhere(tmp_path, run_report):
    a, b, c, d, e = (f"{n:032x}" for n in range(1, 6))
    logs = {
        DAY: [line(pid=p) for p in (a, b, c)]
        + [line("rejection", pid=p, reason="policy") for p in (a, b, c)]
        + [line("rejection", pid=p, reason="frame") for p in (a, b, b)],
        NEXT: [line(pid=p, ts=f"{NEXT}T09:00:00Z") for p in (d, e, e)],
    }
    root = write_logs(tmp_path / "logs", logs)
    report = run_report("--input", str(root), "--output", str(tmp_path / "out"),
                        "--min-cohort", "3")
    rows = report.outcome.rows
    day, next_day = date.fromisoformat(DAY), date.fromisoformat(NEXT)
    assert rows["daily_active"] == [(day, 3)]
    assert rows["events_daily"] == [(day, "message_sent", 3, 3), (day, "rejection", 6, 3)]
    assert rows["rejections"] == [(day, "policy", 3, 3)]  # frame: 2 installs, one short
    assert report.outcome.suppressed["daily_active"] == 1
    assert report.outcome.suppressed["events_daily"] == 1
    assert report.outcome.suppressed["rejections"] == 1
    assert report.outcome.rows == _reference.compute(root, min_cohort=3).rows
    drawn = {label: points for plot in report.plots for label, points in plot.series.items()}
    assert "frame" not in {x for points in drawn.values() for x, _ in points}
    assert drawn["installs"] == [(day, 3)]
    assert all(x != next_day for points in drawn.values() for x, _ in points)
    assert dict(drawn["rejections"]) == {"policy": 3}
    page = re.sub(r"base64,[A-Za-z0-9+/=]+", "", (tmp_path / "out" / "report.html").read_text())
    assert "frame" not in page
    assert re.search(r"<th>total</th><td>3</td>", page)


def test_every_event_type_has_its_own_line_in_the_events_plot(synth_report):
    _, report = synth_report
    (plot,) = [p for p in report.plots if p.title.startswith("Events per day")]
    shown = {event for _, event, *_ in report.outcome.rows["events_daily"]}
    assert "doc_comment" in shown and len(shown) > 10  # more than matplotlib's colour cycle
    assert set(plot.styles) == set(plot.series) == shown
    assert len(set(plot.styles.values())) == len(shown), plot.styles



def test_since_and_until_pick_whole_days(synth_logs, run_report, tmp_path, spark):
    root, _ = synth_logs
    since, until = date(2025, 3, 5), date(2025, 3, 7)
    report = run_report("--input", str(root), "--output", str(tmp_path / "out"),
                        "--since", since.isoformat(), "--until", until.isoformat())
    expected = _reference.compute(root, since=since, until=until)
    assert report.summary["days"] == ["2025-03-05", "2025-03-06", "2025-03-07"]
    assert report.outcome.lines == expected.lines
    assert report.outcome.bad == expected.bad
    assert report.outcome.rows == expected.rows
    dates = {r[0] for rows in report.outcome.rows.values() for r in rows}
    assert dates == {since, date(2025, 3, 6), until}
    written = spark.read.parquet(str(tmp_path / "out" / "tables" / "daily_active"))
    assert sorted(r["date"] for r in written.collect()) == sorted(dates)


def _cli(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    return subprocess.run([sys.executable, "-m", "analytics.report", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S)


@pytest.mark.parametrize(("args", "message"), [
    (["--input", "/nonexistent/hearth-logs", "--output", "OUT"], "does not exist"),
    (["--input", ".", "--output", "OUT", "--since", "2025-13-01"], "YYYY-MM-DD"),
    (["--input", ".", "--output", "OUT", "--since", "2025-03-05", "--until", "2025-03-01"],
     "after --until"),
    (["--input", ".", "--output", "OUT", "--min-cohort", "0"], "at least 1"),
    (["--input", ".", "--output", "OUT", "--conf", "spark.executor.memory"], "KEY=VALUE"),
    (["--output", "OUT"], "--input"),
])
def test_command_line_refuses_bad_arguments(args, message, tmp_path):
    done = _cli(*[str(tmp_path / a) if a == "OUT" else a for a in args])
    assert done.returncode == 2
    assert message in done.stderr.strip().splitlines()[-1]
    if message == "does not exist":
        assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "OUT").exists()
