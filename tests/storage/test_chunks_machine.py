"""The chunk store's promises under any sequence of puts, removes, reopenings, crashes that
tear a record half written, and cleanings (storage/chunks.py): every chunk it says it holds
reads back exactly its bytes, a removed one is gone, `remove` tells the bytes it dropped, and
the packs on disk never take more than 4/3 of the live records (a sealed pack is compacted
once more than a quarter of it is dead; a writer's pack holds only live records)."""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from core.attachments import chunk_id
from storage import chunks
from storage._chunk_packs import HEADER, MAGIC
from storage.chunks import ChunkStore

PACK_BYTES = 8 * 1024


def _data(n: int) -> bytes:
    """Chunk n: 300 bytes to 4 KiB, different for every n."""
    seed = hashlib.sha512(n.to_bytes(4, "big")).digest()
    return (seed * 64)[:300 + seed[0] * 15]


class ChunkStoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="hearth-chunks-machine-"))
        self.folder = self.root / "chunks"
        self.model: dict[bytes, bytes] = {}
        self.legacy: dict[bytes, bytes] = {}
        self.store = ChunkStore(self.folder, pack_bytes=PACK_BYTES)

    @initialize(old=st.lists(st.integers(1000, 1010), max_size=3, unique=True))
    def a_folder_of_the_layout_before_packs(self, old: list[int]) -> None:
        for n in old:
            data = _data(n)
            name = chunk_id(data).hex()
            (self.folder / name[:2]).mkdir(parents=True, exist_ok=True)
            (self.folder / name[:2] / name).write_bytes(data)
            self.model[chunk_id(data)] = self.legacy[chunk_id(data)] = data
        self._reopen()

    def _reopen(self) -> None:
        self.store._packs.close()  # as the process's exit lets go of its packs
        chunks._shared.pop(os.path.realpath(self.folder), None)
        self.store = ChunkStore(self.folder, pack_bytes=PACK_BYTES)

    @rule(ns=st.lists(st.integers(0, 40), min_size=1, max_size=6))
    def put(self, ns: list[int]) -> None:
        for n in ns:
            data = _data(n)
            cid = chunk_id(data)
            assert self.store.put(cid, data) is (cid not in self.model)
            self.model[cid] = data

    @rule(ns=st.lists(st.integers(0, 40), min_size=1, max_size=10),
          old=st.lists(st.integers(1000, 1010), max_size=2))
    def remove(self, ns: list[int], old: list[int]) -> None:
        cids = [chunk_id(_data(n)) for n in [*ns, *old]]
        expected = sum(len(self.model[cid]) for cid in set(cids) if cid in self.model)
        assert self.store.remove(cids) == expected
        for cid in cids:
            self.model.pop(cid, None)
            self.legacy.pop(cid, None)

    @rule()
    def reopen(self) -> None:
        self._reopen()

    @rule(n=st.integers(41, 60), cut=st.integers(1, HEADER.size + 4000))
    def crash_half_way_through_a_put(self, n: int, cut: int) -> None:
        """A put killed after writing part of its record at its pack's tail, and the store
        opened again as the workspace opens it (with `clean`)."""
        data = _data(n)
        packs = self.store._packs
        writer = packs._take()
        record = HEADER.pack(MAGIC, chunk_id(data), len(data)) + data
        os.pwrite(writer.fd, record[:min(cut, len(record) - 1)], writer.end)
        writer.close()
        self._reopen()
        assert not self.store.has(chunk_id(data))
        self.store.clean()

    @rule()
    def clean(self) -> None:
        self.store.clean()

    @invariant()
    def every_chunk_held_reads_back_and_no_other_is_held(self) -> None:
        assert list(self.store.ids()) == sorted(self.model)
        for cid, data in self.model.items():
            assert self.store.read(cid) == data and self.store.size(cid) == len(data)
        assert self.store.missing([*self.model, chunk_id(b"never")]) == [chunk_id(b"never")]

    @invariant()
    def the_packs_take_at_most_four_thirds_of_the_live_records(self) -> None:
        live = sum(HEADER.size + len(data) for cid, data in self.model.items()
                   if cid not in self.legacy)
        assert 3 * self.store.disk_bytes() <= 4 * live

    def teardown(self) -> None:
        self.store._packs.close()
        chunks._shared.pop(os.path.realpath(self.folder), None)
        shutil.rmtree(self.root, ignore_errors=True)


ChunkStoreMachine.TestCase.settings = settings(max_examples=60, stateful_step_count=25,
                                               deadline=None)
test_chunk_store = ChunkStoreMachine.TestCase
