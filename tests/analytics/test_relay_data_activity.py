"""Relays named and data moved become schema-8 events (app/relays.py, app/slack_import.py,
app/archive.py, app/backup.py): whether a relay was added, and what was done with how many
messages as a bucket. Nothing names the relay, a file, a channel or a message; nothing is
recorded while analytics are off."""

from __future__ import annotations

import json
import os
from pathlib import Path

from analytics.events import validate
from analytics.recorder import Recorder
from app import relays
from app.archive import write_archive
from app.backup import backup, restore
from app.slack_import import import_slack
from app.workspace import Workspace
from tests.app import slack_fixture as fx
from tests.support import create_workspace

KEY = os.urandom(32).hex()
HOST = "relay-zanzibar.example.org"


def _spooled(recorder: Recorder) -> list[dict]:
    taken = recorder.take_batch(1000)
    return [validate(json.loads(line)) for line in taken[1]] if taken else []


def _bare(event: dict) -> dict:
    return {k: v for k, v in event.items() if k not in ("ts", "pid")}


def test_relays_and_data_moves_are_counted_and_name_nothing(tmp_path: Path) -> None:
    paths = create_workspace(tmp_path, "a", "ada")
    recorder = Recorder(paths.data)
    with Workspace.open(paths) as ws:
        relays.add_relay(ws, f"{HOST}:7655", KEY)  # off: not recorded
        assert _spooled(recorder) == []
        recorder.enable()
        relays.remove_relay(ws, KEY[:12])
        relays.add_relay(ws, f"{HOST}:7656", KEY)
        summary = import_slack(ws, fx.write_zip(tmp_path / "export.zip"))
        write_archive(ws, tmp_path / "team.db", "sqlite")
        write_archive(ws, tmp_path / "team-html", "html")
    backup(paths, tmp_path / "backup.zip", "correct horse")
    elsewhere = Recorder(tmp_path / "elsewhere")
    restore(tmp_path / "backup.zip", tmp_path / "elsewhere", "correct horse")
    assert _spooled(elsewhere) == []  # a new data folder has not opted in
    elsewhere.enable()  # one that has: the restore is counted there
    restore(tmp_path / "backup.zip", tmp_path / "elsewhere", "correct horse", workspace="again")
    lines = _spooled(recorder)
    assert [_bare(e) for e in lines if e["event"] == "relay_changed"] == [
        {"event": "relay_changed", "schema": 8, "added": False},
        {"event": "relay_changed", "schema": 8, "added": True}]
    moved = [_bare(e) for e in lines if e["event"] == "data_moved"]
    bucket = 1 << (summary.messages.bit_length() - 1)
    assert [(e["what"], e["messages"]) for e in moved] == [
        ("slack_import", bucket), ("archive_sqlite", moved[1]["messages"]),
        ("archive_html", moved[1]["messages"]), ("backup", 0)]
    assert moved[1]["messages"] > 0  # the public channels' messages (no private ones)
    assert [_bare(e)["what"] for e in _spooled(elsewhere)] == ["restore"]
    text = json.dumps(lines)
    for secret in (KEY, KEY[:12], HOST, "export.zip", "team.db", "general", "correct horse"):
        assert secret not in text, secret
