"""Backups of this computer's part of a workspace (`hearth backup`, `hearth restore`, "Back
up now" and the daily backup in Settings, "Your data").

A backup is one file sealed whole under a passphrase (VERSION 3, app/backup_seal.py: a small
header saying only that it is a Hearth backup and how the passphrase is stretched, then the
backup's zip through XChaCha20-Poly1305 in parts of 1 MiB, written in one pass as zipfile
writes it). The zip holds `manifest.json` (which workspace, when, and how many chunks of files
and bytes), `replica.sqlite3` (a consistent snapshot taken with SQLite's online backup, so it
is safe while a node writes), `keys.sealed` (the identity and the workspace secret, sealed
again under a second key of the same stretch, so a decrypted zip left by a restore killed
outright does not hold them in the clear), the settings (`preferences.json`, the workspace's
`peers.json`) when there are any, and the attached files' bytes this computer stores: every
chunk of its chunk store, taken after the snapshot (app/backup_chunks.py; `files=False`,
`hearth backup --without-files`, leaves them out).

Restoring it into a fresh data folder gives a computer that syncs on as the same member, with
the files it held: the passphrase is checked against the header before anything is written,
the zip is decrypted into a temporary folder beside the target (it is read by seeking), then
everything is checked and put together there (the replica's integrity, every chunk against
its id) and moved in whole, so a wrong passphrase or a damaged backup leaves the data folder
as it was. A file the replica calls complete whose chunks did not all come back (left out, or
removed while the backup ran) is marked not complete, so the Node fetches it from peers.
Backups of VERSION 1 (no chunks) and 2 (plain zips: only the keys sealed, each on its own
under argon2id) still restore.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import sqlite3
import tempfile
import time
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from core import encoding
from core import passphrase as passphrase_box
from core.identity import Identity, IdentityError
from storage import StorageError

from ._text import counted
from .activity import record_usage
from .backup_chunks import (
    Held,
    check_directory,
    check_groups,
    check_space,
    restore_chunks,
    settle_files,
    write_chunks,
)
from .backup_seal import (
    Keys,
    SealingWriter,
    open_inner_keys,
    open_keys,
    plain_size,
    read_header,
    seal_keys,
    unseal,
)
from .errors import WorkspaceError
from .identity_files import read_secret, write_private
from .paths import Paths
from .units import size_label

FORMAT = "hearth-backup"
VERSION = 3  # 3: sealed whole (app/backup_seal.py); 2: the files' chunks; 1: none
PLAIN = (1, 2)  # the versions written as plain zips (still restored)
MAX_MANIFEST = 64 * 1024
MAX_SEALED = 64 * 1024
MAX_SETTINGS = 4 * 1024 * 1024
MAX_RATIO = 200  # a replica's size / its compressed size, over RATIO_FLOOR (a zip bomb is more)
RATIO_FLOOR = 64 << 20
PACK_RECORD = 40  # what a chunk costs in a pack beyond its bytes (storage/_chunk_packs.py)
SUFFIX = ".hearth-backup"  # a daily backup's (it is no zip: it is sealed whole)
DAILY_KEEP = 7  # daily backups kept in their folder, the newest
SETTINGS = ("preferences.json",)  # in the data folder
WORKSPACE_SETTINGS = ("peers.json",)  # in the workspace's folder


@dataclass(frozen=True)
class BackupInfo:
    workspace: str
    created_ms: int
    replica_bytes: int
    chunks: int = 0  # the attached files' chunks it holds
    chunk_bytes: int = 0
    files: bool = False  # whether it was taken with the files (VERSION 1: never)


@dataclass(frozen=True)
class Restored:
    paths: Paths
    info: BackupInfo
    incomplete: int  # files the replica held whole whose bytes peers will serve again


def backup_summary(info: BackupInfo) -> str:
    """"1.4 MB of replica and 503 MB of files (1930 chunks)", or "... and no files" (taken
    --without-files, or VERSION 1)."""
    files = (f"{size_label(info.chunk_bytes)} of files ({counted(info.chunks, 'chunk')})"
             if info.files else "no files")
    return f"{size_label(info.replica_bytes)} of replica and {files}"


def _open(passphrase: str, sealed: bytes) -> bytes:
    try:
        return passphrase_box.open_sealed(encoding.loads(sealed), passphrase)
    except encoding.EncodingError:
        raise WorkspaceError("the backup's keys are damaged") from None
    except passphrase_box.PassphraseError as exc:
        raise WorkspaceError("the backup's keys are damaged" if exc.damaged
                             else "wrong passphrase, or the backup is damaged") from None


def snapshot(replica: Path, out: Path) -> None:
    """A consistent copy of the replica at `replica` into the new file `out`: SQLite's online
    backup, from a read-only connection of its own (a running node's writes wait for nothing
    and are either all in the copy or not at all)."""
    source = sqlite3.connect(f"{replica.resolve().as_uri()}?mode=ro", uri=True)
    try:
        target = sqlite3.connect(out)
        try:
            source.backup(target)
        finally:
            target.close()
    finally:
        source.close()


def backup(paths: Paths, out: Path, passphrase: str, *, files: bool = True,
           progress: Callable[[int, int], None] | None = None,
           clock=time.time) -> BackupInfo:
    """Write a backup of the workspace at `paths` to the new file `out`, sealed whole under
    `passphrase`: with the attached files' chunks unless `files` is False (`progress(done,
    total)` as they are read). Safe from any thread, and while a Node runs: it reads through
    connections of its own."""
    out = Path(out)
    if out.exists():
        raise WorkspaceError(f"{out} already exists; choose a new file name")
    if not paths.replica.exists():
        raise WorkspaceError(f"no workspace {paths.workspace!r} in {paths.data}")
    identity = Identity.load(paths.identity)
    if not passphrase:
        raise WorkspaceError("a backup needs a passphrase: it holds your keys")
    keys = encoding.dumps({"identity": identity.seed(), "secret": read_secret(paths)})
    created = int(clock() * 1000)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=out.parent, prefix=".hearth-backup-") as tmp:
            copy = Path(tmp) / "replica.sqlite3"
            snapshot(paths.replica, copy)
            size = copy.stat().st_size
            partial = Path(tmp) / "backup"
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                sealing = SealingWriter(f, passphrase)
                with zipfile.ZipFile(sealing, "w", zipfile.ZIP_DEFLATED) as zf:
                    zf.writestr("keys.sealed", seal_keys(sealing.keys, keys))
                    zf.write(copy, "replica.sqlite3")
                    copy.unlink()  # the plaintext replica is not kept beside the backup
                    for name in SETTINGS:
                        if (paths.data / name).is_file():
                            zf.write(paths.data / name, f"settings/{name}")
                    for name in WORKSPACE_SETTINGS:
                        if (paths.workspace_dir / name).is_file():
                            zf.write(paths.workspace_dir / name, f"workspace/{name}")
                    # after the snapshot: what it names and is still stored goes in
                    held = write_chunks(zf, paths.workspace_dir / "chunks", progress) if files \
                        else Held(0, 0)
                    zf.writestr("manifest.json", json.dumps({
                        "format": FORMAT, "v": VERSION, "workspace": paths.workspace,
                        "created_ms": created, "replica_bytes": size, "files": files,
                        "chunks": held.count, "chunk_bytes": held.bytes}))
                sealing.close()
            try:
                os.link(partial, out)  # never replaces a file that appeared meanwhile
            except FileExistsError:
                raise WorkspaceError(f"{out} already exists; choose a new file name") from None
    except OSError as exc:  # a full disk, a folder not writable
        raise WorkspaceError(f"cannot write {out}: {exc.strerror or exc}") from None
    except sqlite3.Error as exc:
        raise WorkspaceError(f"cannot back up the replica: {exc}") from None
    record_usage(paths.data, "data_moved", clock=clock, what="backup", messages=0)
    return BackupInfo(paths.workspace, created, size, held.count, held.bytes, files)


def _member(zf: zipfile.ZipFile, name: str, limit: int) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise WorkspaceError(f"not a Hearth backup (no {name} in it)") from None
    if info.file_size > limit:
        raise WorkspaceError(f"the backup's {name} is too large ({info.file_size} bytes)")
    with zf.open(info) as f:
        return f.read(limit + 1)[:limit]


def read_info(path: Path, versions: tuple[int, ...] = PLAIN) -> tuple[zipfile.ZipFile,
                                                                         BackupInfo]:
    """The backup zip at `path`, open, and what its manifest says (a manifest of a version
    in `versions`: a plain zip is of format 1 or 2, the zip a sealed backup holds of 3)."""
    check_directory(path)
    try:
        zf = zipfile.ZipFile(path)
    except (OSError, zipfile.BadZipFile) as exc:
        raise WorkspaceError(f"{path} is not a Hearth backup ({exc})") from None
    try:
        manifest = json.loads(_member(zf, "manifest.json", MAX_MANIFEST))
    except (ValueError, zipfile.BadZipFile):
        zf.close()
        raise WorkspaceError(f"{path} is not a Hearth backup (its manifest is damaged)") \
            from None
    except WorkspaceError:
        zf.close()
        raise
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT or \
            manifest.get("v") not in versions or not isinstance(manifest.get("workspace"), str):
        zf.close()
        raise WorkspaceError(f"{path} is not a Hearth backup of a version this one reads")
    counts = [manifest.get(name, 0) for name in ("created_ms", "replica_bytes", "chunks",
                                                  "chunk_bytes")]
    if any(type(n) is not int or n < 0 for n in counts):
        zf.close()
        raise WorkspaceError(f"{path} is not a Hearth backup (its manifest is damaged)")
    created, replica, chunks, chunk_bytes = counts
    return zf, BackupInfo(manifest["workspace"], created, replica, chunks, chunk_bytes,
                          files=manifest.get("v") != 1 and manifest.get("files") is True)


def peek(path: Path) -> BackupInfo | None:
    """What the backup at `path` says of itself before its passphrase is given: a sealed one
    (format 3) nothing but that it is one (None); one of format 1 or 2, a plain zip, its
    manifest. WorkspaceError when it is no Hearth backup (or a damaged one)."""
    if read_header(Path(path)) is not None:
        return None
    zf, info = read_info(Path(path))
    zf.close()
    return info


def restore(path: Path, data: Path, passphrase: str, *,
            workspace: str | None = None) -> Restored:
    """Restore the backup at `path` into the data folder `data`, which must not hold that
    workspace (nor, when it has one, another identity). A sealed backup is first decrypted
    into the temporary folder the restore is put together in (zipfile reads by seeking)."""
    path = Path(path)
    header = read_header(path)
    if header is None:  # format 1 or 2: a plain zip, its keys sealed each on its own
        zf, info = read_info(path)
        with zf:
            return _restore(zf, info, data, workspace, lambda k: _plain_keys(k, passphrase))
    keys = open_keys(header, passphrase)  # one argon2id; before anything is written
    target = Paths.resolve(data, workspace)
    if workspace and target.workspace_dir.exists():
        raise WorkspaceError(f"{target.workspace_dir} exists already; restore into a new "
                             "--data folder (or another --workspace)")
    # the zip beside what it unpacks: its chunks are stored, so that is about as much again
    size = plain_size(path)
    check_space(target.workspace_dir, 2 * size + (1 << 20))
    with _staged(target) as staging:
        unsealed = staging / "backup.zip"
        fd = os.open(unsealed, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            unseal(path, header, keys, f)
        zf, info = read_info(unsealed, (VERSION,))
        with zf:
            return _restore(zf, info, data, workspace, lambda k: _inner_keys(keys, k),
                            staging)


def _plain_keys(sealed: bytes, passphrase: str) -> tuple[Identity, bytes]:
    """The identity and the secret of a backup of format 1 or 2 (each sealed on its own)."""
    try:
        keys = encoding.loads(sealed)
        secret = _open(passphrase, keys["secret"])  # first: its errors name the backup
        return Identity.import_protected(keys["identity"], passphrase), secret
    except IdentityError as exc:
        raise WorkspaceError(f"the backup's keys cannot be opened: {exc}") from None
    except (encoding.EncodingError, KeyError, TypeError):
        raise WorkspaceError("the backup's keys are damaged") from None


def _inner_keys(keys: Keys, sealed: bytes) -> tuple[Identity, bytes]:
    """The identity and the secret of a sealed backup (format 3)."""
    try:
        record = encoding.loads(open_inner_keys(keys, sealed))
        seed, secret = record["identity"], record["secret"]
        if not isinstance(seed, bytes) or not isinstance(secret, bytes):
            raise TypeError
        return Identity.from_seed(seed), secret
    except (encoding.EncodingError, KeyError, TypeError, ValueError):
        raise WorkspaceError("the backup's keys are damaged") from None


@contextlib.contextmanager
def _staged(paths: Paths) -> Iterator[Path]:
    """A temporary folder beside the workspace `paths` will have: on any failure it is
    removed, with the folders made for it when left empty, so the data folder is as it was."""
    made = [p for p in (paths.data, paths.workspace_dir.parent) if not p.exists()]
    try:
        paths.workspace_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=paths.workspace_dir.parent, prefix=".restore-"))
    except OSError as exc:
        raise WorkspaceError(f"cannot restore into {paths.data}: {exc.strerror or exc}") \
            from None
    try:
        yield staging
    except BaseException as exc:
        shutil.rmtree(staging, ignore_errors=True)
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, OSError):
            raise WorkspaceError(f"cannot restore into {paths.data}: "
                                 f"{exc.strerror or exc}") from None
        raise


def _restore(zf: zipfile.ZipFile, info: BackupInfo, data: Path, workspace: str | None,
             open_keys: Callable[[bytes], tuple[Identity, bytes]],
             staging: Path | None = None) -> Restored:
    """The restore of the backup zip `zf` (put together in `staging` when given: the sealed
    backup's zip is in it)."""
    paths = Paths.resolve(data, workspace or info.workspace)
    if paths.workspace_dir.exists():
        raise WorkspaceError(f"{paths.workspace_dir} exists already; restore into a new "
                             "--data folder (or another --workspace)")
    identity, secret = open_keys(_member(zf, "keys.sealed", MAX_SEALED))
    if paths.identity.exists() and Identity.load(paths.identity).public_key != \
            identity.public_key:
        raise WorkspaceError(f"{paths.data} has another identity; restore into a new "
                             "--data folder")
    replica_entry = _replica_entry(zf, info)
    groups = check_groups(zf, Held(info.chunks, info.chunk_bytes))
    # with a sealed backup, its zip is in the staging folder already: the free space says so
    check_space(paths.workspace_dir, replica_entry.file_size + info.chunk_bytes
                + info.chunks * PACK_RECORD + (1 << 20))
    with contextlib.nullcontext(staging) if staging else _staged(paths) as folder:
        incomplete = _stage(zf, replica_entry, groups, info, folder)
        write_private(folder / "secret.key", secret)
        for name in WORKSPACE_SETTINGS:
            if f"workspace/{name}" in zf.namelist():
                (folder / name).write_bytes(_member(zf, f"workspace/{name}", MAX_SETTINGS))
        settings = {name: _member(zf, f"settings/{name}", MAX_SETTINGS) for name in SETTINGS
                    if f"settings/{name}" in zf.namelist()}
        (folder / "backup.zip").unlink(missing_ok=True)  # a sealed backup's, now read
        folder.rename(paths.workspace_dir)
    if not paths.identity.exists():
        identity.save(paths.identity)
    for name, content in settings.items():
        if not (paths.data / name).exists():
            (paths.data / name).write_bytes(content)
    record_usage(paths.data, "data_moved", what="restore", messages=0)  # its settings say
    return Restored(paths, info, incomplete)


def _replica_entry(zf: zipfile.ZipFile, info: BackupInfo) -> zipfile.ZipInfo:
    """The replica's entry, once its declared size agrees with the manifest and is no zip
    bomb's."""
    try:
        entry = zf.getinfo("replica.sqlite3")
    except KeyError:
        raise WorkspaceError("not a Hearth backup (no replica.sqlite3 in it)") from None
    if entry.file_size != info.replica_bytes or entry.file_size > RATIO_FLOOR and \
            entry.file_size > MAX_RATIO * max(1, entry.compress_size):
        raise WorkspaceError(f"the backup's replica is damaged (it declares {entry.file_size} "
                             f"bytes in {entry.compress_size}; its manifest says "
                             f"{info.replica_bytes})")
    return entry


def _stage(zf: zipfile.ZipFile, entry: zipfile.ZipInfo, groups: list[zipfile.ZipInfo],
           info: BackupInfo, staging: Path) -> int:
    """The replica and the chunks, checked, into the folder `staging`; how many files the
    replica called complete are not (their chunks did not all come back)."""
    replica = staging / "replica.sqlite3"
    try:
        fd = os.open(replica, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # holds branch keys
        with zf.open(entry) as src, os.fdopen(fd, "wb") as dst:
            while piece := src.read(1 << 20):  # zipfile stops at the declared size
                dst.write(piece)
    except (zipfile.BadZipFile, EOFError, ValueError, RuntimeError, NotImplementedError) as exc:
        raise WorkspaceError(f"the backup's replica cannot be read ({exc})") from None
    check = _integrity(replica)
    if check != "ok":
        raise WorkspaceError(f"the backup's replica fails SQLite's integrity check: "
                             f"{check[:120]}")
    if groups:
        restore_chunks(zf, groups, staging / "chunks", Held(info.chunks, info.chunk_bytes))
    try:
        return settle_files(replica)
    except StorageError as exc:
        raise WorkspaceError(f"the backup's replica cannot be opened: {exc}") from None


def _integrity(path: Path) -> str:
    conn = sqlite3.connect(path)
    try:
        return "; ".join(row[0] for row in conn.execute("PRAGMA integrity_check"))
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()


# The daily backup ("Your data" in Settings) ---------------------------------------------------

DAILY_FILE = "daily-backup.json"  # in the data folder: {"folder": str, "last_ms": int}
DAY_MS = 24 * 3600 * 1000


@dataclass(frozen=True)
class DailyBackup:
    folder: Path | None  # None: off
    last_ms: int  # when the last daily backup was written (0: never)


def daily_setting(data: Path) -> DailyBackup:
    """The daily backup's folder and last run; off when the file is missing or unreadable."""
    try:
        stored = json.loads((Path(data) / DAILY_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return DailyBackup(None, 0)
    if not isinstance(stored, dict) or not isinstance(stored.get("folder"), str):
        return DailyBackup(None, 0)
    last = stored.get("last_ms")
    return DailyBackup(Path(stored["folder"]), last if type(last) is int and last >= 0 else 0)


def set_daily(data: Path, folder: Path | None, last_ms: int | None = None) -> DailyBackup:
    """Turn the daily backup on (into `folder`) or off (None); written atomically."""
    current = daily_setting(data)
    setting = DailyBackup(Path(folder) if folder else None,
                          current.last_ms if last_ms is None else last_ms)
    target = Path(data) / DAILY_FILE
    if setting.folder is None:
        target.unlink(missing_ok=True)
        return setting
    with tempfile.NamedTemporaryFile("w", dir=data, prefix=".daily-", delete=False,
                                     encoding="utf-8") as tmp:
        json.dump({"folder": str(setting.folder), "last_ms": setting.last_ms}, tmp)
    os.replace(tmp.name, target)
    return setting


def daily_due(data: Path, now_ms: int) -> bool:
    setting = daily_setting(data)
    return setting.folder is not None and now_ms - setting.last_ms >= DAY_MS


def run_daily(paths: Paths, passphrase: str, *, clock=time.time) -> Path:
    """Write today's backup into the daily folder (hearth-WORKSPACE-YYYY-MM-DD.hearth-backup;
    a second one the same day gets a suffix), record when, and remove this workspace's daily
    backups there beyond the newest DAILY_KEEP (each holds the files: kept forever they would
    fill the disk)."""
    setting = daily_setting(paths.data)
    if setting.folder is None:
        raise WorkspaceError("the daily backup is off")
    day = time.strftime("%Y-%m-%d", time.localtime(clock()))
    name = f"hearth-{paths.workspace}-{day}"
    out = setting.folder / f"{name}{SUFFIX}"
    n = 1
    while out.exists():
        n += 1
        out = setting.folder / f"{name}-{n}{SUFFIX}"
    backup(paths, out, passphrase, clock=clock)
    set_daily(paths.data, setting.folder, int(clock() * 1000))
    for old in daily_backups(setting.folder, paths.workspace)[DAILY_KEEP:]:
        old.unlink(missing_ok=True)
    return out


def daily_backups(folder: Path, workspace: str) -> list[Path]:
    """The daily backups of `workspace` in `folder`, newest first: only files named as
    run_daily names them (earlier versions' .zip too), never another file of the folder."""
    pattern = re.compile(rf"hearth-{re.escape(workspace)}-(\d{{4}}-\d{{2}}-\d{{2}})(?:-(\d+))?"
                         rf"(?:{re.escape(SUFFIX)}|\.zip)")
    found = []
    for entry in os.scandir(folder):
        match = pattern.fullmatch(entry.name)
        if match and entry.is_file(follow_symlinks=False):
            found.append((match[1], int(match[2] or 1), entry.name))
    return [folder / name for *_, name in sorted(found, reverse=True)]
