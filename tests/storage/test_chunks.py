"""The chunk store (storage/chunks.py) on a real folder: a chunk is stored only when its bytes
hash to its id, appears under its name only whole, and a failed write leaves nothing behind."""

from __future__ import annotations

import errno
import os

import pytest

from core.attachments import chunk_id
from storage.chunks import BadChunk, ChunkStore


def test_a_chunk_is_stored_once_under_its_id_and_no_temporary_file_stays(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    data = os.urandom(256 * 1024 + 16)
    cid = chunk_id(data)

    assert store.put(cid, data) is True
    assert store.put(cid, data) is False  # here already
    assert store.read(cid) == data
    assert store.path(cid) == tmp_path / "chunks" / cid.hex()[:2] / cid.hex()
    assert list(store.ids()) == [cid]
    assert list((tmp_path / "chunks" / "tmp").iterdir()) == []


def test_bytes_that_do_not_hash_to_the_id_are_refused(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    data = os.urandom(1000)
    wrong = data[:-1] + bytes([data[-1] ^ 1])

    with pytest.raises(BadChunk):
        store.put(chunk_id(data), wrong)
    assert not store.has(chunk_id(data)) and list(store.ids()) == []


def test_folders_removed_under_a_running_store_are_made_again(tmp_path):
    store = ChunkStore(tmp_path / "chunks")
    first, second = os.urandom(100), os.urandom(100)
    store.put(chunk_id(first), first)
    store.remove([chunk_id(first)])
    for folder in sorted((tmp_path / "chunks").rglob("*"), reverse=True):
        folder.rmdir()

    assert store.put(chunk_id(second), second) is True
    assert store.read(chunk_id(second)) == second


def test_a_full_disk_leaves_neither_the_chunk_nor_a_temporary_file(tmp_path, monkeypatch):
    store = ChunkStore(tmp_path / "chunks")
    kept = os.urandom(100)
    store.put(chunk_id(kept), kept)
    data = os.urandom(256 * 1024)

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "replace", full)
    with pytest.raises(OSError, match="No space left"):
        store.put(chunk_id(data), data)
    monkeypatch.undo()

    assert not store.has(chunk_id(data))
    assert list((tmp_path / "chunks" / "tmp").iterdir()) == []
    assert store.read(chunk_id(kept)) == kept  # what was stored before stays
