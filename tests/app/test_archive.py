"""`hearth archive`: the json archive (Slack's layout) of an imported workspace imports back
into a fresh workspace as the same messages, threads and reactions; the sqlite archive opens
with sqlite-utils and its full-text search finds a message; the html archive is static pages;
private content only with --include-private."""

from __future__ import annotations

import json
from pathlib import Path

import sqlite_utils

from app.paths import Paths
from app.slack_convert import slack_ms
from app.workspace import Workspace
from tests.support import create_workspace

from . import slack_fixture as fx
from .conftest import Hearth


def _shape(data: Path) -> dict:
    """What a person reads in each public channel: (author shown, time, text, edited,
    reactions) of every message, and each thread's texts."""
    out = {}
    with Workspace.open(Paths.resolve(data, "default")) as ws:
        for info in ws.channels():
            shown = ws.read(info.name, limit=1000)
            out[info.name] = {
                "topic": ws.state(info.name).topic,
                "messages": [(m.nick, m.ts, m.text, m.edited,
                              sorted((r.emoji, r.count) for r in m.reactions)) for m in shown],
                "threads": [[(r.nick, r.ts, r.text) for r in ws.conversation.thread(m.id)]
                            for m in shown if m.replies]}
    return out


def test_a_json_archive_imports_back_as_the_same_messages(hearth: Hearth, tmp_path: Path):
    first = create_workspace(tmp_path, "first", "ada-h")
    hearth("import-slack", fx.write_zip(tmp_path / "e.zip"), "--quiet", data=first.data)
    with Workspace.open(first) as ws:  # and a thread, an edit and a reaction made in Hearth
        root = ws.read("random")[0]
        ws.conversation.reply(root.id, "a reply written in Hearth")
        ws.conversation.react(root.id, "🎉")
        mine = ws.post("random", "written in *Hearth*, mentions @ada")
        ws.conversation.edit(mine.id, "written in **Hearth**, mentions @ada")
    out = tmp_path / "archive.zip"
    line = hearth("archive", out, "--format", "json", data=first.data).line
    assert line.startswith("archived 15 messages in 2 channels")
    assert "private" not in line

    second = create_workspace(tmp_path, "second", "zed")
    hearth("import-slack", out, "--quiet", data=second.data)
    before, after = _shape(first.data), _shape(second.data)
    # Hearth's own messages come back from Slack's layout as imported ones, "(from Slack)"
    for shape in (before, after):
        for channel in shape.values():
            channel["messages"] = [(nick.removesuffix(" (from Slack)"), *rest)
                                   for nick, *rest in channel["messages"]]
            channel["threads"] = [[(nick.removesuffix(" (from Slack)"), *rest)
                                   for nick, *rest in thread] for thread in channel["threads"]]
    assert after == before
    assert len(after["general"]["messages"]) == len(fx.GENERAL_SHOWN)


def _private_shape(data: Path) -> dict:
    """_shape of each private channel I am in, by name."""
    out = {}
    with Workspace.open(Paths.resolve(data, "default")) as ws:
        for private in ws.private.channels():
            shown = ws.private.read(private.id, limit=0)
            out[private.name] = {
                "messages": [(m.nick, m.ts, m.text, m.edited,
                              sorted((r.emoji, r.count) for r in m.reactions), m.replies)
                             for m in shown],
                "threads": [[(r.nick, r.ts, r.text) for r in ws.conversation.thread(m.id)]
                            for m in shown if m.replies]}
    return out


def test_a_json_archive_with_private_channels_keeps_their_threads_and_reactions(
        hearth: Hearth, tmp_path: Path):
    first = create_workspace(tmp_path, "first", "ada-h")
    hearth("import-slack", fx.write_zip(tmp_path / "e.zip"), "--quiet", data=first.data)
    out = tmp_path / "archive.zip"
    hearth("archive", out, "--format", "json", "--include-private", data=first.data)
    second = create_workspace(tmp_path, "second", "zed")
    hearth("import-slack", out, "--quiet", data=second.data)
    before, after = _private_shape(first.data), _private_shape(second.data)
    assert after == before
    assert before["secret-plans"]["threads"] == [
        [(nick, slack_ms(ts), text) for nick, ts, text in fx.SECRET_THREAD]]
    assert before["secret-plans"]["messages"][0][4] == [("👀", 1)]
    assert [len(t) for t in before["dm-ada-bob"]["threads"]] == [2]


def test_the_sqlite_archive_opens_with_sqlite_utils_and_finds_a_message(
        hearth: Hearth, tmp_path: Path):
    ws_paths = create_workspace(tmp_path, "w", "ada-h")
    hearth("import-slack", fx.write_zip(tmp_path / "e.zip"), "--quiet", data=ws_paths.data)
    with Workspace.open(ws_paths) as ws:
        plan = ws.documents.new("Plan")
        ws.documents.write(plan, "first draft\n")
        ws.documents.write(plan, "first draft\nsecond line\n")
    out = tmp_path / "archive.db"
    hearth("archive", out, data=ws_paths.data)
    db = sqlite_utils.Database(out)
    assert {"workspace", "members", "channels", "messages", "reactions", "edits", "files",
            "documents", "document_versions", "messages_fts"} <= set(db.table_names())
    found = list(db.table("messages").search("日本語"))
    assert [row["text"] for row in found] == ["Grüße, 日本語 and emoji 🎉"]
    assert found[0]["author"] == "Zoë 日本" and found[0]["author_id"] == "U3"
    fks = {(fk.column, fk.other_table) for fk in db.table("messages").foreign_keys}
    assert {("channel_id", "channels"), ("author_id", "members"),
            ("thread_id", "messages")} <= fks
    root = next(db.query("SELECT * FROM messages WHERE text = 'Thread start'"))
    assert root["replies"] == 3
    assert db.execute("SELECT COUNT(*) FROM messages WHERE thread_id = ?",
                      [root["id"]]).fetchone()[0] == 3
    thumbs = next(db.query("SELECT * FROM reactions WHERE emoji = '👍'"))
    assert thumbs["count"] == 2 and json.loads(thumbs["users"]) == ["U2", "U3"]
    assert db.execute("SELECT COUNT(*) FROM channels WHERE private = 1").fetchone()[0] == 0
    (doc,) = db.table("documents").rows
    assert doc["title"] == "Plan" and doc["creator_id"] in {r["id"] for r in db["members"].rows}
    texts = [r["text"] for r in db.query(
        "SELECT text FROM document_versions WHERE document_id = ? ORDER BY ts", [doc["id"]])]
    assert texts[-1] == "first draft\nsecond line\n" and len(texts) >= 2
    assert [r["title"] for r in db.query(
        "SELECT d.title FROM document_versions_fts f JOIN document_versions v "
        "ON v.rowid = f.rowid JOIN documents d ON d.id = v.document_id "
        "WHERE document_versions_fts MATCH 'second'")] == ["Plan"]
    assert "secret" not in out.read_bytes().decode("utf-8", "replace")


def test_private_channels_only_with_include_private(hearth: Hearth, tmp_path: Path):
    ws_paths = create_workspace(tmp_path, "w", "ada-h")
    users = tmp_path / "users.json"
    users.write_text(json.dumps({"U1": "ada-h"}))
    hearth("import-slack", fx.write_zip(tmp_path / "e.zip"), "--map", users, "--quiet",
           data=ws_paths.data)
    site = tmp_path / "site"
    run = hearth("archive", site, "--format", "html", "--include-private", data=ws_paths.data)
    assert "it holds 3 private channels and direct messages" in run.stdout
    index = (site / "index.html").read_text()
    assert "secret-plans" in index and "keep it as private as they are" in index
    pages = "".join(p.read_text() for p in site.rglob("*.html"))
    assert "the <b>secret</b> plan" in pages
    assert "<script" not in pages
    assert "[the site]" not in pages and '<a href="https://example.org">the site</a>' in pages
    public = tmp_path / "public"
    hearth("archive", public, "--format", "html", data=ws_paths.data)
    assert "secret" not in "".join(p.read_text() for p in public.rglob("*.html"))
    assert "no channel #nope" in hearth.fails("archive", tmp_path / "x", "--channel", "nope",
                                              data=ws_paths.data)
    assert "already exists" in hearth.fails("archive", public, data=ws_paths.data)


def test_direct_messages_go_to_dms_json_in_a_folder_named_by_their_id(
        hearth: Hearth, team: tuple[Path, Path, Path], tmp_path: Path):
    """Slack's layout for direct messages: dms.json lists each one with its two members, and
    its messages are in a folder named by its id (never under groups.json)."""
    ada, bob, _ = team
    hearth("channel", "create", "launch", "--private", "--member", "bob", data=ada)
    hearth("post", "launch", "private channel words", data=ada)
    hearth("dm", "bob", "just between us", data=ada)
    out = tmp_path / "archive"
    hearth("archive", out, "--format", "json", "--include-private", data=ada)
    dms = json.loads((out / "dms.json").read_text(encoding="utf-8"))
    groups = json.loads((out / "groups.json").read_text(encoding="utf-8"))
    assert [g["name"] for g in groups] == ["launch"]
    assert len(dms) == 1 and len(dms[0]["members"]) == 2 and dms[0]["id"].startswith("D")
    days = list((out / dms[0]["id"]).glob("*.json"))
    assert [m["text"] for d in days for m in json.loads(d.read_text(encoding="utf-8"))] == [
        "just between us"]
