"""Sharing a workspace: invite codes, joining, one-off syncs and bundle files."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from core.encoding import ID_SIZE, dumps, object_id
from core.objects import MAX_OBJECT_SIZE
from storage import NotFound, Replica, Status

from .joining import invite as invite
from .joining import invite_for as invite_for
from .joining import join_workspace as join_workspace
from .membership import session_secrets
from .paths import Paths
from .workspace import (
    Workspace,
    WorkspaceError,
    read_secret,
)

if TYPE_CHECKING:
    from sync.service import OnceResult


# One-off sync ---------------------------------------------------------------------------------

def sync_once(paths: Paths, host: str, port: int, *, timeout: float = 60.0) -> OnceResult:
    """Reconcile with one peer until a round finds nothing to move; remember the peer.
    Raises SyncFailed (from sync.service) with a one-line reason."""
    from sync.peers import PeerBook
    from sync.service import Interest, SyncService  # here: other commands start without aiohttp

    with Workspace.open(paths) as ws:
        read_secret(paths)  # refused here when missing or readable by others
        newest, older = session_secrets(ws.members)
        service = SyncService(ws.replica, ws.identity, newest, older_secrets=older, mdns=False,
                              peers=PeerBook(paths.workspace_dir / "peers.json"),
                              reconcile_interval=None,
                              interest=Interest(ws.replica.kept.streams()))
        return asyncio.run(service.async_sync_once(host, port, timeout=timeout))


# Bundles --------------------------------------------------------------------------------------
#
# A bundle is one canonical CBOR map, the layout every Hearth version has written and read:
#
#     {"v": 1, "ids": [id, ...], "kind": "hearth/bundle", "objects": [raw, ...], "workspace": id}
#
# (keys in canonical order: by length, then bytes). Neither side ever holds the whole of it.
# Export writes the map piece by piece from one read snapshot (the same bytes as
# `core.encoding.dumps` of the whole map). Import walks the file twice with a strict reader of
# exactly that layout: first to check all of it without keeping anything (framing, shortest
# lengths, the ids against the objects, the workspace, which comes last), then to ingest it in
# batches, each its own transaction. So a damaged, truncated or foreign file is refused before
# anything is stored; a file changed between the two walks is noticed by its hash.

BUNDLE_KIND = "hearth/bundle"
BUNDLE_VERSION = 1
MAX_BUNDLE_BYTES = 1 << 30
IMPORT_BATCH = 5000  # objects per ingest transaction...
IMPORT_BATCH_BYTES = 4 << 20  # ...or fewer when they are large: import's peak memory follows
READ_CHUNK = 1 << 20  # bytes read from a bundle file at a time
# SQLite page cache of the connection an export or import opens for itself (storage's default
# is 64 MiB, for a long-lived node): most of the memory a large import would take otherwise.
BULK_CACHE_KIB = 16 << 10
_KEYS = ("v", "ids", "kind", "objects", "workspace")  # canonical order
_REQUIRED = frozenset({"v", "kind", "objects", "workspace"})
_MAX_TEXT = 64  # longest key or kind text worth reading
_MAX_WORKSPACE_ID = 64  # longest workspace entry worth reading (ids are 32 bytes)
_UINT, _BYTES, _TEXT, _ARRAY, _MAP = 0, 2, 3, 4, 5  # CBOR major types


class BundleError(WorkspaceError):
    """A bundle file `hearth import` refuses or cannot finish; the message says why in one line."""


class _NotBundle(Exception):
    """The file does not start like a Hearth bundle."""


class _Newer(Exception):
    """A bundle of a format version this code does not read."""


class _Bad(Exception):
    """A bundle whose bytes break the layout (truncated, damaged, or a bomb); says what."""


class _Unreadable(Exception):
    """Reading the file failed (OSError); carries the error."""


def export_bundle(paths: Paths, path: Path, *, channel: str | None = None) -> int:
    """Write the workspace's objects (or one channel's, with what they need) to `path`."""
    if path.exists():
        raise WorkspaceError(f"{path} already exists; choose a new file name")
    tmp = path.with_name(path.name + ".tmp")
    with Workspace.open(paths) as ws:
        ws.replica.set_cache_size(BULK_CACHE_KIB)
        try:
            with ws.replica.export(channel) as (count, ids, raws):
                _write_new_file(path, tmp, _bundle_parts(ws.id, count, ids, raws))
        except NotFound as exc:
            raise WorkspaceError(str(exc)) from None
    os.replace(tmp, path)
    return count


def _head(major: int, value: int) -> bytes:
    """A CBOR item head in its shortest (canonical) form."""
    if value < 24:
        return bytes([major << 5 | value])
    for info, size in ((24, 1), (25, 2), (26, 4), (27, 8)):
        if value < 1 << (8 * size):
            return bytes([major << 5 | info]) + value.to_bytes(size, "big")
    raise ValueError(f"{value} does not fit a CBOR head")


def _bundle_parts(workspace: bytes, count: int, ids: Iterable[bytes],
                  raws: Iterable[bytes]) -> Iterator[bytes]:
    """The canonical encoding of the bundle map, in pieces (see "Bundles" above)."""
    def items(values: Iterable[bytes]) -> Iterator[bytes]:
        written = 0
        for value in values:
            written += 1
            yield dumps(value)
        if written != count:
            raise WorkspaceError("the replica changed during the export; try again")

    yield _head(_MAP, len(_KEYS)) + dumps("v") + dumps(BUNDLE_VERSION) \
        + dumps("ids") + _head(_ARRAY, count)
    yield from items(ids)
    yield dumps("kind") + dumps(BUNDLE_KIND) + dumps("objects") + _head(_ARRAY, count)
    yield from items(raws)
    yield dumps("workspace") + dumps(workspace)


def _write_new_file(path: Path, tmp: Path, parts: Iterable[bytes]) -> None:
    """Write `parts` to a new private file `tmp`, flushed to disk; removed if anything fails."""
    try:
        tmp.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0),
                     0o600)
    except FileExistsError:
        raise WorkspaceError(f"{tmp} already exists (left by an interrupted export?); "
                             "remove it or choose another file name") from None
    except OSError as exc:
        raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with open(fd, "wb", buffering=READ_CHUNK) as out:
            for part in parts:
                out.write(part)
            out.flush()
            os.fsync(out.fileno())
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise WorkspaceError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


class _Reader:
    """A bundle file's bytes, read a chunk at a time and hashed as read, never more than
    MAX_BUNDLE_BYTES; item heads are accepted only in their shortest, definite form."""

    def __init__(self, file: BinaryIO):
        self._file = file
        self._buf = b""
        self._pos = 0
        self._base = 0  # file offset of _buf[0]
        self._read_total = 0
        self.hash = hashlib.blake2b(digest_size=32)

    @property
    def offset(self) -> int:
        return self._base + self._pos

    def take(self, n: int) -> bytes:
        end = self._pos + n
        if end > len(self._buf):
            self._fill(n)
            end = n
        data = self._buf[self._pos:end]
        self._pos = end
        return data

    def _fill(self, n: int) -> None:
        """Make at least `n` bytes available at _buf[0:]."""
        self._base += self._pos
        self._buf, self._pos = self._buf[self._pos:], 0
        parts, have = [self._buf], len(self._buf)
        while have < n:
            chunk = self._read()
            if not chunk:
                self._buf, self._pos = b"".join(parts), have
                raise _Bad("truncated: it ends too early")
            parts.append(chunk)
            have += len(chunk)
        self._buf = b"".join(parts)

    def _read(self) -> bytes:
        try:
            chunk = self._file.read(READ_CHUNK)
        except OSError as exc:
            raise _Unreadable(exc) from None
        self._read_total += len(chunk)
        if self._read_total > MAX_BUNDLE_BYTES:  # it grew after it was measured
            raise _Bad(f"it is larger than a bundle may be ({MAX_BUNDLE_BYTES} bytes)")
        self.hash.update(chunk)
        return chunk

    def at_end(self) -> bool:
        if self._pos < len(self._buf):
            return False
        chunk = self._read()
        self._base += len(self._buf)
        self._buf, self._pos = chunk, 0
        return not chunk

    def head(self) -> tuple[int, int]:
        """The next item's major type and argument (a length, a count or an integer)."""
        first = self.take(1)[0]
        major, info = first >> 5, first & 31
        if info < 24:
            return major, info
        if info > 27:
            raise _Bad("an indefinite or reserved length")
        size = 1 << (info - 24)
        value = int.from_bytes(self.take(size), "big")
        if value < (24 if size == 1 else 1 << (4 * size)):
            raise _Bad("a length not in its shortest form")
        return major, value

    def text(self) -> str:
        major, size = self.head()
        if major != _TEXT or size > _MAX_TEXT:
            raise _Bad("a key or kind that is not short text")
        try:
            return self.take(size).decode()
        except UnicodeDecodeError:
            raise _Bad("text that is not UTF-8") from None


@dataclass
class _Summary:
    workspace: bytes
    digest: bytes  # the whole file's hash


def _walk(reader: _Reader, sink: Callable[[bytes], None] | None, *,
          check_ids: bool) -> _Summary:
    """Read a whole bundle, handing each object to `sink`; raise _NotBundle, _Newer or _Bad."""
    try:
        major, entries = reader.head()
        if major != _MAP or reader.text() != "v":
            raise _NotBundle
        major, version = reader.head()
    except _Bad:
        raise _NotBundle from None
    if major != _UINT:
        raise _NotBundle
    if version != BUNDLE_VERSION:
        raise _Newer(version)
    if entries not in (len(_REQUIRED), len(_KEYS)):
        raise _NotBundle
    seen = ["v"]
    id_count, ids, object_ids = None, hashlib.blake2b(), hashlib.blake2b()
    objects, workspace = 0, b""
    for _ in range(entries - 1):
        key = reader.text()
        if key not in _KEYS or _KEYS.index(key) <= _KEYS.index(seen[-1]):
            raise _Bad(f"an unexpected or misplaced key {key!r}")
        seen.append(key)
        if key == "kind":
            if reader.text() != BUNDLE_KIND:
                raise _NotBundle
        elif key == "workspace":
            major, size = reader.head()
            if major != _BYTES or size > _MAX_WORKSPACE_ID:
                raise _Bad("a workspace id that is not a short byte string")
            workspace = reader.take(size)
        else:
            major, count = reader.head()
            if major != _ARRAY:
                raise _Bad(f"{key} is not a list")
            if key == "ids":
                id_count = count
                for _ in range(count):
                    major, size = reader.head()
                    if major != _BYTES or size != ID_SIZE:
                        raise _Bad(f"an id that is not {ID_SIZE} bytes")
                    item = reader.take(size)
                    if check_ids:
                        ids.update(item)
            else:
                objects = count
                for _ in range(count):
                    major, size = reader.head()
                    if major != _BYTES:
                        raise _Bad("an object that is not a byte string")
                    if size > MAX_OBJECT_SIZE:
                        raise _Bad(f"an object of {size} bytes, over {MAX_OBJECT_SIZE}")
                    raw = reader.take(size)
                    if check_ids:
                        object_ids.update(object_id(raw))
                    if sink is not None:
                        sink(raw)
    if "kind" not in seen:
        raise _NotBundle
    missing = _REQUIRED.difference(seen)
    if missing:
        raise _Bad(f"no {sorted(missing)[0]!r} entry")
    if not reader.at_end():
        raise _Bad("bytes after the end of the bundle")
    if check_ids and id_count is not None and (
            id_count != objects or ids.digest() != object_ids.digest()):
        raise _Bad("its objects do not match its list of ids")
    return _Summary(workspace, reader.hash.digest())


@contextlib.contextmanager
def _open_bundle(path: Path) -> Iterator[BinaryIO]:
    """The file, opened without blocking on a pipe; only a regular file of a bundle's size."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise BundleError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
    except OSError as exc:
        os.close(fd)
        raise BundleError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_BUNDLE_BYTES:
        os.close(fd)
        if not stat.S_ISREG(info.st_mode):
            raise BundleError(f"{path} is not a regular file")
        raise BundleError(f"{path} is {info.st_size} bytes, larger than a bundle may be")
    with open(fd, "rb", buffering=0) as file:
        yield file


class _Importer:
    """Ingests the objects handed to it in batches, each batch its own transaction."""

    def __init__(self, replica: Replica):
        self.replica = replica
        self.counts = {status.value: 0 for status in Status}
        self._batch: list[bytes] = []
        self._bytes = 0

    def add(self, raw: bytes) -> None:
        self._batch.append(raw)
        self._bytes += len(raw)
        if len(self._batch) >= IMPORT_BATCH or self._bytes >= IMPORT_BATCH_BYTES:
            self.flush()

    def flush(self) -> None:
        batch, self._batch, self._bytes = self._batch, [], 0
        if batch:
            for result in self.replica.ingest(batch):
                self.counts[result.status.value] += 1


def import_bundle(paths: Paths, path: Path) -> dict[str, int]:
    """Ingest a bundle through the one path of data; returns counts by answer.

    Reads the file twice and never holds more than one batch of it: the first walk checks all
    of it and stores nothing, the second ingests it batch by batch. Raises BundleError (a
    WorkspaceError) for a file that is not a complete bundle of this workspace.
    """
    with _open_bundle(path) as file, Workspace.open(paths) as ws:
        ws.replica.set_cache_size(BULK_CACHE_KIB)
        reader = _Reader(file)
        try:
            checked = _walk(reader, None, check_ids=True)
        except _NotBundle:
            raise BundleError(f"{path} is not a Hearth bundle") from None
        except _Newer as exc:
            raise BundleError(f"{path} is a bundle of version {exc.args[0]}; "
                              "upgrade Hearth to read it") from None
        except _Bad as exc:
            raise BundleError(f"{path} is a damaged Hearth bundle ({exc}, at byte "
                              f"{reader.offset}); nothing was imported") from None
        except _Unreadable as exc:
            raise BundleError(f"cannot read {path}: {_reason(exc)}") from None
        if checked.workspace != ws.id:
            raise BundleError(f"{path} belongs to another workspace")
        try:
            file.seek(0)
        except OSError as exc:
            raise BundleError(f"cannot read {path}: {_reason(exc)}") from None
        importer = _Importer(ws.replica)
        try:
            again = _walk(_Reader(file), importer.add, check_ids=False)
            importer.flush()
        except (_NotBundle, _Newer, _Bad, _Unreadable) as exc:
            # Only a file changed (or failing) after the first walk gets here.
            what = _reason(exc) if isinstance(exc, _Unreadable) else "it changed"
            raise BundleError(f"{path} could not be read to the end ({what}); the "
                              f"{importer.counts['added']} objects added so far are complete; "
                              "importing again adds the rest") from None
        if again.digest != checked.digest:
            raise BundleError(f"{path} changed while it was being imported; "
                              "import it again to be sure of its content")
    return importer.counts


def _reason(exc: BaseException) -> str:
    cause = exc.args[0] if isinstance(exc, _Unreadable) else exc
    return getattr(cause, "strerror", None) or str(cause) or type(cause).__name__
