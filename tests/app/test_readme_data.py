"""The README's "Coming from Slack" and "Your data" sections, run line by line as written: the
importer brings in an export, bob claims his Slack name and the importer confirms it, then the
importer archives, backs up and restores on a new computer."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import sqlite_utils

from app.workspace import Workspace
from tests.support import create_workspace, join_member

from .conftest import Hearth
from .test_readme import section_commands

PASS = "a long passphrase for the README"
BOB_ON_SLACK = "U024BE7LH"  # the id the README's --map example names


def _export(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("users.json", json.dumps([
            {"id": BOB_ON_SLACK, "name": "bob", "profile": {"display_name": "bob"}}]))
        zf.writestr("channels.json", json.dumps([
            {"id": "C1", "name": "general", "created": 1577872800, "members": [BOB_ON_SLACK],
             "topic": {"value": "news"}, "purpose": {"value": ""}}]))
        zf.writestr("general/2020-01-01.json", json.dumps([
            {"type": "message", "user": BOB_ON_SLACK, "ts": "1577872800.000100",
             "text": "the *quarterly* numbers are in"}]))
    return path


def _sync(*paths) -> None:
    """Each computer receives every object the others hold (what their nodes do when they
    meet)."""
    for to in paths:
        with Workspace.open(to) as ws:
            for other in paths:
                if other is not to:
                    with Workspace.open(other) as source:
                        ws.replica.ingest([r[0] for r in source.replica.conn.execute(
                            "SELECT raw FROM objects")])


def test_coming_from_slack_then_your_data_run_as_written(hearth: Hearth, tmp_path: Path):
    ada = create_workspace(tmp_path, "ada", "ada")
    bob = join_member(tmp_path, ada, "bob", "bob")
    _sync(ada, bob)
    _export(tmp_path / "slack-export.zip")
    (tmp_path / "users.json").write_text(json.dumps({BOB_ON_SLACK: "bob"}))

    def words(argv: list[str]) -> list[str]:
        return [str(tmp_path / a[2:]) if a.startswith("~/") else
                str(tmp_path / a) if a in ("slack-export.zip", "users.json", "team.db") else a
                for a in argv]

    slack = section_commands("Coming from Slack")
    assert [argv[0] for _, argv in slack] == ["import-slack", "slack-claim", "slack-confirm"]
    for comment, argv in slack:
        who = bob if comment.startswith("bob") else ada
        line = hearth(*words(argv), data=who.data).line
        if argv[0] == "import-slack":
            assert line.startswith("imported 1 message (0 in threads) into 1 channel and 0 private channels"), line
            with Workspace.open(ada) as ws:
                assert [m.nick for m in ws.read("general")] == ["bob (from Slack)"]
        _sync(ada, bob)  # what their running nodes do between the lines
    with Workspace.open(ada) as ws:
        (shown,) = ws.read("general")
        ada_key = ws.key.hex()
    assert (shown.nick, shown.text) == ("bob", "the **quarterly** numbers are in")

    data = section_commands("Your data")
    assert [argv[0] for _, argv in data] == ["archive", "backup", "restore"]
    for _, argv in data:
        if argv[0] == "restore":
            hearth(*words(argv), passphrase=PASS)
        else:
            hearth(*words(argv), data=ada.data, passphrase=PASS)
    archive = sqlite_utils.Database(tmp_path / "team.db")
    found = list(archive["messages"].search("quarterly"))
    assert [row["text"] for row in found] == ["the **quarterly** numbers are in"]
    restored = tmp_path / "new-computer"
    assert ada_key in hearth("identity", "show", data=restored).stdout
    assert "the **quarterly** numbers are in" in hearth("read", "general", data=restored).stdout
