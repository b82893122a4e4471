"""The collector's files: date partitions of JSON lines, and the list of deleted pids.

Layout under the output folder: `date=YYYY-MM-DD/<utc time>-<random>.jsonl` (Spark's partition
naming) and `_deleted_pids.txt` (Spark skips names starting with `_` or `.`, so do our temporary
files). Every change is a temporary file in the same folder, fsynced, then renamed into place, so
a reader or a crash never sees half a file. One collector process per folder: the store is not
safe for concurrent writers, and the collector calls it from a single worker thread.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from ._collector_batch import Accepted, is_pid

log = logging.getLogger(__name__)

DELETED_FILE = "_deleted_pids.txt"
PARTITION_GLOB = "date=*"
_TMP_SUFFIX = ".tmp"


class DeletionListFull(RuntimeError):
    """The deletion list reached its size limit; the collector answers 503."""


class EventStore:
    def __init__(self, root: Path, max_deleted: int):
        self.root = root
        self._max_deleted = max_deleted
        root.mkdir(parents=True, exist_ok=True)
        for pattern in (f".*{_TMP_SUFFIX}", f"{PARTITION_GLOB}/.*{_TMP_SUFFIX}"):
            for stale in root.glob(pattern):  # left by a crash
                stale.unlink(missing_ok=True)
        self._deleted = self._load_deleted()

    @property
    def deleted_pids(self) -> frozenset[str]:
        return frozenset(self._deleted)

    def write(self, events: list[Accepted]) -> tuple[int, int]:
        """Store the events whose pid was not deleted, one new file per day; (written, dropped)."""
        by_day: dict[str, list[str]] = {}
        for event in events:
            if event.pid not in self._deleted:
                by_day.setdefault(event.day, []).append(event.line)
        written = sum(len(lines) for lines in by_day.values())
        name = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(8)}.jsonl"
        staged: list[tuple[Path, Path]] = []
        try:
            for day, lines in sorted(by_day.items()):
                folder = self.root / f"date={day}"
                folder.mkdir(exist_ok=True)
                staged.append((_write_temp(folder, name, lines), folder / name))
        except BaseException:
            for temp, _ in staged:
                temp.unlink(missing_ok=True)
            raise
        # Renames only once every file is safely written: the batch lands whole or not at all.
        for temp, final in staged:
            os.replace(temp, final)
            _fsync_dir(final.parent)
        return written, len(events) - written

    def delete(self, pids: set[str]) -> int:
        """Forget every stored event of these pids and drop later ones; returns how many went."""
        new = pids - self._deleted
        if len(self._deleted) + len(new) > self._max_deleted:
            raise DeletionListFull(f"the deletion list holds {len(self._deleted)} pids already")
        if new:
            # Saved before the scan, so events arriving meanwhile, or after a crash, are dropped.
            self._save_deleted(self._deleted | new)
            self._deleted |= new
        return sum(self._delete_from(path, pids) for path in self.files())

    def files(self) -> list[Path]:
        return sorted(self.root.glob(f"{PARTITION_GLOB}/*.jsonl"))

    def _delete_from(self, path: Path, pids: set[str]) -> int:
        data = path.read_bytes()
        if not any(pid.encode() in data for pid in pids):
            return 0
        lines = data.splitlines()
        keep = [line.decode() for line in lines if _pid_of(line) not in pids]
        if len(keep) == len(lines):
            return 0
        if keep:
            os.replace(_write_temp(path.parent, path.name, keep), path)
        else:
            path.unlink()
        _fsync_dir(path.parent)
        if not keep:
            with contextlib.suppress(OSError):  # not empty: another file is still there
                path.parent.rmdir()
        return len(lines) - len(keep)

    def _load_deleted(self) -> set[str]:
        path = self.root / DELETED_FILE
        try:
            words = path.read_text("ascii", errors="replace").split()
        except FileNotFoundError:
            return set()
        pids = {word for word in words if is_pid(word)}
        if len(pids) != len(set(words)):
            log.warning("ignored %d malformed entries in %s", len(set(words)) - len(pids), path)
        return pids

    def _save_deleted(self, pids: set[str]) -> None:
        os.replace(_write_temp(self.root, DELETED_FILE, sorted(pids)), self.root / DELETED_FILE)
        _fsync_dir(self.root)


def _pid_of(line: bytes) -> str | None:
    try:
        return json.loads(line).get("pid")
    except (ValueError, AttributeError):
        return None


def _write_temp(folder: Path, name: str, lines: Iterable[str]) -> Path:
    temp = folder / f".{name}.{secrets.token_hex(4)}{_TMP_SUFFIX}"
    try:
        with open(temp, "w", encoding="utf-8", newline="\n") as f:
            for line in lines:
                f.write(line)
                f.write("\n")
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    return temp


def _fsync_dir(folder: Path) -> None:
    """Make a rename durable; directories cannot be opened on Windows, where it is skipped."""
    if os.name != "posix":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
