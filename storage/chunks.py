"""The chunks of attached files, in a content-addressed folder beside the replica
(docs/ARCHITECTURE.md "Attachments"): `chunks/ab/abcdef…` holds the chunk whose id is abcdef….

A chunk is stored only when its bytes hash to its id (`put` checks), and it appears under its
name only whole: it is written to a temporary file in the same folder and renamed into place,
so a crash or a full disk leaves either the whole chunk or nothing, and what was stored before
stays intact. Which files are complete, pinned or recently opened is the replica's to record
(storage/_files.py); this folder holds only bytes."""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from core.attachments import ID_SIZE, MAX_CHUNK, chunk_id

from .errors import StorageError

# A temporary file older than this is no write in progress (a chunk is written in far less),
# so another process opening the folder beside a running Node never takes one of its writes.
STALE_TMP_S = 60.0


class BadChunk(StorageError):
    """Bytes that are not the chunk they were offered as."""


class ChunkStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._tmp = self.folder / "tmp"

    def path(self, cid: bytes) -> Path:
        if len(cid) != ID_SIZE:
            raise BadChunk("a chunk id is 32 bytes")
        name = cid.hex()
        return self.folder / name[:2] / name

    def has(self, cid: bytes) -> bool:
        return self.path(cid).is_file()

    def missing(self, cids: Iterable[bytes]) -> list[bytes]:
        """Those of `cids` not held here, in order, each once."""
        seen: set[bytes] = set()
        out = []
        for cid in cids:
            if cid not in seen and not self.has(cid):
                out.append(cid)
            seen.add(cid)
        return out

    def read(self, cid: bytes) -> bytes | None:
        try:
            with open(self.path(cid), "rb") as f:
                return f.read(MAX_CHUNK + 1)
        except FileNotFoundError:
            return None

    def put(self, cid: bytes, data: bytes, *, checked: bool = False) -> bool:
        """Store a chunk; False when it was here already. BadChunk unless `data` hashes to
        `cid` (`checked`: the caller has just hashed these very bytes, as a sync session does
        with every chunk it receives, so they are not hashed twice); OSError (a full disk)
        leaves nothing half-written."""
        if len(data) > MAX_CHUNK or not checked and chunk_id(data) != cid:
            raise BadChunk("the chunk's bytes do not hash to its id")
        target = self.path(cid)
        if target.is_file():
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._tmp, prefix=cid.hex()[:8])
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True

    def remove(self, cids: Iterable[bytes]) -> int:
        """Forget these chunks; the bytes freed."""
        freed = 0
        for cid in cids:
            path = self.path(cid)
            try:
                freed += path.stat().st_size
                path.unlink()
            except FileNotFoundError:
                pass
        return freed

    def size(self, cid: bytes) -> int:
        try:
            return self.path(cid).stat().st_size
        except FileNotFoundError:
            return 0

    def ids(self) -> Iterator[bytes]:
        """Every chunk held (for audits and tests; walks the folder)."""
        if not self.folder.is_dir():
            return
        for sub in sorted(self.folder.iterdir()):
            if len(sub.name) == 2 and sub.is_dir():
                for entry in sorted(sub.iterdir()):
                    if len(entry.name) == 2 * ID_SIZE:
                        yield bytes.fromhex(entry.name)

    def clean(self) -> None:
        """Drop temporary files a crash left behind (the workspace does when it opens the
        store)."""
        if not self._tmp.is_dir():
            return
        stale = time.time() - STALE_TMP_S
        for entry in self._tmp.iterdir():
            try:
                if entry.stat().st_mtime < stale:
                    entry.unlink(missing_ok=True)
            except OSError:
                continue
