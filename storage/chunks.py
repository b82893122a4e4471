"""The chunks of attached files, in a content-addressed folder beside the replica
(docs/ARCHITECTURE.md "Attachments"): `chunks/ab/abcdef…` holds the chunk whose id is abcdef….

A chunk is stored only when its bytes hash to its id (`put` checks), and it appears under its
name only whole: it is written to a file with no name in its own folder (O_TMPFILE) and linked
into place, or where the system has no such files, to a temporary file in `tmp/` renamed into
place, so a crash or a full disk leaves either the whole chunk or nothing, and what was stored
before stays intact. Unnamed files in the chunk's own folder let two threads store chunks at
once: creating a file locks its folder, and on the 2-core machine bench/attachments.py ran on
creating a file cost 0.3 ms, so one shared `tmp/` made every chunk wait for the other's. Which files are complete, pinned or recently opened is the replica's to record
(storage/_files.py); this folder holds only bytes."""

from __future__ import annotations

import errno
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
# Where a file system refuses unnamed files (not Linux, or not ext4/xfs/btrfs/tmpfs...).
_NO_TMPFILE = (errno.EOPNOTSUPP, errno.EISDIR, errno.EINVAL, errno.EXDEV, errno.EPERM)


class BadChunk(StorageError):
    """Bytes that are not the chunk they were offered as."""


class ChunkStore:
    def __init__(self, folder: Path):
        self.folder = Path(folder)
        self._tmp = self.folder / "tmp"
        self._unnamed = hasattr(os, "O_TMPFILE")  # off once the file system refuses one
        self._root = os.fspath(self.folder)

    def path(self, cid: bytes) -> Path:
        return Path(self._file(cid))

    def _file(self, cid: bytes) -> str:
        """`path` as a string: pathlib took longer to build a chunk's path than the system
        took to stat it, and a download stats each chunk to record the file complete."""
        if len(cid) != ID_SIZE:
            raise BadChunk("a chunk id is 32 bytes")
        name = cid.hex()
        return os.path.join(self._root, name[:2], name)

    def has(self, cid: bytes) -> bool:
        return os.path.isfile(self._file(cid))

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
            with open(self._file(cid), "rb") as f:
                return f.read(MAX_CHUNK + 1)
        except FileNotFoundError:
            return None

    def put(self, cid: bytes, data: bytes | memoryview, *, checked: bool = False) -> bool:
        """Store a chunk; False when it was here already. BadChunk unless `data` hashes to
        `cid` (`checked`: the caller has just hashed these very bytes, as a sync session does
        with every chunk it receives, so they are not hashed twice); OSError (a full disk)
        leaves nothing half-written."""
        if len(data) > MAX_CHUNK or not checked and chunk_id(data) != cid:
            raise BadChunk("the chunk's bytes do not hash to its id")
        target = self._file(cid)
        if os.path.isfile(target):
            return False
        stored = self._put_unnamed(target, data) if self._unnamed else None
        if stored is None:
            stored = self._put_renamed(cid, target, data)
        return stored

    def _put_unnamed(self, target: str, data: bytes | memoryview) -> bool | None:
        """Write the chunk to an unnamed file in its folder and link it under its name; None
        when the system cannot (then `_put_renamed`)."""
        folder = os.path.dirname(target)
        try:
            try:
                fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
            except FileNotFoundError:  # its folder is made once (or again, if removed)
                os.makedirs(folder, exist_ok=True)
                fd = os.open(folder, os.O_TMPFILE | os.O_WRONLY, 0o600)
        except OSError as exc:
            if exc.errno not in _NO_TMPFILE:
                raise
            self._unnamed = False
            return None
        try:
            _write_all(fd, data)
            try:
                proc = os.open("/proc/self/fd", os.O_RDONLY | os.O_DIRECTORY)
            except OSError:  # no /proc: this system links no unnamed file
                self._unnamed = False
                return None
            try:
                os.link(str(fd), target, src_dir_fd=proc, follow_symlinks=True)
            except FileExistsError:  # stored meanwhile by another thread
                return False
            except OSError as exc:
                if exc.errno not in (*_NO_TMPFILE, errno.ENOENT):
                    raise
                self._unnamed = False  # a /proc that links nothing
                return None
            finally:
                os.close(proc)
        finally:
            os.close(fd)  # an unnamed file not linked is gone with its last descriptor
        return True

    def _put_renamed(self, cid: bytes, target: str, data: bytes | memoryview) -> bool:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        self._tmp.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self._tmp, prefix=cid.hex()[:8])
        try:
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return True

    def remove(self, cids: Iterable[bytes]) -> int:
        """Forget these chunks; the bytes freed."""
        freed = 0
        for cid in cids:
            path = self._file(cid)
            try:
                freed += os.stat(path).st_size
                os.unlink(path)
            except FileNotFoundError:
                pass
        return freed

    def size(self, cid: bytes) -> int:
        try:
            return os.stat(self._file(cid)).st_size
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


def _write_all(fd: int, data: bytes | memoryview) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
