"""A backup keeps the attached files' bytes this computer stores (app/backup_chunks.py): taken
while its Node serves (and attaches and deletes files), restored on a fresh data folder, a file
opens with identical bytes with no peer running; `--without-files` leaves them out, and the
restored computer fetches them from a peer on 127.0.0.1; a damaged, cut or oversized chunk
entry, or a zip bomb, is refused with one line and exit 2 with the target folder as it was;
a backup of the first format (no chunks) still restores."""

from __future__ import annotations

import io
import json
import os
import threading
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

from app.backup import backup, restore
from app.backup_chunks import PREFIX, RECORD
from app.errors import WorkspaceError
from app.paths import Paths
from app.workspace import Workspace
from core.attachments import MAX_CHUNK, chunk_id
from storage.chunks import ChunkStore
from tests.support import (
    create_workspace,
    node_call,
    node_channels,
    start_two_nodes,
    wait_until,
)

from .conftest import Hearth

PASS = "correct horse battery staple"
MB = 1 << 20


def write_file(path: Path, size: int) -> bytes:
    data = os.urandom(size)
    path.write_bytes(data)
    return data


def attach(node, path: Path, channel: str = "general") -> bytes:
    return node_call(node, lambda: node.workspace.files.attach(channel, [path]).id)


def opened(paths: Paths, message: bytes) -> bytes:
    with Workspace.open(paths) as ws:
        return ws.files.open(message, 0).read_bytes()


def listing(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() if p.is_file() else b""
            for p in sorted(root.rglob("*"))} if root.exists() else {}


def test_a_backup_taken_while_serving_keeps_the_files(hearth: Hearth, cluster, tmp_path: Path):
    pa, pb = cluster.members(2)
    a, b = start_two_nodes(cluster, pa, pb)
    node_channels(a, "general")
    wait_until(lambda: node_call(b, lambda: b.workspace.known_channel("general")) is not None,
               what="b knows general")
    big = write_file(tmp_path / "photos.bin", 3 * MB + 12345)
    mid = attach(b, tmp_path / "photos.bin")

    # b's Node attaches and deletes files while its computer is backed up
    stop = threading.Event()
    churned: list[int] = []

    def churn() -> None:
        n = 0
        while not stop.is_set() and n < 40:
            path = tmp_path / f"churn{n}.bin"
            write_file(path, 300_000)
            made = attach(b, path)
            node_call(b, lambda made=made: b.workspace.conversation.delete(made))
            n += 1
        churned.append(n)

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        out = tmp_path / "b.zip"
        line = hearth("backup", out, data=pb.data, passphrase=PASS).line
    finally:
        stop.set()
        writer.join()
    assert churned and churned[0] > 0
    assert "of files (" in line, line
    with zipfile.ZipFile(out) as zf:
        groups = [i for i in zf.infolist() if i.filename.startswith(PREFIX)]
        manifest = json.loads(zf.read("manifest.json"))
    assert groups and all(i.compress_type == zipfile.ZIP_STORED for i in groups)
    assert manifest["v"] == 2 and manifest["files"] is True and manifest["chunks"] >= 14
    assert manifest["chunk_bytes"] >= len(big)
    assert big[:4096] not in out.read_bytes()  # chunks are ciphertext

    # b's computer is lost: no peer runs when its backup is restored on a new one
    cluster.close()
    fresh = tmp_path / "fresh"
    line = hearth("restore", out, data=fresh, passphrase=PASS).line
    assert "of files (" in line and "come from peers" not in line, line
    restored = Paths.resolve(fresh, "default")
    chunks = restored.workspace_dir / "chunks"
    assert not list(chunks.glob("index.db-*")), "the index was closed before the move"
    assert not list(restored.workspace_dir.parent.glob(".restore-*"))
    assert opened(restored, mid) == big
    with Workspace.open(restored) as ws:
        assert ws.replica.integrity_check() == "ok"


def test_without_files_the_restored_computer_fetches_them_from_a_peer(hearth: Hearth, cluster,
                                                                      tmp_path: Path):
    pa, pb = cluster.members(2)
    a, b = start_two_nodes(cluster, pa, pb)
    node_channels(a, "general")
    wait_until(lambda: node_call(b, lambda: b.workspace.known_channel("general")) is not None,
               what="b knows general")
    data = write_file(tmp_path / "report.pdf", 2 * MB)
    mid = attach(b, tmp_path / "report.pdf")
    wait_until(lambda: node_call(a, lambda: a.workspace.replica.has(mid)), what="a has it")
    a.facade.download(mid, 0).result(60)  # a holds the file too

    out = tmp_path / "small.zip"
    line = hearth("backup", out, "--without-files", data=pb.data, passphrase=PASS).line
    assert "no files" in line, line
    with zipfile.ZipFile(out) as zf:
        assert not [n for n in zf.namelist() if n.startswith(PREFIX)]
        assert json.loads(zf.read("manifest.json"))["files"] is False
    assert out.stat().st_size < len(data)

    cluster.close()
    fresh = tmp_path / "fresh"
    line = hearth("restore", out, data=fresh, passphrase=PASS).line
    assert "the bytes of 1 file it lacks come from peers" in line, line
    restored = Paths.resolve(fresh, "default")
    with Workspace.open(restored) as ws:  # not shown as here: the Node will fetch it
        (state,) = ws.replica.files.all()
        assert not state.complete
        assert [w.list for w in ws.files.wanted(1 << 40)] == [state.list]

    a = cluster.start(pa)
    b2 = cluster.start(restored, peers=[a])
    b2.facade.download(mid, 0).result(60)
    saved = b2.facade.save_attachment(mid, 0, tmp_path / "saved").result(60)
    assert saved.read_bytes() == data


@pytest.fixture
def a_backup(tmp_path: Path) -> tuple[Path, bytes, bytes]:
    """(a backup with a file, the file's bytes, its message) of a workspace with no Node."""
    paths = create_workspace(tmp_path / "src")
    data = write_file(tmp_path / "notes.bin", MB + 17)
    with Workspace.open(paths) as ws:
        ws.create_channel("general", public=True)
        mid = ws.files.attach("general", [tmp_path / "notes.bin"]).id
    out = tmp_path / "good.zip"
    backup(paths, out, PASS)
    return out, data, mid


def rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None], *,
            deflate: tuple[str, ...] = ()) -> None:
    """A copy of the backup `src` with each entry's bytes as `change(name, data)` says (None:
    left out), written as the backup writer writes (groups stored), with valid CRCs."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                kind = zipfile.ZIP_DEFLATED if info.compress_type == zipfile.ZIP_DEFLATED \
                    or info.filename in deflate else zipfile.ZIP_STORED
                zout.writestr(info.filename, data, compress_type=kind)


def first_group(change: Callable[[bytes], bytes]) -> Callable[[str, bytes], bytes]:
    return lambda name, data: change(data) if name == f"{PREFIX}000000" else data


def flip_last_chunk_byte(group: bytes) -> bytes:
    return group[:-1] + bytes([group[-1] ^ 1])


def oversized(group: bytes) -> bytes:
    """A first record claiming more than a chunk may be (its bytes made to hash to its id)."""
    body = os.urandom(MAX_CHUNK + 1)
    return RECORD.pack(chunk_id(body), len(body)) + body + group


@pytest.mark.parametrize("damage, message", [
    ("crc", "damaged"),
    ("hash", "does not hash to its id"),
    ("cut", "damaged"),
    ("oversized", "damaged"),
    ("missing group", "damaged"),
])
def test_a_damaged_chunk_entry_is_refused_and_nothing_is_written(
        hearth: Hearth, a_backup, tmp_path: Path, damage: str, message: str):
    good, _, _ = a_backup
    bad = tmp_path / "bad.zip"
    if damage == "crc":  # a byte of a stored chunk flipped in place: the zip's CRC says so
        raw = bytearray(good.read_bytes())
        with zipfile.ZipFile(good) as zf:
            info = zf.getinfo(f"{PREFIX}000000")
        at = info.header_offset + 30 + len(info.filename) + len(info.extra) + 5000
        raw[at] ^= 1
        bad.write_bytes(bytes(raw))
    elif damage == "hash":  # ... and the CRC made again: the chunk's id says so
        rewrite(good, bad, first_group(flip_last_chunk_byte))
    elif damage == "cut":  # the group's last chunk cut short, the manifest left as it was
        rewrite(good, bad, first_group(lambda g: g[:-100]))
    elif damage == "oversized":
        def both(name: str, data: bytes) -> bytes:
            if name == "manifest.json":
                manifest = json.loads(data)
                manifest["chunks"] += 1
                manifest["chunk_bytes"] += MAX_CHUNK + 1
                return json.dumps(manifest).encode()
            return oversized(data) if name == f"{PREFIX}000000" else data
        rewrite(good, bad, both)
    else:
        rewrite(good, bad, lambda name, data: None if name.startswith(PREFIX) else data)
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    before = listing(target)
    run = hearth("restore", bad, data=target, ok=False, passphrase=PASS)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    (line,) = run.stderr.strip().splitlines()
    assert message in line, line
    assert listing(target) == before


def test_a_zip_bomb_is_refused_before_a_byte_is_written(hearth: Hearth, a_backup,
                                                        tmp_path: Path):
    good, _, _ = a_backup
    bomb = tmp_path / "bomb.zip"
    size = 200 * MB

    def swell(name: str, data: bytes) -> bytes:
        if name == "replica.sqlite3":
            return data + bytes(size - len(data))
        if name == "manifest.json":
            manifest = json.loads(data)
            manifest["replica_bytes"] = size
            return json.dumps(manifest).encode()
        return data
    rewrite(good, bomb, swell)
    assert bomb.stat().st_size < 10 * MB
    target = tmp_path / "target"
    line = hearth.fails("restore", bomb, data=target, passphrase=PASS)
    assert "replica is damaged" in line and str(size) in line, line
    assert listing(target) == {}


def test_a_backup_that_cannot_be_written_says_why(hearth: Hearth, tmp_path: Path):
    paths = create_workspace(tmp_path / "src")
    (tmp_path / "a-file").write_text("not a folder")
    line = hearth.fails("backup", tmp_path / "a-file" / "b.zip", data=paths.data,
                        passphrase=PASS)
    assert "cannot write" in line, line


def test_a_backup_of_the_first_format_still_restores(hearth: Hearth, a_backup,
                                                     tmp_path: Path):
    good, data, mid = a_backup
    old = tmp_path / "v1.zip"

    def first_format(name: str, raw: bytes) -> bytes | None:
        """What VERSION 1 wrote: no chunks, and a manifest without their counts."""
        if name.startswith(PREFIX):
            return None
        if name == "manifest.json":
            manifest = json.loads(raw)
            return json.dumps({k: manifest[k] for k in
                               ("format", "workspace", "created_ms", "replica_bytes")}
                              | {"v": 1}).encode()
        return raw
    rewrite(good, old, first_format)
    line = hearth("restore", old, data=tmp_path / "fresh", passphrase=PASS).line
    assert "no files" in line and "the bytes of 1 file it lacks come from peers" in line, line
    with Workspace.open(Paths.resolve(tmp_path / "fresh", "default")) as ws:
        assert not ws.replica.files.all()[0].complete
        assert ws.replica.integrity_check() == "ok"


def test_chunks_of_the_layout_before_packs_are_backed_up(tmp_path: Path):
    paths = create_workspace(tmp_path / "src")
    data = write_file(tmp_path / "old.bin", 700_000)
    with Workspace.open(paths) as ws:
        ws.create_channel("general", public=True)
        mid = ws.files.attach("general", [tmp_path / "old.bin"]).id
    folder = paths.workspace_dir / "chunks"
    store = ChunkStore(folder)
    held = {cid: store.read(cid) for cid in store.ids()}
    store.remove(held)
    store.close()
    for cid, chunk in held.items():  # as the layout before packs kept them
        (folder / cid.hex()[:2]).mkdir(exist_ok=True)
        (folder / cid.hex()[:2] / cid.hex()).write_bytes(chunk)
    assert opened(paths, mid) == data
    moves: list[tuple[int, int]] = []
    info = backup(paths, tmp_path / "legacy.zip", PASS,
                  progress=lambda done, total: moves.append((done, total)))
    assert info.chunks == len(held)
    assert moves == [(n, len(held)) for n in range(1, len(held) + 1)]
    done = restore(tmp_path / "legacy.zip", tmp_path / "fresh", PASS)
    assert done.incomplete == 0
    assert opened(done.paths, mid) == data


def test_what_the_restore_reads_is_bounded(tmp_path: Path, a_backup):
    """Entries claiming more than they may: a group compressed, one over its size, a zip
    directory larger than a backup's can be (checked before zipfile reads it)."""
    good, _, _ = a_backup
    deflated = tmp_path / "deflated.zip"
    rewrite(good, deflated, lambda name, data: data, deflate=(f"{PREFIX}000000",))
    with pytest.raises(WorkspaceError, match="damaged"):
        restore(deflated, tmp_path / "t1", PASS)
    assert not (tmp_path / "t1").exists()

    raw = bytearray(good.read_bytes())
    raw[-22 + 12:-22 + 16] = (64 << 20).to_bytes(4, "little")  # the directory's size
    huge = tmp_path / "huge.zip"
    huge.write_bytes(bytes(raw))
    with pytest.raises(WorkspaceError, match="zip directory declares"):
        restore(huge, tmp_path / "t2", PASS)
    commented = tmp_path / "commented.zip"
    buf = io.BytesIO(good.read_bytes())
    with zipfile.ZipFile(buf, "a") as zf:
        zf.comment = b"hello"
    commented.write_bytes(buf.getvalue())
    with pytest.raises(WorkspaceError, match="not a zip file it wrote"):
        restore(commented, tmp_path / "t3", PASS)
