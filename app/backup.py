"""Backups of this computer's part of a workspace (`hearth backup`, `hearth restore`, "Back
up now" and the daily backup in Settings, "Your data").

A backup is one zip file: `manifest.json` (what it is, which workspace, when), `replica.sqlite3`
(a consistent snapshot taken with SQLite's online backup, so it is safe while a node writes),
`keys.sealed` (the identity and the workspace secret, sealed under a passphrase the way
`hearth identity export` seals an identity: argon2id, then a SecretBox), and the settings
(`preferences.json`, the workspace's `peers.json`) when there are any. The identity is sealed
by `Identity.export_protected` itself, the secret the same way here. Restoring it into a
fresh data folder gives a computer that syncs on as the same member.
"""

from __future__ import annotations

import json
import os
import sqlite3
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

from core import encoding
from core import passphrase as passphrase_box
from core.identity import Identity, IdentityError

from .activity import record_usage
from .errors import WorkspaceError
from .identity_files import read_secret, write_private
from .paths import Paths

FORMAT = "hearth-backup"
VERSION = 1
MAX_MANIFEST = 64 * 1024
MAX_SEALED = 64 * 1024
MAX_SETTINGS = 4 * 1024 * 1024
SETTINGS = ("preferences.json",)  # in the data folder
WORKSPACE_SETTINGS = ("peers.json",)  # in the workspace's folder


@dataclass(frozen=True)
class BackupInfo:
    workspace: str
    created_ms: int
    replica_bytes: int


def _seal(passphrase: str, data: bytes) -> bytes:
    if not passphrase:
        raise WorkspaceError("a backup needs a passphrase: it holds your keys")
    return encoding.dumps(passphrase_box.seal(data, passphrase))


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


def backup(paths: Paths, out: Path, passphrase: str, *, clock=time.time) -> BackupInfo:
    """Write a backup of the workspace at `paths` to the new file `out`."""
    out = Path(out)
    if out.exists():
        raise WorkspaceError(f"{out} already exists; choose a new file name")
    if not paths.replica.exists():
        raise WorkspaceError(f"no workspace {paths.workspace!r} in {paths.data}")
    identity = Identity.load(paths.identity)
    if not passphrase:
        raise WorkspaceError("a backup needs a passphrase: it holds your keys")
    sealed = encoding.dumps({"identity": identity.export_protected(passphrase),
                             "secret": _seal(passphrase, read_secret(paths))})
    created = int(clock() * 1000)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=".hearth-backup-") as tmp:
        copy = Path(tmp) / "replica.sqlite3"
        snapshot(paths.replica, copy)
        size = copy.stat().st_size
        manifest = {"format": FORMAT, "v": VERSION, "workspace": paths.workspace,
                    "created_ms": created, "replica_bytes": size}
        partial = Path(tmp) / "backup.zip"
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w", zipfile.ZIP_DEFLATED) as zf:
            zf.writestr("manifest.json", json.dumps(manifest))
            zf.writestr("keys.sealed", sealed)
            zf.write(copy, "replica.sqlite3")
            for name in SETTINGS:
                if (paths.data / name).is_file():
                    zf.write(paths.data / name, f"settings/{name}")
            for name in WORKSPACE_SETTINGS:
                if (paths.workspace_dir / name).is_file():
                    zf.write(paths.workspace_dir / name, f"workspace/{name}")
        os.link(partial, out)  # never replaces a file that appeared meanwhile
    record_usage(paths.data, "data_moved", clock=clock, what="backup", messages=0)
    return BackupInfo(paths.workspace, created, size)


def _member(zf: zipfile.ZipFile, name: str, limit: int) -> bytes:
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise WorkspaceError(f"not a Hearth backup (no {name} in it)") from None
    if info.file_size > limit:
        raise WorkspaceError(f"the backup's {name} is too large ({info.file_size} bytes)")
    with zf.open(info) as f:
        return f.read(limit + 1)[:limit]


def read_info(path: Path) -> tuple[zipfile.ZipFile, BackupInfo]:
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
            manifest.get("v") != VERSION or not isinstance(manifest.get("workspace"), str):
        zf.close()
        raise WorkspaceError(f"{path} is not a Hearth backup of a version this one reads")
    return zf, BackupInfo(manifest["workspace"], int(manifest.get("created_ms", 0)),
                          int(manifest.get("replica_bytes", 0)))


def restore(path: Path, data: Path, passphrase: str, *,
            workspace: str | None = None) -> Paths:
    """Restore the backup at `path` into the data folder `data`, which must not hold that
    workspace (nor, when it has one, another identity); returns its paths."""
    zf, info = read_info(Path(path))
    with zf:
        paths = Paths.resolve(data, workspace or info.workspace)
        if paths.workspace_dir.exists():
            raise WorkspaceError(f"{paths.workspace_dir} exists already; restore into a new "
                                 "--data folder (or another --workspace)")
        try:
            keys = encoding.loads(_member(zf, "keys.sealed", MAX_SEALED))
            secret = _open(passphrase, keys["secret"])  # first: its errors name the backup
            identity = Identity.import_protected(keys["identity"], passphrase)
        except IdentityError as exc:
            raise WorkspaceError(f"the backup's keys cannot be opened: {exc}") from None
        except (encoding.EncodingError, KeyError, TypeError):
            raise WorkspaceError("the backup's keys are damaged") from None
        if paths.identity.exists() and Identity.load(paths.identity).public_key != \
                identity.public_key:
            raise WorkspaceError(f"{paths.data} has another identity; restore into a new "
                                 "--data folder")
        paths.workspace_dir.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(dir=paths.workspace_dir.parent, prefix=".restore-"))
        try:
            replica = staging / "replica.sqlite3"
            try:
                with zf.open("replica.sqlite3") as src, open(replica, "wb") as dst:
                    while chunk := src.read(1 << 20):
                        dst.write(chunk)
            except (KeyError, zipfile.BadZipFile, OSError) as exc:
                raise WorkspaceError(f"the backup's replica cannot be read ({exc})") from None
            check = _integrity(replica)
            if check != "ok":
                raise WorkspaceError(f"the backup's replica fails SQLite's integrity check: "
                                     f"{check[:120]}")
            write_private(staging / "secret.key", secret)
            for name in WORKSPACE_SETTINGS:
                if f"workspace/{name}" in zf.namelist():
                    (staging / name).write_bytes(
                        _member(zf, f"workspace/{name}", MAX_SETTINGS))
            staging.rename(paths.workspace_dir)
        except BaseException:
            for p in sorted(staging.rglob("*"), reverse=True):
                p.unlink()
            staging.rmdir()
            raise
        if not paths.identity.exists():
            identity.save(paths.identity)
        for name in SETTINGS:
            target = paths.data / name
            if f"settings/{name}" in zf.namelist() and not target.exists():
                target.write_bytes(_member(zf, f"settings/{name}", MAX_SETTINGS))
    record_usage(paths.data, "data_moved", what="restore", messages=0)  # its settings say
    return paths


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
    """Write today's backup into the daily folder (hearth-WORKSPACE-YYYY-MM-DD.zip; a second
    one the same day gets a suffix) and record when."""
    setting = daily_setting(paths.data)
    if setting.folder is None:
        raise WorkspaceError("the daily backup is off")
    day = time.strftime("%Y-%m-%d", time.localtime(clock()))
    name = f"hearth-{paths.workspace}-{day}"
    out = setting.folder / f"{name}.zip"
    n = 1
    while out.exists():
        n += 1
        out = setting.folder / f"{name}-{n}.zip"
    backup(paths, out, passphrase, clock=clock)
    set_daily(paths.data, setting.folder, int(clock() * 1000))
    return out
