"""The chunk store (storage/chunks.py) on a real folder: a chunk is stored only when its bytes
hash to its id, appears under its name only whole, and a failed write leaves nothing behind;
each both ways a chunk is written (an unnamed file linked into place, and where the system has
none, a temporary file renamed)."""

from __future__ import annotations

import errno
import os

import pytest

from core.attachments import chunk_id
from storage.chunks import BadChunk, ChunkStore


@pytest.fixture(params=["unnamed", "renamed"])
def way(request):
    return request.param


def _store(folder, way: str) -> ChunkStore:
    store = ChunkStore(folder)
    if way == "renamed":
        store._unnamed = False  # as on a system without O_TMPFILE
    else:
        assert store._unnamed, "this test machine is expected to have O_TMPFILE"
    return store


def _files(folder) -> list:
    return sorted(p for p in folder.rglob("*") if p.is_file())


def test_a_chunk_is_stored_once_under_its_id_and_no_temporary_file_stays(tmp_path, way):
    store = _store(tmp_path / "chunks", way)
    data = os.urandom(256 * 1024 + 16)
    cid = chunk_id(data)

    assert store.put(cid, data) is True
    assert store.put(cid, data) is False  # here already
    assert store.read(cid) == data
    assert store.path(cid) == tmp_path / "chunks" / cid.hex()[:2] / cid.hex()
    assert list(store.ids()) == [cid]
    assert _files(tmp_path / "chunks") == [store.path(cid)]
    assert oct(store.path(cid).stat().st_mode & 0o777) == "0o600"


def test_bytes_that_do_not_hash_to_the_id_are_refused(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    data = os.urandom(1000)
    wrong = data[:-1] + bytes([data[-1] ^ 1])

    with pytest.raises(BadChunk):
        store.put(chunk_id(data), wrong)
    assert not store.has(chunk_id(data)) and list(store.ids()) == []


def test_folders_removed_under_a_running_store_are_made_again(tmp_path, way):
    store = _store(tmp_path / "chunks", way)
    first, second = os.urandom(100), os.urandom(100)
    store.put(chunk_id(first), first)
    store.remove([chunk_id(first)])
    for folder in sorted((tmp_path / "chunks").rglob("*"), reverse=True):
        folder.rmdir()

    assert store.put(chunk_id(second), second) is True
    assert store.read(chunk_id(second)) == second


@pytest.mark.parametrize("step", ["write", "place"])
def test_a_full_disk_leaves_neither_the_chunk_nor_a_temporary_file(tmp_path, monkeypatch, way,
                                                                   step):
    store = _store(tmp_path / "chunks", way)
    kept = os.urandom(100)
    store.put(chunk_id(kept), kept)
    data = os.urandom(256 * 1024)
    written = []
    real_write = os.write

    def write(fd, view):  # the disk fills up half way through the chunk
        if written:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(fd)
        return real_write(fd, view[:len(view) // 2])

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    if step == "write":
        monkeypatch.setattr(os, "write", write)
    else:
        monkeypatch.setattr(os, "link" if way == "unnamed" else "replace", full)
    with pytest.raises(OSError, match="No space left"):
        store.put(chunk_id(data), data)
    monkeypatch.undo()

    assert not store.has(chunk_id(data))
    assert _files(tmp_path / "chunks") == [store.path(chunk_id(kept))]
    assert store.read(chunk_id(kept)) == kept  # what was stored before stays
    assert store.put(chunk_id(data), data) is True and store.read(chunk_id(data)) == data


def test_two_threads_storing_one_chunk_store_it_once(tmp_path, way):
    from concurrent.futures import ThreadPoolExecutor

    store = _store(tmp_path / "chunks", way)
    data = os.urandom(256 * 1024)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: store.put(chunk_id(data), data), range(16)))
    assert results.count(True) >= 1 and store.read(chunk_id(data)) == data
    assert _files(tmp_path / "chunks") == [store.path(chunk_id(data))]
