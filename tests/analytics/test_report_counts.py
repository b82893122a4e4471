"""The Spark report counts each schema version's events beside version 1's: conversations,
document comments, invites and admissions, files and private channels, kept sets and history,
notification settings, relays named and data moved."""

from __future__ import annotations

from datetime import date

from analytics import _reference

from .conftest import write_logs
from .test_pipeline import DAY, NEXT, STREAM, line


def test_the_report_counts_the_conversation_events_beside_version_1_ones(tmp_path, run_report,
                                                                        spark):
    pids = [f"{n:032x}" for n in range(1, 6)]
    logs = {DAY: [line(pid=p) for p in pids]
            + [line("reaction_added", pid=p) for p in pids + pids]
            + [line("message_edited", pid=p) for p in pids]
            + [line("thread_reply", pid=p, broadcast=p == pids[0]) for p in pids]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    expected = [(day, "message_edited", 5, 5), (day, "message_sent", 5, 5),
                (day, "reaction_added", 10, 5), (day, "thread_reply", 5, 5)]
    assert report.summary["bad"]["total"] == 0
    assert report.outcome.rows["events_daily"] == expected
    assert report.outcome.rows == _reference.compute(root, min_cohort=5).rows
    written = spark.read.parquet(str(out / "tables" / "events_daily")).collect()
    assert sorted((r["event"], r["count"]) for r in written) == [e[1:3] for e in expected]
    (plot,) = [p for p in report.plots if p.title.startswith("Events per day")]
    assert plot.series["reaction_added"] == [(day, 10)]
    page = (out / "report.html").read_text(encoding="utf-8")
    for name in ("reaction_added", "message_edited", "thread_reply"):
        assert f"<td>{name}</td>" in page

def test_the_report_counts_document_comments_beside_commits(tmp_path, run_report, spark):
    pids = [f"{n:032x}" for n in range(1, 7)]
    logs = {DAY: [line("doc_commit", pid=p, stream=STREAM, size=512) for p in pids]
            + [line("doc_comment", pid=p) for p in pids * 3]
            + [line("doc_comment", pid=p, ts=f"{NEXT}T09:00:00Z") for p in pids[:4]]
            + [line("reaction_added", pid=p) for p in pids],
            NEXT: [line("doc_comment", pid=p, ts=f"{NEXT}T09:00:00Z") for p in pids[:4]]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    # The next day's four installs are too few to show; its lines filed under DAY are bad.
    expected = [(day, "doc_comment", 18, 6), (day, "doc_commit", 6, 6),
                (day, "reaction_added", 6, 6)]
    assert report.summary["bad"] == {"total": 4, "not_json": 0, "unknown_event": 0,
                                     "invalid": 0, "bad_ts": 0, "wrong_partition": 4}
    assert report.outcome.rows["events_daily"] == expected
    assert report.outcome.suppressed["events_daily"] == 1
    _shown_everywhere(report, root, out, spark, expected, ("doc_comment",))


def test_the_report_counts_invites_and_admissions_beside_the_other_events(tmp_path, run_report,
                                                                          spark):
    pids = [f"{n:032x}" for n in range(1, 7)]
    logs = {DAY: [line(pid=p) for p in pids]
            + [line("invite_created", pid=p, uses=u, expires=x) for p in pids
               for u, x in (("one", "week"), ("few", "day"))]
            + [line("member_admitted", pid=p, how="invite") for p in pids * 2]
            + [line("member_admitted", pid=p, how="personal") for p in pids[:3]]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    expected = [(day, "invite_created", 12, 6), (day, "member_admitted", 15, 6),
                (day, "message_sent", 6, 6)]
    assert report.summary["bad"]["total"] == 0
    assert report.outcome.rows["events_daily"] == expected
    _shown_everywhere(report, root, out, spark, expected, ("invite_created", "member_admitted"))


def test_the_report_counts_files_attached_and_private_channels_made(tmp_path, run_report, spark):
    pids = [f"{n:032x}" for n in range(1, 8)]
    logs = {DAY: [line(pid=p) for p in pids]
            # a message of two files from each install, and a small image from five
            + [line("file_attached", pid=p, size=s, kind=k, files=2) for p in pids
               for s, k in ((0, "image"), (10485760, "video"))]
            + [line("file_attached", pid=p, size=102400, kind="image") for p in pids[:5]]
            + [line("private_channel_created", pid=p, dm=True) for p in pids[:6]]
            + [line("private_channel_created", pid=p, dm=False) for p in pids[:4]]
            + [line("file_attached", pid=p, size=3141592) for p in pids]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    expected = [(day, "file_attached", 19, 7), (day, "message_sent", 7, 7),
                (day, "private_channel_created", 10, 6)]
    assert report.summary["bad"]["invalid"] == report.summary["bad"]["total"] == 7
    assert report.outcome.rows["events_daily"] == expected
    _shown_everywhere(report, root, out, spark, expected,
                      ("file_attached", "private_channel_created"))


def test_the_report_counts_kept_sets_and_history_fetches(tmp_path, run_report, spark):
    pids = [f"{n:032x}" for n in range(1, 9)]
    logs = {DAY: [line(pid=p) for p in pids]
            # every install joins (a big fetch, keeping all) and six of them then keep some
            + [line("history_fetched", pid=p, objects=10000, seconds=30) for p in pids]
            + [line("channels_kept", pid=p, channels=6, documents=1) for p in pids[:6]]
            + [line("history_fetched", pid=p, objects=100, seconds=0, kept_all=False)
               for p in pids[:5]]
            + [line("channels_kept", pid=p, all=True, channels=0, documents=0) for p in pids[:2]]
            + [line("channels_kept", pid=p, channels=37) for p in pids]
            + [line("history_fetched", pid=p, seconds=2.5) for p in pids],
            NEXT: [line("history_fetched", pid=p, ts=f"{NEXT}T09:00:00Z") for p in pids[:4]]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    # Six changes to what is kept are counted; the next day's four fetches are too few installs.
    expected = [(day, "channels_kept", 8, 6), (day, "history_fetched", 13, 8),
                (day, "message_sent", 8, 8)]
    assert report.summary["bad"]["invalid"] == report.summary["bad"]["total"] == 16
    assert report.outcome.rows["events_daily"] == expected
    _shown_everywhere(report, root, out, spark, expected, ("channels_kept", "history_fetched"))


def test_the_report_counts_notification_settings_changes(tmp_path, run_report, spark):
    pids = [f"{n:032x}" for n in range(1, 9)]
    logs = {DAY: [line(pid=p) for p in pids]
            + [line("notify_level_set", pid=p) for p in pids]  # each mutes a channel
            + [line("notify_level_set", pid=p, level="all", kind="dm", timed=True)
               for p in pids[:5]]
            + [line("notify_dnd_set", pid=p, scheduled=True) for p in pids[:6]]
            + [line("notify_option_set", pid=p) for p in pids[:3]]  # too few installs
            + [line("notify_level_set", pid=p, level="loud") for p in pids]
            + [line("notify_option_set", pid=p, keywords=["deploy"]) for p in pids]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    expected = [(day, "message_sent", 8, 8), (day, "notify_dnd_set", 6, 6),
                (day, "notify_level_set", 13, 8)]
    assert report.summary["bad"]["invalid"] == report.summary["bad"]["total"] == 16
    assert report.outcome.rows["events_daily"] == expected
    _shown_everywhere(report, root, out, spark, expected, ("notify_dnd_set", "notify_level_set"))


def test_the_report_counts_relays_named_and_data_moved(tmp_path, run_report, spark):
    pids = [f"{n:032x}" for n in range(1, 9)]
    logs = {DAY: [line(pid=p) for p in pids]
            + [line("relay_changed", pid=p) for p in pids[:6]]
            + [line("data_moved", pid=p, what="backup", messages=0) for p in pids]
            + [line("data_moved", pid=p) for p in pids[:2]]  # too few installs alone
            + [line("relay_changed", pid=p, address="relay.example.org:7655") for p in pids]
            + [line("data_moved", pid=p, messages=1000) for p in pids]}
    report, root, out = _report(tmp_path, run_report, logs)
    day = date.fromisoformat(DAY)
    expected = [(day, "data_moved", 10, 8), (day, "message_sent", 8, 8),
                (day, "relay_changed", 6, 6)]
    assert report.summary["bad"]["invalid"] == report.summary["bad"]["total"] == 16
    assert report.outcome.rows["events_daily"] == expected
    _shown_everywhere(report, root, out, spark, expected, ("data_moved", "relay_changed"))


def _report(tmp_path, run_report, logs: dict):
    """The report over `logs` (day -> lines) with a cohort of 5: (its result, the logs' root,
    its output folder)."""
    root = write_logs(tmp_path / "logs", logs)
    out = tmp_path / "out"
    return run_report("--input", str(root), "--output", str(out), "--min-cohort", "5"), root, out


def _shown_everywhere(report, root, out, spark, expected: list, new: tuple[str, ...]) -> None:
    """The report's daily counts are the reference's, written to Parquet as they are, and each
    of the `new` events has its line in the events plot and its row on the page."""
    assert report.outcome.rows == _reference.compute(root, min_cohort=5).rows
    written = spark.read.parquet(str(out / "tables" / "events_daily"))
    assert sorted((r["event"], r["count"], r["installs"]) for r in written.collect()) == [
        e[1:] for e in expected]
    (plot,) = [p for p in report.plots if p.title.startswith("Events per day")]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert set(new) <= {event for _, event, _, _ in expected}
    for day, event, count, installs in expected:
        if event in new:
            assert plot.series[event] == [(day, count)]
            assert f"<td>{event}</td><td>{count}</td><td>{installs}</td>" in page
