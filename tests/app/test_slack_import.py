"""`hearth import-slack`: an export built by hand in Slack's format imports exactly (messages,
times, threads, reactions, edits, mentions, private channels, DMs, unknown subtypes, non-ASCII),
twice adds nothing, and bad input (a truncated zip, a malformed day file, a zip bomb) changes
nothing, with one line and exit 2. Claims make a Slack user's messages a member's."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from app import slack_import
from app.errors import WorkspaceError
from app.paths import Paths
from app.slack_convert import slack_ms
from app.workspace import Workspace
from tests.support import create_workspace, join_member

from . import slack_fixture as fx
from .conftest import Hearth


def _state(data: Path) -> tuple[int, str]:
    with Workspace.open(Paths.resolve(data, "default")) as ws:
        return ws.replica.count(), ws.replica.digest()


@pytest.fixture
def team(tmp_path: Path) -> tuple[Paths, Paths]:
    ada = create_workspace(tmp_path, "ada", "ada-h")
    bob = join_member(tmp_path, ada, "bob", "bobby")
    with Workspace.open(bob) as ws_bob, Workspace.open(ada) as ws_ada:
        ws_ada.replica.ingest([r[0] for r in ws_bob.replica.conn.execute("SELECT raw FROM objects")])
    return ada, bob


def test_an_export_imports_exactly_and_twice_adds_nothing(hearth: Hearth, tmp_path: Path,
                                                          team):
    ada, _ = team
    export = fx.write_zip(tmp_path / "export.zip")
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"U1": "ada-h", "U2": "bobby"}))
    line = hearth("import-slack", export, "--map", users, "--quiet", data=ada.data).line
    assert line.startswith("imported 18 messages (5 in threads) into 2 channels and 3 private")
    assert "1 of unknown kinds as plain messages" in line

    with Workspace.open(ada) as ws:
        shown = ws.read("general", limit=100)
        assert [(m.nick, m.text) for m in shown] == fx.GENERAL_SHOWN
        stamps = [m.ts for m in shown]
        assert stamps == sorted(stamps) and stamps[1] == slack_ms(fx.ts(60))
        assert ws.state("general").topic == "Company-wide news"
        assert ws.state("random").topic == "Off topic"
        root = shown[2]
        assert root.replies == 3
        assert [m.text for m in ws.conversation.thread(root.id)] == fx.THREAD
        assert [m.ts for m in ws.conversation.thread(root.id)] == [
            slack_ms(fx.ts(s)) for s in (120, 180, 240, 86400)]
        assert {r.emoji: r.count for r in root.reactions} == {"👍": 2, ":party_parrot:": 1}
        assert [m.edited for m in shown if m.text == "fixed typo"] == [True]
        assert all(m.author == ws.key for m in shown)  # the importer signed every one
        privates = {c.name: c for c in ws.private.channels()}
        assert set(privates) == {"secret-plans", "dm-ada-bob", "dm-Zoë 日本-ada-bob"}
        assert ws.key in privates["secret-plans"].members
        assert len(privates["secret-plans"].members) == 2  # bob is a member here: he is in
        # private ones as public ones show: author, Slack's time, threads, reactions, edits
        for name, shown, thread in (("secret-plans", fx.SECRET_SHOWN, fx.SECRET_THREAD),
                                    ("dm-ada-bob", fx.DM_SHOWN, fx.DM_THREAD)):
            assert _private_shape(ws, privates[name].id) == (shown, thread)
        (mpim,) = ws.private.read(privates["dm-Zoë 日本-ada-bob"].id)
        assert (mpim.nick, mpim.ts, mpim.text) == (
            "Zoë 日本 (from Slack)", slack_ms(fx.ts(110)), "all three of us")
        before = (ws.replica.count(), ws.replica.digest())

    again = hearth("import-slack", export, "--quiet", data=ada.data).line
    assert again.startswith("imported 0 messages") and "18 were here already" in again
    assert _state(ada.data) == before


def _private_shape(ws: Workspace, channel: bytes) -> tuple[list, list]:
    """fx.SECRET_SHOWN's and fx.SECRET_THREAD's shape of a private channel (times as Slack's
    ts), its first thread's."""
    shown = ws.private.read(channel, limit=0)
    stamp = {slack_ms(fx.ts(s)): fx.ts(s) for s in range(0, 200)}
    root = next(m for m in shown if m.replies)
    return ([(m.nick, stamp.get(m.ts, m.ts), m.text, m.edited,
              {r.emoji: r.count for r in m.reactions}, m.replies) for m in shown],
            [(m.nick, stamp.get(m.ts, m.ts), m.text) for m in ws.conversation.thread(root.id)])


def test_a_non_member_of_an_imported_private_channel_learns_nothing(
        hearth: Hearth, tmp_path: Path, team):
    """Who wrote what and when in an imported private channel is sealed: carol, a member of
    the workspace in none of them, holds every object and reads none of it."""
    ada, _ = team
    carol = join_member(tmp_path, ada, "carol", "carol")
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"U1": "ada-h", "U2": "bobby"}))
    hearth("import-slack", fx.write_zip(tmp_path / "e.zip"), "--map", users, "--quiet",
           data=ada.data)
    with Workspace.open(ada) as ws_ada, Workspace.open(carol) as ws_carol:
        ws_carol.replica.ingest([r[0] for r in ws_ada.replica.conn.execute(
            "SELECT raw FROM objects")])
        ids = "SELECT id FROM objects"
        assert {r[0] for r in ws_ada.replica.conn.execute(ids)} <= {
            r[0] for r in ws_carol.replica.conn.execute(ids)}
        assert ws_carol.private.channels() == []
        sealed = [ws_carol.replica.object(r[0]) for r in ws_carol.replica.conn.execute(
            "SELECT id FROM objects WHERE type = 'post/sealed'")]
        assert len(sealed) >= 5 + 3  # five messages, an origin in each of three
        private_ts = [fx.ts(s) for s in (90, 93, 95, 100, 105, 110)]
        seen = b"".join(o.raw for o in sealed)
        for word in [*fx.PRIVATE_WORDS, *private_ts, "from Slack", "Zoë 日本"]:
            assert word.encode() not in seen, word
        # dated when they were imported, never with Slack's times
        assert min(o.ts for o in sealed) > slack_ms(fx.ts(86460))
        for name in ("secret-plans", "dm-ada-bob"):
            found = ws_ada.private.resolve(name)
            assert found is not None
            with pytest.raises(WorkspaceError):
                ws_carol.private.read(found.id)


def test_a_claim_confirmed_by_the_importer_shows_messages_as_the_members(
        hearth: Hearth, tmp_path: Path, team):
    ada, bob = team
    hearth("import-slack", fx.write_zip(tmp_path / "e.zip"), "--quiet", data=ada.data)
    with Workspace.open(ada) as ws_ada, Workspace.open(bob) as ws_bob:
        ws_bob.replica.ingest([r[0] for r in ws_ada.replica.conn.execute(
            "SELECT raw FROM objects")])
    assert "claimed Slack user U2" in hearth("slack-claim", "bob", data=bob.data).line
    # bob's own computer does not make it so: only the importer or an admin confirms
    assert "only the member who imported" in hearth.fails(
        "slack-confirm", "bobby", "U2", data=bob.data)
    with Workspace.open(ada) as ws_ada, Workspace.open(bob) as ws_bob:
        ws_ada.replica.ingest([r[0] for r in ws_bob.replica.conn.execute(
            "SELECT raw FROM objects")])
        assert "(from Slack)" in ws_ada.read("random")[0].nick
    confirmed = hearth("slack-confirm", "bobby", "U2", data=ada.data).line
    # bob was in three private conversations the importer holds: he is in them now
    assert confirmed.endswith("added to #secret-plans, #dm-Zoë 日本-ada-bob, #dm-ada-bob")
    with Workspace.open(bob) as ws_bob:
        bob_key = ws_bob.key
    with Workspace.open(ada) as ws:
        assert [m.shown_author for m in ws.read("random")] == [bob_key]
        assert [m.nick for m in ws.read("random")] == ["bobby"]
        secret = ws.private.resolve("secret-plans")
        assert secret is not None and len(secret.members) == 2
        # and in the private channel: bob's reply is bobby's now, as in #random
        (root,) = ws.private.read(secret.id)
        thread = ws.conversation.thread(root.id)
        assert [m.nick for m in thread] == ["ada (from Slack)", "bobby"]
        # each wears their own face: Slack's ada one of her own, bob his member's key
        assert thread[1].shown_author == bob_key
        assert thread[0].shown_author not in (ws.key, bob_key)
    users = hearth("slack-users", "--json", data=ada.data).json()
    assert [u["member"] is not None for u in users if u["user"] == "U2"] == [True]


def _refused(hearth: Hearth, data: Path, export: Path, words: str) -> None:
    before = _state(data)
    line = hearth.fails("import-slack", export, "--quiet", data=data)
    assert words in line and "nothing was imported" in line
    assert _state(data) == before


def test_a_truncated_zip_changes_nothing(hearth: Hearth, tmp_path: Path, team):
    whole = fx.write_zip(tmp_path / "whole.zip").read_bytes()
    cut = tmp_path / "cut.zip"
    cut.write_bytes(whole[:len(whole) * 2 // 3])
    _refused(hearth, team[0].data, cut, "not a complete zip file")


def test_a_damaged_entry_changes_nothing(hearth: Hearth, tmp_path: Path, team):
    data = bytearray(fx.write_zip(tmp_path / "ok.zip").read_bytes())
    at = data.find(b"general/2020-01-02.json") + 40  # inside that entry's compressed bytes
    data[at] ^= 0xFF
    bad = tmp_path / "bad.zip"
    bad.write_bytes(bytes(data))
    _refused(hearth, team[0].data, bad, "cannot be read")


def test_a_malformed_day_file_changes_nothing(hearth: Hearth, tmp_path: Path, team):
    content = fx.files()
    export = fx.write_zip(tmp_path / "bad.zip", content | {
        "random/2020-01-02.json": [{"type": "message", "user": "U1", "text": "no ts"}]})
    _refused(hearth, team[0].data, export, "random/2020-01-02.json: message 1")
    raw = fx.write_zip(tmp_path / "raw.zip", fx.files(),
                       raw={"general/2020-01-03.json": b'[{"ts": "1.0", "text": "cut'})
    _refused(hearth, team[0].data, raw, "general/2020-01-03.json is not valid JSON")


def test_a_zip_bomb_is_refused_before_it_is_read(hearth: Hearth, tmp_path: Path, team):
    bomb = tmp_path / "bomb.zip"
    chunk = bytes(16 * 1024 * 1024)
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf:
        for name, value in fx.files().items():
            zf.writestr(name, json.dumps(value))
        with zf.open("general/2020-01-05.json", "w", force_zip64=True) as f:
            for _ in range(128):  # 2 GiB of zeros, a few MB in the zip
                f.write(chunk)
    assert bomb.stat().st_size < 10 * 1024 * 1024
    _refused(hearth, team[0].data, bomb, "zip bomb")


def test_an_unknown_file_is_not_an_export(hearth: Hearth, tmp_path: Path, team):
    other = fx.write_zip(tmp_path / "other.zip", {"readme.json": {}})
    _refused(hearth, team[0].data, other, "is not a Slack export")


def test_helper_processes_import_public_channels_as_this_process_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Large imports convert and sign public channels in helper processes
    (app/slack_workers.py): what they make shows exactly as what the importer makes itself."""
    monkeypatch.setenv("HEARTH_VERIFY_PROCESSES", "2")
    export = fx.write_zip(tmp_path / "e.zip")
    helped: list[int] = []
    convert = slack_import.convert

    def counted(*args, **kwargs):
        helped.append(len(args[4]))  # the channels handed to the helpers
        yield from convert(*args, **kwargs)

    monkeypatch.setattr(slack_import, "convert", counted)
    shapes = []
    for name, least in (("here", 10**9), ("helped", 0)):
        monkeypatch.setattr(slack_import, "HELPERS_MIN", least)
        with Workspace.open(create_workspace(tmp_path, name, "ada-h")) as ws:
            line = slack_import.import_slack(ws, export).line()
            shapes.append((line, fx.public_shape(ws)))
    assert helped == [len(fx.CHANNELS)]
    assert shapes[0] == shapes[1]
    assert shapes[0][0].startswith("imported 18 messages (5 in threads)")
    assert [nick for nick, *_ in shapes[1][1]["general"][0]] == [
        nick for nick, _ in fx.GENERAL_SHOWN]


def test_files_the_export_holds_come_as_attachments(hearth: Hearth, tmp_path: Path):
    data = create_workspace(tmp_path, "w", "ada-h")
    pdf = b"%PDF-1.4 the plan\n" * 100
    export = fx.write_zip(tmp_path / "with-files.zip", raw={"__uploads/F1/plan.pdf": pdf})
    line = hearth("import-slack", export, "--quiet", data=data.data).line
    assert "1 file attached" in line
    with Workspace.open(data) as ws:
        (plan,) = [m for m in ws.read("general", limit=100) if m.text.startswith("the plan")]
        assert plan.text == "the plan" and plan.nick == "ada (from Slack)"
        assert [(f.name, f.size, f.complete) for f in plan.files] == [("plan.pdf", len(pdf),
                                                                      True)]
        saved = ws.files.save(plan.id, 0, tmp_path / "out")
        assert saved.read_bytes() == pdf
    # a damaged attached file is found before anything is written
    damaged = bytearray(fx.write_zip(tmp_path / "d.zip", raw={"__uploads/F1/plan.pdf": pdf})
                        .read_bytes())
    at = damaged.find(b"__uploads/F1/plan.pdf") + 24  # in its compressed bytes
    damaged[at] ^= 0xFF
    (tmp_path / "d2.zip").write_bytes(bytes(damaged))
    other = create_workspace(tmp_path, "v", "zed")
    _refused(hearth, other.data, tmp_path / "d2.zip", "cannot be read")


def test_without_helper_processes_the_importer_converts_itself(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """When no helper can start, the import still comes in whole, converted here."""
    monkeypatch.setenv("HEARTH_VERIFY_PROCESSES", "2")
    monkeypatch.setattr(slack_import, "HELPERS_MIN", 0)
    monkeypatch.setattr("app.slack_workers._command", lambda: ["/nonexistent/python"])
    with Workspace.open(create_workspace(tmp_path, "ada", "ada-h")) as ws:
        line = slack_import.import_slack(ws, fx.write_zip(tmp_path / "e.zip")).line()
        assert line.startswith("imported 18 messages (5 in threads) into 2 channels")
        assert [m.nick for m in ws.read("general", limit=100)] == [
            nick for nick, _ in fx.GENERAL_SHOWN]
