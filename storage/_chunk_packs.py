"""The pack files under the chunk store (storage/chunks.py): chunks appended to `packs/*.pack`,
found through `index.db`.

- A pack is a run of records, each a 40-byte header (MAGIC, the chunk's id, its length) and
  the chunk's bytes. A pack is appended to by one writer only, which holds an exclusive
  flock on it while it does and never writes it again once it lets go (at PACK_BYTES, or
  when a removal wants its space): a pack nobody holds is sealed.
- `index.db` (SQLite in WAL) maps a chunk's id to (pack, offset, length). A record is written
  first and indexed after, so an indexed record is whole; a record a crash or a full disk left
  unindexed is dead bytes at its pack's tail, cut by `reclaim`. A lost index is made again
  from the record headers (`_make_index`; each record's bytes hashed against its id), under
  another name and linked into place whole.
  SQLite's own locks keep the index whole between threads and processes; this process's
  index writes take one lock of its own first, since SQLite's busy handler sleeps for a
  millisecond or more.
- A read looks the chunk up, then reads its record and checks the header names that chunk at
  that length; when the record moved (compaction) or its pack went, it looks again.
- Space: removing drops index rows. A sealed pack with no live record is deleted; one whose
  dead bytes pass 1/DEAD_SHARE of it is compacted: its live records are appended to a writer's
  pack and their rows moved (each only if still there), then it is deleted. A reader that
  found the old place either reads it (a deleted file stays readable through an open
  descriptor) or, its file gone, looks again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import secrets
import sqlite3
import struct
import threading
from collections.abc import Iterable, Iterator, Sequence

from core.attachments import MAX_CHUNK, chunk_id

from ._sql import chunks, placeholders

log = logging.getLogger(__name__)

MAGIC = b"hck1"
HEADER = struct.Struct(">4s32sI")  # MAGIC, chunk id, length
PACK_BYTES = 64 << 20  # a writer lets its pack go past this size
DEAD_SHARE = 4  # a sealed pack more than 1/DEAD_SHARE dead is compacted
SUFFIX = ".pack"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS chunks (
    id BLOB PRIMARY KEY, pack INTEGER NOT NULL, off INTEGER NOT NULL, len INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_by_pack ON chunks (pack, off);
"""


def pack_name(pack: int) -> str:
    return f"{pack:016x}{SUFFIX}"


class _Writer:
    """A new pack, locked, that one put at a time appends to."""

    def __init__(self, folder: str):
        os.makedirs(folder, exist_ok=True)
        while True:
            pack = secrets.randbits(62) or 1
            path = os.path.join(folder, pack_name(pack))
            try:
                fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
            except FileExistsError:
                continue
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # another process cleaning took it as a stray file
                os.close(fd)
                continue
            if os.fstat(fd).st_nlink == 0:  # ... and deleted it before we locked it
                os.close(fd)
                continue
            break
        self.pack, self.fd, self.end = pack, fd, 0

    def append(self, cid: bytes, data: bytes | memoryview) -> int:
        """Write a record at the end; its offset. OSError leaves the pack as it was (or, when
        even cutting fails, the writer closed: its tail is dead and cut later)."""
        start = self.end
        parts = [memoryview(HEADER.pack(MAGIC, cid, len(data))), memoryview(data)]
        try:
            offset = start
            while parts:
                n = os.pwritev(self.fd, parts, offset)
                if n == 0:
                    raise OSError(errno.ENOSPC, "no space left on the device")
                offset += n
                while parts and n >= len(parts[0]):
                    n -= len(parts.pop(0))
                if parts and n:
                    parts[0] = parts[0][n:]
        except BaseException:
            self.cut(start)
            raise
        self.end = offset
        return start

    def cut(self, end: int) -> None:
        try:
            os.ftruncate(self.fd, end)
            self.end = end
        except OSError:
            self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)  # the lock goes with it: the pack is sealed
            self.fd = -1

    def __del__(self) -> None:
        self.close()


class Packs:
    """One chunk folder's packs and index, shared by every ChunkStore of this process on it
    (storage/chunks.py keeps one per folder) and used from any thread."""

    def __init__(self, folder: str, pack_bytes: int = PACK_BYTES):
        self.folder = folder
        self.dir = os.path.join(folder, "packs")
        self.db = os.path.join(folder, "index.db")
        self.pack_bytes = pack_bytes
        self._local = threading.local()
        self._index_lock = threading.Lock()
        self._writers_lock = threading.Lock()
        self._idle: list[_Writer] = []
        self._inode: int | None = None  # index.db's, once opened

    def stale(self) -> bool:
        """Whether the index this opened was deleted (its folder deleted, maybe made again)."""
        if self._inode is None:
            return False
        try:
            return os.stat(self.db).st_ino != self._inode
        except FileNotFoundError:
            return True

    # The index ------------------------------------------------------------------------------

    def _conn(self, create: bool = False) -> sqlite3.Connection | None:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None:
            return conn
        if not os.path.exists(self.db):
            if not create and not pack_ids(self.dir):
                return None
            with _as_os_error():
                self._make_index()
        conn = sqlite3.connect(self.db, timeout=60, isolation_level=None)
        with _as_os_error():
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            with self._index_lock:
                conn.executescript(_SCHEMA)
        if self._inode is None:
            self._inode = os.stat(self.db).st_ino
        self._local.conn = conn
        return conn

    def _make_index(self) -> None:
        """Make index.db whole before anyone sees it: built under another name, from the packs'
        own record headers when there are packs (the index was lost), then linked into place
        unless another thread or process did first."""
        os.makedirs(self.folder, exist_ok=True)
        tmp = f"{self.db}.{secrets.token_hex(6)}.new"
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
        try:
            conn = sqlite3.connect(tmp, isolation_level=None)
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.executescript(_SCHEMA)
                conn.execute("BEGIN")
                for pack in sorted(pack_ids(self.dir)):
                    with contextlib.suppress(FileNotFoundError):
                        for cid, off, length in _records(os.path.join(self.dir, pack_name(pack))):
                            conn.execute("INSERT OR IGNORE INTO chunks VALUES (?, ?, ?, ?)",
                                         (cid, pack, off, length))
                conn.execute("COMMIT")
            finally:
                conn.close()
            with contextlib.suppress(FileExistsError):
                os.link(tmp, self.db)
        finally:
            os.unlink(tmp)

    def place(self, cid: bytes) -> tuple[int, int, int] | None:
        conn = self._conn()
        if conn is None:
            return None
        return conn.execute("SELECT pack, off, len FROM chunks WHERE id = ?", (cid,)).fetchone()

    def held(self, cids: Sequence[bytes]) -> set[bytes]:
        conn = self._conn()
        found: set[bytes] = set()
        if conn is None:
            return found
        for part in chunks(cids):
            found.update(row[0] for row in conn.execute(
                f"SELECT id FROM chunks WHERE id IN ({placeholders(len(part))})", part))
        return found

    def ids(self) -> Iterator[bytes]:
        conn = self._conn()
        if conn is not None:
            yield from (row[0] for row in conn.execute("SELECT id FROM chunks ORDER BY id"))

    # Reading and writing ----------------------------------------------------------------------

    def read(self, cid: bytes) -> bytes | None:
        for _ in range(3):  # a compaction may move it between the look-up and the read
            place = self.place(cid)
            if place is None:
                return None
            data = self._read_at(cid, *place)
            if data is not None:
                return data
        return None

    def _read_at(self, cid: bytes, pack: int, off: int, length: int) -> bytes | None:
        try:
            fd = os.open(os.path.join(self.dir, pack_name(pack)), os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            return _record(fd, cid, off, length)
        finally:
            os.close(fd)

    def put(self, cid: bytes, data: bytes | memoryview) -> bool:
        """Append and index a chunk; False when it is indexed already."""
        conn = self._conn(create=True)
        assert conn is not None
        if self.place(cid) is not None:
            return False
        writer = self._take()
        try:
            start = writer.append(cid, data)
            try:
                with self._index_lock, _as_os_error():
                    stored = conn.execute("INSERT OR IGNORE INTO chunks VALUES (?, ?, ?, ?)",
                                          (cid, writer.pack, start, len(data))).rowcount == 1
            except BaseException:
                writer.cut(start)
                raise
            if not stored:  # another thread stored it meanwhile
                writer.cut(start)
            return stored
        finally:
            self._give_back(writer)

    def _take(self) -> _Writer:
        with self._writers_lock:
            writer = self._idle.pop() if self._idle else None
        if writer is not None and os.fstat(writer.fd).st_nlink:
            return writer
        if writer is not None:  # its pack was deleted under it (its folder went)
            writer.close()
        return _Writer(self.dir)

    def _give_back(self, writer: _Writer) -> None:
        if writer.fd < 0 or writer.end >= self.pack_bytes:
            writer.close()
            return
        with self._writers_lock:
            self._idle.append(writer)

    def close(self) -> None:
        """Let every idle writer's pack go (sealed: others may compact it), and close this
        thread's connection to the index (opened again when used)."""
        with self._writers_lock:
            idle, self._idle = self._idle, []
        for writer in idle:
            writer.close()
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            del self._local.conn
            conn.close()

    # Removing and reclaiming space ----------------------------------------------------------

    def remove(self, cids: Iterable[bytes]) -> tuple[int, set[int]]:
        """Drop these chunks from the index: the bytes dropped and the packs they were in."""
        conn = self._conn()
        wanted = list(dict.fromkeys(cids))
        if conn is None or not wanted:
            return 0, set()
        freed, packs = 0, set()
        with self._index_lock, _as_os_error():
            conn.execute("BEGIN IMMEDIATE")
            try:
                for cid in wanted:
                    row = conn.execute("DELETE FROM chunks WHERE id = ? RETURNING pack, len",
                                       (cid,)).fetchone()
                    if row is not None:
                        packs.add(row[0])
                        freed += row[1]
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return freed, packs

    def reclaim(self, packs: Iterable[int] | None = None) -> None:
        """Give back the dead space of these packs (every pack when None) that no writer holds:
        delete the empty, compact the mostly dead, cut dead tails. Packs this process's idle
        writers hold are let go first."""
        if packs is None:
            self.close()
            wanted = pack_ids(self.dir)
        else:
            wanted = set(packs)
            with self._writers_lock:
                mine = [w for w in self._idle if w.pack in wanted]
                self._idle = [w for w in self._idle if w.pack not in wanted]
            for writer in mine:
                writer.close()
        for pack in sorted(wanted):
            try:
                self._reclaim_one(pack)
            except OSError as exc:  # a full disk: the space is reclaimed another time
                log.warning("could not reclaim chunk pack %s: %s", pack_name(pack), exc)

    def _reclaim_one(self, pack: int) -> None:
        path = os.path.join(self.dir, pack_name(pack))
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:  # a writer (here or in another process) appends to it
                return
            if os.fstat(fd).st_nlink == 0:
                return
            conn = self._conn(create=True)
            assert conn is not None
            live, end = conn.execute(
                f"SELECT COALESCE(SUM(len + {HEADER.size}), 0), COALESCE(MAX(off + len), 0) "
                "FROM chunks WHERE pack = ?", (pack,)).fetchone()
            size = os.fstat(fd).st_size
            if live == 0:
                os.unlink(path)
            elif (size - live) * DEAD_SHARE > size:
                self._compact(conn, pack, fd, path)
            elif end + HEADER.size < size:
                os.ftruncate(fd, end + HEADER.size)
        finally:
            os.close(fd)

    def _compact(self, conn: sqlite3.Connection, pack: int, fd: int, path: str) -> None:
        """Copy a locked pack's live records into a writer's pack and move their rows; then
        delete it. A record that does not read back whole is not held: its row goes."""
        rows = conn.execute("SELECT id, off, len FROM chunks WHERE pack = ? ORDER BY off",
                            (pack,)).fetchall()
        for cid, off, length in rows:
            data = _record(fd, cid, off, length)
            if data is None:
                log.warning("chunk %s in %s does not read back; dropped", cid.hex()[:16],
                            pack_name(pack))
                with self._index_lock, _as_os_error():
                    conn.execute("DELETE FROM chunks WHERE id = ? AND pack = ? AND off = ?",
                                 (cid, pack, off))
                continue
            writer = self._take()
            try:
                start = writer.append(cid, data)
                try:
                    with self._index_lock, _as_os_error():
                        moved = conn.execute(
                            "UPDATE chunks SET pack = ?, off = ? WHERE id = ? AND pack = ? "
                            "AND off = ?", (writer.pack, start, cid, pack, off)).rowcount
                except BaseException:
                    writer.cut(start)
                    raise
                if not moved:  # removed meanwhile
                    writer.cut(start)
            finally:
                self._give_back(writer)
        left = conn.execute("SELECT COUNT(*) FROM chunks WHERE pack = ?", (pack,)).fetchone()[0]
        if not left:
            os.unlink(path)

    def disk_bytes(self) -> int:
        """The packs' bytes on disk (tests and audits)."""
        try:
            names = os.listdir(self.dir)
        except FileNotFoundError:
            return 0
        total = 0
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(os.path.join(self.dir, name)).st_size
        return total


def pack_ids(folder: str) -> set[int]:
    try:
        names = os.listdir(folder)
    except FileNotFoundError:
        return set()
    return {int(n[:-len(SUFFIX)], 16) for n in names
            if n.endswith(SUFFIX) and len(n) == 16 + len(SUFFIX)}


def _records(path: str) -> Iterator[tuple[bytes, int, int]]:
    """A pack's chunks (id, offset, length) by their record headers, up to the first record
    that is not whole (a torn tail); a record whose bytes do not hash to its id is left out."""
    with open(path, "rb") as f:
        fd, off = f.fileno(), 0
        size = os.fstat(fd).st_size
        while off + HEADER.size <= size:
            magic, cid, length = HEADER.unpack(os.pread(fd, HEADER.size, off))
            if magic != MAGIC or length > MAX_CHUNK or off + HEADER.size + length > size:
                return
            if chunk_id(os.pread(fd, length, off + HEADER.size)) == cid:
                yield cid, off, length
            off += HEADER.size + length


def _record(fd: int, cid: bytes, off: int, length: int) -> bytes | None:
    """The chunk at `off` when the record there is that chunk, whole."""
    if os.pread(fd, HEADER.size, off) != HEADER.pack(MAGIC, cid, length):
        return None
    data = os.pread(fd, length, off + HEADER.size)
    return data if len(data) == length else None


@contextlib.contextmanager
def _as_os_error() -> Iterator[None]:
    """SQLite's failures as OSError, which callers take for a disk that refused a write."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        full = "full" in str(exc)
        raise OSError(errno.ENOSPC if full else errno.EIO, f"the chunk index: {exc}") from None
