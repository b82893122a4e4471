"""The opt-in recorder: anonymized, schema-checked events spooled to a local file.

Off until switched on. Every event carries a pseudonymous id that changes every UTC day and an
hour-truncated time; stream ids become keyed hashes that also change every day, so nothing
links one day's events to another's. The pid is the hash of that day's deletion token (see
`analytics.events.pid_of_token`); the settings file (private to the user) keeps the token of
every day analytics was on, because only a token can have the collector delete a pid. Switching
off deletes the spool at once, queues a request carrying those tokens that the collector delete
what it holds of this install, and forgets the install's secret and the tokens' list.

The spool keeps each line with its schema version (`analytics.events`), so the shipper can take
only the versions its collector reads; the others wait, in order, and count towards the spool's
limit. Spools of versions before 2 kept their lines in a table `events`, without versions:
they are moved into `queue` (all of version 1) when the spool is opened. The new name keeps an
older version of the app, run again on the same data folder, away from lines it could not
ship: it makes an `events` table of its own, whose lines move over on the next upgrade. From
version 2 on, every app reads `queue` and ships only the versions its collector names, so an app
of version 2 run on a spool that holds version-3 lines leaves them waiting for a collector that
reads version 3 (or sends them to one): no rename was needed for version 3, nor for versions 4
to 8.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import logging
import os
import secrets
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from .events import EventError, hour, pid_of_token, validate, version_of

log = logging.getLogger(__name__)

SPOOL_MAX_EVENTS = 100_000  # beyond this, the oldest events are dropped
SETTINGS_RECHECK_S = 2.0  # how often a running app notices `hearth analytics enable|disable`
MAX_DELETION_TOKENS = 1000  # days remembered for a deletion request (the newest are kept)

WHAT_IS_COLLECTED = (
    "Collected when on: which features are used (messages sent, edited and replied in threads, "
    "with their length rounded to a bucket; reactions added, without the emoji; channels "
    "joined; document commits, forks, merges and comments, replies and resolves counted as "
    "comments, without what they say; invites made, with their number of uses and lifetime "
    "rounded to a bucket; people let in, by an invite or a personal code, without who; files "
    "attached in channels, with their size rounded to a bucket and their kind, such as image or "
    "document, without their name; private channels made, and whether each is a direct "
    "message, without who is in it; how many channels and documents a computer keeps, rounded "
    "to a bucket, without which; notification settings changed: a level chosen and the kind "
    "of conversation, do not disturb on or scheduled, keyword alerts on or off, without which "
    "conversation, the times or the words; relays named or taken back, without which; Slack "
    "imports, archives, backups and restores, with how many messages rounded to a bucket, "
    "without a file name or anything of the messages), how sync sessions went "
    "(peers, rounds, bytes rounded, duration), how long fetching history took and how many "
    "objects it brought (both rounded to a bucket), how often replicas conflicted and how long "
    "they took to converge, and why objects were refused. Never: what anyone wrote, names, keys or "
    "addresses. The id sent changes every day, and times are rounded to the hour."
)


class AnalyticsError(Exception):
    """A setting that cannot be applied; the message is for a person."""


@dataclass(frozen=True)
class Status:
    enabled: bool
    collector: str | None
    spooled: int
    pending_deletions: int
    folder: Path


def _write_private(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically, readable by the owner only."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)


def check_collector_url(url: str) -> str:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise AnalyticsError(f"collector URL {url!r} must look like http://HOST:PORT")
    return url.rstrip("/")


class Recorder:
    """Records events for one data folder. Thread-safe; `record` never raises."""

    def __init__(self, data_dir: Path, *, clock: Callable[[], float] = time.time):
        self.folder = Path(data_dir) / "analytics"
        self._settings_path = self.folder / "settings.json"
        self._secret_path = self.folder / "install.key"
        self._spool_path = self.folder / "spool.sqlite3"
        self._clock = clock
        self._lock = threading.RLock()
        self._settings: dict = {}
        self._settings_mtime: float | None = None
        self._checked = 0.0
        self._secret: bytes | None = None
        self._spool: sqlite3.Connection | None = None
        self._reload()

    # Settings ----------------------------------------------------------------------------------

    def _reload(self) -> None:
        try:
            mtime = self._settings_path.stat().st_mtime_ns
        except FileNotFoundError:
            mtime = None
        if mtime == self._settings_mtime:
            return
        settings: dict = {}
        if mtime is not None:
            try:
                settings = json.loads(self._settings_path.read_text())
                if not isinstance(settings, dict):
                    raise ValueError("not an object")
            except (OSError, ValueError) as exc:
                log.warning("analytics settings unreadable (%s): analytics stay off", exc)
                settings = {}
        self._settings, self._settings_mtime = settings, mtime
        self._secret = None
        if not settings.get("enabled"):
            self._close_spool()

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._checked >= SETTINGS_RECHECK_S:
            self._checked = now
            self._reload()

    def _save(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(self._settings_path, json.dumps(self._settings, sort_keys=True).encode())
        self._settings_mtime = self._settings_path.stat().st_mtime_ns

    @property
    def enabled(self) -> bool:
        with self._lock:
            self._maybe_reload()
            return bool(self._settings.get("enabled"))

    @property
    def collector(self) -> str | None:
        with self._lock:
            self._maybe_reload()
            return self._settings.get("collector")

    def enable(self, collector: str | None = None) -> None:
        with self._lock:
            self._reload()
            self._settings["enabled"] = True
            if collector:
                self._settings["collector"] = check_collector_url(collector)
            self._save()

    def disable(self) -> None:
        """Stop recording, delete the spool now, and queue the collector's deletion request."""
        with self._lock:
            self._reload()
            # An older version's list of days: its pids had no token, and cannot be deleted.
            self._settings.pop("days", None)
            tokens = self._settings.pop("tokens", None)
            if isinstance(tokens, dict) and tokens:
                request = [[day, token] for day, token in sorted(tokens.items())]
                self._settings.setdefault("deletions", []).append(
                    request[-MAX_DELETION_TOKENS:])
            self._settings["enabled"] = False
            self._close_spool()
            for path in (self._spool_path, *self._spool_path.parent.glob("spool.sqlite3-*"),
                         self._secret_path):
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()
            self._secret = None
            self._save()

    def status(self) -> Status:
        with self._lock:
            self._reload()
            spool = self._open_spool() if self._settings.get("enabled") else None
            spooled = spool.execute("SELECT COUNT(*) FROM queue").fetchone()[0] if spool else 0
            return Status(bool(self._settings.get("enabled")), self._settings.get("collector"),
                          spooled, len(self._settings.get("deletions", [])), self.folder)

    # Anonymization -----------------------------------------------------------------------------

    def _load_secret(self, *, create: bool) -> bytes | None:
        if self._secret is not None:
            return self._secret
        try:
            secret = self._secret_path.read_bytes()
            if len(secret) == 32:
                self._secret = secret
                return secret
        except FileNotFoundError:
            pass
        if not create:
            return None
        self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self._secret = secrets.token_bytes(32)
        _write_private(self._secret_path, self._secret)
        return self._secret

    @staticmethod
    def _keyed(secret: bytes, label: bytes, value: bytes) -> str:
        return hmac.new(secret, label + b"\0" + value, hashlib.sha256).hexdigest()[:32]

    @staticmethod
    def _token(secret: bytes, day: str) -> str:
        """The day's deletion token: 64 hex digits that only this install can compute."""
        return hmac.new(secret, b"pid-token\0" + day.encode(), hashlib.sha256).hexdigest()

    def _day(self, now: float | None = None) -> str:
        return datetime.fromtimestamp(self._clock() if now is None else now,
                                      UTC).strftime("%Y-%m-%d")

    def hash_id(self, value: bytes) -> str:
        """A stream or document id as a keyed hash that changes every day."""
        with self._lock:
            secret = self._load_secret(create=True)
            return self._keyed(secret, b"id:" + self._day().encode(), value)

    # Recording ---------------------------------------------------------------------------------

    def record(self, event: str, **fields: object) -> bool:
        """Spool one event if analytics are on. Returns whether it was recorded."""
        try:
            with self._lock:
                self._maybe_reload()
                if not self._settings.get("enabled"):
                    return False
                now = self._clock()
                day = self._day(now)
                if day not in (self._settings.get("tokens") or {}):
                    # The day's token is about to be saved: on top of the latest settings, not
                    # a copy up to SETTINGS_RECHECK_S old that would undo a `disable`.
                    self._reload()
                    if not self._settings.get("enabled"):
                        return False
                secret = self._load_secret(create=True)
                token = self._token(secret, day)
                line = {"event": event, "schema": version_of(event), "ts": hour(now),
                        "pid": pid_of_token(token), **fields}
                validate(line)
                self._keep_token(day, token)  # first: no event goes out that cannot be deleted
                spool = self._open_spool()
                with spool:
                    spool.execute("INSERT INTO queue (schema, line) VALUES (?, ?)",
                                  (line["schema"], json.dumps(line, sort_keys=True,
                                                              separators=(",", ":"))))
                    spool.execute("DELETE FROM queue WHERE seq <= (SELECT MAX(seq) FROM queue)"
                                  " - ?", (SPOOL_MAX_EVENTS,))
                return True
        except EventError as exc:  # a bug in a caller: never an app failure
            log.warning("analytics event %s not recorded: %s", event, exc)
        except (OSError, sqlite3.Error) as exc:
            log.warning("analytics spool unavailable: %s", exc)
        return False

    def _keep_token(self, day: str, token: str) -> None:
        tokens = self._settings.get("tokens")
        if not isinstance(tokens, dict):
            tokens = self._settings["tokens"] = {}
        if tokens.get(day) != token:
            before = dict(tokens)
            tokens[day] = token
            for old in sorted(tokens)[:-MAX_DELETION_TOKENS]:
                del tokens[old]
            try:
                self._save()
            except OSError:
                self._settings["tokens"] = before  # tried again with the next event
                raise

    # The spool, as the shipper sees it --------------------------------------------------------

    def _open_spool(self) -> sqlite3.Connection:
        if self._spool is None:
            self.folder.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(self._spool_path, os.O_RDWR | os.O_CREAT, 0o600)
            os.close(fd)
            conn = sqlite3.connect(self._spool_path, check_same_thread=False, timeout=5)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")  # losing the last event to a crash is fine
            try:
                _migrate_spool(conn)
            except BaseException:
                conn.close()
                raise
            self._spool = conn
        return self._spool

    def _close_spool(self) -> None:
        if self._spool is not None:
            self._spool.close()
            self._spool = None

    def schemas(self) -> list[int]:
        """The schema versions of the spooled events."""
        with self._lock:
            self._maybe_reload()
            if not self._settings.get("enabled"):
                return []
            return [v for (v,) in self._open_spool().execute(
                "SELECT DISTINCT schema FROM queue ORDER BY schema")]

    def take_batch(self, max_lines: int, schemas: Iterable[int] | None = None,
                   ) -> tuple[tuple, list[str]] | None:
        """The oldest spooled events (of these schema versions; of any by default):
        (batch id, JSON lines), or None when there are none."""
        with self._lock:
            self._maybe_reload()
            if not self._settings.get("enabled"):
                return None
            versions = None if schemas is None else tuple(sorted({int(v) for v in schemas}))
            where = "" if versions is None else \
                f"WHERE schema IN ({','.join('?' * len(versions))})"
            rows = self._open_spool().execute(
                f"SELECT seq, line FROM queue {where} ORDER BY seq LIMIT ?",
                (*(versions or ()), max_lines)).fetchall()
            return ((rows[-1][0], versions), [line for _, line in rows]) if rows else None

    def ack(self, batch_id: tuple) -> None:
        """The collector has the batch: drop its events from the spool, and none of the
        versions it did not take."""
        last, versions = batch_id
        where = "" if versions is None else \
            f" AND schema IN ({','.join('?' * len(versions))})"
        with self._lock:
            if self._spool is not None:
                with self._spool:
                    self._spool.execute(f"DELETE FROM queue WHERE seq <= ?{where}",
                                        (last, *(versions or ())))

    def pending_deletions(self) -> list[list[list[str]]]:
        """The deletion requests not yet delivered, oldest first: each a list of [day, token]."""
        with self._lock:
            self._maybe_reload()
            return [[list(pair) if isinstance(pair, list) else pair for pair in request]
                    for request in self._settings.get("deletions", [])]

    def ack_deletion(self, index: int) -> None:
        with self._lock:
            self._reload()
            deletions = self._settings.get("deletions", [])
            if 0 <= index < len(deletions):
                del deletions[index]
                self._save()

    def close(self) -> None:
        with self._lock:
            self._close_spool()


def _migrate_spool(conn: sqlite3.Connection) -> None:
    """Make the `queue` table, and move an older version's `events` lines into it."""
    conn.execute("BEGIN IMMEDIATE")  # another process may open the same spool now
    try:
        conn.execute("CREATE TABLE IF NOT EXISTS queue (seq INTEGER PRIMARY KEY AUTOINCREMENT,"
                     " schema INTEGER NOT NULL, line TEXT NOT NULL)")
        conn.execute("CREATE INDEX IF NOT EXISTS queue_schema ON queue (schema)")
        if conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'"
                        ).fetchone():
            # Versions before 2 made only version-1 events.
            conn.execute("INSERT INTO queue (schema, line) SELECT 1, line FROM events"
                         " ORDER BY seq")
            conn.execute("DROP TABLE events")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
