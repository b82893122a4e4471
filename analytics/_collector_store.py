"""The collector's files: date partitions of JSON lines, and the list of deleted pids.

Layout under the output folder: `date=YYYY-MM-DD/<utc time>-<random>.jsonl` (Spark's partition
naming) and `_deleted_pids.txt` (Spark skips names starting with `_` or `.`, so do our temporary
files). Every change is a temporary file in the same folder, fsynced, then renamed into place, so
a reader or a crash never sees half a file. One collector process per folder: the store is not
safe for concurrent writers, and the collector calls it from a single worker thread.

The deletion list (`YYYY-MM-DD <pid>` a line, oldest first) exists so that events of a deleted
pid arriving later (an at-least-once re-send) are dropped. Only pids found stored join it, so a
request naming pids nobody stored changes nothing; an entry is forgotten once its day is older
than any event the collector still accepts, and beyond `max_deleted` entries the oldest go first:
a deletion is never refused because the list is full.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
from collections.abc import Callable, Iterable
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from ._collector_batch import Accepted, is_day, is_pid

log = logging.getLogger(__name__)

DELETED_FILE = "_deleted_pids.txt"
PARTITION_GLOB = "date=*"
_TMP_SUFFIX = ".tmp"
# The pid field of a stored (canonical) line: finds which pids a file holds in one pass.
_PID_FIELD = re.compile(rb'"pid":"([0-9a-f]{32})"')


class EventStore:
    """`today()` is the collector's UTC day; a deleted pid is kept until its day is more than
    `keep_days` before it (when the collector no longer accepts events of that day)."""

    def __init__(self, root: Path, max_deleted: int, *, today: Callable[[], date],
                 keep_days: int):
        self.root = root
        self._max_deleted = max_deleted
        self._today = today
        self._keep_days = keep_days
        self._expired_before: str | None = None
        root.mkdir(parents=True, exist_ok=True)
        for pattern in (f".*{_TMP_SUFFIX}", f"{PARTITION_GLOB}/.*{_TMP_SUFFIX}"):
            for stale in root.glob(pattern):  # left by a crash
                stale.unlink(missing_ok=True)
        self._deleted, clean = self._load_deleted()
        if not self._expire() and not clean:
            self._save_deleted()

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

    def delete(self, by_day: dict[str, set[str]]) -> int:
        """Forget every stored event of these pids, each looked for in its own day's partition,
        and drop their later events; returns how many events went."""
        self._expire()
        plan: list[tuple[Path, set[str]]] = []
        found: dict[str, str] = {}
        for day, pids in sorted(by_day.items()):
            if not is_day(day):
                raise ValueError(f"not a day: {day!r}")
            for path in sorted((self.root / f"date={day}").glob("*.jsonl")):
                here = pids.intersection(
                    pid.decode() for pid in _PID_FIELD.findall(path.read_bytes()))
                if here:
                    plan.append((path, here))
                    found.update(dict.fromkeys(here, day))
        new = {pid: day for pid, day in found.items() if pid not in self._deleted}
        if new:
            # Saved before the files change, so events arriving meanwhile, or after a crash, are
            # dropped; a crash in between leaves the rest for the client's retry.
            self._remember(new)
        return sum(self._delete_from(path, pids) for path, pids in plan)

    def files(self) -> list[Path]:
        return sorted(self.root.glob(f"{PARTITION_GLOB}/*.jsonl"))

    def _delete_from(self, path: Path, pids: set[str]) -> int:
        lines = path.read_bytes().splitlines()
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

    def _remember(self, new: dict[str, str]) -> None:
        self._deleted.update(new)
        extra = len(self._deleted) - self._max_deleted
        if extra > 0:
            for pid in list(self._deleted)[:extra]:
                del self._deleted[pid]
            log.warning("the deletion list is full: forgot its %d oldest pids", extra)
        self._save_deleted()

    def _expire(self) -> bool:
        """Forget deleted pids of days no event can be accepted for any more; True if saved."""
        earliest = (self._today() - timedelta(days=self._keep_days)).isoformat()
        if earliest == self._expired_before:
            return False
        self._expired_before = earliest
        old = [pid for pid, day in self._deleted.items() if day < earliest]
        for pid in old:
            del self._deleted[pid]
        if old:
            self._save_deleted()
        return bool(old)

    def _load_deleted(self) -> tuple[dict[str, str], bool]:
        """The list as saved, oldest first, and whether the file needs no rewriting."""
        path = self.root / DELETED_FILE
        try:
            rows = path.read_text("ascii", errors="replace").splitlines()
        except FileNotFoundError:
            return {}, True
        deleted: dict[str, str] = {}
        bad = legacy = 0
        for row in rows:
            words = row.split()
            if len(words) == 1 and is_pid(words[0]):  # an older collector's list: no day
                legacy += 1
                deleted[words[0]] = self._today().isoformat()  # kept a whole window from now
            elif len(words) == 2 and is_day(words[0]) and is_pid(words[1]):
                deleted[words[1]] = words[0]
            else:
                bad += 1
        if bad:
            log.warning("ignored %d malformed entries in %s", bad, path)
        if len(deleted) > self._max_deleted:
            deleted = dict(list(deleted.items())[-self._max_deleted:])
        return deleted, not bad and not legacy and len(deleted) == len(rows)

    def _save_deleted(self) -> None:
        rows = (f"{day} {pid}" for pid, day in self._deleted.items())
        os.replace(_write_temp(self.root, DELETED_FILE, rows), self.root / DELETED_FILE)
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
