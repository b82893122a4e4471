"""The attached files' chunks in a backup (app/backup.py): written from this computer's chunk
store, read back into a new one, each checked against its id.

Chunks go into the zip in groups: entries `chunks/000000`, `chunks/000001`, ... each at most
about GROUP_BYTES, stored uncompressed (ciphertext does not compress), each a run of records
(the chunk's 32-byte id, its length as 4 bytes big-endian, its bytes). Groups rather than an
entry per chunk, because a zip's directory is read into memory whole: a 100 GB store is
~1,600 entries, not ~400,000.

Writing reads the store through its own API (`ids`, `read`: packs and the layout before them
alike), one chunk at a time, and keeps only chunks whose bytes hash to their id: one removed
meanwhile (a Node runs) is skipped, as is one damaged on this disk; what the replica names but
the backup lacks, peers serve. Reading bounds everything before a byte is written: the groups'
number and declared sizes (stored, so the declared size is the size on disk), each record's
length (MAX_CHUNK at most), the totals the manifest states, and the free space of the target;
every chunk then goes through the store's checked `put`."""

from __future__ import annotations

import shutil
import struct
import time
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from core.attachments import MAX_CHUNK, AttachmentError, chunk_id
from storage import Replica
from storage.chunks import BadChunk, ChunkStore

from .errors import WorkspaceError
from .units import size_label

PREFIX = "chunks/"
RECORD = struct.Struct(">32sI")  # the chunk's id, its length
GROUP_BYTES = 64 << 20  # a group is closed once past this
MAX_GROUP = GROUP_BYTES + RECORD.size + MAX_CHUNK
MAX_GROUPS = 100_000  # 6 TB of chunks
MAX_ENTRIES = MAX_GROUPS + 16  # the groups, the manifest, the keys, the replica, the settings
MAX_DIRECTORY = MAX_ENTRIES * 256  # bytes of the zip's central directory


@dataclass(frozen=True)
class Held:
    """The chunks a backup holds: how many, and their bytes."""

    count: int
    bytes: int


def group_name(n: int) -> str:
    return f"{PREFIX}{n:06d}"


def write_chunks(zf: zipfile.ZipFile, folder: Path,
                 progress: Callable[[int, int], None] | None = None) -> Held:
    """Every chunk the store at `folder` holds, into `zf` in groups; what was written.
    `progress(done, total)` after each chunk looked at."""
    if not folder.is_dir():
        return Held(0, 0)
    store = ChunkStore(folder)
    ids = list(store.ids())
    count = total = groups = size = 0
    out = None
    try:
        for n, cid in enumerate(ids):
            data = store.read(cid)
            if data is not None and len(data) <= MAX_CHUNK and chunk_id(data) == cid:
                if out is None:
                    if groups == MAX_GROUPS:
                        raise WorkspaceError(
                            f"this computer holds more than {size_label(MAX_GROUPS * GROUP_BYTES)} "
                            "of files; back up with --without-files")
                    info = zipfile.ZipInfo(group_name(groups), time.localtime()[:6])
                    info.compress_type = zipfile.ZIP_STORED
                    info.external_attr = 0o600 << 16
                    out, groups, size = zf.open(info, "w"), groups + 1, 0
                out.write(RECORD.pack(cid, len(data)))
                out.write(data)
                count, total, size = count + 1, total + len(data), size + RECORD.size + len(data)
                if size > GROUP_BYTES:
                    out.close()
                    out = None
            # else removed meanwhile, or damaged on this disk: peers serve it
            if progress is not None:
                progress(n + 1, len(ids))
    finally:
        if out is not None:
            out.close()
    return Held(count, total)


def check_directory(path: Path) -> None:
    """Refuse a zip whose central directory is larger than a backup's can be, before zipfile
    reads it into memory whole (a backup is written with no zip comment: its end record is the
    file's last 22 bytes, and when it has more than 65,534 entries, the zip64 end record's
    locator is just before)."""
    try:
        with open(path, "rb") as f:
            end = f.seek(0, 2)
            if end < 22:
                raise WorkspaceError(f"{path} is not a Hearth backup (not a zip file)")
            f.seek(end - 22)
            record = f.read(22)
            if record[:4] != b"PK\x05\x06":
                raise WorkspaceError(f"{path} is not a Hearth backup (not a zip file it wrote)")
            entries = int.from_bytes(record[10:12], "little")
            size = int.from_bytes(record[12:16], "little")
            if (entries == 0xFFFF or size == 0xFFFFFFFF) and end >= 42 + 56:
                f.seek(end - 42)
                locator = f.read(20)
                if locator[:4] == b"PK\x06\x07":
                    f.seek(int.from_bytes(locator[8:16], "little"))
                    record = f.read(56)
                    if record[:4] == b"PK\x06\x06":
                        entries = int.from_bytes(record[32:40], "little")
                        size = int.from_bytes(record[40:48], "little")
    except OSError as exc:
        raise WorkspaceError(f"cannot read {path}: {exc.strerror or exc}") from None
    if entries > MAX_ENTRIES or size > MAX_DIRECTORY:
        raise WorkspaceError(f"{path} is not a Hearth backup (its zip directory declares "
                             f"{entries} entries in {size} bytes)")


def check_groups(zf: zipfile.ZipFile, held: Held) -> list[zipfile.ZipInfo]:
    """The backup's groups of chunks, once their names, number and declared sizes agree with
    what the manifest says it holds (`held`); WorkspaceError when they do not."""
    groups = [i for i in zf.infolist() if i.filename.startswith(PREFIX)]
    if [i.filename for i in groups] != [group_name(n) for n in range(len(groups))]:
        raise WorkspaceError("the backup's files are damaged (their entries are not in order)")
    for info in groups:
        if info.compress_type != zipfile.ZIP_STORED or info.file_size != info.compress_size \
                or not 0 < info.file_size <= MAX_GROUP:
            raise WorkspaceError(f"the backup's files are damaged ({info.filename} is "
                                 f"{info.file_size} bytes, {info.compress_size} stored)")
    declared = sum(i.file_size for i in groups)
    if declared != held.bytes + held.count * RECORD.size:
        raise WorkspaceError(f"the backup's files are damaged (its manifest says {held.count} "
                             f"chunks of {held.bytes} bytes; its entries hold {declared})")
    return groups


def check_space(folder: Path, needed: int) -> None:
    """Refuse to restore what the disk under `folder` (or its nearest existing parent) has
    no room for."""
    at = folder
    while not at.exists() and at != at.parent:
        at = at.parent
    free = shutil.disk_usage(at).free
    if needed > free:
        raise WorkspaceError(f"the backup needs {size_label(needed)}; {at} has "
                             f"{size_label(free)} free")


def restore_chunks(zf: zipfile.ZipFile, groups: list[zipfile.ZipInfo], folder: Path,
                   held: Held) -> Held:
    """Put the chunks of `groups` into a new store at `folder`, each through its checked put;
    WorkspaceError at the first damaged, truncated or oversized one (the caller throws the
    folder away). Its idle writers are let go before it returns, so the folder can move."""
    store = ChunkStore(folder)
    count = total = 0
    try:
        for info in groups:
            try:
                with zf.open(info) as f:
                    left = info.file_size
                    while left:
                        head = f.read(RECORD.size)
                        if len(head) < RECORD.size:
                            raise _damaged(info, "a chunk is cut short")
                        cid, length = RECORD.unpack(head)
                        if not 0 < length <= min(MAX_CHUNK, left - RECORD.size):
                            raise _damaged(info, f"a chunk claims {length} bytes")
                        data = f.read(length)
                        if len(data) != length:
                            raise _damaged(info, "a chunk is cut short")
                        try:
                            store.put(cid, data)
                        except BadChunk:
                            raise _damaged(info, f"chunk {cid.hex()[:16]}… does not hash to "
                                           "its id") from None
                        left -= RECORD.size + length
                        count, total = count + 1, total + length
                    if f.read(1):  # the entry is longer than declared (its CRC is checked too)
                        raise _damaged(info, "it is longer than it says")
            except (zipfile.BadZipFile, EOFError, ValueError, RuntimeError,
                    NotImplementedError) as exc:
                raise _damaged(info, str(exc)) from None
    finally:
        store.close()
    if (count, total) != (held.count, held.bytes):
        raise WorkspaceError(f"the backup's files are damaged (its manifest says {held.count} "
                             f"chunks of {held.bytes} bytes; it holds {count} of {total})")
    return Held(count, total)


def _damaged(info: zipfile.ZipInfo, why: str) -> WorkspaceError:
    return WorkspaceError(f"the backup's files are damaged ({info.filename}: {why[:120]}); "
                          "nothing was restored")


def settle_files(replica_path: Path) -> int:
    """Mark the files the replica at `replica_path` calls complete, but whose chunks are not
    all in the store beside it, as not complete: the Node then fetches them from peers, and
    the window shows them as not here. How many."""
    replica = Replica(replica_path)
    store = replica.chunks
    try:
        missing = []
        for state in replica.files.all():
            if not state.complete:
                continue
            try:
                ids = replica.files.chunk_ids(state.list, state.size)
            except AttachmentError:
                ids = None
            if ids is None or store.missing([state.list, *ids]):
                missing.append(state.list)
        for list_id in missing:
            replica.files.set(list_id, complete=0)
        return len(missing)
    finally:
        store.close()
        replica.close()
