"""Attached files in the replica (docs/ARCHITECTURE.md "Attachments"): which messages name
which file, and this computer's state of each file. The chunks themselves are in the
ChunkStore beside the replica (storage/chunks.py).

- `file_refs`: one row per file a message names: (message, index) -> the file's list id and
  claimed size. Public messages are listed by ingest; a private channel's are listed by the
  app when it opens them (the descriptor is in the sealed box, so nothing of it but the list
  id and size is stored here, never the name). A message's rows go with it when it is
  deleted (ON DELETE CASCADE).
- `files`: one row per list id named: whether every chunk is here (`complete`, what the
  app last checked), whether I attached it (`mine`), `pinned`, when it was last opened (ms),
  and whether the quota evicted it (`evicted`: not fetched again on its own). Its `size` is
  the one the chunks were last found consistent with (until then the first one claimed):
  each message claims its own, and no message decides it for the others.

A file no message names any more loses its chunks (`FileStore.drop_unnamed`), unless
another message still names it: identical files in one scope have the same list id. No
chunk goes while the list of another file held here names it (`FileStore.drop_files`): a
member may post a list made of chunks of my upload.
"""

from __future__ import annotations

import builtins
import shutil
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.attachments import ID_SIZE, parse_list
from core.objects import Object, decode_trusted

from ._sql import chunks, placeholders
from .records import Attachment

if TYPE_CHECKING:
    from .replica import Replica

OPENED = "opened"  # the folder beside the replica that opened files are decrypted into

# Tables: storage/migrations/v12.py (files, file_refs).


@dataclass(frozen=True, slots=True)
class FileState:
    """One file's row of `files`."""

    list: bytes
    size: int
    complete: bool
    mine: bool
    pinned: bool
    opened: int  # ms; 0 when never opened here
    evicted: bool


def _state(row: tuple) -> FileState:
    return FileState(row[0], row[1], bool(row[2]), bool(row[3]), bool(row[4]), row[5],
                     bool(row[6]))


def _add(conn: sqlite3.Connection, rows: Sequence[tuple]) -> None:
    """Rows (oid, idx, message, list, size, ts, private) of file_refs, and their files."""
    conn.executemany(
        "INSERT OR IGNORE INTO file_refs (oid, idx, message, list, size, ts, private) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)", rows)
    conn.executemany("INSERT OR IGNORE INTO files (list, size) VALUES (?, ?)",
                     [(row[3], row[4]) for row in rows])


def record(conn: sqlite3.Connection, messages: Iterable[tuple[int, Object]]) -> None:
    """List the files public messages (oid, object) name."""
    _add(conn, [(oid, n, obj.id, d["list"], d["size"], obj.ts, None)
                for oid, obj in messages for n, d in enumerate(obj.body.get("files", ()))])


def named_by(conn: sqlite3.Connection, oid: int) -> list[bytes]:
    """The list ids a stored message names (before it is purged)."""
    return [row[0] for row in conn.execute("SELECT list FROM file_refs WHERE oid = ?", (oid,))]


def attachments(conn: sqlite3.Connection, ids: Sequence[bytes]) -> dict[bytes, tuple]:
    """The files of these public messages, by message id, for Message.files."""
    named: dict[bytes, dict[bytes, tuple[bool, bool, bool]]] = {}
    for part in chunks(ids):
        for message, lst, complete, mine, pinned in conn.execute(
                "SELECT r.message, r.list, f.complete, f.mine, f.pinned FROM file_refs r "
                "JOIN files f ON f.list = r.list "
                f"WHERE r.message IN ({placeholders(len(part))}) AND r.private IS NULL", part):
            named.setdefault(message, {})[lst] = (bool(complete), bool(mine), bool(pinned))
    out: dict[bytes, tuple] = {}
    if not named:
        return out
    wanted = list(named)
    for part in chunks(wanted):
        for oid, raw in conn.execute(
                f"SELECT id, raw FROM objects WHERE id IN ({placeholders(len(part))})", part):
            states = named[oid]
            out[oid] = tuple(attachment(d, *states.get(d["list"], ()))
                             for d in decode_trusted(raw).body.get("files", ()))
    return out


def listed(data: bytes) -> list[bytes]:
    """The ids a list chunk holds, whatever size it is claimed for (for keeping chunks)."""
    return [data[i:i + ID_SIZE] for i in range(0, len(data) - ID_SIZE + 1, ID_SIZE)]


def attachment(d: dict, complete: bool = False, mine: bool = False,
               pinned: bool = False) -> Attachment:
    """An Attachment from a (checked) descriptor and the file's state here."""
    return Attachment(d["name"], d["size"], d["type"], d["list"], d["w"], d["h"], d["thumb"],
                      complete, mine, pinned)


class FileStore:
    """`Replica.files`: the files messages name and their state on this computer."""

    def __init__(self, replica: Replica):
        self._replica = replica

    def _write(self):
        return self._replica._write()

    def record_private(self, channel: bytes, post: Object, descriptors: Sequence[dict]) -> None:
        """List the files a private channel's post names (the app opened it)."""
        if self._replica.conn.execute("SELECT 1 FROM file_refs WHERE message = ? LIMIT 1",
                                      (post.id,)).fetchone():
            return
        with self._write() as conn:
            row = conn.execute("SELECT oid FROM objects WHERE id = ?", (post.id,)).fetchone()
            if row is None:
                return
            _add(conn, [(row[0], n, post.id, d["list"], d["size"], post.ts, channel)
                        for n, d in enumerate(descriptors)])

    def state(self, list_id: bytes) -> FileState | None:
        row = self._replica.conn.execute(
            "SELECT list, size, complete, mine, pinned, opened, evicted FROM files "
            "WHERE list = ?", (list_id,)).fetchone()
        return _state(row) if row else None

    def states(self, lists: Iterable[bytes]) -> dict[bytes, FileState]:
        out = {}
        for lst in set(lists):
            found = self.state(lst)
            if found is not None:
                out[lst] = found
        return out

    def all(self) -> list[FileState]:
        rows = self._replica.conn.execute(
            "SELECT list, size, complete, mine, pinned, opened, evicted FROM files "
            "ORDER BY list").fetchall()
        return [_state(r) for r in rows]

    def ref(self, message: bytes, index: int) -> tuple[bytes, int] | None:
        """(list id, size) of file `index` of a message, if listed."""
        row = self._replica.conn.execute(
            "SELECT list, size FROM file_refs WHERE message = ? AND idx = ?",
            (message, index)).fetchone()
        return (row[0], row[1]) if row else None

    def sizes(self, list_id: bytes) -> list[int]:
        """The distinct sizes messages held here claim for the file, newest claim first
        (none: no message names it any more)."""
        return [row[0] for row in self._replica.conn.execute(
            "SELECT size FROM file_refs WHERE list = ? GROUP BY size ORDER BY MAX(ts) DESC, "
            "size", (list_id,))]

    def set(self, list_id: bytes, **flags: int) -> None:
        """Set columns of a file's row (size, complete, mine, pinned, opened, evicted)."""
        allowed = {"size", "complete", "mine", "pinned", "opened", "evicted"}
        if not flags or set(flags) - allowed:
            raise ValueError(f"file flags are {sorted(allowed)}")
        sets = ", ".join(f"{name} = ?" for name in flags)
        with self._write() as conn:
            conn.execute(f"UPDATE files SET {sets} WHERE list = ?",
                         (*(int(v) for v in flags.values()), list_id))

    def wanted(self, limit: int, member: bytes, private: Sequence[bytes]) -> list:
        """(list, size, ts) of files not complete here, not evicted, at most `limit` bytes,
        named by a visible message of a public channel `member` is in or of the private
        channels given; newest first, each (list, size) claimed once."""
        conn = self._replica.conn
        base = ("SELECT r.list, r.size, MAX(r.ts) FROM file_refs r JOIN files f "
                "ON f.list = r.list WHERE f.complete = 0 AND f.evicted = 0 AND r.size <= ? ")
        # From the few files not complete to their messages, never a walk of the messages.
        rows: list[tuple[bytes, int, int]] = conn.execute(
            "SELECT r.list, r.size, MAX(r.ts) FROM files f JOIN file_refs r ON r.list = f.list "
            "JOIN messages m ON m.oid = r.oid JOIN members p ON p.channel = m.channel "
            "AND p.author = ? AND p.member = 1 WHERE f.complete = 0 AND f.evicted = 0 "
            "AND r.size <= ? AND r.private IS NULL AND m.hidden = 0 GROUP BY r.list, r.size",
            (member, limit)).fetchall()
        for part in chunks(list(private)):
            rows += conn.execute(
                base + f"AND r.private IN ({placeholders(len(part))}) "
                "AND r.oid NOT IN (SELECT oid FROM unkept) GROUP BY r.list, r.size",
                (limit, *part)).fetchall()
        newest: dict[tuple[bytes, int], tuple[bytes, int, int]] = {}
        for lst, size, ts in rows:
            if (lst, size) not in newest or ts > newest[lst, size][2]:
                newest[lst, size] = (lst, size, ts)
        return sorted(newest.values(), key=lambda row: (-row[2], row[0], row[1]))

    def newest_refs(self) -> dict[bytes, int]:
        """list id -> the time of the newest message naming it."""
        return dict(self._replica.conn.execute(
            "SELECT list, MAX(ts) FROM file_refs GROUP BY list").fetchall())

    def chunk_ids(self, list_id: bytes, size: int) -> list[bytes] | None:
        """The chunk ids of a file, from its list chunk when held; AttachmentError when the
        list does not match the size."""
        data = self._replica.chunks.read(list_id)
        if data is None:
            return None
        return parse_list(data, size)

    def held_bytes(self, state: FileState) -> int:
        """The bytes of a file's chunks held here (its list chunk too)."""
        store = self._replica.chunks
        data = store.read(state.list)
        if data is None:
            return 0
        return len(data) + sum(store.size(cid) for cid in set(listed(data)))

    def named_elsewhere(self, cids: Iterable[bytes],
                        besides: Iterable[bytes] = ()) -> builtins.set[bytes]:
        """Those of `cids` that a file held here (but those of `besides`) has as its list
        chunk or names in it."""
        wanted, besides = set(cids), set(besides)
        store, found = self._replica.chunks, builtins.set[bytes]()
        for (lst,) in self._replica.conn.execute("SELECT list FROM files").fetchall():
            if not wanted - found:
                break
            if lst in besides:
                continue
            data = store.read(lst)
            if data is not None:
                found |= wanted & {lst, *listed(data)}
        return found

    def drop_files(self, lists: Iterable[bytes]) -> int:
        """Remove these files' chunks (list chunks last) and opened copies, but any chunk a
        file held here besides them names; the bytes freed."""
        lists = list(dict.fromkeys(lists))
        store = self._replica.chunks
        ids: dict[bytes, None] = {}
        for lst in lists:
            data = store.read(lst)
            ids.update(dict.fromkeys(listed(data) if data is not None else ()))
        kept = self.named_elsewhere([*ids, *lists], besides=lists)
        freed = store.remove(cid for cid in ids if cid not in kept and cid not in lists)
        freed += store.remove(lst for lst in lists if lst not in kept)
        for lst in lists:
            shutil.rmtree(self._replica.path.parent / OPENED / lst.hex()[:16],
                          ignore_errors=True)
        return freed

    def forget(self, list_id: bytes) -> int:
        """A file no message names any more: its row and its chunks go (as drop_files)."""
        with self._write() as conn:
            conn.execute("DELETE FROM files WHERE list = ?", (list_id,))
        return self.drop_files([list_id])

    def drop_unnamed(self, lists: Iterable[bytes]) -> int:
        """Forget those of these files no message held names any more, and their chunks."""
        lists = list(set(lists))
        gone: list[bytes] = []
        with self._write() as conn:
            for part in chunks(lists):
                gone += [row[0] for row in conn.execute(
                    f"DELETE FROM files WHERE list IN ({placeholders(len(part))}) AND NOT "
                    "EXISTS (SELECT 1 FROM file_refs r WHERE r.list = files.list) "
                    "RETURNING list", part).fetchall()]
        return self.drop_files(gone) if gone else 0
