"""The recorder: off by default, schema-valid anonymized events, daily pseudonyms, deletion."""

from __future__ import annotations

import json
import sqlite3
import stat

import pytest

from analytics import recorder as recorder_module
from analytics.events import pid_of_token, validate
from analytics.recorder import AnalyticsError, Recorder
from tests.support import FakeClock

DAY = 86_400.0
T0 = 1_795_000_000.0  # 2026-11-18, mid-morning UTC


def spooled(rec: Recorder) -> list[dict]:
    batch = rec.take_batch(10_000)
    return [json.loads(line) for line in batch[1]] if batch else []


def test_off_by_default_records_nothing_and_writes_nothing(tmp_path):
    rec = Recorder(tmp_path)
    assert not rec.enabled
    assert rec.record("message_sent", length=16) is False
    assert not (tmp_path / "analytics").exists()
    assert rec.take_batch(10) is None


def test_activity_while_off_writes_nothing_not_even_the_install_secret(tmp_path):
    """A merge was hashed before the recorder looked whether analytics were on, which made
    DATA/analytics/install.key on a computer that never opted in."""
    from app.activity import Activity
    from core.identity import Identity
    from core.objects import build

    rec = Recorder(tmp_path)
    activity = Activity(rec, lambda ids: [])
    activity.merged_document(b"\x07" * 32, 1)
    activity.created(build(Identity.generate(), "post/text", stream=b"\x01" * 32,
                           body={"channel": "general", "text": "hi"}, ts=1))
    assert not (tmp_path / "analytics").exists()


def test_events_are_schema_valid_hour_truncated_and_keyed(tmp_path):
    clock = FakeClock(T0)
    rec = Recorder(tmp_path, clock=clock)
    rec.enable("http://127.0.0.1:9")
    assert rec.record("message_sent", length=64)
    assert rec.record("channel_joined", stream=rec.hash_id(b"\x01" * 32))
    events = spooled(rec)
    assert [e["event"] for e in events] == ["message_sent", "channel_joined"]
    for event in events:
        validate(event)
        assert event["ts"].endswith(":00:00Z")
        assert len(event["pid"]) == 32
    assert events[1]["stream"] != (b"\x01" * 32).hex()[:32]


def test_a_bad_event_is_dropped_without_raising(tmp_path):
    rec = Recorder(tmp_path)
    rec.enable()
    assert rec.record("message_sent", length=16, text="hello") is False  # extra field
    assert rec.record("no_such_event") is False
    assert spooled(rec) == []


def test_pseudonyms_rotate_every_utc_day(tmp_path):
    clock = FakeClock(T0)
    rec = Recorder(tmp_path, clock=clock)
    rec.enable()
    stream = b"\x02" * 32
    rec.record("channel_joined", stream=rec.hash_id(stream))
    clock.now += 3600
    rec.record("channel_joined", stream=rec.hash_id(stream))
    clock.now += DAY
    rec.record("channel_joined", stream=rec.hash_id(stream))
    first, same_day, next_day = spooled(rec)
    assert first["pid"] == same_day["pid"] and first["stream"] == same_day["stream"]
    assert next_day["pid"] != first["pid"]
    assert next_day["stream"] != first["stream"]  # nothing links the two days


def test_disable_deletes_the_spool_and_queues_deletion_of_every_days_pids(tmp_path):
    clock = FakeClock(T0)
    rec = Recorder(tmp_path, clock=clock)
    rec.enable("http://127.0.0.1:9")
    rec.record("message_sent", length=0)
    clock.now += DAY
    rec.record("message_sent", length=0)
    pids = {e["pid"] for e in spooled(rec)}
    assert len(pids) == 2
    rec.disable()
    assert not rec.enabled
    assert not (tmp_path / "analytics" / "spool.sqlite3").exists()
    assert not (tmp_path / "analytics" / "install.key").exists()
    # The request carries each day's token; the collector hashes them back to the pids.
    [request] = rec.pending_deletions()
    assert [day for day, _ in request] == ["2026-11-18", "2026-11-19"]
    assert {pid_of_token(token) for _, token in request} == pids
    assert rec.record("message_sent", length=0) is False
    rec.ack_deletion(0)
    assert rec.pending_deletions() == []
    # Switching on again starts a new pseudonym: the old one is not linkable to it.
    rec.enable()
    rec.record("message_sent", length=0)
    assert spooled(rec)[0]["pid"] not in pids


def test_a_running_app_notices_the_cli_switching_it(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder_module, "SETTINGS_RECHECK_S", 0.0)
    app_side, cli_side = Recorder(tmp_path), Recorder(tmp_path)
    cli_side.enable()
    assert app_side.record("message_sent", length=16)
    cli_side.disable()
    assert not app_side.record("message_sent", length=16)


def test_files_are_private_and_the_spool_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder_module, "SPOOL_MAX_EVENTS", 5)
    rec = Recorder(tmp_path)
    rec.enable()
    for _ in range(12):
        rec.record("message_sent", length=16)
    assert len(spooled(rec)) == 5
    folder = tmp_path / "analytics"
    for name in ("install.key", "settings.json", "spool.sqlite3"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name


def test_ack_drops_shipped_events_only(tmp_path):
    rec = Recorder(tmp_path)
    rec.enable()
    for length in (0, 16, 64):
        rec.record("message_sent", length=length)
    batch_id, lines = rec.take_batch(2)
    assert len(lines) == 2
    rec.ack(batch_id)
    assert [e["length"] for e in spooled(rec)] == [64]


def test_a_collector_url_must_be_http(tmp_path):
    with pytest.raises(AnalyticsError, match="http://HOST:PORT"):
        Recorder(tmp_path).enable("ftp://example.org")


def test_unreadable_settings_leave_analytics_off(tmp_path):
    folder = tmp_path / "analytics"
    folder.mkdir()
    (folder / "settings.json").write_text("{not json")
    rec = Recorder(tmp_path)
    assert not rec.enabled
    assert rec.record("message_sent", length=16) is False


def test_spool_survives_a_restart(tmp_path):
    rec = Recorder(tmp_path)
    rec.enable()
    rec.record("message_sent", length=16)
    rec.close()
    assert [e["event"] for e in spooled(Recorder(tmp_path))] == ["message_sent"]
    with sqlite3.connect(tmp_path / "analytics" / "spool.sqlite3") as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


@pytest.mark.parametrize("bad", [
    {"event": [], "schema": 1, "ts": "2026-11-22T01:00:00Z", "pid": "a" * 32},
    {"event": {"x": 1}, "schema": 1, "ts": "2026-11-22T01:00:00Z", "pid": "a" * 32},
    ["not", "an", "object"],
])
def test_validate_refuses_any_shape_with_an_event_error(bad):
    from analytics.events import EventError

    with pytest.raises(EventError):
        validate(bad)


def settings(tmp_path) -> dict:
    return json.loads((tmp_path / "analytics" / "settings.json").read_text())


def test_each_days_token_is_kept_privately_from_its_first_event_until_disable(tmp_path):
    clock = FakeClock(T0)
    rec = Recorder(tmp_path, clock=clock)
    rec.enable("http://127.0.0.1:9")
    assert "tokens" not in settings(tmp_path)
    rec.record("message_sent", length=0)
    clock.now += 3600
    rec.record("message_sent", length=16)
    tokens = settings(tmp_path)["tokens"]
    assert list(tokens) == ["2026-11-18"]
    assert {e["pid"] for e in spooled(rec)} == {pid_of_token(tokens["2026-11-18"])}
    path = tmp_path / "analytics" / "settings.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600

    rec.disable()
    after = settings(tmp_path)
    assert "tokens" not in after
    assert after["deletions"] == [[["2026-11-18", tokens["2026-11-18"]]]]
    rec.ack_deletion(0)
    assert tokens["2026-11-18"] not in path.read_text()


def test_tokens_of_at_most_max_days_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(recorder_module, "MAX_DELETION_TOKENS", 3)
    clock = FakeClock(T0)
    rec = Recorder(tmp_path, clock=clock)
    rec.enable()
    for _ in range(5):
        rec.record("message_sent", length=0)
        clock.now += DAY
    assert sorted(settings(tmp_path)["tokens"]) == ["2026-11-20", "2026-11-21", "2026-11-22"]


def test_an_older_versions_list_of_days_is_dropped_on_disable(tmp_path):
    rec = Recorder(tmp_path, clock=FakeClock(T0))
    rec.enable()
    rec.record("message_sent", length=0)
    legacy = settings(tmp_path) | {"days": ["2026-11-17"]}
    (tmp_path / "analytics" / "settings.json").write_text(json.dumps(legacy))
    rec.disable()
    assert "days" not in settings(tmp_path)
    assert [day for day, _ in rec.pending_deletions()[0]] == ["2026-11-18"]


def test_a_new_days_first_event_does_not_undo_a_disable_by_another_process(tmp_path,
                                                                           monkeypatch):
    """Saving the day's token must not write back a stale copy of the settings."""
    monkeypatch.setattr(recorder_module, "SETTINGS_RECHECK_S", 3600.0)
    clock = FakeClock(T0)
    app_side, cli_side = Recorder(tmp_path, clock=clock), Recorder(tmp_path, clock=clock)
    app_side.enable()
    assert app_side.record("message_sent", length=16)
    cli_side.disable()
    clock.now += DAY
    assert app_side.record("message_sent", length=16) is False
    assert not Recorder(tmp_path).enabled
    assert len(Recorder(tmp_path).pending_deletions()) == 1
