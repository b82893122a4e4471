"""One workspace's SQLite replica: the single ingest path and the chat views' queries.

The parts that are not views of the chat live in their own modules and share the replica's
connection and lock: `Replica.documents` (storage._documents), `Replica.outbox`
(storage._outbox), `Replica.reconciliation` (storage._reconciliation) and `Replica.moderation`
(storage._moderation: its queries, and this computer's blocks), `Replica.files`
(storage._files: which messages name which attached file, and each file's state here). The
attached files' chunks are in `Replica.chunks`, a folder beside the file (storage/chunks.py);
a file no message held names any more loses its chunks after the ingest that purged it."""

from __future__ import annotations

import hashlib
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from core import kinds
from core.encoding import loads
from core.errors import InvalidObject
from core.identity import verify
from core.objects import Object, bad_signature, decode_trusted, parse
from core.policy import Policy

from . import _conversation, _fixups, _schema, _search, _verify
from ._documents import DocumentStore
from ._files import FileStore
from ._ingest import FUTURE_MS, Batch, WorkspaceIdentity
from ._kept import KeptStreams
from ._membership import MembershipStore
from ._moderation import HIDDEN_MOD, ModerationStore, blocked_keys, refuse
from ._outbox import Outbox
from ._private import PrivateStore
from ._reconciliation import Reconciliation
from ._search import COUNT_CAP, MessageFilter, MessageMatches, words_filter
from ._sql import admin_act, chunks, placeholders
from ._verify import Checking
from .chunks import ChunkStore
from .errors import NotFound, StorageError
from .records import (
    ChannelInfo,
    ChannelState,
    IngestResult,
    Member,
    Message,
    MessageVersion,
    StateEvent,
    Status,
)

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 10_000
# Objects answered already that are stored together, at most: each group's full-text rows
# go in rowid order, and a catch-up's next group (older messages) starts a new FTS5 segment.
GROUP_MAX = 2048
VERIFY_TIMEOUT_S = 120.0
SYNC_CACHE_KIB = 16384  # sync's reading connection: the item index's hot pages
# A new replica's pages. Ids are random, so a batch of objects touches most pages of the id
# index, and a commit writes each page touched: fewer, larger pages cost less per object.
PAGE_SIZE = 16384
UNREAD_CAP = 1000  # unread counts stop here (the window shows "999+")


def _mention_word(nick: str) -> re.Pattern[str]:
    """`nick` as a word of its own ("@ada", "ada:"), in any case."""
    return re.compile(r"(?<!\w)" + re.escape(nick) + r"(?!\w)", re.IGNORECASE)


def _marked(messages: list[Message], hidden: set[bytes]) -> list[Message]:
    """`messages`, those whose id is in `hidden` marked as hidden by a moderator."""
    if not hidden:
        return messages
    return [replace(m, hidden=True) if m.id in hidden else m for m in messages]


def parse_cursor(cursor: str) -> tuple[int, bytes]:
    try:
        ts, hex_id = cursor.split("-", 1)
        oid = bytes.fromhex(hex_id)
        if len(oid) != 32 or not ts.isdigit() or int(ts) >= 2**63:
            raise ValueError
        return int(ts), oid
    except ValueError:
        raise StorageError(f"{cursor!r} is not a message cursor") from None


class Replica:
    """A workspace's replica in one SQLite file (WAL; safe to share between processes)."""

    def __init__(self, path: str | os.PathLike, *,
                 clock: Callable[[], float] = time.time):
        self.path = Path(path)
        if not self.path.exists():
            raise NotFound(f"no replica at {self.path}")
        self._clock = clock
        self._lock = threading.RLock()
        self._sync_lock = threading.Lock()
        self._sync_conn: sqlite3.Connection | None = None
        self._conn = self._connect(self.path, new=False)
        try:
            _schema.migrate(self._conn)
            meta = dict(self._conn.execute("SELECT key, value FROM meta"))
            if "workspace" not in meta or "root" not in meta:
                raise StorageError(f"{self.path} is not a Hearth replica (no workspace)")
            self.workspace = WorkspaceIdentity(meta["workspace"], meta["root"])
            _fixups.run(self._conn, self.workspace, self.now_ms())
        except BaseException:
            self._conn.close()
            raise

    @staticmethod
    def _connect(path: Path, *, new: bool) -> sqlite3.Connection:
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                               timeout=BUSY_TIMEOUT_MS / 1000)
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            if not new:
                # Refuse before changing anything (even the journal mode) in a file that is
                # not ours or is newer than this code.
                _schema.check_version(conn, path)
            else:
                conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StorageError(f"{path} is not a Hearth replica ({exc})") from None
        except BaseException:
            conn.close()
            raise
        if mode.lower() != "wal":
            conn.close()
            raise StorageError(f"cannot use WAL mode on {path} (got {mode})")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA cache_size = -65536")  # 64 MiB: index pages stay hot across batches
        # Checkpoint every ~32 MiB of WAL instead of 4 MiB: fewer fsyncs, pages rewritten once.
        conn.execute("PRAGMA wal_autocheckpoint = 8192")
        conn.execute("PRAGMA journal_size_limit = 67108864")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    @classmethod
    def create(cls, path: str | os.PathLike, workspace_id: bytes, root_key: bytes, *,
               clock: Callable[[], float] = time.time) -> Replica:
        """A new, empty replica of workspace `workspace_id` whose root admin is `root_key`."""
        path = Path(path)
        if path.exists():
            raise StorageError(f"a replica already exists at {path}")
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # holds branch keys
        os.close(fd)
        conn = cls._connect(path, new=True)
        try:
            _schema.migrate(conn)
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO meta (key, value) VALUES (?, ?)",
                             [("workspace", workspace_id), ("root", root_key)])
            conn.execute("INSERT INTO admins (key, grant_id) VALUES (?, NULL)", (root_key,))
            conn.execute("COMMIT")
        finally:
            conn.close()
        return cls(path, clock=clock)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
        with self._sync_lock:
            if self._sync_conn is not None:
                self._sync_conn.close()
                self._sync_conn = None

    def __enter__(self) -> Replica:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def now_ms(self) -> int:
        return int(self._clock() * 1000)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StorageError("the replica is closed")
        return self._conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A consistent snapshot; first shows posts whose future date has come."""
        self._mature()
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    @contextmanager
    def _sync_read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction on sync's own connection: sync reads what was committed while
        another thread stores a batch (WAL readers do not wait for the writer)."""
        with self._sync_lock:
            if self._conn is None:
                raise StorageError("the replica is closed")
            if self._sync_conn is None:
                self._sync_conn = self._connect(self.path, new=False)
                self._sync_conn.execute(f"PRAGMA cache_size = -{SYNC_CACHE_KIB}")
            conn = self._sync_conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("COMMIT")

    def _mature(self) -> None:
        horizon = self.now_ms() + FUTURE_MS
        due = self.conn.execute(
            "SELECT 1 FROM messages WHERE hidden & 2 AND ts <= ?1 UNION ALL "
            "SELECT 1 FROM state WHERE hidden & 2 AND ts <= ?1 UNION ALL "
            "SELECT 1 FROM nicks WHERE hidden & 2 AND ts <= ?1 UNION ALL "
            "SELECT 1 FROM mod_actions WHERE hidden & 2 AND ts <= ?1 LIMIT 1",
            (horizon,)).fetchone()
        if due or _conversation.due(self.conn, horizon):
            with self._write() as conn:
                Batch(conn, self.workspace, self.now_ms()).mature()

    # What is not a view of the chat: each part shares this connection and lock ----------------
    # (a small object made at each access, so no reference cycle outlives the replica)

    @property
    def documents(self) -> DocumentStore:
        """Documents' objects, this holder's branch keys and the cached branch states."""
        return DocumentStore(self)

    @property
    def outbox(self) -> Outbox:
        """Objects in storage order, and how far they have reached a peer."""
        return Outbox(self)

    @property
    def reconciliation(self) -> Reconciliation:
        """What sync reconciles: the item index, and the objects a peer asks for."""
        return Reconciliation(self)

    @property
    def kept(self) -> KeptStreams:
        """Which channels and documents this computer keeps (storage._kept)."""
        return KeptStreams(self)

    @property
    def membership(self) -> MembershipStore:
        """The invites, admissions and sealed workspace keys held (app.membership decides)."""
        return MembershipStore(self)

    @property
    def private(self) -> PrivateStore:
        """The private channels' objects held, by channel (app.private opens them)."""
        return PrivateStore(self)

    @property
    def files(self) -> FileStore:
        """The files messages name, and whether each is complete, mine, pinned, opened."""
        return FileStore(self)

    @property
    def chunks(self) -> ChunkStore:
        """The attached files' chunks: the `chunks` folder beside the replica."""
        return ChunkStore(self.path.parent / "chunks")

    @property
    def moderation(self) -> ModerationStore:
        """Moderators, what they hid and their log; the keys blocked on this computer."""
        return ModerationStore(self)

    # The one path of data ---------------------------------------------------------------------

    def ingest(self, items: Iterable[bytes | Object]) -> list[IngestResult]:
        """Validate, store and index a batch in one transaction; answer per object.

        Large batches are checked in helper processes (storage._verify), sub-batch by
        sub-batch, while this process stores the sub-batches already checked. Valid objects
        by a key blocked on this computer are refused (Status.REFUSED: not stored, and no
        fault of the sender's).
        """
        raws = [item.raw if isinstance(item, Object) else bytes(item) for item in items]
        return self.ingest_checked([_verify.start(raws)])

    def ingest_checked(self, parts: Sequence[Checking]) -> list[IngestResult]:
        """`ingest` of batches whose checks began as they arrived (storage._verify.start), in
        their order and in one transaction: the answers of all, in order."""
        steps: list[tuple[list[bytes], range, Future | None, int]] = []
        total = 0
        for part in parts:
            steps.extend((part.raws, sub, future, total)
                         for sub, future in zip(part.subs, part.futures, strict=True))
            total += len(part.raws)
        results: list[IngestResult | None] = [None] * total
        seen: set[bytes] = set()
        with self._write() as conn:
            blocked = blocked_keys(conn)
            batch = Batch(conn, self.workspace, self.now_ms())
            batch.mature()
            k = 0
            while k < len(steps):
                # The next sub-batch, and those after it the helpers have answered already (or
                # all, checked here): stored together, as storing costs less per object in
                # larger groups, up to GROUP_MAX objects (memory).
                fresh: list[tuple[int, Object, bool]] = []
                while True:
                    raws, sub, future, base = steps[k]
                    for n, found in zip(sub, self._checked(future, raws, sub), strict=True):
                        if isinstance(found, InvalidObject):
                            results[base + n] = self._rejected(raws[n], found)
                        elif found[0].id in seen:
                            results[base + n] = IngestResult(found[0].id, Status.DUPLICATE)
                        else:
                            seen.add(found[0].id)
                            fresh.append((base + n, *found))
                    k += 1
                    if k == len(steps) or len(fresh) + len(steps[k][1]) > GROUP_MAX or (
                            steps[k][2] is not None and not steps[k][2].done()):
                        break
                held = self._held(conn, [obj.id for _, obj, _ in fresh])
                new, refused = [], []
                for n, obj, ok in fresh:
                    if obj.id in held:
                        results[n] = IngestResult(obj.id, Status.DUPLICATE)
                    elif not ok:
                        results[n] = self._rejected(obj.raw, bad_signature())
                    elif obj.author in blocked:
                        refused.append(obj)
                        results[n] = IngestResult(obj.id, Status.REFUSED, "blocked",
                                                  "its author is blocked on this computer")
                    else:
                        new.append(obj)
                        results[n] = IngestResult(obj.id, Status.ADDED)
                batch.add(new)
                refuse(conn, refused, self.workspace.id)
        unnamed = batch.unnamed
        if unnamed:  # deleted messages' files: their chunks go, unless another names them
            self.files.drop_unnamed(unnamed)
        return results  # type: ignore[return-value]

    @staticmethod
    def _checked(future: Future | None, raws: list[bytes],
                 sub: range) -> list[tuple[Object, bool] | InvalidObject]:
        """Per object of `sub`: (the object, whether its signature verifies), or why it is
        invalid. A helper's "valid" is taken as checked; everything else is checked here."""
        verdicts = None
        if future is not None:
            try:
                verdicts = future.result(VERIFY_TIMEOUT_S)
            except (TimeoutError, OSError, ValueError) as exc:
                log.warning("signature helper failed (%s); verifying here", exc)
                _verify.shutdown(future)
        if verdicts is None or len(verdicts) != len(sub):
            verdicts = bytes(len(sub))
        out: list[tuple[Object, bool] | InvalidObject] = []
        for n, valid in zip(sub, verdicts, strict=True):
            if valid == 1:
                out.append((decode_trusted(raws[n]), True))
                continue
            try:
                obj, unsigned = parse(raws[n])
            except InvalidObject as exc:
                out.append(exc)
                continue
            out.append((obj, verify(obj.author, unsigned, obj.sig)))
        return out

    @staticmethod
    def _rejected(raw: bytes, exc: InvalidObject) -> IngestResult:
        return IngestResult(hashlib.blake2b(raw, digest_size=32).digest(), Status.REJECTED,
                            exc.reason.value, str(exc))

    @staticmethod
    def _held(conn: sqlite3.Connection, ids: list[bytes]) -> set[bytes]:
        held: set[bytes] = set()
        for part in chunks(ids):
            marks = placeholders(len(part))
            held.update(row[0] for row in conn.execute(
                f"SELECT id FROM objects WHERE id IN ({marks}) UNION ALL "
                f"SELECT id FROM tombstones WHERE id IN ({marks})", (*part, *part)))
        return held

    # Objects ----------------------------------------------------------------------------------

    def get(self, object_id: bytes) -> bytes | None:
        row = self.conn.execute("SELECT raw FROM objects WHERE id = ?", (object_id,)).fetchone()
        return row[0] if row else None

    def object(self, object_id: bytes) -> Object:
        raw = self.get(object_id)
        if raw is None:
            raise NotFound(f"this replica holds no object {object_id.hex()}")
        return decode_trusted(raw)

    def ids_with_prefix(self, prefix: bytes, limit: int, *,
                        bits: int | None = None) -> list[bytes]:
        """The ids of held objects that start with the first `bits` bits of `prefix` (default:
        all of it; an odd number of hex digits is 4 per digit), in order, at most `limit`. A
        range on the unique index of objects.id, never a scan."""
        size = 8 * len(prefix)
        free = size - (size if bits is None else bits)
        if not 0 <= free <= size:
            raise ValueError(f"bits must be from 0 to {size}")
        start = int.from_bytes(prefix, "big") >> free << free
        sql, args = "SELECT id FROM objects WHERE id >= ?", [start.to_bytes(len(prefix), "big")]
        if (end := start + (1 << free)) < 1 << size:  # else every id from `start` on matches
            sql += " AND id < ?"
            args.append(end.to_bytes(len(prefix), "big"))
        rows = self.conn.execute(sql + " ORDER BY id LIMIT ?", (*args, max(0, limit)))
        return [row[0] for row in rows]

    def has(self, object_id: bytes) -> bool:
        return self.get(object_id) is not None

    def is_deleted(self, object_id: bytes) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM tombstones WHERE id = ?", (object_id,)).fetchone() is not None

    def count(self) -> int:
        return self.conn.execute("SELECT COUNT(*) FROM objects").fetchone()[0]

    def heads(self, stream: bytes) -> list[tuple[bytes, int]]:
        """(id, ts) of the heads of `stream`, for the links of the next object in it."""
        return [(row[0], row[1]) for row in self.conn.execute(
            "SELECT id, ts FROM heads WHERE stream = ? ORDER BY id", (stream,))]

    def ids_by(self, author: bytes) -> list[bytes]:
        """The ids of every object `author` signed that is held here, oldest first."""
        return [row[0] for row in self.conn.execute(
            "SELECT id FROM objects WHERE author = ? ORDER BY ts, id", (author,))]

    def posts_by(self, author: bytes, kind: str | None = None) -> list[bytes]:
        sql = "SELECT id FROM objects WHERE author = ?"
        args: tuple = (author,)
        if kind:
            sql += " AND type = ?"
            args += (kind,)
        return [row[0] for row in self.conn.execute(sql + " ORDER BY ts, id", args)]

    def admins(self) -> set[bytes]:
        return {row[0] for row in self.conn.execute("SELECT key FROM admins")}

    def is_admin(self, key: bytes) -> bool:
        return self.conn.execute(
            "SELECT 1 FROM admins WHERE key = ?", (key,)).fetchone() is not None

    # Chat views -------------------------------------------------------------------------------

    _NICK = ("(SELECT name FROM nicks n WHERE n.author = {a} AND n.hidden = 0 "
             "ORDER BY n.ts DESC, n.id DESC LIMIT 1)")

    _COLUMNS = ("m.id, m.author, {nick}, m.ts, m.text, m.edited, m.reply_to, m.in_channel "
                "FROM messages m")

    def messages(self, channel: str, *, limit: int = 50, before: str | None = None,
                 hidden: bool = False) -> list[Message]:
        """The newest `limit` visible messages of `channel` before `before`, newest last
        (replies only in their thread are left out: see `thread`). With `hidden` (for a
        moderator's read: the caller decides who moderates), the messages moderators hid
        are there too, marked `Message.hidden`."""
        key = kinds.channel_key(channel)
        sql = ("SELECT " + self._COLUMNS.format(nick=self._NICK.format(a="m.author")) +
               " WHERE m.channel = ? AND m.hidden = ? AND m.in_channel = 1")
        cursor: list = []
        if before:
            ts, oid = parse_cursor(before)
            sql += " AND (m.ts, m.id) < (?, ?)"
            cursor = [ts, oid]
        sql += " ORDER BY m.ts DESC, m.id DESC LIMIT ?"
        limit = max(0, limit)
        with self._read() as conn:
            rows, marked = [], set()
            # One walk of messages_by_channel per hidden value: each is in time order.
            for bits in (0, HIDDEN_MOD) if hidden else (0,):
                found = conn.execute(sql, [key, bits, *cursor, limit]).fetchall()
                if bits:
                    marked.update(row[0] for row in found)
                rows += found
            rows.sort(key=lambda row: (row[3], row[0]))
            rows = rows[max(0, len(rows) - limit):]
            name = self._channel_name(conn, key) or channel
            return _marked(_conversation.decorate(conn, rows, key, name), marked)

    def thread(self, message_id: bytes, *, hidden: bool = False) -> list[Message]:
        """A thread: its first message, then its visible replies oldest first; [] when the
        message is not a visible message held here. `hidden`: as `messages`."""
        shown = f"(0, {HIDDEN_MOD})" if hidden else "(0)"
        with self._read() as conn:
            found = conn.execute(
                "SELECT m.channel, m.reply_to FROM objects o JOIN messages m ON m.oid = o.oid "
                f"WHERE o.id = ? AND m.hidden IN {shown}", (message_id,)).fetchone()
            if found is None:
                return []
            key, parent = found
            root = parent if parent is not None else message_id
            columns = self._COLUMNS.replace(" FROM", ", m.hidden FROM").format(
                nick=self._NICK.format(a="m.author"))
            first = conn.execute(
                f"SELECT {columns} JOIN objects o ON o.oid = m.oid WHERE o.id = ? "
                f"AND m.hidden IN {shown} AND m.channel = ?", (root, key)).fetchall()
            replies = conn.execute(
                f"SELECT {columns} INDEXED BY messages_by_thread WHERE m.reply_to = ? "
                f"AND m.hidden IN {shown} AND m.channel = ? ORDER BY m.ts, m.id",
                (root, key)).fetchall()
            name = self._channel_name(conn, key) or key
            rows = first + replies
            marked = {row[0] for row in rows if row[-1]}
            return _marked(_conversation.decorate(conn, [row[:-1] for row in rows], key, name),
                           marked)

    def versions(self, message_id: bytes) -> list[MessageVersion]:
        """A visible message's texts, oldest first: its own, then its author's edits'."""
        with self._read() as conn:
            return _conversation.versions(conn, message_id)

    def edits_of(self, message_id: bytes, author: bytes) -> list[bytes]:
        """Ids of `author`'s edits held that name this message."""
        with self._read() as conn:
            return [row[0] for row in conn.execute(
                "SELECT id FROM edits WHERE target = ? AND author = ? ORDER BY ts, id",
                (message_id, author))]

    def my_reactions(self, message_id: bytes, author: bytes, emoji: str) -> list[bytes]:
        """Ids of `author`'s reactions held with `emoji` on the message (what removing takes)."""
        with self._read() as conn:
            return [row[0] for row in conn.execute(
                "SELECT id FROM reactions WHERE target = ? AND author = ? AND emoji = ? "
                "ORDER BY ts, id", (message_id, author, emoji))]

    def message(self, message_id: bytes) -> Message | None:
        """One visible message (a reply too), with its reply count and reactions."""
        with self._read() as conn:
            row = conn.execute(
                "SELECT m.channel, " + self._COLUMNS.format(nick=self._NICK.format(a="m.author"))
                + " JOIN objects o ON o.oid = m.oid WHERE o.id = ? AND m.hidden = 0",
                (message_id,)).fetchone()
            if row is None:
                return None
            key = row[0]
            name = self._channel_name(conn, key) or key
            return _conversation.decorate(conn, [row[1:]], key, name)[0]

    @staticmethod
    def _channel_name(conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute("SELECT name FROM channels WHERE key = ?", (key,)).fetchone()
        return row[0] if row else None

    @staticmethod
    def _topic(conn: sqlite3.Connection, key: str) -> str | None:
        row = conn.execute(
            "SELECT value FROM state WHERE channel = ? AND kind = 'topic' AND hidden = 0 "
            "ORDER BY ts DESC, id DESC LIMIT 1", (key,)).fetchone()
        return row[0] if row else None

    def topic(self, channel: str) -> str | None:
        with self._read() as conn:
            return self._topic(conn, kinds.channel_key(channel))

    def members(self, channel: str) -> list[Member]:
        with self._read() as conn:
            return self._members(conn, kinds.channel_key(channel))

    def _members(self, conn: sqlite3.Connection, key: str) -> list[Member]:
        rows = conn.execute(
            "SELECT author, " + self._NICK.format(a="members.author") +
            " FROM members WHERE channel = ? AND member = 1", (key,)).fetchall()
        members = [Member(author, nick) for author, nick in rows]
        return sorted(members, key=lambda m: ((m.nick or "").casefold(), m.key))

    def nickname(self, key: bytes) -> str | None:
        with self._read() as conn:
            row = conn.execute("SELECT " + self._NICK.format(a="?"), (key,)).fetchone()
        return row[0]

    def nicknames(self) -> dict[bytes, str]:
        """Current nickname of every key that has one."""
        with self._read() as conn:
            rows = conn.execute(
                "SELECT author, name FROM (SELECT author, name, ROW_NUMBER() OVER ("
                "PARTITION BY author ORDER BY ts DESC, id DESC) AS rn FROM nicks "
                "WHERE hidden = 0) WHERE rn = 1").fetchall()
        return dict(rows)

    def channel_state(self, channel: str) -> ChannelState:
        """Topic, members and the history of topic, membership and nickname changes."""
        key = kinds.channel_key(channel)
        with self._read() as conn:
            name = self._channel_name(conn, key)
            if name is None:
                raise NotFound(f"no channel {channel!r} in this replica")
            members = self._members(conn, key)
            history = [StateEvent(*row) for row in conn.execute(
                "SELECT id, kind, author, ts, value FROM state WHERE channel = ? AND hidden = 0 "
                "UNION ALL SELECT n.id, 'nick', n.author, n.ts, n.name FROM nicks n "
                "WHERE n.hidden = 0 AND n.author IN (SELECT author FROM members "
                "WHERE channel = ?) ORDER BY 4, 1", (key, key))]
            return ChannelState(name, self._topic(conn, key), tuple(members), tuple(history))

    def channels(self) -> list[ChannelInfo]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT c.key, c.name, c.messages, (SELECT COUNT(*) FROM members m "
                "WHERE m.channel = c.key AND m.member = 1) FROM channels c "
                "ORDER BY c.key").fetchall()
            return [ChannelInfo(name, self._topic(conn, key), count, messages)
                    for key, name, messages, count in rows]

    def search(self, query: str, *, limit: int = 50) -> list[Message]:
        """Visible messages matching every word of `query` (prefix match on the last),
        newest first."""
        return list(self.search_messages(words_filter(query), limit=limit,
                                         count_cap=None).messages)

    def search_messages(self, match: MessageFilter, *, limit: int = 50,
                        count_cap: int | None = COUNT_CAP) -> MessageMatches:
        """The newest `limit` visible messages that `match` matches, newest first, and how
        many match in all, counted up to `count_cap` (storage._search)."""
        with self._read() as conn:
            return _search.find(conn, match, limit=limit, count_cap=count_cap)

    def policies(self, channel: str) -> list[Policy]:
        """The policy list in force in `channel` (the latest an admin wrote)."""
        with self._read() as conn:
            return Batch(conn, self.workspace, self.now_ms()).policies(
                kinds.channel_key(channel))

    def policy_history(self, channel: str) -> list[tuple[bytes, bytes, int, list[Policy]]]:
        """Every policy list an admin wrote for `channel`: (id, author, ts, policies)."""
        with self._read() as conn:
            rows = conn.execute(
                f"SELECT id, author, ts, body FROM policies WHERE channel = ? AND {admin_act()} "
                "ORDER BY ts, id",
                (kinds.channel_key(channel),)).fetchall()
        return [(i, a, t, [Policy.from_dict(p) for p in loads(b)]) for i, a, t, b in rows]

    # Bundles -----------------------------------------------------------------------------------

    def set_cache_size(self, kib: int) -> None:
        """This connection's page cache (a node keeps 64 MiB; a one-off bulk job needs less)."""
        with self._lock:
            self.conn.execute(f"PRAGMA cache_size = -{int(kib)}")

    @contextmanager
    def export(self, channel: str | None = None) -> Iterator[tuple[int, Iterator[bytes],
                                                                   Iterator[bytes]]]:
        """(count, ids, raws) of the objects to export, oldest first, from one read snapshot:
        every object, or a channel's with what makes it readable elsewhere (the workspace
        stream: genesis, admins, policies; and everyone's nicknames)."""
        where, params = "", ()
        if channel is not None:
            stream = kinds.channel_stream(self.workspace.id, channel)
            where = "WHERE stream IN (?, ?) OR type = 'post/info' OR id = ?"
            params = (stream, self.workspace.id, self.workspace.id)
        with self._lock:
            conn = self.conn
            conn.execute("BEGIN")  # one snapshot: the count, the ids and the objects agree
            try:
                if channel is not None and conn.execute(
                        "SELECT 1 FROM items i JOIN objects o ON o.id = i.id "
                        "WHERE i.stream = ? LIMIT 1", (stream,)).fetchone() \
                        is None:
                    raise NotFound(f"no channel {channel!r} in this replica")
                count = conn.execute(f"SELECT COUNT(*) FROM objects {where}",
                                     params).fetchone()[0]

                def column(name: str) -> Iterator[bytes]:
                    query = f"SELECT {name} FROM objects {where} ORDER BY ts, id"
                    return (row[0] for row in conn.execute(query, params))

                yield count, column("id"), column("raw")
            finally:
                conn.execute("ROLLBACK")  # it only read; this also ends a query left half-read

    # For tests and sync ------------------------------------------------------------------------

    def digest(self) -> str:
        """A hash of every view's content: equal replicas have equal digests."""
        queries = [
            "SELECT id FROM objects ORDER BY id",
            "SELECT stream, id FROM heads ORDER BY stream, id",
            "SELECT key FROM admins ORDER BY key",
            "SELECT id FROM admin_kept ORDER BY id",
            "SELECT key, removal FROM removed ORDER BY key",
            "SELECT key, name, messages FROM channels ORDER BY key",
            "SELECT id, channel, author, ts, text, hidden, edited, reply_to, in_channel "
            "FROM messages ORDER BY id",
            "SELECT id, target, channel, author, ts, text, hidden FROM edits ORDER BY id",
            "SELECT id, target, channel, author, emoji, ts, hidden, counted FROM reactions "
            "ORDER BY id",
            "SELECT id, channel, kind, author, ts, value, hidden FROM state ORDER BY id",
            "SELECT channel, author, member, ts, id FROM members ORDER BY channel, author",
            "SELECT id, author, ts, name, hidden FROM nicks ORDER BY id",
            "SELECT id, channel, author, ts, body FROM policies ORDER BY id",
            "SELECT d.target, o.id FROM delete_targets d JOIN objects o "
            "ON o.oid = d.delete_oid ORDER BY 1, 2",
            "SELECT id, channel, key, author, ts, role, reason FROM mod_roles ORDER BY id",
            "SELECT id, channel, target, author, ts, hide, reason, counts, hidden "
            "FROM mod_actions ORDER BY id",
            "SELECT channel, target FROM mod_hidden ORDER BY channel, target",
            "SELECT message, idx, list, size FROM file_refs WHERE private IS NULL "
            "ORDER BY message, idx",
        ]
        h = hashlib.blake2b(digest_size=16)
        with self._read() as conn:
            for sql in queries:
                for row in conn.execute(sql):
                    h.update(repr(row).encode())
                h.update(b"|")
        return h.hexdigest()

    # Reading marks -----------------------------------------------------------------------------

    def mark_read(self, channel: str) -> None:
        """Everything visible in `channel` now counts as read."""
        key = kinds.channel_key(channel)
        with self._write() as conn:
            conn.execute(
                "INSERT INTO read_marks (channel, ts, id) SELECT channel, ts, id FROM messages "
                "WHERE channel = ?1 AND hidden = 0 ORDER BY ts DESC, id DESC LIMIT 1 "
                "ON CONFLICT (channel) DO UPDATE SET ts = excluded.ts, id = excluded.id",
                (key,))

    def read_mark(self, key: str) -> tuple[int, bytes] | None:
        """The (ts, id) read last under `key` (a channel key, or a private channel's mark key
        from app.private), None before anything was read there."""
        with self._read() as conn:
            row = conn.execute("SELECT ts, id FROM read_marks WHERE channel = ?",
                               (key,)).fetchone()
        return (row[0], row[1]) if row else None

    def set_read_mark(self, key: str, ts: int, object_id: bytes) -> None:
        """Everything up to (ts, id) under `key` counts as read (local, never synced)."""
        with self._write() as conn:
            conn.execute(
                "INSERT INTO read_marks (channel, ts, id) VALUES (?, ?, ?) "
                "ON CONFLICT (channel) DO UPDATE SET ts = excluded.ts, id = excluded.id",
                (key, ts, object_id))

    def unread(self, me: bytes, nick: str | None) -> dict[str, tuple[int, bool]]:
        """Per channel name: (messages by others since my mark, at most UNREAD_CAP, and
        whether one of the newest UNREAD_CAP of them mentions `nick`)."""
        out: dict[str, tuple[int, bool]] = {}
        with self._read() as conn:
            for key, name, mark_ts, mark_id in conn.execute(
                    "SELECT c.key, c.name, r.ts, r.id FROM channels c "
                    "LEFT JOIN read_marks r ON r.channel = c.key"):
                # The newest UNREAD_CAP unread: a channel left unread for months stays cheap.
                since = "FROM (SELECT text FROM messages WHERE channel = ? AND hidden = 0 " \
                        "AND in_channel = 1 " \
                        "AND (ts, id) > (?, ?) AND author != ? ORDER BY ts DESC, id DESC " \
                        "LIMIT ?)"
                args = (key, mark_ts if mark_ts is not None else -1, mark_id or b"", me,
                        UNREAD_CAP)
                count = conn.execute("SELECT COUNT(*) " + since, args).fetchone()[0]
                mention = False
                if count and nick:
                    pattern = "%" + nick.replace("\\", "\\\\").replace("%", "\\%").replace(
                        "_", "\\_") + "%"
                    word = _mention_word(nick)  # "adam" does not mention ada
                    mention = any(word.search(text) for (text,) in conn.execute(
                        "SELECT text " + since + " WHERE text LIKE ? ESCAPE '\\'",
                        (*args, pattern)))
                out[name] = (count, mention)
        return out

    # The file ---------------------------------------------------------------------------------

    def data_version(self) -> int:
        """Changes when another connection (another process) commits to this file."""
        with self._lock:
            return self.conn.execute("PRAGMA data_version").fetchone()[0]

    def integrity_check(self) -> str:
        """'ok' when both SQLite's check and the full-text index's own check pass."""
        with self._write() as conn:
            result = conn.execute("PRAGMA integrity_check").fetchone()[0]
            try:
                conn.execute("INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')")
            except sqlite3.DatabaseError as exc:
                return f"full-text index: {exc}"
        return result
