"""The relay's own SQLite store: spaces (registered workspaces) and the envelopes they hold.

A space is named by core.relay_seal.space_id and holds its current epoch, the public half of
that epoch's token, the owners (admins' keys) who may move it, its quota and what it holds.
Envelopes are opaque to the relay (core.relay_seal): (opaque id, hour bucket, box), with the
relay's own time of storing. Only the current epoch's envelopes are kept: moving a space to a
new epoch drops the old ones (members hold every object and upload again under the new key).

Chunks of attached files are held beside the envelopes (named by core.relay_seal's
`chunk_name`, their bytes ciphertext already) and count towards the same quota.

Handovers: when a space moves to a new epoch, its owner leaves, for the holders of each older
epoch's token, envelopes sealed under that epoch's keys (the new epoch's `workspace/key`
objects, each sealed to one member's identity): a member who missed the rotation proves the
old token, gets them, and comes back under the new epoch; a removed member gets seals it
cannot open.

Retention: an envelope or chunk stored more than `retention_s` ago goes; past the quota the
oldest chunks go first (a file is big, and its poster still holds it), then the oldest
buckets, and the space's `floor` (the bucket below which nothing is taken any more) rises, so
members do not upload again what would be evicted at once.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from core.encoding import dumps, loads
from core.relay_seal import Envelope

DEFAULT_QUOTA = 1 << 30
DEFAULT_RETENTION_S = 90 * 86400
ROW_OVERHEAD = 80  # bytes an envelope costs besides its box (ids, bucket, time, index)

SCHEMA = """
CREATE TABLE IF NOT EXISTS spaces (
    space BLOB PRIMARY KEY, epoch INTEGER NOT NULL, token BLOB NOT NULL, owners BLOB NOT NULL,
    quota INTEGER NOT NULL, floor INTEGER NOT NULL DEFAULT 0, count INTEGER NOT NULL DEFAULT 0,
    bytes INTEGER NOT NULL DEFAULT 0, created INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS envelopes (
    space BLOB NOT NULL, opaque BLOB NOT NULL, bucket INTEGER NOT NULL,
    stored INTEGER NOT NULL, box BLOB NOT NULL, PRIMARY KEY (space, opaque)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS envelopes_by_bucket ON envelopes (space, bucket, stored);
CREATE INDEX IF NOT EXISTS envelopes_by_time ON envelopes (stored);
CREATE TABLE IF NOT EXISTS chunks (
    space BLOB NOT NULL, name BLOB NOT NULL, seq INTEGER NOT NULL, stored INTEGER NOT NULL,
    data BLOB NOT NULL, PRIMARY KEY (space, name)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS chunks_by_age ON chunks (space, seq);
CREATE INDEX IF NOT EXISTS chunks_by_time ON chunks (stored);
CREATE TABLE IF NOT EXISTS handovers (
    space BLOB NOT NULL, token BLOB NOT NULL, epoch INTEGER NOT NULL, envs BLOB NOT NULL,
    PRIMARY KEY (space, token)
) WITHOUT ROWID;
"""
MAX_HANDOVERS = 8  # older epochs' tokens a space keeps a handover for (the newest ones)


@dataclass(frozen=True)
class Space:
    space: bytes
    epoch: int
    token: bytes
    owners: frozenset[bytes]
    quota: int
    floor: int
    count: int
    bytes: int
    created: int


def _space(row: tuple) -> Space:
    return Space(row[0], row[1], row[2], frozenset(loads(row[3])), *row[4:])


class RelayStore:
    """One SQLite file (WAL), used from the relay's event loop only."""

    def __init__(self, path: str | Path, *, quota: int = DEFAULT_QUOTA,
                 retention_s: int = DEFAULT_RETENTION_S,
                 clock: Callable[[], float] = time.time):
        self.quota = quota
        self.retention_s = retention_s
        self._clock = clock
        self.conn = sqlite3.connect(str(path), isolation_level=None)
        self.conn.execute("PRAGMA journal_mode = WAL")
        self.conn.execute("PRAGMA synchronous = NORMAL")
        self.conn.executescript(SCHEMA)
        # Per space, a number that changes whenever its envelopes do (caches key on it).
        self._versions: dict[bytes, int] = {}

    def close(self) -> None:
        self.conn.close()

    def version(self, space: bytes) -> int:
        """Changes whenever `space`'s envelopes do (in this process)."""
        return self._versions.get(space, 0)

    def _changed(self, space: bytes) -> None:
        self._versions[space] = self._versions.get(space, 0) + 1

    def _now(self) -> int:
        return int(self._clock())

    # Spaces -------------------------------------------------------------------------------------

    def space(self, space: bytes) -> Space | None:
        row = self.conn.execute("SELECT * FROM spaces WHERE space = ?", (space,)).fetchone()
        return _space(row) if row else None

    def spaces(self) -> list[Space]:
        return [_space(row) for row in self.conn.execute("SELECT * FROM spaces ORDER BY created")]

    def register(self, space: bytes, token: bytes, epoch: int, owners: Iterable[bytes]) -> Space:
        """Create a space, or set its token, epoch and owners (a newer epoch drops its old
        envelopes: they were sealed under keys the new members' token does not prove)."""
        owned = dumps(sorted(set(owners)))
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            old = self.space(space)
            if old is None:
                self.conn.execute(
                    "INSERT INTO spaces (space, epoch, token, owners, quota, created) "
                    "VALUES (?, ?, ?, ?, ?, ?)", (space, epoch, token, owned, self.quota,
                                                  self._now()))
            else:
                if epoch != old.epoch or token != old.token:
                    self.conn.execute("DELETE FROM envelopes WHERE space = ?", (space,))
                    self.conn.execute("DELETE FROM chunks WHERE space = ?", (space,))
                    self.conn.execute("UPDATE spaces SET count = 0, bytes = 0, floor = 0 "
                                      "WHERE space = ?", (space,))
                    self._changed(space)
                self.conn.execute("UPDATE spaces SET epoch = ?, token = ?, owners = ? "
                                  "WHERE space = ?", (epoch, token, owned, space))
        found = self.space(space)
        assert found is not None
        return found

    def put_handover(self, space: bytes, token: bytes, epoch: int, envs: bytes) -> None:
        """Keep `envs` (encoded envelopes) for holders of the older epoch's `token`; a space
        keeps the MAX_HANDOVERS newest epochs' ones."""
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            self.conn.execute("INSERT OR REPLACE INTO handovers VALUES (?, ?, ?, ?)",
                              (space, token, epoch, envs))
            self.conn.execute(
                "DELETE FROM handovers WHERE space = ? AND token NOT IN (SELECT token FROM "
                "handovers WHERE space = ? ORDER BY epoch DESC LIMIT ?)",
                (space, space, MAX_HANDOVERS))

    def handovers(self, space: bytes) -> list[tuple[bytes, bytes]]:
        """(token, encoded envelopes) of each older epoch's handover, newest first."""
        return self.conn.execute("SELECT token, envs FROM handovers WHERE space = ? "
                                 "ORDER BY epoch DESC", (space,)).fetchall()

    # Envelopes ----------------------------------------------------------------------------------

    def items(self, space: bytes) -> list[tuple[int, bytes]]:
        """(bucket, opaque id) of every envelope held for `space`."""
        return self.conn.execute(
            "SELECT bucket, opaque FROM envelopes WHERE space = ?", (space,)).fetchall()

    def get(self, space: bytes, opaques: list[bytes]) -> list[Envelope]:
        out: list[Envelope] = []
        for start in range(0, len(opaques), 500):
            part = opaques[start:start + 500]
            marks = ", ".join("?" * len(part))
            out += [Envelope(*row) for row in self.conn.execute(
                f"SELECT opaque, bucket, box FROM envelopes WHERE space = ? AND opaque IN "
                f"({marks})", (space, *part))]
        return out

    def put(self, space: bytes, envelopes: list[Envelope]) -> list[Envelope]:
        """Store what is new (below the floor: nothing), then keep the space within its quota;
        the envelopes stored and still held."""
        now = self._now()
        added: list[Envelope] = []
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            held = self.space(space)
            if held is None:
                return []
            fresh = {env.opaque: env for env in envelopes if env.bucket >= held.floor}
            for held_opaque in self._held(space, list(fresh)):
                del fresh[held_opaque]
            added = list(fresh.values())
            self.conn.executemany(
                "INSERT INTO envelopes (space, opaque, bucket, stored, box) VALUES (?, ?, ?, ?, ?)",
                [(space, env.opaque, env.bucket, now, env.box) for env in added])
            if added:
                size = sum(len(env.box) + ROW_OVERHEAD for env in added)
                self.conn.execute("UPDATE spaces SET count = count + ?, bytes = bytes + ? "
                                  "WHERE space = ?", (len(added), size, space))
                self._changed(space)
                floor = self._evict(space)
                added = [env for env in added if env.bucket >= floor]
        return added

    def put_chunk(self, space: bytes, name: bytes, data: bytes) -> bool:
        """Store a chunk (whether it is new), then keep the space within its quota."""
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            if self.space(space) is None:
                return False
            cursor = self.conn.execute(
                "INSERT OR IGNORE INTO chunks (space, name, seq, stored, data) VALUES (?, ?, "
                "(SELECT coalesce(max(seq), 0) + 1 FROM chunks WHERE space = ?), ?, ?)",
                (space, name, space, self._now(), data))
            if not cursor.rowcount:
                return False
            self.conn.execute("UPDATE spaces SET count = count + 1, bytes = bytes + ? "
                              "WHERE space = ?", (len(data) + ROW_OVERHEAD, space))
            self._evict(space)
        return self.conn.execute("SELECT 1 FROM chunks WHERE space = ? AND name = ?",
                                 (space, name)).fetchone() is not None

    def chunks_held(self, space: bytes, names: list[bytes]) -> list[bytes]:
        return self._present("chunks", "name", space, names)

    def chunk(self, space: bytes, name: bytes) -> bytes | None:
        row = self.conn.execute("SELECT data FROM chunks WHERE space = ? AND name = ?",
                                (space, name)).fetchone()
        return row[0] if row else None

    def _held(self, space: bytes, opaques: list[bytes]) -> list[bytes]:
        return self._present("envelopes", "opaque", space, opaques)

    def _present(self, table: str, column: str, space: bytes, values: list[bytes]) -> list[bytes]:
        """Which of `values` the space's `table` holds in `column` (asked 500 at a time, within
        SQLite's bound parameters)."""
        out: list[bytes] = []
        for start in range(0, len(values), 500):
            part = values[start:start + 500]
            marks = ", ".join("?" * len(part))
            out += [row[0] for row in self.conn.execute(
                f"SELECT {column} FROM {table} WHERE space = ? AND {column} IN ({marks})",
                (space, *part))]
        return out

    def _evict(self, space: bytes) -> int:
        """The oldest chunks, then the oldest envelopes, past the quota go; the new floor."""
        held = self.space(space)
        assert held is not None
        over, floor = held.bytes - held.quota, held.floor
        if over <= 0:
            return floor
        gone = count = 0
        doomed: list[bytes] = []
        for name, size in self.conn.execute(
                "SELECT name, length(data) FROM chunks WHERE space = ? ORDER BY seq",
                (space,)):
            if gone >= over:
                break
            doomed.append(name)
            gone, count = gone + size + ROW_OVERHEAD, count + 1
        self.conn.executemany("DELETE FROM chunks WHERE space = ? AND name = ?",
                              [(space, name) for name in doomed])
        doomed = []
        for opaque, bucket, size in self.conn.execute(
                "SELECT opaque, bucket, length(box) FROM envelopes WHERE space = ? "
                "ORDER BY bucket, stored, opaque", (space,)):
            if gone >= over:
                break
            doomed.append(opaque)
            gone, count = gone + size + ROW_OVERHEAD, count + 1
            floor = max(floor, bucket + 1)
        self.conn.executemany("DELETE FROM envelopes WHERE space = ? AND opaque = ?",
                              [(space, opaque) for opaque in doomed])
        # Whatever remains below the new floor stays until retention takes it.
        self.conn.execute("UPDATE spaces SET count = count - ?, bytes = bytes - ?, floor = ? "
                          "WHERE space = ?", (count, gone, floor, space))
        if doomed:
            self._changed(space)
        return floor

    def prune(self) -> int:
        """Envelopes stored longer ago than the retention go; how many."""
        cutoff = self._now() - self.retention_s
        with self.conn:
            self.conn.execute("BEGIN IMMEDIATE")
            rows = self.conn.execute(
                "SELECT space, count(*), sum(length(box)) FROM envelopes WHERE stored < ? "
                "GROUP BY space", (cutoff,)).fetchall()
            for space, count, size in rows:
                self.conn.execute("UPDATE spaces SET count = count - ?, bytes = bytes - ? "
                                  "WHERE space = ?", (count, size + count * ROW_OVERHEAD, space))
            self.conn.execute("DELETE FROM envelopes WHERE stored < ?", (cutoff,))
            chunks = self.conn.execute(
                "SELECT space, count(*), sum(length(data)) FROM chunks WHERE stored < ? "
                "GROUP BY space", (cutoff,)).fetchall()
            for space, count, size in chunks:
                self.conn.execute("UPDATE spaces SET count = count - ?, bytes = bytes - ? "
                                  "WHERE space = ?", (count, size + count * ROW_OVERHEAD, space))
            self.conn.execute("DELETE FROM chunks WHERE stored < ?", (cutoff,))
        for space, _, _ in rows:
            self._changed(space)
        return sum(row[1] for row in rows) + sum(row[1] for row in chunks)
