"""The chunk store (storage/chunks.py, storage/_chunk_packs.py) on a real folder: chunks
appended to pack files and found through a SQLite index; a chunk stored only when its bytes
hash to its id and found only whole; a failed write, a torn tail or a killed writer leaving
nothing half-recorded; removal giving the space back; the layout before packs still served;
threads and another process storing at once. The rules all at once: test_chunks_machine.py."""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from core.attachments import chunk_id
from storage import chunks
from storage._chunk_packs import HEADER, pack_name
from storage.chunks import BadChunk, ChunkStore

ROOT = Path(__file__).resolve().parents[2]
KIB = 1024


def _chunks(count: int, size: int = 64 * KIB) -> list[tuple[bytes, bytes]]:
    out = []
    for _ in range(count):
        data = os.urandom(size)
        out.append((chunk_id(data), data))
    return out


def _packs(folder: Path) -> list[Path]:
    return sorted((folder / "packs").glob("*.pack"))


def _reopened(store: ChunkStore) -> ChunkStore:
    """The store as a process starting now finds it: this one's writers let go of their packs
    (as at its exit) and nothing of its state is shared."""
    store._packs.close()
    chunks._shared.pop(os.path.realpath(store.folder), None)
    return ChunkStore(store.folder)


def test_chunks_go_to_one_pack_and_read_back(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    stored = _chunks(5)
    cids = [cid for cid, _ in stored]

    assert [store.put(cid, data) for cid, data in stored] == [True] * 5
    assert store.put(*stored[0]) is False  # here already
    assert all(store.read(cid) == data for cid, data in stored)
    assert all(store.has(cid) and store.size(cid) == len(data) for cid, data in stored)
    absent = chunk_id(b"absent")
    assert store.read(absent) is None and not store.has(absent) and store.size(absent) == 0
    assert store.missing([absent, cids[1], absent]) == [absent]
    assert list(store.ids()) == sorted(cids)
    # One pack for all of them (no file per chunk), and nobody else may read the files.
    [pack] = _packs(tmp_path / "chunks")
    assert pack.stat().st_size == sum(HEADER.size + len(data) for _, data in stored)
    for path in (pack, tmp_path / "chunks" / "index.db"):
        assert oct(path.stat().st_mode & 0o777) == "0o600"
    assert all(_reopened(store).read(cid) == data for cid, data in stored)


def test_bytes_that_do_not_hash_to_the_id_are_refused(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    data = os.urandom(1000)
    wrong = data[:-1] + bytes([data[-1] ^ 1])

    with pytest.raises(BadChunk):
        store.put(chunk_id(data), wrong)
    with pytest.raises(BadChunk):
        store.put(b"short", data)
    assert not store.has(chunk_id(data)) and list(store.ids()) == []
    assert store.disk_bytes() == 0


def test_a_folder_deleted_and_made_again_under_a_live_store_is_a_new_store(tmp_path):
    import shutil

    store = ChunkStore(tmp_path / "chunks")
    (first, one), (second, two) = _chunks(2)
    store.put(first, one)
    shutil.rmtree(tmp_path / "chunks")  # as leaving a workspace does, with no Node on it

    again = ChunkStore(tmp_path / "chunks")
    assert not again.has(first) and again.put(second, two) is True
    assert _reopened(again).read(second) == two


def test_a_full_disk_while_writing_leaves_nothing_half_recorded(tmp_path, monkeypatch):
    store = ChunkStore(tmp_path / "chunks")
    (kept, old), (cid, data) = _chunks(2, 256 * KIB)
    store.put(kept, old)
    size = store.disk_bytes()
    real = os.pwritev

    def half_then_full(fd, buffers, offset):  # the disk fills up half way through the chunk
        monkeypatch.setattr(os, "pwritev", full)
        return real(fd, [bytes(buffers[0]), bytes(buffers[1])[:len(buffers[1]) // 2]], offset)

    def full(*args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwritev", half_then_full)
    with pytest.raises(OSError, match="No space left"):
        store.put(cid, data)
    monkeypatch.undo()

    assert not store.has(cid) and store.disk_bytes() == size  # the half record is cut
    assert store.read(kept) == old  # what was stored before stays
    assert store.put(cid, data) is True and store.read(cid) == data


def test_a_full_index_leaves_the_chunk_out_and_its_bytes_cut(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    store.put(*_chunks(1)[0])
    conn = store._packs._conn()
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # SQLite's own "disk is full"

    stored, refused = [], None
    for cid, data in _chunks(400, 100):
        try:
            store.put(cid, data)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC and "full" in str(exc)
            refused = cid
            break
        stored.append((cid, data))
    assert refused is not None, "the index never filled up"
    assert not store.has(refused)
    assert store.disk_bytes() == sum(HEADER.size + len(d) for _, d in stored) + HEADER.size + 64 * KIB
    conn.execute("PRAGMA max_page_count = 1073741823")
    assert all(store.read(cid) == data for cid, data in stored)


def test_a_torn_tail_is_ignored_and_cut_at_open(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    stored = _chunks(3)
    for cid, data in stored:
        store.put(cid, data)
    [pack] = _packs(tmp_path / "chunks")
    whole = pack.stat().st_size
    torn_cid, torn = _chunks(1)[0]
    store = _reopened(store)  # the writer let go of its pack, as a killed process does
    with open(pack, "ab") as f:  # a put killed half way through its record
        f.write(HEADER.pack(b"hck1", torn_cid, len(torn)) + torn[:1000])

    assert all(store.read(cid) == data for cid, data in stored)
    assert not store.has(torn_cid)
    store.clean()
    assert pack.stat().st_size == whole
    assert all(store.read(cid) == data for cid, data in stored)
    assert store.put(torn_cid, torn) is True and store.read(torn_cid) == torn


def test_a_writer_killed_at_any_moment_leaves_every_indexed_chunk_whole(tmp_path):
    """A real process storing chunks, killed with SIGKILL mid-stream: what the index names
    reads back exactly (the child writes chunks derived from their number, so we can check)."""
    folder = tmp_path / "chunks"
    child = subprocess.Popen(
        [sys.executable, "-c", (
            "import sys, hashlib\n"
            "from storage.chunks import ChunkStore\n"
            "from core.attachments import chunk_id\n"
            "store = ChunkStore(sys.argv[1], pack_bytes=1 << 20)\n"
            "n = 0\n"
            "while True:\n"
            "    data = hashlib.sha512(str(n).encode()).digest() * 1000\n"
            "    store.put(chunk_id(data), data)\n"
            "    n += 1\n"
            "    if n == 20: print('going', flush=True)\n"), str(folder)],
        cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "going\n"
    finally:
        os.kill(child.pid, signal.SIGKILL)
        child.wait(30)
    import hashlib

    store = ChunkStore(folder)
    expected = {}
    for n in range(100_000):
        data = hashlib.sha512(str(n).encode()).digest() * 1000
        if not store.has(chunk_id(data)):
            break
        expected[chunk_id(data)] = data
    assert len(expected) >= 20 and set(store.ids()) == set(expected)
    store.clean()
    assert all(store.read(cid) == data for cid, data in expected.items())
    assert store.disk_bytes() == sum(HEADER.size + len(d) for d in expected.values())


def test_removing_gives_the_space_back(tmp_path):
    store = ChunkStore(tmp_path / "chunks", pack_bytes=256 * KIB)
    stored = _chunks(12)  # 3 packs of 4
    for cid, data in stored:
        store.put(cid, data)
    record = HEADER.size + 64 * KIB
    assert len(_packs(tmp_path / "chunks")) == 3

    # All of the first pack: it is deleted.
    assert store.remove(cid for cid, _ in stored[:4]) == 4 * 64 * KIB
    assert store.disk_bytes() == 8 * record
    # Two of the second (half dead): it is compacted; one of the third: it is cut.
    assert store.remove([stored[4][0], stored[5][0], stored[11][0]]) == 3 * 64 * KIB
    assert store.disk_bytes() == 5 * record
    assert all(store.read(cid) == data for cid, data in stored[6:11])
    assert store.remove(cid for cid, _ in stored) == 5 * 64 * KIB  # those left
    assert store.remove(cid for cid, _ in stored) == 0
    assert store.disk_bytes() == 0 and list(store.ids()) == []


def test_compaction_under_readers_never_loses_a_read(tmp_path):
    store = ChunkStore(tmp_path / "chunks", pack_bytes=512 * KIB)
    stored = _chunks(64, 32 * KIB)
    for cid, data in stored:
        store.put(cid, data)
    kept = stored[1::4]  # three of every four go: every pack is compacted
    stop, wrong = threading.Event(), []

    def reader() -> None:
        while not stop.is_set():
            for cid, data in kept:
                if store.read(cid) != data:
                    wrong.append(cid)

    threads = [threading.Thread(target=reader) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        for n in range(0, 64, 4):
            store.remove([stored[n][0], stored[n + 2][0], stored[n + 3][0]])
        store.clean()
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert wrong == []
    assert sorted(store.ids()) == sorted(cid for cid, _ in kept)
    assert store.disk_bytes() <= len(kept) * (HEADER.size + 32 * KIB) * 4 // 3


def test_two_threads_storing_one_chunk_store_it_once(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    cid, data = _chunks(1, 256 * KIB)[0]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: store.put(cid, data), range(16)))
    assert results.count(True) == 1 and store.read(cid) == data
    assert store.disk_bytes() == HEADER.size + len(data)  # the others' copies were cut


def test_threads_storing_and_reading_at_once_each_get_their_own_pack(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    stored = _chunks(64)
    barrier = threading.Barrier(4)

    def work(part: list[tuple[bytes, bytes]]) -> bool:
        barrier.wait()
        return all(store.put(cid, data) and store.read(cid) == data for cid, data in part)

    with ThreadPoolExecutor(4) as pool:
        assert all(pool.map(work, [stored[n::4] for n in range(4)]))
    assert sorted(store.ids()) == sorted(cid for cid, _ in stored)
    assert store.disk_bytes() == sum(HEADER.size + len(data) for _, data in stored)


def test_another_process_stores_and_removes_beside_this_one(tmp_path):
    """The command line beside a running Node: both store, one removes and cleans, and each
    sees the other's chunks whole."""
    folder = tmp_path / "chunks"
    store = ChunkStore(folder, pack_bytes=256 * KIB)
    mine = _chunks(16)
    for cid, data in mine[:8]:
        store.put(cid, data)
    script = (
        "import sys, os\n"
        "from storage.chunks import ChunkStore\n"
        "from core.attachments import chunk_id\n"
        "store = ChunkStore(sys.argv[1], pack_bytes=256 * 1024)\n"
        "ids = [bytes.fromhex(h) for h in sys.argv[2:]]\n"
        "print(store.remove(ids[:4]))\n"
        "store.clean()\n"
        "for n in range(8):\n"
        "    data = bytes([n]) * 50000\n"
        "    store.put(chunk_id(data), data)\n"
        "print(all(store.read(cid) is not None for cid in ids[4:]))\n")
    child = subprocess.Popen([sys.executable, "-c", script, str(folder),
                              *(cid.hex() for cid, _ in mine[:8])],
                             cwd=ROOT, stdout=subprocess.PIPE, text=True)
    for cid, data in mine[8:]:  # meanwhile, here
        store.put(cid, data)
    out, _ = child.communicate(timeout=120)
    assert child.returncode == 0 and out.split() == [str(4 * 64 * KIB), "True"]

    theirs = [bytes([n]) * 50000 for n in range(8)]
    assert all(store.read(chunk_id(data)) == data for data in theirs)
    assert all(not store.has(cid) for cid, _ in mine[:4])
    assert all(store.read(cid) == data for cid, data in mine[4:])
    store.clean()
    live = sum(HEADER.size + len(d) for d in [*theirs, *(d for _, d in mine[4:])])
    assert store.disk_bytes() <= live * 4 // 3


def _write_old_layout(folder: Path, stored: list[tuple[bytes, bytes]]) -> None:
    """What the store before packs wrote: `ab/abcdef…` a file per chunk, and `tmp/`."""
    for cid, data in stored:
        name = cid.hex()
        (folder / name[:2]).mkdir(parents=True, exist_ok=True)
        (folder / name[:2] / name).write_bytes(data)
    (folder / "tmp").mkdir()


def test_a_folder_of_the_layout_before_packs_is_read_listed_and_removed(tmp_path):
    folder = tmp_path / "chunks"
    old = _chunks(3)
    _write_old_layout(folder, old)
    store = ChunkStore(folder)
    new = _chunks(2)
    for cid, data in new:
        assert store.put(cid, data) is True
    assert store.put(*old[0]) is False  # held already, as a file

    assert all(store.read(cid) == data and store.size(cid) == len(data)
               for cid, data in [*old, *new])
    assert store.missing([old[1][0], new[0][0], chunk_id(b"x")]) == [chunk_id(b"x")]
    assert list(store.ids()) == sorted(cid for cid, _ in [*old, *new])
    assert store.remove([old[0][0], new[0][0]]) == 2 * 64 * KIB
    assert not (folder / old[0][0].hex()[:2] / old[0][0].hex()).exists()
    assert sorted(store.ids()) == sorted([old[1][0], old[2][0], new[1][0]])
    store.clean()  # the emptied folder goes; the others stay
    assert sorted(p.name for p in folder.iterdir() if len(p.name) == 2) == sorted(
        {old[1][0].hex()[:2], old[2][0].hex()[:2]})
    assert all(_reopened(store).read(cid) == data for cid, data in [old[1], old[2], new[1]])


def test_a_lost_index_is_made_again_from_the_packs(tmp_path):
    folder = tmp_path / "chunks"
    store = ChunkStore(folder, pack_bytes=256 * KIB)
    stored = _chunks(10)
    for cid, data in stored:
        store.put(cid, data)
    store = _reopened(store)
    torn_cid, torn = _chunks(1)[0]
    with open(_packs(folder)[0], "ab") as f:  # and a torn tail, as a killed put leaves
        f.write(HEADER.pack(b"hck1", torn_cid, len(torn)) + torn[:100])
    bad_cid, bad_pack, bad_off, _ = (stored[0][0], *store._packs.place(stored[0][0]))
    with open(folder / "packs" / pack_name(bad_pack), "r+b") as f:
        f.seek(bad_off + HEADER.size + 7)  # and a record whose bytes went bad
        f.write(bytes([stored[0][1][7] ^ 1]))
    store._packs.close()
    chunks._shared.pop(os.path.realpath(folder), None)
    for made in folder.glob("index.db*"):
        made.unlink()

    again = ChunkStore(folder)
    good = stored[1:]
    assert all(again.read(cid) == data for cid, data in good)  # a read makes it again
    assert sorted(again.ids()) == sorted(cid for cid, _ in good)
    assert not again.has(torn_cid) and not again.has(bad_cid)
    again.clean()
    assert again.disk_bytes() <= sum(HEADER.size + len(data) for _, data in stored)
    assert oct((folder / "index.db").stat().st_mode & 0o777) == "0o600"
    assert sorted(p.name for p in folder.iterdir()) == ["index.db", "index.db-shm",
                                                       "index.db-wal", "packs"]
