"""The chunks of attached files, in a content-addressed store beside the replica
(docs/ARCHITECTURE.md "Attachments"; the packs themselves: storage/_chunk_packs.py).

Layout of the `chunks` folder:
- `packs/<16 hex>.pack`: chunks appended one after another, each after a 40-byte header
  naming its id and length; a writer thread appends to a pack of its own (PACK_BYTES at most),
  so two threads store at once, and a file is created once per 64 MiB rather than per chunk
  (creating one cost more than hashing the chunk: issue #34).
- `index.db`: SQLite in WAL mode, a chunk's id -> (pack, offset, length). Where it is lost
  (deleted), it is made again from the packs' records whose bytes hash to their id (chunks
  removed but not yet compacted away come back: no file names them; they cost only space).
- `ab/abcdef…`: the layout before packs, a file per chunk. Such chunks are still read, listed,
  measured and removed where they are; new chunks go only to packs.

A chunk is stored only when its bytes hash to its id (`put` checks, unless `checked`), and it
is found only whole: its record is written before it is indexed, so a crash or a full disk
(OSError) leaves at most dead bytes at a pack's tail, which nothing names and `clean` cuts;
what was stored before stays intact. The packs are not fsynced (nor were the files of a chunk
each), and the index is SQLite's synchronous=NORMAL: after a power cut a named record may have
lost its bytes; a read finds nothing where the record's header is wrong, and a chunk's bytes
are checked where they are used (AEAD when a file is saved or opened, the hash at the peer it
is sent to). Reads (serving peers and relays, opening files) run beside writes in any thread,
with pread on a descriptor of their own. `remove` drops chunks from the index and gives their
space back at once where it can, in the caller's thread: a pack left with no chunk is deleted,
one more than a quarter dead is compacted (its live chunks, at most 48 MiB, copied into
another pack, then it is deleted); a pack a writer still appends to is left until it is let
go (at its size, or at `clean`).

Another process may open the same folder while a Node runs (the command line beside the
window): SQLite's locks keep the index whole between them, and a pack is appended to only by
the writer holding its flock, so nobody else cuts, compacts or deletes it meanwhile. The
replica records which files are complete, pinned or recently opened (storage/_files.py);
this folder holds only bytes."""

from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections.abc import Iterable, Iterator
from pathlib import Path

from core.attachments import ID_SIZE, MAX_CHUNK, chunk_id

from ._chunk_packs import PACK_BYTES, Packs
from .errors import StorageError

# A temporary file of the layout before packs older than this is no write in progress, so
# another process opening the folder beside a running Node of an older version never takes one
# of its writes.
STALE_TMP_S = 60.0

# One Packs a folder in this process, shared by every ChunkStore on it (`Replica.chunks` makes
# one each time), so their writers and connections are shared too.
_shared: weakref.WeakValueDictionary[str, Packs] = weakref.WeakValueDictionary()
_shared_lock = threading.Lock()


class BadChunk(StorageError):
    """Bytes that are not the chunk they were offered as."""


class ChunkStore:
    def __init__(self, folder: Path, *, pack_bytes: int = PACK_BYTES):
        self.folder = Path(folder)
        self._root = os.fspath(self.folder)
        key = os.path.realpath(self._root)
        with _shared_lock:
            packs = _shared.get(key)
            if packs is None or packs.stale():  # stale: the folder was deleted and made again
                packs = _shared[key] = Packs(key, pack_bytes)
        self._packs = packs
        self._legacy = _has_legacy(self._root)

    def _file(self, cid: bytes) -> str:
        """Where the layout before packs keeps a chunk."""
        if len(cid) != ID_SIZE:
            raise BadChunk("a chunk id is 32 bytes")
        name = cid.hex()
        return os.path.join(self._root, name[:2], name)

    def has(self, cid: bytes) -> bool:
        if self._packs.place(cid) is not None:
            return True
        return self._legacy and os.path.isfile(self._file(cid))

    def missing(self, cids: Iterable[bytes]) -> list[bytes]:
        """Those of `cids` not held here, in order, each once."""
        wanted = list(dict.fromkeys(cids))
        held = self._packs.held(wanted)
        return [cid for cid in wanted
                if cid not in held and not (self._legacy and os.path.isfile(self._file(cid)))]

    def read(self, cid: bytes) -> bytes | None:
        if len(cid) != ID_SIZE:
            raise BadChunk("a chunk id is 32 bytes")
        data = self._packs.read(cid)
        if data is None and self._legacy:
            try:
                with open(self._file(cid), "rb") as f:
                    return f.read(MAX_CHUNK + 1)
            except FileNotFoundError:
                pass
        return data

    def put(self, cid: bytes, data: bytes | memoryview, *, checked: bool = False) -> bool:
        """Store a chunk; False when it was here already. BadChunk unless `data` hashes to
        `cid` (`checked`: the caller has just hashed these very bytes, as a sync session does
        with every chunk it receives, so they are not hashed twice); OSError (a full disk)
        leaves nothing half-written."""
        if len(cid) != ID_SIZE:
            raise BadChunk("a chunk id is 32 bytes")
        if len(data) > MAX_CHUNK or not checked and chunk_id(data) != cid:
            raise BadChunk("the chunk's bytes do not hash to its id")
        if self._legacy and os.path.isfile(self._file(cid)):
            return False
        return self._packs.put(cid, data)

    def remove(self, cids: Iterable[bytes]) -> int:
        """Forget these chunks; the bytes freed (their packs' space is given back at once
        where no writer holds it: see the module's docstring)."""
        wanted = list(dict.fromkeys(cids))
        freed, packs = self._packs.remove(wanted)
        if packs:
            self._packs.reclaim(packs)
        if self._legacy:
            for cid in wanted:
                path = self._file(cid)
                try:
                    size = os.stat(path).st_size
                    os.unlink(path)
                    freed += size
                except FileNotFoundError:
                    pass
        return freed

    def size(self, cid: bytes) -> int:
        place = self._packs.place(cid)
        if place is not None:
            return place[2]
        if self._legacy:
            try:
                return os.stat(self._file(cid)).st_size
            except FileNotFoundError:
                pass
        return 0

    def ids(self) -> Iterator[bytes]:
        """Every chunk held, in order (for audits and tests)."""
        packed = list(self._packs.ids())
        if not self._legacy:
            yield from packed
            return
        yield from sorted({*packed, *_legacy_ids(self.folder)})

    def close(self) -> None:
        """Let this folder's idle writers go, their packs sealed, and close this thread's
        connection to its index (opened again when used), so the folder can be moved whole
        (a restore moves the one it filled; a connection closed after would leave its WAL)."""
        self._packs.close()

    def disk_bytes(self) -> int:
        """The bytes the packs take on disk (audits and tests)."""
        return self._packs.disk_bytes()

    def clean(self) -> None:
        """Give back what a crash or removals left (the workspace does when it opens the
        store): dead pack tails are cut, empty packs deleted, mostly dead ones compacted, this
        process's idle writers' packs let go; temporary files no write can still be using (an
        index half built, the layout before packs' `tmp/`) and that layout's emptied folders
        go."""
        self._packs.reclaim()
        if self._legacy:  # folders of the layout before packs, once emptied, go
            for sub in self.folder.iterdir():
                if len(sub.name) == 2 and sub.is_dir():
                    with contextlib.suppress(OSError):
                        sub.rmdir()
        tmp = self.folder / "tmp"
        stale = time.time() - STALE_TMP_S
        left = [*self.folder.glob("index.db.*.new")]  # an index a crash left half built
        for entry in [*left, *(tmp.iterdir() if tmp.is_dir() else ())]:
            try:
                if entry.stat().st_mtime < stale:
                    entry.unlink(missing_ok=True)
            except OSError:
                continue


def _has_legacy(root: str) -> bool:
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return False
    return any(len(name) == 2 and os.path.isdir(os.path.join(root, name)) for name in names)


def _legacy_ids(folder: Path) -> Iterator[bytes]:
    for sub in sorted(folder.iterdir()):
        if len(sub.name) == 2 and sub.is_dir():
            for entry in sorted(sub.iterdir()):
                if len(entry.name) == 2 * ID_SIZE:
                    yield bytes.fromhex(entry.name)
