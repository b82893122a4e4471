"""A backup keeps the attached files' bytes this computer stores (app/backup_chunks.py): taken
while its Node serves (and attaches and deletes files), restored on a fresh data folder, a file
opens with identical bytes with no peer running; `--without-files` leaves them out, and the
restored computer fetches them from a peer on 127.0.0.1; a damaged, cut or oversized chunk
entry, or a zip bomb, is refused with one line and exit 2 with the target folder as it was;
backups of the first two formats (plain zips) still restore. A backup is sealed whole (format
3, app/backup_seal.py): a wrong passphrase, a flipped byte anywhere, a file cut short or with
bytes appended are refused the same way. The damage inside the zip is made by unsealing it,
changing it and sealing it again, so the checks of the zip itself stay tested."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import threading
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from app.backup import backup, restore
from app.backup_chunks import PREFIX, RECORD
from app.backup_seal import (
    ABYTES,
    HEADER,
    PART,
    SealingWriter,
    open_inner_keys,
    open_keys,
    read_header,
    seal_keys,
    unseal,
)
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
FORMAT_2 = Path(__file__).with_name("backup-v2.zip")  # made by hearth backup of format 2
FORMAT_2_PASS = "format two pass phrase"
FORMAT_2_FILE = bytes.fromhex("9f5fb3c5f310f904ac6f6399c853439681932276d506040626435784ce6674f1")


@contextlib.contextmanager
def beside(work: Callable[[threading.Event], None]) -> Iterator[None]:
    """Run work(stop) in a thread while the block runs (a Node writing while its computer is
    backed up); stop is set, and the thread joined, when the block ends."""
    stop = threading.Event()
    thread = threading.Thread(target=work, args=(stop,))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def holds_window(haystack: bytes, source: bytes, width: int = 64) -> bool:
    """Whether any `width`-byte window of `source` is in `haystack`: such a window holds a
    whole half-width piece of `haystack` at a multiple of half the width, so those pieces are
    looked up among all of `source`'s half-width windows."""
    half = width // 2
    pieces = {source[i:i + half] for i in range(len(source) - half + 1)}
    return any(haystack[j:j + half] in pieces for j in range(0, len(haystack) - half + 1, half))


def unsealed(path: Path, passphrase: str = PASS) -> bytes:
    """The zip a sealed backup holds."""
    header = read_header(path)
    assert header is not None, f"{path} is not sealed"
    out = io.BytesIO()
    unseal(path, header, open_keys(header, passphrase), out)
    return out.getvalue()


def reseal(src: Path, dst: Path, change: Callable[[bytes], bytes] = lambda zipped: zipped) \
        -> None:
    """A copy of the sealed backup `src` whose zip is as `change(zip)` says, sealed into the new
    file `dst` as a backup is (under a salt of its own, so its keys.sealed is opened and sealed
    again under the copy's keys before `change` sees the zip)."""
    header = read_header(src)
    assert header is not None
    old = open_keys(header, PASS)
    with open(dst, "xb") as f:
        writer = SealingWriter(f, PASS)
        rekeyed = rewritten(unsealed(src), lambda name, data: seal_keys(
            writer.keys, open_inner_keys(old, data)) if name == "keys.sealed" else data)
        writer.write(change(rekeyed))
        writer.close()


def rewritten(zipped: bytes, change: Callable[[str, bytes], bytes | None], *,
              deflate: tuple[str, ...] = ()) -> bytes:
    """A copy of the backup zip `zipped` with each entry's bytes as `change(name, data)` says
    (None: left out), written as the backup writer writes (groups stored), with valid CRCs."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(zipped)) as zin, zipfile.ZipFile(out, "w") as zout:
        for info in zin.infolist():
            data = change(info.filename, zin.read(info))
            if data is not None:
                kind = zipfile.ZIP_DEFLATED if info.compress_type == zipfile.ZIP_DEFLATED \
                    or info.filename in deflate else zipfile.ZIP_STORED
                zout.writestr(info.filename, data, compress_type=kind)
    return out.getvalue()


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
    churned: list[int] = []

    def churn(stop: threading.Event) -> None:
        n = 0
        while not stop.is_set() and n < 40:
            path = tmp_path / f"churn{n}.bin"
            write_file(path, 300_000)
            made = attach(b, path)
            node_call(b, lambda made=made: b.workspace.conversation.delete(made))
            n += 1
        churned.append(n)

    out = tmp_path / "b.zip"
    with beside(churn):
        line = hearth("backup", out, data=pb.data, passphrase=PASS).line
    assert churned and churned[0] > 0
    assert "of files (" in line, line
    with zipfile.ZipFile(io.BytesIO(unsealed(out))) as zf:
        groups = [i for i in zf.infolist() if i.filename.startswith(PREFIX)]
        manifest = json.loads(zf.read("manifest.json"))
    assert groups and all(i.compress_type == zipfile.ZIP_STORED for i in groups)
    assert manifest["v"] == 3 and manifest["files"] is True and manifest["chunks"] >= 14
    assert manifest["chunk_bytes"] >= len(big)
    assert not holds_window(out.read_bytes(), big)  # chunks are ciphertext, and sealed

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
    with zipfile.ZipFile(io.BytesIO(unsealed(out))) as zf:
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
    data = write_file(tmp_path / "notes.bin", 2 * MB + 17)  # the zip is 3 parts sealed
    with Workspace.open(paths) as ws:
        ws.create_channel("general", public=True)
        mid = ws.files.attach("general", [tmp_path / "notes.bin"]).id
    out = tmp_path / "good.zip"
    backup(paths, out, PASS)
    return out, data, mid


def rewrite(src: Path, dst: Path, change: Callable[[str, bytes], bytes | None], *,
            deflate: tuple[str, ...] = ()) -> None:
    """A copy of the sealed backup `src` with its zip's entries changed (`rewritten`)."""
    reseal(src, dst, lambda zipped: rewritten(zipped, change, deflate=deflate))


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
        def flip(zipped: bytes) -> bytes:
            raw = bytearray(zipped)
            with zipfile.ZipFile(io.BytesIO(zipped)) as zf:
                info = zf.getinfo(f"{PREFIX}000000")
            raw[info.header_offset + 30 + len(info.filename) + len(info.extra) + 5000] ^= 1
            return bytes(raw)
        reseal(good, bad, flip)
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


SEALED = HEADER.size + PART + ABYTES  # where the second part starts


@pytest.mark.parametrize("damage, message", [
    ("wrong passphrase", "the passphrase does not open this backup"),
    ("header", "damaged Hearth backup (its header)"),
    ("first part", "the backup is damaged (its part 1 fails its check)"),
    ("middle", "the backup is damaged (its part 2 fails its check)"),
    ("last part", "the backup is damaged (its part 3 fails its check: changed, cut short"),
    ("swapped parts", "the backup is damaged (its part 1 fails its check)"),
    ("cut", "the backup is damaged (its part 2 fails its check: changed, cut short"),
    ("cut at a part's end", "the backup is cut short (it ends before its last part)"),
    ("tail", "the backup is damaged (its part 3 fails its check: changed, cut short"),
    ("long tail", "the backup is damaged (its part 3 fails its check)"),
])
def test_a_sealed_backup_opens_whole_with_its_passphrase_or_not_at_all(
        hearth: Hearth, a_backup, tmp_path: Path, damage: str, message: str):
    good, _, _ = a_backup
    raw = good.read_bytes()
    assert SEALED + PART + ABYTES < len(raw) < SEALED + 2 * (PART + ABYTES)  # 3 parts

    def flipped(at: int) -> bytes:
        return raw[:at] + bytes([raw[at] ^ 0x20]) + raw[at + 1:]
    bad = {"wrong passphrase": raw,
           "header": flipped(HEADER.size - 20),
           "first part": flipped(HEADER.size + 100),
           "middle": flipped(SEALED + PART // 2),
           "last part": flipped(len(raw) - 5),
           "swapped parts": raw[:HEADER.size] + raw[SEALED:2 * SEALED - HEADER.size]
           + raw[HEADER.size:SEALED] + raw[2 * SEALED - HEADER.size:],
           "cut": raw[:SEALED + 500],
           "cut at a part's end": raw[:2 * SEALED - HEADER.size],
           "tail": raw + b"\0",
           "long tail": raw + raw[HEADER.size:]}[damage]
    copy = tmp_path / "bad.hearth-backup"
    copy.write_bytes(bad)
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    before = listing(target)
    run = hearth("restore", copy, data=target, ok=False,
                 passphrase="not it" if damage == "wrong passphrase" else PASS)
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr
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


@pytest.mark.parametrize("version", [1, 2])
def test_backups_of_the_plain_formats_still_restore(hearth: Hearth, tmp_path: Path,
                                                    version: int):
    """FORMAT_2 was written by `hearth backup` of format 2 (a plain zip, only its keys sealed);
    format 1 is the same without its chunks and their counts."""
    old = tmp_path / f"v{version}.zip"

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
    old.write_bytes(rewritten(FORMAT_2.read_bytes(), first_format) if version == 1
                    else FORMAT_2.read_bytes())
    assert zipfile.is_zipfile(old) and read_header(old) is None
    line = hearth("restore", old, data=tmp_path / "fresh", passphrase=FORMAT_2_PASS).line
    restored = Paths.resolve(tmp_path / "fresh", "default")
    with Workspace.open(restored) as ws:
        assert ws.replica.integrity_check() == "ok"
        assert "a message backed up in format 2" in {m.text for m in ws.read("general")}
        if version == 1:
            assert "no files" in line and "the bytes of 1 file it lacks come from peers" in line
            assert not ws.replica.files.all()[0].complete
        else:
            assert "of files (2 chunks)" in line and "come from peers" not in line, line
            assert ws.files.open(FORMAT_2_FILE, 0).read_bytes() == \
                b"format two keeps this file\n" * 200


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

    def huge_directory(zipped: bytes) -> bytes:
        return zipped[:-22 + 12] + (64 << 20).to_bytes(4, "little") + zipped[-22 + 16:]
    huge = tmp_path / "huge.zip"
    reseal(good, huge, huge_directory)
    with pytest.raises(WorkspaceError, match="zip directory declares"):
        restore(huge, tmp_path / "t2", PASS)

    def comment(zipped: bytes) -> bytes:
        buf = io.BytesIO(zipped)
        with zipfile.ZipFile(buf, "a") as zf:
            zf.comment = b"hello"
        return buf.getvalue()
    commented = tmp_path / "commented.zip"
    reseal(good, commented, comment)
    with pytest.raises(WorkspaceError, match="not a zip file it wrote"):
        restore(commented, tmp_path / "t3", PASS)
    for n in (1, 2, 3):
        assert not (tmp_path / f"t{n}").exists()


def test_a_file_that_is_no_backup_is_refused_before_the_passphrase_is_asked(
        hearth: Hearth, tmp_path: Path):
    other = tmp_path / "holiday.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("photo.txt", "not a backup")
    line = hearth.fails("restore", other, data=tmp_path / "fresh")  # no HEARTH_PASSPHRASE
    assert "not a Hearth backup" in line, line
    assert not (tmp_path / "fresh").exists()


@pytest.mark.parametrize("room", ["not for the zip", "not beside the zip"])
def test_a_restore_needs_room_for_the_zip_beside_what_it_unpacks(
        a_backup, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: str):
    """The disk is made small (shutil's free space is what a disk of `budget` bytes would have
    left beside what the target holds): the sealed backup's zip, decrypted into the staging
    folder, counts against it, before it is written and again once it is."""
    good, data, _ = a_backup
    target = tmp_path / "target"
    target.mkdir()
    (target / "keep.txt").write_text("mine")
    before = listing(target)
    size = good.stat().st_size
    unpacked = len(data) + 2 * MB  # the chunks and the replica (about 1.3 MB) at least
    budget = 2 * size if room == "not for the zip" else size + unpacked

    def usage(path):
        used = sum(p.stat().st_size for p in target.rglob("*") if p.is_file())
        return shutil._ntuple_diskusage(budget, used, budget - used)
    monkeypatch.setattr(shutil, "disk_usage", usage)
    with pytest.raises(WorkspaceError, match="the backup needs") as refused:
        restore(good, target, PASS)
    # before anything is written; or once the zip is in the staging folder (under workspaces/)
    assert (f"{target / 'workspaces'} has" in str(refused.value)) == (room != "not for the zip")
    assert listing(target) == before
