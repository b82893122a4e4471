"""The replica's schema, created and upgraded by versioned migrations (PRAGMA user_version)."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from core import kinds

from . import items
from ._sql import placeholders
from .errors import SchemaError

if TYPE_CHECKING:
    from ._ingest import Batch

# Version 1: objects, tombstones, heads and the chat views.
_V1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value BLOB) WITHOUT ROWID;

-- Every valid object held, stored once by id (DESIGN.md "Storage").
-- `children` counts stored objects of the same stream that link to this one (0 = a head).
CREATE TABLE objects (
    oid INTEGER PRIMARY KEY,
    id BLOB NOT NULL UNIQUE,
    type TEXT NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    stream BLOB NOT NULL,
    raw BLOB NOT NULL,
    children INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX objects_by_author ON objects (author, type, ts);

-- Ids of deleted posts: never stored again, whoever sends them (id -> the honoured delete).
CREATE TABLE tombstones (id BLOB PRIMARY KEY, deleted_by BLOB NOT NULL) WITHOUT ROWID;
-- Every target named by a stored post/delete, honoured or not (yet).
CREATE TABLE delete_targets (
    target BLOB NOT NULL,
    delete_oid INTEGER NOT NULL REFERENCES objects (oid) ON DELETE CASCADE,
    PRIMARY KEY (target, delete_oid)
) WITHOUT ROWID;

-- Heads per stream: objects no stored object of their stream links to. Links are counted in
-- objects.children, or here while the object linked to has not arrived. (Both keep writes
-- local: links point at recent objects, whose pages are already hot.)
CREATE TABLE heads (stream BLOB NOT NULL, id BLOB NOT NULL, ts INTEGER NOT NULL,
                    PRIMARY KEY (stream, id)) WITHOUT ROWID;
CREATE TABLE missing_links (id BLOB NOT NULL, stream BLOB NOT NULL, refs INTEGER NOT NULL,
                            PRIMARY KEY (id, stream)) WITHOUT ROWID;

-- Admins: the root key, and keys granted by a grant the root signed.
CREATE TABLE admins (key BLOB PRIMARY KEY, grant_id BLOB) WITHOUT ROWID;

-- Channel policies: every visible policy list; the latest (ts, id) per channel is in force.
CREATE TABLE policies (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    channel TEXT NOT NULL, author BLOB NOT NULL, ts INTEGER NOT NULL, id BLOB NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX policies_by_channel ON policies (channel, ts, id);

-- hidden is a bit set: 1 = a channel policy denies it, 2 = timestamped too far ahead.
-- Channels by key (NFC, case-folded); the display name is that of the earliest object.
CREATE TABLE channels (
    key TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    name_ts INTEGER NOT NULL,
    name_id BLOB NOT NULL,
    messages INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE messages (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    channel TEXT NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    text TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0
);
-- One index, appended to at each channel's newest end. (An index by author would take a
-- random page write per message; the rare recomputations below scan a channel instead.)
CREATE INDEX messages_by_channel ON messages (channel, hidden, ts, id);

-- Channel state history: post/topic, post/join, post/leave.
CREATE TABLE state (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    channel TEXT NOT NULL,
    kind TEXT NOT NULL CHECK (kind IN ('topic', 'join', 'leave')),
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    value TEXT,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX state_by_channel ON state (channel, kind, hidden, ts, id);
CREATE INDEX state_by_author ON state (channel, author, ts, id);

-- Current membership per (channel, key): the latest visible join, leave or text post.
CREATE TABLE members (
    channel TEXT NOT NULL,
    author BLOB NOT NULL,
    member INTEGER NOT NULL,
    ts INTEGER NOT NULL,
    id BLOB NOT NULL,
    PRIMARY KEY (channel, author)
) WITHOUT ROWID;

-- Nicknames: post/info in the author's profile stream.
CREATE TABLE nicks (
    oid INTEGER PRIMARY KEY REFERENCES objects (oid) ON DELETE CASCADE,
    id BLOB NOT NULL,
    author BLOB NOT NULL,
    ts INTEGER NOT NULL,
    name TEXT NOT NULL,
    hidden INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX nicks_by_author ON nicks (author, hidden, ts, id);

CREATE INDEX messages_future ON messages (ts) WHERE hidden & 2;
CREATE INDEX state_future ON state (ts) WHERE hidden & 2;
CREATE INDEX nicks_future ON nicks (ts) WHERE hidden & 2;
"""

# Version 2: full-text search over message text (external content: the messages table).
_V2 = """
CREATE VIRTUAL TABLE messages_fts USING fts5 (
    text, content='messages', content_rowid='oid', tokenize='unicode61 remove_diacritics 2'
);
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
"""


def _v3(conn: sqlite3.Connection) -> None:
    """Version 3: the reconciliation index (storage.items); tombstones keep their item's ts."""
    conn.execute("ALTER TABLE tombstones ADD COLUMN ts INTEGER")
    _rebuild_items(conn)


def _rebuild_items(conn: sqlite3.Connection) -> None:
    """(Re)build the reconciliation index, in today's shape, from the objects held and the ids
    a block refused. The index is derived data: every migration that changes what it holds
    rebuilds it whole, so the migrations after it (which write today's shape) find that shape
    whatever version the file was at."""
    for table in ("items", "item_buckets", "item_streams"):
        conn.execute(f"DROP TABLE IF EXISTS {table}")
    _script(items.SCHEMA)(conn)
    row = conn.execute("SELECT value FROM meta WHERE key = 'workspace'").fetchone()
    workspace = row[0] if row else b""
    rows = [(stream, ts, oid, kinds.stream_class(kind, stream, workspace))
            for stream, ts, oid, kind in conn.execute("SELECT stream, ts, id, type FROM objects")]
    refused = {row[1] for row in conn.execute("PRAGMA table_info(refused)")}
    if "stream" in refused:
        rows += conn.execute("SELECT stream, ts, id, class FROM refused").fetchall()
    items.rebuild(conn, rows)


def _v4(conn: sqlite3.Connection) -> None:
    """Version 4: full-text rowids ordered by time (messages.sk), so search returns the newest
    visible matches without ranking every match of a common word."""
    from ._ingest import sort_keys  # the same keys ingest gives new messages

    conn.execute("ALTER TABLE messages ADD COLUMN sk INTEGER")
    rows = conn.execute("SELECT oid, ts, id FROM messages ORDER BY ts, id").fetchall()
    keys = sort_keys(conn, [(ts, oid) for _, ts, oid in rows])
    conn.executemany("UPDATE messages SET sk = ? WHERE oid = ?",
                     [(key, row[0]) for key, row in zip(keys, rows, strict=True)])
    conn.execute("CREATE UNIQUE INDEX messages_by_sk ON messages (sk)")
    conn.execute("DROP TABLE messages_fts")
    conn.execute("CREATE VIRTUAL TABLE messages_fts USING fts5 (text, content='', "
                 "tokenize='unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO messages_fts (rowid, text) SELECT sk, text FROM messages")


# Version 5: documents. Their objects are ordinary objects (found by stream); this holder's
# branch keys and its encrypted cache of a branch's state at its heads are local, never synced.
_V5 = """
CREATE INDEX objects_by_stream ON objects (stream, ts);
CREATE TABLE doc_keys (branch BLOB NOT NULL, epoch INTEGER NOT NULL, key BLOB NOT NULL,
                       PRIMARY KEY (branch, epoch, key)) WITHOUT ROWID;
CREATE TABLE doc_cache (branch BLOB PRIMARY KEY, heads BLOB NOT NULL, epoch INTEGER NOT NULL,
                        nonce BLOB NOT NULL, box BLOB NOT NULL) WITHOUT ROWID
"""


# Version 6: what this person has read, per channel (local, never synced).
_V6 = """
CREATE TABLE read_marks (channel TEXT PRIMARY KEY, ts INTEGER NOT NULL, id BLOB NOT NULL)
WITHOUT ROWID
"""


def _v7(conn: sqlite3.Connection) -> None:
    """Version 7: deletions rest on signed delete objects alone. Tombstones taken on a peer's
    word (deleted_by empty) are dropped, and tombstoned ids leave the reconciliation set.
    Purging an object looks up the deletes that name it by their own oid (a foreign key)."""
    conn.execute("CREATE INDEX delete_targets_by_delete ON delete_targets (delete_oid)")
    conn.execute("DELETE FROM tombstones WHERE deleted_by = x''")
    _rebuild_items(conn)


def _v8(conn: sqlite3.Connection) -> None:
    """Version 8: conversation (storage._conversation): replies, edits, reactions. Objects of
    these kinds held before (stored, not interpreted) are indexed now."""
    from ._conversation import SCHEMA

    _script(SCHEMA)(conn)
    if found := _held(conn, ("post/reply", "post/edit", "post/react")):
        batch, held = found
        batch.reindex(held)


def _v9(conn: sqlite3.Connection) -> None:
    """Version 9: moderation (storage._moderation): moderator roles, hides and what they hide,
    and this computer's blocks. Moderation objects held before (stored, not interpreted) are
    indexed now."""
    from ._moderation import SCHEMA

    _script(SCHEMA)(conn)
    if found := _held(conn, ("mod/role", "mod/hide")):
        batch, held = found
        batch.reindex_moderation(held)


def _v10(conn: sqlite3.Connection) -> None:
    """Version 10: membership (storage._membership): invites, admissions, removals and sealed
    workspace keys. Such objects held before (stored, not interpreted) are listed now."""
    from . import _membership

    _script(_membership.SCHEMA)(conn)
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key = 'workspace'"))
    if "workspace" in meta:
        _membership.reindex(conn, meta["workspace"])


def _v11(conn: sqlite3.Connection) -> None:
    """Version 11: the ids blocks refused, kept in the reconciliation set
    (storage._moderation); and private channels' objects listed by channel (storage._private;
    such objects held before are listed now)."""
    from . import _moderation, _private

    _script(_moderation.REFUSED_SCHEMA)(conn)
    _script(_private.SCHEMA)(conn)
    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key = 'workspace'"))
    if "workspace" in meta:
        _private.reindex(conn, meta["workspace"])


def _v12(conn: sqlite3.Connection) -> None:
    """Version 12: attached files (storage._files): which messages name which file, and each
    file's state here. Messages with files (post/file) an older version stored without
    interpreting them are indexed now."""
    from . import _files

    _script(_files.SCHEMA)(conn)
    if found := _held(conn, ("post/file",)):
        batch, held = found
        batch.reindex(held, moderation=True)


def _held(conn: sqlite3.Connection, kinds: tuple[str, ...]
          ) -> tuple[Batch, list[tuple[int, bytes]]] | None:
    """A Batch over this replica and the objects of `kinds` it holds ([(oid, raw)], oldest
    first), for a migration to index what an older version stored without interpreting it;
    None when it holds none (or is not a workspace's replica yet)."""
    from ._ingest import Batch, Workspace

    meta = dict(conn.execute("SELECT key, value FROM meta WHERE key IN ('workspace', 'root')"))
    if set(meta) != {"workspace", "root"}:
        return None
    held = conn.execute(f"SELECT oid, raw FROM objects WHERE type IN ({placeholders(len(kinds))}) "
                        "ORDER BY oid", kinds).fetchall()
    if not held:
        return None
    now_ms = time.time_ns() // 1_000_000
    return Batch(conn, Workspace(meta["workspace"], meta["root"]), now_ms), held


def _v13(conn: sqlite3.Connection) -> None:
    """Version 13: the reconciliation index per stream (storage.items), so sync reconciles one
    stream at a time: newest first, and only the streams a member keeps on this computer. Ids a
    block refused before knew no stream: they leave the set, and when sync brings them again
    the block refuses them again, with their stream."""
    if "stream" not in {row[1] for row in conn.execute("PRAGMA table_info(refused)")}:
        conn.execute("DROP TABLE IF EXISTS refused")
        from . import _moderation

        _script(_moderation.REFUSED_SCHEMA)(conn)
    _rebuild_items(conn)


# Version 14: objects are found by stream through the item index (storage.items), which sync
# keeps anyway; an index of objects by stream too cost every stored object a second insert (a
# joiner's writer spent 6 us an object less without it, at 1M posts).
_V14 = "DROP INDEX IF EXISTS objects_by_stream"

# Version 15: authority follows signed objects (core.membership "Authority"). The root's admin
# grants and revocations join the membership objects, `admins` becomes the view's (removals and
# revocations end grants), `admin_kept` lists what the end of a former admin's grant kept, and
# a tombstone names its post's author, so a delete that stops counting can be lifted.
_V15 = """
CREATE TABLE IF NOT EXISTS admin_kept (id BLOB PRIMARY KEY) WITHOUT ROWID;
INSERT OR IGNORE INTO membership (oid) SELECT oid FROM objects
    WHERE type IN ('workspace/admin-grant', 'workspace/admin-revoke')
    AND stream = (SELECT value FROM meta WHERE key = 'workspace')
"""


def _v15(conn: sqlite3.Connection) -> None:
    _script(_V15)(conn)
    if "author" not in {row[1] for row in conn.execute("PRAGMA table_info(tombstones)")}:
        conn.execute("ALTER TABLE tombstones ADD COLUMN author BLOB")
    if found := _held(conn, ("member/remove",)):  # removed admins are admins no more
        from . import _membership

        batch, _ = found
        if changed := _membership.refresh(batch):
            batch.redecide(changed)


def _script(sql: str) -> Callable[[sqlite3.Connection], None]:
    def apply(conn: sqlite3.Connection) -> None:
        for statement in sql.split(";\n"):
            if statement.strip():
                conn.execute(statement)
    return apply


MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [_script(_V1), _script(_V2), _v3, _v4, _script(_V5),
                                                      _script(_V6), _v7, _v8, _v9, _v10,
                                                      _v11, _v12, _v13, _script(_V14), _v15]
SCHEMA_VERSION = len(MIGRATIONS)


def check_version(conn: sqlite3.Connection, path: object) -> None:
    """Raise SchemaError for a file this code must not touch: not a Hearth replica, or newer."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"this replica was written by a newer Hearth (schema {version}, this version "
            f"reads up to {SCHEMA_VERSION}); upgrade Hearth to open it")
    ours = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'meta'").fetchone()
    if version == 0 or not ours:
        raise SchemaError(f"{path} is not a Hearth replica")


def migrate(conn: sqlite3.Connection, target: int = SCHEMA_VERSION) -> int:
    """Bring the database to `target`, one transaction per step; return the version reached."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise SchemaError(
            f"this replica was written by a newer Hearth (schema {version}, this version "
            f"reads up to {SCHEMA_VERSION}); upgrade Hearth to open it"
        )
    while version < target:
        conn.execute("BEGIN IMMEDIATE")
        try:
            # Re-read under the write lock: another process may have migrated meanwhile.
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < target:
                MIGRATIONS[version](conn)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return version
