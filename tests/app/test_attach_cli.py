"""`hearth attach`, `hearth read --json` attachments and `hearth storage`, as a person runs
them: files in a public channel and in a private one, what `read` shows of them, and the
quota set and enforced from the command line."""

from __future__ import annotations

import os
from pathlib import Path

from PIL import Image

from storage.chunks import ChunkStore

from .conftest import Hearth, carry, personal_code

HEX64 = 64


def test_attach_then_read_json_lists_the_files(hearth: Hearth, tmp_path: Path):
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    report = tmp_path / "Q3 report.pdf"
    report.write_bytes(b"%PDF-1.4 " + os.urandom(1000))
    picture = tmp_path / "cat.png"
    Image.effect_noise((300, 200), 50).convert("RGB").save(picture)
    message = hearth("attach", "#general", str(report), str(picture), "--text", "numbers",
                     data=ada).line
    assert len(message) == HEX64
    (shown,) = hearth("read", "general", "--json", data=ada).json()
    assert shown["id"] == message and shown["text"] == "numbers"
    assert shown["attachments"] == [
        {"index": 0, "name": "Q3 report.pdf", "size": 1009, "media_type": "application/pdf",
         "list": shown["attachments"][0]["list"], "complete": True, "pinned": False, "width": 0,
         "height": 0},
        {"index": 1, "name": "cat.png", "size": picture.stat().st_size,
         "media_type": "image/png", "list": shown["attachments"][1]["list"], "complete": True,
         "pinned": False, "width": 300, "height": 200}]
    lines = hearth("read", "general", data=ada).stdout
    assert "[file 0: Q3 report.pdf, 1.0 KB]" in lines and "[file 1: cat.png" in lines


def test_attach_refusals_are_one_line(hearth: Hearth, tmp_path: Path):
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    assert "cannot read" in hearth.fails("attach", "general", str(tmp_path / "nope"),
                                         data=ada)
    assert "not a file" in hearth.fails("attach", "general", str(tmp_path), data=ada)


def test_a_private_channels_files_reach_only_its_members(
        hearth: Hearth, team: tuple[Path, Path, Path], tmp_path: Path):
    ada, bob, dan = team
    hearth("channel", "create", "launch", "--private", "--member", "bob", data=ada)
    plan = tmp_path / "MARKER-plan.txt"
    plan.write_text("MARKER the launch is on friday")
    hearth("attach", "launch", str(plan), data=ada)
    carry(hearth, ada, bob, dan)
    (shown,) = hearth("read", "launch", "--json", data=bob).json()
    assert [(f["name"], f["complete"]) for f in shown["attachments"]] == [
        ("MARKER-plan.txt", False)]  # the message came; the chunks travel by sync
    for path in dan.rglob("*"):
        if path.is_file():
            assert b"MARKER" not in path.read_bytes(), path


def test_storage_shows_usage_and_sets_the_quota(hearth: Hearth, tmp_path: Path):
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 * 2**20))
    hearth("attach", "general", str(big), data=ada)
    usage = hearth("storage", "--json", data=ada).json()
    assert usage["files"] == 1 and usage["mine"] == usage["total"] > 3 * 2**20
    assert usage["quota"] == 10240 * 2**20 and usage["auto_download"] == 25 * 2**20
    changed = hearth("storage", "--json", "--quota", "1M", "--auto-download", "100M",
                     data=ada).json()
    assert changed["quota"] == 2**20 and changed["auto_download"] == 100 * 2**20
    assert changed["mine"] == usage["mine"]  # my upload stays whatever the quota
    text = hearth("storage", data=ada).stdout
    assert "files here: 1, 3.1 MB of a 1 MiB quota" in text
    assert "--quota" in hearth.fails("storage", "--quota", "lots", data=ada)


def test_a_pinned_file_stays_whatever_the_quota_until_unpinned(hearth: Hearth, tmp_path: Path):
    ada, bob = tmp_path / "ada", tmp_path / "bob"
    hearth("init", "--nick", "ada", data=ada)
    hearth("join-workspace", personal_code(hearth, ada, bob), "--nick", "bob", data=bob)
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(2 * 2**20))
    message = hearth("attach", "general", str(big), data=ada).line
    carry(hearth, ada, bob)
    # The chunks reach bob as sync would bring them; download finds them here and saves.
    [ada_chunks] = ada.rglob("chunks")
    [bob_replica] = bob.rglob("replica.sqlite3")
    ada_store, bob_store = ChunkStore(ada_chunks), ChunkStore(bob_replica.parent / "chunks")
    for cid in ada_store.ids():
        bob_store.put(cid, ada_store.read(cid))
    hearth("download", message[:12], "--out", str(tmp_path / "out"), "--no-mdns", data=bob)
    assert hearth("pin", message[:12], data=bob).line == "pinned: big.bin"
    (read,) = hearth("read", "general", "--json", data=bob).json()
    assert read["attachments"][0]["pinned"] is True
    kept = hearth("storage", "--json", "--quota", "0", data=bob).json()
    assert kept["pinned"] > 2 * 2**20 and kept["others"] == 0 and kept["freed"] == 0
    assert hearth("pin", message[:12], "--unpin", data=bob).line == "unpinned: big.bin"
    gone = hearth("storage", "--json", "--quota", "0", data=bob).json()
    assert gone["pinned"] == 0 and gone["total"] == 0 and gone["freed"] > 2 * 2**20
    assert "0 to 3" in hearth.fails("pin", message[:12], "--index", "9", data=bob)
