"""`hearth backup` while a node serves, `hearth restore` into a fresh data folder: the restored
replica passes SQLite's integrity check and syncs on with the team as the same member."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from app.paths import Paths
from app.workspace import Workspace
from tests.support import node_channels, node_post, node_read, start_two_nodes, wait_until

from .conftest import Hearth

PASS = "correct horse battery staple"


def test_a_backup_taken_while_serving_restores_and_syncs_on(hearth: Hearth, cluster,
                                                             tmp_path: Path):
    pa, pb = cluster.members(2)
    a, b = start_two_nodes(cluster, pa, pb)
    node_channels(a, "general")
    for n in range(50):
        node_post(a, "general", f"before {n}")
    wait_until(lambda: len(node_read(b, "general", limit=100)) == 50, what="b has the posts")

    # b's node keeps writing while its computer is backed up
    stop = threading.Event()

    def keep_posting() -> None:
        n = 0
        while not stop.is_set() and n < 200:
            node_post(b, "general", f"during {n}")
            n += 1

    writer = threading.Thread(target=keep_posting)
    writer.start()
    try:
        out = tmp_path / "b.hearth-backup"
        line = hearth("backup", out, data=pb.data, passphrase=PASS).line
    finally:
        stop.set()
        writer.join()
    assert "backed up workspace default" in line and out.exists()
    assert out.stat().st_mode & 0o077 == 0
    assert PASS.encode() not in out.read_bytes()
    identity = pb.identity.read_bytes()
    assert "wrong passphrase" in hearth.fails("restore", out, data=tmp_path / "fresh0",
                                              passphrase="not it")
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
