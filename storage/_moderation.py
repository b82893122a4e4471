"""Moderation in the replica: moderator roles, hides, the moderation log, and local blocks.

The synced part is a view kept by the one ingest path (storage._ingest calls `Moderator`), a
function of the set of objects held, as every chat view is (docs/ARCHITECTURE.md "Who may do
what", cable's moderation roles):
- A `mod/role` in the workspace stream sets a key's role in one channel. Per (channel, key)
  the latest by (ts, id) among those admins wrote counts (core.containers.LWWRegister's rule,
  with the admins as its authorized keys).
- A `mod/hide` in a channel's stream hides (or, with `hidden` false, shows again) the post
  whose id is `target`, or every post of the member whose key is `target`, in that channel. It
  counts while its author is an admin or a moderator of the channel now: a role taken away
  takes that moderator's actions with it, as in cable, and a grant makes earlier ones count,
  as admin grants do. Per (channel, target) the latest counting action by (ts, id) decides
  (an LWW register again); one dated beyond the horizon waits for its time.
- `mod_hidden` holds the (channel, target) pairs hidden now, and rows of messages, state,
  edits and reactions carry HIDDEN_MOD while their id or author is one of them (new rows get
  it as ingest stores them: Batch.mod_bit): the views leave them out, and a moderator's read
  shows them marked.

The local part never syncs: `blocked` keys, whose new objects ingest refuses and whose rows
carry HIDDEN_BLOCKED, so nothing of theirs is shown on this computer (`Replica.moderation`).
The ids it refused stay in the reconciliation set (`refused`, storage.items) without their
objects, so peers stop offering them at every round; a peer that asks for one is answered
without it, as for any id no longer held. Unblocking takes them out, and sync brings them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from core import kinds
from core.objects import Object, decode_trusted

from . import _conversation, items
from ._sql import admin_act, chunks, placeholders
from .records import BlockedKey, ModAction

if TYPE_CHECKING:
    from ._ingest import Batch
    from .replica import Replica

HIDDEN_MOD = 4  # a moderator hid it (the post, or its author in the channel)
HIDDEN_BLOCKED = 8  # its author is blocked on this computer
HIDDEN_REMOVED = 16  # its author was removed, and the removal did not keep it (_membership)
MODERATOR = "moderator"
_POST_TABLES = ("messages", "state", "edits", "reactions")

# Tables: storage/migrations/v09.py (roles, actions, hidden, blocked), v13.py (refused).


def refuse(conn: sqlite3.Connection, objects: Sequence[Object], workspace: bytes) -> None:
    """Objects a block refused: their ids join the reconciliation set (not their content)."""
    fresh = []
    for obj in objects:
        klass = kinds.stream_class(obj.type, obj.stream, workspace)
        if conn.execute("INSERT OR IGNORE INTO refused (id, key, ts, stream, class) "
                        "VALUES (?, ?, ?, ?, ?)",
                        (obj.id, obj.author, obj.ts, obj.stream, klass)).rowcount:
            fresh.append((obj.stream, obj.ts, obj.id, klass))
    items.add_items(conn, fresh)


def unrefuse(conn: sqlite3.Connection, key: bytes) -> None:
    """`key` is unblocked: the ids refused from it leave the set, so sync brings them."""
    rows = conn.execute("DELETE FROM refused WHERE key = ? RETURNING stream, ts, id",
                        (key,)).fetchall()
    items.remove_items(conn, rows)

_ROLE = (f"SELECT role FROM mod_roles WHERE channel = ? AND key = ? AND {admin_act()} "
         "ORDER BY ts DESC, id DESC LIMIT 1")


def is_moderator(conn: sqlite3.Connection, channel: str, key: bytes) -> bool:
    """Whether `key` moderates `channel` (a channel key) now: an admin, or a moderator by the
    latest role an admin gave it there, and not removed (a removal ends every role)."""
    if conn.execute("SELECT 1 FROM admins WHERE key = ?", (key,)).fetchone():
        return True
    if conn.execute("SELECT 1 FROM removed WHERE key = ?", (key,)).fetchone():
        return False
    row = conn.execute(_ROLE, (channel, key)).fetchone()
    return row is not None and row[0] == MODERATOR


class Moderator:
    """The moderation view's upkeep inside one ingest batch (storage._ingest.Batch)."""

    def __init__(self, batch: Batch):
        self.batch = batch
        self.conn = batch.conn
        self._roles: dict[tuple[str, bytes], bool] = {}

    def counts(self, channel: str, author: bytes, action: bytes) -> bool:
        """Whether an action of `author`'s counts in `channel`: with an admin's power, or by
        the latest role an admin gave them there, unless their removal did not keep it."""
        if self.batch.acts_as_admin(author, action):
            return True
        if self.batch.removed_bit(action, author):
            return False
        if (channel, author) not in self._roles:
            row = self.conn.execute(_ROLE, (channel, author)).fetchone()
            self._roles[channel, author] = row is not None and row[0] == MODERATOR
        return self._roles[channel, author]

    # New objects --------------------------------------------------------------------------

    def roles(self, objects: Sequence[Object], oids: dict[bytes, int]) -> set[tuple]:
        """Store the roles in the workspace stream; returns the (channel, key) pairs whose
        role an admin may have changed."""
        rows, changed = [], set()
        for obj in objects:
            if obj.stream != self.batch.ws.id:
                continue
            channel, body = kinds.channel_key(obj.body["channel"]), obj.body
            rows.append((oids[obj.id], obj.id, channel, body["key"], obj.author, obj.ts,
                         body["role"], body["reason"]))
            if obj.author in self.batch.admins:
                changed.add((channel, body["key"]))
        self.conn.executemany(
            "INSERT INTO mod_roles (oid, id, channel, key, author, ts, role, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)
        if changed:
            self._roles.clear()
        return changed

    def actions(self, objects: Sequence[Object], oids: dict[bytes, int]) -> set[tuple]:
        """Store the hides in their channel's stream; returns the (channel, target) pairs a
        counting one names."""
        rows, touched = [], set()
        streams: dict[str, bytes] = {}
        for obj in objects:
            name = obj.body["channel"]
            if name not in streams:
                streams[name] = kinds.channel_stream(self.batch.ws.id, name)
            if obj.stream != streams[name]:
                continue
            channel, target = kinds.channel_key(name), obj.body["target"]
            counts = self.counts(channel, obj.author, obj.id)
            future = self.batch.future_bit(obj.ts)
            rows.append((oids[obj.id], obj.id, channel, target, obj.author, obj.ts,
                         int(obj.body["hidden"]), obj.body["reason"], int(counts), future))
            if counts and not future:
                touched.add((channel, target))
        self.conn.executemany(
            "INSERT INTO mod_actions (oid, id, channel, target, author, ts, hide, reason, "
            "counts, hidden) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        return touched

    def granted(self, keys: Iterable[bytes]) -> set[tuple]:
        """Keys whose power changed (admins, removed, or back): their actions count or stop
        counting everywhere, and so do the roles they gave."""
        touched: set[tuple] = set()
        self._roles.clear()
        for key in keys:
            touched |= self.recount(key)
            for channel, member in self.conn.execute(
                    "SELECT DISTINCT channel, key FROM mod_roles WHERE author = ?",
                    (key,)).fetchall():
                touched |= self.recount(member, channel)
        return touched

    def recount(self, key: bytes, channel: str | None = None) -> set[tuple]:
        """Re-decide whether `key`'s actions (in `channel`, or anywhere) count; returns the
        (channel, target) pairs of those that changed."""
        sql = "SELECT oid, id, channel, target, counts FROM mod_actions WHERE author = ?"
        args: list[bytes | str] = [key]
        if channel is not None:
            sql, args = sql + " AND channel = ?", [key, channel]
        touched, updates = set(), []
        for oid, action, where, target, was in self.conn.execute(sql, args).fetchall():
            counts = int(self.counts(where, key, action))
            if counts != was:
                updates.append((counts, oid))
                touched.add((where, target))
        self.conn.executemany("UPDATE mod_actions SET counts = ? WHERE oid = ?", updates)
        return touched

    def mature(self) -> bool:
        """Actions whose date has come count now."""
        rows = self.conn.execute(
            "UPDATE mod_actions SET hidden = hidden & ~2 WHERE hidden & 2 AND ts <= ? "
            "RETURNING channel, target, counts", (self.batch.horizon,)).fetchall()
        self.refresh({(channel, target) for channel, target, counts in rows if counts})
        return bool(rows)

    # What is hidden -----------------------------------------------------------------------

    def refresh(self, pairs: Iterable[tuple[str, bytes]]) -> None:
        """Re-decide each (channel, target): hidden when its latest counting action hides."""
        changed: dict[str, set[bytes]] = {}
        for channel, target in pairs:
            row = self.conn.execute(
                "SELECT hide FROM mod_actions INDEXED BY mod_actions_by_target "
                "WHERE channel = ? AND target = ? AND counts = 1 AND hidden = 0 "
                "ORDER BY ts DESC, id DESC LIMIT 1", (channel, target)).fetchone()
            hide = bool(row and row[0])
            if hide:
                cur = self.conn.execute("INSERT OR IGNORE INTO mod_hidden (channel, target) "
                                        "VALUES (?, ?)", (channel, target))
            else:
                cur = self.conn.execute("DELETE FROM mod_hidden WHERE channel = ? AND "
                                        "target = ?", (channel, target))
            if cur.rowcount:
                changed.setdefault(channel, set()).add(target)
        if changed:
            self.batch.mod_hidden_changed()
        for channel, targets in changed.items():
            self.apply(channel, targets)

    def apply(self, channel: str, targets: set[bytes]) -> None:
        """Set or clear HIDDEN_MOD on the rows of `channel` whose id or author is a target,
        then recompute what they feed (counts, membership, texts, reactions)."""
        hidden = {row[0] for row in self.conn.execute(
            "SELECT target FROM mod_hidden WHERE channel = ?", (channel,))}
        named = sorted(targets)
        # Targets that wrote something are members (the rest are post ids): their rows are
        # found through objects_by_author, a post's through the objects' id index.
        members = [key for key in named if self.conn.execute(
            "SELECT 1 FROM objects WHERE author = ? LIMIT 1", (key,)).fetchone()]
        authors: set[bytes] = set()
        edited: set[bytes] = set()
        reacted: set[tuple[bytes, bytes]] = set()
        for table in _POST_TABLES:
            extra = ", t.target" if table in ("edits", "reactions") else ", NULL"
            select = f"SELECT t.oid, t.id, t.author, t.hidden{extra} FROM objects o " \
                     f"JOIN {table} t ON t.oid = o.oid WHERE t.channel = ? AND "
            rows: set[tuple] = set()
            for part in chunks(named):
                rows.update(self.conn.execute(
                    select + f"o.id IN ({placeholders(len(part))})", (channel, *part)))
            for key in members:
                rows.update(self.conn.execute(select + "o.author = ?", (channel, key)))
            updates = []
            for oid, oid_id, author, bits, target in rows:
                want = HIDDEN_MOD if oid_id in hidden or author in hidden else 0
                if bits & HIDDEN_MOD != want:
                    updates.append(((bits & ~HIDDEN_MOD) | want, oid))
                    if table in ("messages", "state"):
                        authors.add(author)
                    elif table == "edits":
                        edited.add(target)
                    else:
                        reacted.add((target, author))
            self.conn.executemany(f"UPDATE {table} SET hidden = ? WHERE oid = ?", updates)
        self._fed(channel, authors, edited, reacted)

    def _fed(self, channel: str, authors: set[bytes], edited: set[bytes],
             reacted: set[tuple[bytes, bytes]]) -> None:
        if authors:
            self.batch.chat.recount(channel)
            for author in authors:
                self.batch.chat.remember(channel, author)
        _conversation.refresh_texts(self.conn, edited)
        _conversation.recount_reactions(self.conn, reacted)

    # An author's bits: blocking (local), removal (storage._membership) --------------------

    def block_bits(self, key: bytes, blocked: bool) -> None:
        """Set (or clear) HIDDEN_BLOCKED on every row of `key`'s, in every channel."""
        self._author_bits(key, HIDDEN_BLOCKED, str(HIDDEN_BLOCKED if blocked else 0))

    def removal_bits(self, key: bytes) -> None:
        """Set HIDDEN_REMOVED on the rows of `key`'s objects listed in `unkept`, and clear it
        on the others of theirs (their nicknames too)."""
        bit = f"(CASE WHEN oid IN (SELECT oid FROM unkept) THEN {HIDDEN_REMOVED} ELSE 0 END)"
        self._author_bits(key, HIDDEN_REMOVED, bit)
        self.conn.execute(f"UPDATE nicks SET hidden = (hidden & ~{HIDDEN_REMOVED}) | {bit} "
                          f"WHERE author = ?", (key,))

    def _author_bits(self, key: bytes, mask: int, bit: str) -> None:
        """Make the `mask` bit of every row of `key`'s what the SQL expression `bit` says,
        then recount what those rows feed, channel by channel."""
        channels: dict[str, tuple[set, set, set]] = {}
        for table in _POST_TABLES:
            extra = ", target" if table in ("edits", "reactions") else ", NULL"
            for channel, target in self.conn.execute(
                    f"UPDATE {table} SET hidden = (hidden & ~{mask}) | {bit} "
                    f"WHERE oid IN (SELECT oid FROM objects WHERE author = ?) "
                    f"AND (hidden & {mask}) != {bit} RETURNING channel{extra}",
                    (key,)).fetchall():
                authors, edited, reacted = channels.setdefault(channel, (set(), set(), set()))
                if table in ("messages", "state"):
                    authors.add(key)
                elif table == "edits":
                    edited.add(target)
                else:
                    reacted.add((target, key))
        for channel, (authors, edited, reacted) in channels.items():
            self._fed(channel, authors, edited, reacted)


def reindex(batch: Batch, held: list[tuple[int, bytes]]) -> None:
    """Index moderation objects (oid, raw) stored by a version that did not interpret them."""
    objects = [decode_trusted(raw) for _, raw in held]
    oids = {obj.id: oid for obj, (oid, _) in zip(objects, held, strict=True)}
    moderator = Moderator(batch)
    changed = moderator.roles([o for o in objects if o.type == "mod/role"], oids)
    touched = moderator.actions([o for o in objects if o.type == "mod/hide"], oids)
    for channel, key in changed:
        touched |= moderator.recount(key, channel)
    moderator.refresh(touched)


# Reading ------------------------------------------------------------------------------------

def moderators(conn: sqlite3.Connection, channel: str) -> list[bytes]:
    """Keys that are moderators of `channel` by role now (admins are everywhere besides)."""
    rows = conn.execute(
        "SELECT key, role FROM (SELECT key, role, ROW_NUMBER() OVER (PARTITION BY key "
        f"ORDER BY ts DESC, id DESC) AS rn FROM mod_roles WHERE channel = ? AND {admin_act()}) "
        "WHERE rn = 1 AND key NOT IN (SELECT key FROM removed)", (channel,)).fetchall()
    return sorted(key for key, role in rows if role == MODERATOR)


def log(conn: sqlite3.Connection, channel: str | None, limit: int) -> list[ModAction]:
    """The newest `limit` moderation actions, oldest first: the roles admins gave, and the
    hides and unhides of the admins and of everyone an admin ever gave a role in that
    channel (whether they count now is in each). Others' actions never counted: left out."""
    where, args = "", []
    if channel is not None:
        where, args = "AND r.channel = ?", [channel]
    roles = conn.execute(
        "SELECT r.id, r.channel, COALESCE(c.name, r.channel), r.role, r.author, r.ts, r.key, "
        "r.reason, 1 FROM mod_roles r LEFT JOIN channels c ON c.key = r.channel "
        f"WHERE {admin_act('r')} {where} "
        "ORDER BY r.ts DESC, r.id DESC LIMIT ?", (*args, limit)).fetchall()
    actions = conn.execute(
        "SELECT r.id, r.channel, COALESCE(c.name, r.channel), "
        "CASE r.hide WHEN 1 THEN 'hide' ELSE 'unhide' END, r.author, r.ts, r.target, "
        "r.reason, r.counts FROM mod_actions r LEFT JOIN channels c ON c.key = r.channel "
        f"WHERE r.hidden & 2 = 0 {where} AND ({admin_act('r')} OR "
        "EXISTS (SELECT 1 FROM mod_roles g WHERE g.channel = r.channel AND g.key = r.author "
        f"AND {admin_act('g')})) "
        "ORDER BY r.ts DESC, r.id DESC LIMIT ?", (*args, limit)).fetchall()
    newest = sorted(roles + actions, key=lambda row: (row[5], row[0]))[-limit:] \
        if limit > 0 else []
    posts = _held_or_deleted(conn, [row[6] for row in newest if row[3] in ("hide", "unhide")])
    return [ModAction(oid, name, action, author, ts, target, reason, bool(counts),
                      target in posts)
            for oid, _, name, action, author, ts, target, reason, counts in newest]


def _held_or_deleted(conn: sqlite3.Connection, ids: list[bytes]) -> set[bytes]:
    found: set[bytes] = set()
    for part in chunks(sorted(set(ids))):
        marks = placeholders(len(part))
        found.update(row[0] for row in conn.execute(
            f"SELECT id FROM objects WHERE id IN ({marks}) UNION "
            f"SELECT id FROM tombstones WHERE id IN ({marks})", (*part, *part)))
    return found


def blocked_keys(conn: sqlite3.Connection) -> set[bytes]:
    return {row[0] for row in conn.execute("SELECT key FROM blocked")}


class ModerationStore:
    """`Replica.moderation`: the moderation view's queries, and this computer's blocks (a
    local table with its own small writer; it writes no objects)."""

    __slots__ = ("_replica",)

    def __init__(self, replica: Replica):
        self._replica = replica

    def is_moderator(self, channel: str, key: bytes) -> bool:
        with self._replica._read() as conn:
            return is_moderator(conn, kinds.channel_key(channel), key)

    def moderators(self, channel: str) -> list[bytes]:
        with self._replica._read() as conn:
            return moderators(conn, kinds.channel_key(channel))

    def log(self, channel: str | None = None, *, limit: int = 100) -> list[ModAction]:
        with self._replica._read() as conn:
            return log(conn, None if channel is None else kinds.channel_key(channel),
                       max(0, limit))

    def hidden(self, channel: str, target: bytes) -> bool:
        """Whether `target` (a post id or a member's key) is hidden in `channel` now."""
        with self._replica._read() as conn:
            return conn.execute("SELECT 1 FROM mod_hidden WHERE channel = ? AND target = ?",
                                (kinds.channel_key(channel), target)).fetchone() is not None

    def blocked(self) -> list[BlockedKey]:
        """Keys blocked on this computer, oldest block first."""
        with self._replica._read() as conn:
            return [BlockedKey(key, ts) for key, ts in conn.execute(
                "SELECT key, ts FROM blocked ORDER BY ts, key")]

    def is_blocked(self, key: bytes) -> bool:
        with self._replica._read() as conn:
            return conn.execute("SELECT 1 FROM blocked WHERE key = ?",
                                (key,)).fetchone() is not None

    def block(self, key: bytes) -> bool:
        """Block `key` here: its new objects are refused, and what is held of it is hidden.
        False when it was blocked already."""
        return self._set(key, True)

    def unblock(self, key: bytes) -> bool:
        """Lift a block: what is still held of `key` shows again, and its objects are stored
        again (sync brings those refused meanwhile). False when it was not blocked."""
        return self._set(key, False)

    def _set(self, key: bytes, blocked: bool) -> bool:
        from ._ingest import Batch  # the batch's upkeep (counts, membership) does the rest

        replica = self._replica
        with replica._write() as conn:
            if blocked:
                changed = conn.execute("INSERT OR IGNORE INTO blocked (key, ts) VALUES (?, ?)",
                                       (key, replica.now_ms())).rowcount
            else:
                changed = conn.execute("DELETE FROM blocked WHERE key = ?", (key,)).rowcount
                unrefuse(conn, key)
            if changed:
                Moderator(Batch(conn, replica.workspace, replica.now_ms())).block_bits(
                    key, blocked)
        return bool(changed)
