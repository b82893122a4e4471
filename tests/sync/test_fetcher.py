"""The fetcher's ends (sync/fetcher.py) over a real ChunkStore holding a real file: whatever
fails on the way, the fetch's future is done, with the reason."""

from __future__ import annotations

import asyncio
import errno
import sqlite3

import pytest

from storage.chunks import ChunkStore
from sync.fetcher import Fetcher, FetchFailed

from .test_files_session import make_file

SIZE = 3 * 256 * 1024 + 100


@pytest.fixture
def held(tmp_path) -> tuple[ChunkStore, bytes]:
    """A chunk store holding every chunk of a file, and the file's list id."""
    chunks = ChunkStore(tmp_path / "chunks")
    list_id, _ = make_file(chunks, SIZE)
    return chunks, list_id


def fetch(chunks: ChunkStore, list_id: bytes, on_progress) -> asyncio.Future:
    async def run():
        fetcher = Fetcher(chunks, list, on_progress)
        future = fetcher.fetch(list_id, SIZE)
        try:
            await asyncio.wait_for(asyncio.shield(future), 5.0)
        except FetchFailed:
            pass
        finally:
            await fetcher.close()
        return future
    return asyncio.run(run())


def test_a_fetch_ends_when_reporting_its_end_raises(held):
    chunks, list_id = held
    reported = []

    def on_progress(detail: dict) -> None:
        reported.append(detail)
        if detail["done"]:
            raise sqlite3.OperationalError("database or disk is full")

    future = fetch(chunks, list_id, on_progress)
    assert future.done() and future.exception() is None
    assert reported[-1]["done"] and reported[-1]["have"] == SIZE


def test_a_fetch_fails_with_a_reason_when_the_store_cannot_say_what_is_missing(held):
    chunks, list_id = held

    def missing(ids):
        raise OSError(errno.EIO, "Input/output error")

    chunks.missing = missing
    reported = []
    future = fetch(chunks, list_id, reported.append)
    with pytest.raises(FetchFailed, match="Input/output error"):
        future.result()
    assert reported[-1]["error"] and not reported[-1]["done"]
