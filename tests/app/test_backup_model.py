"""A computer's files through backups and restores (app/backup.py), as a stateful model: files
are attached, deleted, moved to the chunk layout before packs, or have a chunk damaged on this
disk, in any order, and at any point the computer is backed up (with or without its files) and
restored on a fresh data folder. The promises, after every restore:
- every file intact here when the backup was taken, backed up with its files, opens on the
  restored computer with identical bytes;
- no file is called complete there unless it opens with those bytes (one backed up without its
  files, or whose chunk was damaged here, shows as not here: peers serve it);
- the restored store holds only chunks whose bytes hash to their ids;
- nothing is readable in the backup without the passphrase: it is not a zip, holds no 64-byte
  window of any file's bytes nor the replica's SQLite header, and another passphrase restores
  nothing."""

from __future__ import annotations

import itertools
import os
import tempfile
import zipfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import HealthCheck, note, settings
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, precondition, rule

from app.backup import backup, restore
from app.errors import WorkspaceError
from app.workspace import Workspace
from core.attachments import chunk_id
from storage.chunks import ChunkStore
from tests.support import create_workspace

from .test_backup_files import holds_window

PASS = "model pass phrase"


class BackupModel(RuleBasedStateMachine):
    intact = Bundle("intact")

    def __init__(self) -> None:
        super().__init__()
        self._tmp = tempfile.TemporaryDirectory()
        self.root = Path(self._tmp.name)
        self.paths = create_workspace(self.root / "src")
        with Workspace.open(self.paths) as ws:
            ws.create_channel("general", public=True)
        self.data: dict[bytes, bytes] = {}  # message -> the file's bytes
        self.damaged: set[bytes] = set()
        self.deleted: set[bytes] = set()
        self.runs = itertools.count()
        self.restored = 0

    def teardown(self) -> None:
        self._tmp.cleanup()

    def _chunks(self, ws: Workspace, mid: bytes) -> list[bytes]:
        ref = ws.files.ref(mid, 0)
        return [ref.list, *(ws.files.chunk_ids(ref.list, ref.attachment.size) or ())]

    def _to_legacy(self, cids: list[bytes], change=lambda data: data) -> None:
        """Chunks moved out of the packs into the layout before packs (`change`d on the way)."""
        folder = self.paths.workspace_dir / "chunks"
        store = ChunkStore(folder)
        held = {cid: store.read(cid) for cid in cids}
        store.remove(cids)
        for cid, data in held.items():
            if data is None:
                continue
            (folder / cid.hex()[:2]).mkdir(exist_ok=True)
            (folder / cid.hex()[:2] / cid.hex()).write_bytes(change(data))

    @rule(target=intact, size=st.sampled_from([1, 1000, 262_144, 600_000]))
    def attach(self, size: int) -> bytes:
        path = self.root / f"f{len(self.data)}.bin"
        path.write_bytes(os.urandom(size))
        with Workspace.open(self.paths) as ws:
            mid = ws.files.attach("general", [path]).id
        self.data[mid] = path.read_bytes()
        return mid

    @rule(mid=consumes(intact))
    def delete(self, mid: bytes) -> None:
        with Workspace.open(self.paths) as ws:
            ws.conversation.delete(mid)
        self.deleted.add(mid)

    @rule(mid=intact)
    def move_to_the_old_layout(self, mid: bytes) -> None:
        with Workspace.open(self.paths) as ws:
            cids = self._chunks(ws, mid)
        self._to_legacy(cids)

    @rule(mid=consumes(intact), last=st.booleans())
    def damage_a_chunk(self, mid: bytes, last: bool) -> None:
        with Workspace.open(self.paths) as ws:
            cids = self._chunks(ws, mid)
        self._to_legacy([cids[-1 if last else 0]], lambda data: data[:-1] + bytes([data[-1] ^ 1]))
        self.damaged.add(mid)

    @precondition(lambda self: self.restored < 2)  # each seals and opens keys with argon2id
    @rule(files=st.booleans())
    def back_up_and_restore(self, files: bool) -> None:
        run = next(self.runs)
        self.restored += 1
        out = self.root / f"backup{run}.zip"
        info = backup(self.paths, out, PASS, files=files)
        raw = out.read_bytes()
        assert not zipfile.is_zipfile(out) and b"SQLite format 3" not in raw
        for mid, data in self.data.items():
            assert not holds_window(raw, data), mid.hex()[:8]
        try:
            restore(out, self.root / f"wrong{run}", PASS + "!")
        except WorkspaceError as exc:
            assert str(exc) == "the passphrase does not open this backup"
        else:
            raise AssertionError("another passphrase opened the backup")
        assert not (self.root / f"wrong{run}").exists()
        done = restore(out, self.root / f"restored{run}", PASS)
        note(f"backup {run}: files={files}, {info.chunks} chunks; {done.incomplete} incomplete")
        store = ChunkStore(done.paths.workspace_dir / "chunks")
        for cid in store.ids():
            assert chunk_id(store.read(cid)) == cid
        with Workspace.open(done.paths) as ws:
            complete = {s.list for s in ws.replica.files.all() if s.complete}
            for mid, data in self.data.items():
                if mid in self.deleted:
                    continue
                whole = files and mid not in self.damaged
                listed = ws.files.ref(mid, 0).list
                assert (listed in complete) == whole, (mid.hex()[:8], whole)
                if whole:
                    assert ws.files.open(mid, 0).read_bytes() == data
                else:
                    try:
                        ws.files.open(mid, 0)
                    except WorkspaceError as exc:
                        assert "not complete here" in str(exc)
                    else:
                        raise AssertionError(f"{mid.hex()[:8]} opened without its bytes")


BackupModel.TestCase.settings = settings(
    max_examples=4, stateful_step_count=8, deadline=None,
    suppress_health_check=[HealthCheck.too_slow])
TestBackupModel = BackupModel.TestCase
