"""Membership objects in the replica: invites, admissions, removals and sealed workspace keys.

They are few (one per invite, per member and per removal), so storage keeps a list of them,
filled by the one ingest path: objects of these kinds in the workspace stream. Who is a member,
which invite admits and what a removed member's objects count for is core.membership's view of
that list, the same on every computer that holds the same objects, whatever their order.

Storage keeps one consequence of it up to date itself, since every view depends on it: the
objects of removed members that their removal did not keep (`unkept`). Their rows in the chat
views carry HIDDEN_REMOVED, for everyone (moderators too), and documents leave them out
(storage._documents), as if they had never arrived. `removed` and `kept` say which keys are
removed now and which of their objects still count; `refresh` recomputes them whenever a
membership object or an admin grant arrives, and new objects of a removed key are marked as
they are stored (`Batch.mod_bit`).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING

from core.membership import MembershipView
from core.objects import Object, decode_trusted

from ._moderation import HIDDEN_REMOVED as HIDDEN_REMOVED
from ._moderation import Moderator
from ._sql import chunks, placeholders

if TYPE_CHECKING:
    from ._ingest import Batch
    from .replica import Replica

KINDS = frozenset({"invite/create", "invite/revoke", "member/admit", "member/remove",
                   "member/kept", "workspace/key", "workspace/admin-grant",
                   "workspace/admin-revoke"})
# What a removal's effect depends on (a seal of a secret never changes it).
REMOVAL_KINDS = KINDS - {"workspace/key"}

# Tables: storage/migrations/v10.py (membership, removed, kept, unkept), v15.py (admin_kept).


def held(conn: sqlite3.Connection, kinds: frozenset[str] = KINDS) -> list[Object]:
    """Every membership object held (of `kinds`), in the order they were stored."""
    marks = ", ".join("?" * len(kinds))
    rows = conn.execute(
        f"SELECT o.raw FROM membership m JOIN objects o ON o.oid = m.oid "
        f"WHERE o.type IN ({marks}) ORDER BY m.oid", sorted(kinds))
    return [decode_trusted(raw) for (raw,) in rows]


def refresh(batch: Batch) -> set[bytes]:
    """Bring `removed`, `kept`, `unkept`, the rows' HIDDEN_REMOVED, `admins` and `admin_kept`
    in line with the view of the membership objects held (after a batch that stored some);
    returns the keys whose power changed (removed or back, admin or not, kept acts), whose
    policies, roles, hides and deletes the caller decides again."""
    conn = batch.conn
    view = MembershipView.compute(held(conn, REMOVAL_KINDS), batch.ws.root, 0)
    changed = _admins(conn, view)
    now = view.removed
    before = dict(conn.execute("SELECT key, removal FROM removed"))
    kept_now = set().union(*(r.kept for r in now.values())) if now else set()
    kept_before = conn.execute("SELECT COUNT(*) FROM kept").fetchone()[0]
    # Kept ids only ever grow for a removal that stays, so a count tells them apart.
    if {k: r.removal for k, r in now.items()} == before and len(kept_now) == kept_before:
        return changed
    conn.execute("DELETE FROM removed")
    conn.executemany("INSERT INTO removed (key, removal) VALUES (?, ?)",
                     [(k, r.removal) for k, r in now.items()])
    conn.execute("DELETE FROM kept")
    conn.executemany("INSERT INTO kept (id) VALUES (?)", [(i,) for i in kept_now])
    moderator = Moderator(batch)
    for key in set(before) | set(now):
        conn.execute("DELETE FROM unkept WHERE oid IN (SELECT oid FROM objects WHERE author = ?)",
                     (key,))
        if key in now:
            conn.execute("INSERT INTO unkept (oid) SELECT oid FROM objects WHERE author = ? "
                         "AND id NOT IN (SELECT id FROM kept)", (key,))
        moderator.removal_bits(key)
    batch.removed_changed()
    return changed | set(before) | set(now)


def _admins(conn: sqlite3.Connection, view: MembershipView) -> set[bytes]:
    """Make `admins` and `admin_kept` the view's; the keys whose power changed."""
    before = dict(conn.execute("SELECT key, grant_id FROM admins"))
    kept_before = {row[0] for row in conn.execute("SELECT id FROM admin_kept")}
    changed = set(before) ^ set(view.admins)
    if kept_before != view.admin_kept:
        gone_or_new = kept_before ^ view.admin_kept
        changed |= {row[0] for part in chunks(sorted(gone_or_new)) for row in conn.execute(
            f"SELECT DISTINCT author FROM objects WHERE id IN ({placeholders(len(part))})",
            part)}
        conn.execute("DELETE FROM admin_kept")
        conn.executemany("INSERT INTO admin_kept (id) VALUES (?)",
                         [(i,) for i in view.admin_kept])
    if set(before) != set(view.admins):
        conn.execute("DELETE FROM admins")
        conn.executemany("INSERT INTO admins (key, grant_id) VALUES (?, ?)",
                         [(key, before.get(key)) for key in view.admins])
    return changed


def may_change_removals(conn: sqlite3.Connection, objects: Iterable[Object]) -> bool:
    """Whether a batch could change who is removed or holds power: it holds a removal, a kept
    list or an admin grant or revocation, or an admission or invite while some removal is held
    (one may start to count)."""
    kinds = {o.type for o in objects} & REMOVAL_KINDS
    if kinds & {"member/remove", "member/kept", "workspace/admin-grant",
                "workspace/admin-revoke"}:
        return True
    if not kinds:
        return False
    return conn.execute(
        "SELECT 1 FROM membership m JOIN objects o ON o.oid = m.oid "
        "WHERE o.type = 'member/remove' LIMIT 1").fetchone() is not None


def removed_keys(conn: sqlite3.Connection) -> set[bytes]:
    return {row[0] for row in conn.execute("SELECT key FROM removed")}


def is_kept(conn: sqlite3.Connection, object_id: bytes) -> bool:
    return conn.execute("SELECT 1 FROM kept WHERE id = ?", (object_id,)).fetchone() is not None


def record(conn: sqlite3.Connection, workspace: bytes, objects: Iterable[Object],
           oids: dict[bytes, int]) -> bool:
    """Keep the membership objects among `objects` (those in the workspace stream); whether
    there were any."""
    rows = [(oids[o.id],) for o in objects if o.type in KINDS and o.stream == workspace]
    conn.executemany("INSERT OR IGNORE INTO membership (oid) VALUES (?)", rows)
    return bool(rows)


class MembershipStore:
    """`Replica.membership`: the membership objects held."""

    def __init__(self, replica: Replica):
        self._replica = replica

    def objects(self, kinds: frozenset[str] = KINDS) -> list[Object]:
        """Every membership object held (of `kinds`), in the order they were stored."""
        return held(self._replica.conn, kinds)

    def removed(self) -> set[bytes]:
        """The keys removed from the workspace now."""
        return removed_keys(self._replica.conn)

    def version(self) -> tuple[int, int]:
        """Changes whenever a membership object is stored: a view computed at one version
        holds until the next."""
        count, last = self._replica.conn.execute(
            "SELECT COUNT(*), MAX(oid) FROM membership").fetchone()
        return count, last or 0
