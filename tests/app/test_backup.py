"""`hearth backup` while a node serves, `hearth restore` into a fresh data folder: the restored
replica passes SQLite's integrity check and syncs on with the team as the same member. The
backup is sealed whole: none of what it holds (a public message, a private channel's message
this computer opened, a document, an attached file's bytes, the replica's SQLite header) is
in its bytes, and only the right passphrase opens it."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import zipfile
from pathlib import Path

from app.backup import DAILY_KEEP, daily_backups, run_daily, set_daily
from app.errors import WorkspaceError
from app.paths import Paths
from app.workspace import Workspace
from tests.support import (
    create_workspace,
    node_call,
    node_channels,
    node_post,
    node_read,
    start_two_nodes,
    wait_until,
)

from .conftest import Hearth
from .test_backup_files import beside, holds_window

PASS = "correct horse battery staple"


def test_a_backup_taken_while_serving_restores_and_syncs_on(hearth: Hearth, cluster,
                                                             tmp_path: Path):
    pa, pb = cluster.members(2)
    a, b = start_two_nodes(cluster, pa, pb)
    node_channels(a, "general")
    for n in range(50):
        node_post(a, "general", f"before {n}")
    wait_until(lambda: len(node_read(b, "general", limit=100)) == 50, what="b has the posts")
    # what b's replica and chunk store hold in the clear, or under keys it holds
    secret_text = "private: the launch code is 0451"
    channel = node_call(a, lambda: a.workspace.private.create("launch", [b.key]))
    node_call(a, lambda: a.workspace.private.post(channel, secret_text))

    def b_opened() -> bool:
        try:
            texts = {m.text for m in node_call(b, lambda: b.workspace.private.read(channel))}
        except WorkspaceError:  # not here yet
            return False
        return secret_text in texts
    wait_until(b_opened, what="b opens the private message")
    doc_text = "the plan nobody else reads\n"
    doc = node_call(b, lambda: b.workspace.documents.new("Plan", private=True))
    node_call(b, lambda: b.workspace.documents.write(doc, doc_text))
    attached = tmp_path / "minutes.txt"
    attached.write_bytes(os.urandom(200_000) + b"the minutes, in plain words" * 1000)
    file_mid = node_call(b, lambda: b.workspace.files.attach("general", [attached]).id)

    # b's node keeps writing while its computer is backed up
    def keep_posting(stop: threading.Event) -> None:
        n = 0
        while not stop.is_set() and n < 200:
            node_post(b, "general", f"during {n}")
            n += 1

    out = tmp_path / "b.hearth-backup"
    with beside(keep_posting):
        line = hearth("backup", out, data=pb.data, passphrase=PASS).line
    assert "backed up workspace default" in line and out.exists()
    assert out.stat().st_mode & 0o077 == 0
    raw = out.read_bytes()
    assert PASS.encode() not in raw
    assert not zipfile.is_zipfile(out)  # sealed whole: not even its entries' names show
    for clear in ("before 7", secret_text, doc_text.strip(), "Plan", "minutes", "default"):
        assert clear.encode() not in raw, clear
    assert b"SQLite format 3" not in raw
    assert not holds_window(raw, attached.read_bytes())
    identity = pb.identity.read_bytes()
    assert hearth.fails("restore", out, data=tmp_path / "fresh0", passphrase="not it") \
        == "hearth: the passphrase does not open this backup"
    assert not (tmp_path / "fresh0" / "workspaces" / "default").exists()

    # b's computer is lost; a new one restores the backup
    cluster.close()
    fresh = tmp_path / "fresh"
    assert "restored workspace default" in hearth("restore", out, data=fresh,
                                                  passphrase=PASS).line
    restored = Paths.resolve(fresh, "default")
    conn = sqlite3.connect(restored.replica)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()
    with Workspace.open(restored) as ws:
        assert ws.replica.integrity_check() == "ok"
        assert restored.identity.read_bytes() == identity  # the same member
        held = {m.text for m in ws.read("general", limit=500)}
        assert {f"before {n}" for n in range(50)} <= held
        assert secret_text in {m.text for m in ws.private.read(channel)}
        plan = ws.documents.current(doc.id)
        assert plan.text(plan.heads()) == doc_text
        assert ws.files.open(file_mid, 0).read_bytes() == attached.read_bytes()
    assert "exists already" in hearth.fails("restore", out, data=fresh, passphrase=PASS)

    # the restored computer syncs on with the team as b
    a = cluster.start(pa)
    b2 = cluster.start(restored, peers=[a])
    node_post(a, "general", "after the restore")
    node_post(b2, "general", "b is back")
    wait_until(lambda: "after the restore" in {m.text for m in node_read(b2, "general")},
               what="the restored computer receives")
    wait_until(lambda: [m for m in node_read(a, "general") if m.text == "b is back"],
               what="the team receives from the restored computer")
    (back,) = [m for m in node_read(a, "general") if m.text == "b is back"]
    with Workspace.open(pb) as old:
        assert back.author == old.key


def test_the_daily_backup_keeps_its_newest_seven_and_nothing_else_is_touched(tmp_path: Path):
    paths = create_workspace(tmp_path / "ada")
    folder = tmp_path / "backups"
    folder.mkdir()
    set_daily(paths.data, folder)
    older = [f"hearth-{paths.workspace}-2026-01-0{day}.hearth-backup" for day in range(1, 7)]
    older += [f"hearth-{paths.workspace}-2026-01-06-2.hearth-backup",  # a second that day
              f"hearth-{paths.workspace}-2025-12-31.zip"]  # an earlier version's name
    others = [f"hearth-other-{paths.workspace}-2020-01-01.hearth-backup", "notes.txt",
              f"hearth-{paths.workspace}-2019-01-01.hearth-backup.txt"]
    for name in older + others:
        (folder / name).write_bytes(b"x")
    (folder / f"hearth-{paths.workspace}-2018-01-01.hearth-backup").mkdir()  # not a file

    written = run_daily(paths, PASS, clock=lambda: time.mktime((2026, 2, 1, 12, 0, 0, 0, 0, -1)))
    assert written.name == f"hearth-{paths.workspace}-2026-02-01.hearth-backup"
    kept = daily_backups(folder, paths.workspace)
    assert [p.name for p in kept] == [written.name, older[7 - 1], *reversed(older[1:6])]
    assert len(kept) == DAILY_KEEP
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [p.name for p in kept] + others + [f"hearth-{paths.workspace}-2018-01-01.hearth-backup"])
