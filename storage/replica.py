"""One workspace's SQLite replica: its file and connections, the single ingest path
(storage._accept, storage._ingest) and the chat views' reads (storage._chat).

The parts that are not views of the chat live in their own modules and share the replica's
connection and lock: `Replica.documents` (storage._documents), `Replica.outbox`
(storage._outbox), `Replica.reconciliation` (storage._reconciliation) and `Replica.moderation`
(storage._moderation: its queries, and this computer's blocks), `Replica.files`
(storage._files: which messages name which attached file, and each file's state here). The
attached files' chunks are in `Replica.chunks`, a folder beside the file (storage/chunks.py);
a file no message held names any more loses its chunks after the ingest that purged it."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from core import kinds
from core.encoding import loads
from core.objects import Object, decode_trusted
from core.policy import Policy

from . import _accept, _chat, _conversation, _fixups, _schema, _search, _verify
from ._chat import UNREAD_CAP as UNREAD_CAP  # app.records reads it here
from ._documents import DocumentStore
from ._files import FileStore
from ._ingest import FUTURE_MS, Batch, WorkspaceIdentity
from ._kept import KeptStreams
from ._membership import MembershipStore
from ._moderation import ModerationStore
from ._origins import OriginStore
from ._outbox import Outbox
from ._private import PrivateStore
from ._private_index import PrivateIndex
from ._reconciliation import Reconciliation
from ._search import COUNT_CAP, MessageFilter, MessageMatches, words_filter
from ._sql import admin_act
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
)

BUSY_TIMEOUT_MS = 10_000
# Sync's reading connection reads most pages once (the item index, raws to send): 16 MiB of
# cache added ~40 MB to a syncing window's peak RSS (bench/ui_channel.py), 4 MiB does not.
SYNC_CACHE_KIB = 4096
# A new replica's pages. Ids are random, so a batch of objects touches most pages of the id
# index, and a commit writes each page touched: fewer, larger pages cost less per object.
PAGE_SIZE = 16384


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
        conn = self._connect(self.path, new=False)
        try:
            _schema.migrate(conn)
            meta = dict(conn.execute("SELECT key, value FROM meta"))
            if "workspace" not in meta or "root" not in meta:
                raise StorageError(f"{self.path} is not a Hearth replica (no workspace)")
            self.workspace = WorkspaceIdentity(meta["workspace"], meta["root"])
            _fixups.run(conn, self.workspace, self.now_ms())
        except BaseException:
            conn.close()
            raise
        self._conn: sqlite3.Connection | None = conn

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
    def origins(self) -> OriginStore:
        """Imported messages' origins and members' claims to be their Slack authors."""
        return OriginStore(self.conn)

    @property
    def private(self) -> PrivateStore:
        """The private channels' objects held, by channel (app.private opens them)."""
        return PrivateStore(self)

    @property
    def private_index(self) -> PrivateIndex:
        """What this computer opened of its private channels, searchable (local, never
        synced: app.private_conversation fills it)."""
        return PrivateIndex(self)

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

    def ingest_own(self, objects: Sequence[Object], author: bytes) -> list[IngestResult]:
        """`ingest` of objects this process has just built and signed with `author`'s key
        (core.objects.build makes only valid objects): they are stored without being decoded
        or verified again. Only for objects made here; what comes from anywhere else goes
        through `ingest` or `ingest_checked`, which check everything."""
        if any(obj.author != author for obj in objects):
            raise ValueError("ingest_own stores only objects signed by this computer's key")
        return self.ingest_checked([_verify.own(objects)])

    def ingest_checked(self, parts: Sequence[Checking]) -> list[IngestResult]:
        """`ingest` of batches whose checks began as they arrived (storage._verify.start), in
        their order and in one transaction: the answers of all, in order."""
        with self._write() as conn:
            results, unnamed = _accept.accept(conn, self.workspace, self.now_ms(), parts)
        if unnamed:  # deleted messages' files: their chunks go, unless another names them
            self.files.drop_unnamed(unnamed)
        return results

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

    def messages(self, channel: str, *, limit: int = 50, before: str | None = None,
                 hidden: bool = False) -> list[Message]:
        """The newest `limit` visible messages of `channel` before `before`, newest last
        (replies only in their thread are left out: see `thread`). With `hidden` (for a
        moderator's read: the caller decides who moderates), the messages moderators hid
        are there too, marked `Message.hidden`."""
        with self._read() as conn:
            return _chat.messages(conn, channel, limit=limit, before=before, hidden=hidden)

    def thread(self, message_id: bytes, *, hidden: bool = False) -> list[Message]:
        """A thread: its first message, then its visible replies oldest first; [] when the
        message is not a visible message held here. `hidden`: as `messages`."""
        with self._read() as conn:
            return _chat.thread(conn, message_id, hidden=hidden)

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
            return _chat.message(conn, message_id)

    def topic(self, channel: str) -> str | None:
        with self._read() as conn:
            return _chat.topic(conn, kinds.channel_key(channel))

    def members(self, channel: str) -> list[Member]:
        with self._read() as conn:
            return _chat.members(conn, kinds.channel_key(channel))

    def nickname(self, key: bytes) -> str | None:
        with self._read() as conn:
            return _chat.nickname(conn, key)

    def nicknames(self) -> dict[bytes, str]:
        """Current nickname of every key that has one."""
        with self._read() as conn:
            return _chat.nicknames(conn)

    def channel_state(self, channel: str) -> ChannelState:
        """Topic, members and the history of topic, membership and nickname changes."""
        with self._read() as conn:
            return _chat.channel_state(conn, channel)

    def channels(self) -> list[ChannelInfo]:
        with self._read() as conn:
            return _chat.channels(conn)

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
        where, params = "", tuple[bytes, ...]()
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
            "SELECT o.id, g.target, g.author, g.channel, g.slack_ts, g.user, g.name, g.item "
            "FROM origins g JOIN objects o ON o.oid = g.oid ORDER BY 1, 2",
            "SELECT o.id, c.kind, c.author, c.key, c.user FROM slack_claims c "
            "JOIN objects o ON o.oid = c.oid ORDER BY 1",
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
        with self._read() as conn:
            return _chat.unread(conn, me, nick)

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
