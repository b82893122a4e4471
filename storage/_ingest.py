"""The single ingest path: store a batch of valid objects and keep every view consistent.

Runs inside the caller's write transaction. Every view is a function of the set of objects
held (and of `now`, for posts dated too far ahead), never of arrival order; the order of work
inside a batch (grants, then policies and moderator roles, then posts, then moderators' hides,
then deletes) only saves recomputation. Moderation's part of the views is kept by
storage._moderation; the one local input of the views is this computer's blocks (rows of a
blocked author carry HIDDEN_BLOCKED).
Last-writer-wins views order by (ts, id): authors date objects after what they link to
(core.causal.next_ts), which makes that order a causal order. Batch owns its parts: the chat
views' rows (`batch.chat`, storage._chat_rows), which deletes count (`batch.deletes`,
storage._deletes); heads are storage._heads.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from core import kinds
from core.causal import HORIZON_MS
from core.encoding import dumps, loads
from core.objects import Object, decode_trusted  # stored objects were validated on the way in
from core.policy import Policy, evaluate

from . import _conversation, _files, _heads, _membership, _moderation, _origins, _private, items
from ._chat_rows import STATE_KINDS, STATE_RESOURCE, ChatRows
from ._deletes import Deletes
from ._moderation import HIDDEN_MOD, HIDDEN_REMOVED, Moderator
from ._sql import admin_act, placeholders

FUTURE_MS = HORIZON_MS
# The hidden bit set of the views' rows (shown only when 0; a moderator's read also shows
# storage._moderation.HIDDEN_MOD alone, marked), and HIDDEN_BLOCKED (local).
HIDDEN_POLICY = 1
HIDDEN_FUTURE = 2


@dataclass(frozen=True)
class WorkspaceIdentity:
    """The workspace a replica holds: its id and its root admin's key."""

    id: bytes
    root: bytes


class Batch:
    """Applies new objects to one connection inside an open write transaction."""

    def __init__(self, conn: sqlite3.Connection, workspace: WorkspaceIdentity, now_ms: int):
        self.conn = conn
        self.ws = workspace
        self.horizon = now_ms + FUTURE_MS
        self._admins: set[bytes] | None = None
        self._policies: dict[str, list[Policy]] = {}
        self._mod_hidden: dict[str, set[bytes]] | None = None  # channel -> targets hidden
        self._removed: set[bytes] | None = None  # keys removed from the workspace now
        self.unnamed: set[bytes] = set()  # list ids of files whose messages were purged
        self.chat = ChatRows(self)
        self.deletes = Deletes(self)

    # Lookups ------------------------------------------------------------------------------

    @property
    def admins(self) -> set[bytes]:
        if self._admins is None:
            self._admins = {row[0] for row in self.conn.execute("SELECT key FROM admins")}
        return self._admins

    def acts_as_admin(self, author: bytes, object_id: bytes) -> bool:
        """core.membership.MembershipView.acts_as_admin over the replica's tables."""
        return author in self.admins or self.conn.execute(
            "SELECT 1 FROM admin_kept WHERE id = ?", (object_id,)).fetchone() is not None

    def policies(self, channel: str) -> list[Policy]:
        """The policy list in force in `channel`: the latest one an admin wrote."""
        if channel not in self._policies:
            row = self.conn.execute(
                f"SELECT body FROM policies WHERE channel = ? AND {admin_act()} "
                "ORDER BY ts DESC, id DESC LIMIT 1", (channel,)
            ).fetchone()
            self._policies[channel] = (
                [Policy.from_dict(item) for item in loads(row[0])] if row else []
            )
        return self._policies[channel]

    def policy_bit(self, channel: str, author: bytes, kind: str) -> int:
        policies = self.policies(channel)
        if policies and not evaluate(policies, author.hex(), kind, "append"):
            return HIDDEN_POLICY
        return 0

    def future_bit(self, ts: int) -> int:
        return HIDDEN_FUTURE if ts > self.horizon else 0

    def mod_bit(self, channel: str, oid: bytes, author: bytes) -> int:
        """HIDDEN_MOD for a post a moderator hid, or whose author they hid in `channel`."""
        if self._mod_hidden is None:
            self._mod_hidden = {}
            for where, target in self.conn.execute("SELECT channel, target FROM mod_hidden"):
                self._mod_hidden.setdefault(where, set()).add(target)
        targets = self._mod_hidden.get(channel)
        bit = HIDDEN_MOD if targets and (oid in targets or author in targets) else 0
        return bit | self.removed_bit(oid, author)

    def removed_bit(self, object_id: bytes, author: bytes) -> int:
        """HIDDEN_REMOVED for an object of a removed member that its removal did not keep."""
        if self._removed is None:
            self._removed = _membership.removed_keys(self.conn)
        if author in self._removed and not _membership.is_kept(self.conn, object_id):
            return HIDDEN_REMOVED
        return 0

    def removed_changed(self) -> None:
        self._removed = None

    def mod_hidden_changed(self) -> None:
        self._mod_hidden = None

    # The batch ----------------------------------------------------------------------------

    def add(self, objects: list[Object]) -> None:
        """Store `objects` (valid, not yet held, not tombstoned) and index them."""
        if not objects:
            return
        # Sequence numbers only grow, even when the newest object is deleted, so that
        # "stored since N" (the live-push feed) never misses an object.
        start = self.conn.execute(
            "SELECT MAX(COALESCE((SELECT MAX(oid) FROM objects), 0), "
            "COALESCE((SELECT value FROM meta WHERE key = 'sequence'), 0)) + 1").fetchone()[0]
        oids = {obj.id: start + n for n, obj in enumerate(objects)}
        self.conn.execute("INSERT INTO meta (key, value) VALUES ('sequence', ?) ON CONFLICT (key) "
                          "DO UPDATE SET value = excluded.value", (start + len(objects) - 1,))
        children = _heads.missing_links_to(self.conn, [obj.id for obj in objects])
        for key, count in _heads.link(self.conn, objects, oids).items():
            children[key] = children.get(key, 0) + count
        self.conn.executemany(
            "INSERT INTO objects (oid, id, type, author, ts, stream, raw, children) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(oids[o.id], o.id, o.type, o.author, o.ts, o.stream, o.raw,
              children.get((o.id, o.stream), 0)) for o in objects])
        self.conn.executemany(
            "INSERT INTO heads (stream, id, ts) VALUES (?, ?, ?)",
            [(o.stream, o.id, o.ts) for o in objects if (o.id, o.stream) not in children])
        ws = self.ws.id
        items.add_items(self.conn, [(o.stream, o.ts, o.id, kinds.stream_class(o.type, o.stream, ws))
                                    for o in objects])
        by_kind: dict[str, list[Object]] = {}
        for obj in objects:
            by_kind.setdefault(obj.type, []).append(obj)
        # Who holds power first (removals, admins: they decide what policies, roles, hides
        # and deletes count), then policies, then posts, and deletes last, so that everything
        # a delete may target is in place.
        changed: set[bytes] = set()
        if _membership.record(self.conn, ws, objects, oids) and \
                _membership.may_change_removals(self.conn, objects):
            changed = _membership.refresh(self)
            self._admins = None
            self._policies.clear()
        touched = {channel for obj in by_kind.get("channel/policy", ())
                   if (channel := self._policy_object(obj, oids[obj.id])) is not None}
        for author in changed:  # policies of those whose power changed count, or stop counting
            touched.update(row[0] for row in self.conn.execute(
                "SELECT DISTINCT channel FROM policies WHERE author = ?", (author,)))
        for channel in touched:
            self._register_policy_channel(channel)
            self.rehide(channel)
        moderator = Moderator(self)
        roles = moderator.roles(by_kind.get("mod/role", ()), oids)
        self.chat.texts([*by_kind.get("post/text", ()), *by_kind.get("post/reply", ()),
                     *by_kind.get("post/file", ())], oids)
        self.chat.edits(by_kind.get("post/edit", ()), oids)
        self.chat.reactions(by_kind.get("post/react", ()), oids)
        for kind in STATE_KINDS:
            for obj in by_kind.get(kind, ()):
                self.chat.state(obj, oids[obj.id])
        for obj in by_kind.get("post/info", ()):
            self.chat.info(obj, oids[obj.id])
        # Moderators' hides, and the actions that count or stop counting with the power that
        # changed and the roles (the posts stored above took the hides held before: mod_bit).
        hidden = moderator.actions(by_kind.get("mod/hide", ()), oids)
        hidden |= moderator.granted(changed)
        for channel, key in roles:
            hidden |= moderator.recount(key, channel)
        moderator.refresh(hidden)
        for obj in by_kind.get("post/delete", ()):
            self.deletes.delete(obj, oids[obj.id])
        for author in changed:  # and so do their deletes
            self.deletes.redecide(author)
        unkept = [(oids[o.id],) for o in objects if self.removed_bit(o.id, o.author)]
        self.conn.executemany("INSERT OR IGNORE INTO unkept (oid) VALUES (?)", unkept)
        _private.record(self.conn, self.ws.id, objects, oids)
        _origins.record(self.conn, self.ws.id, objects, oids)
        self.deletes.arrived_targets(list(oids))

    def reindex(self, held: list[tuple[int, bytes]], *, moderation: bool = False) -> None:
        """Index conversation objects (oid, raw) already stored by a version that did not
        interpret their kinds; deletes stored meanwhile that name them count now. Before
        version 8 (`moderation` False) no moderator's hides are indexed yet: its own step
        indexes them after."""
        objects = [decode_trusted(raw) for _, raw in held]
        oids = {obj.id: oid for obj, (oid, _) in zip(objects, held, strict=True)}
        if not moderation:
            self._mod_hidden = {}
        self.chat.texts([obj for obj in objects if obj.type in ("post/reply", "post/file")], oids)
        self.chat.edits([obj for obj in objects if obj.type == "post/edit"], oids)
        self.chat.reactions([obj for obj in objects if obj.type == "post/react"], oids)
        self.deletes.arrived_targets(list(oids))

    def reindex_moderation(self, held: list[tuple[int, bytes]]) -> None:
        """Index moderation objects (oid, raw) stored by a version that did not know them."""
        _moderation.reindex(self, held)

    # Workspace: admins and policies -------------------------------------------------------

    def _policy_object(self, obj: Object, oid: int) -> str | None:
        """Store a policy list; returns its channel if it counts (an admin wrote it)."""
        if obj.stream != self.ws.id:
            return None
        channel = kinds.channel_key(obj.body["channel"])
        self.conn.execute(
            "INSERT INTO policies (oid, channel, author, ts, id, body) VALUES (?, ?, ?, ?, ?, ?)",
            (oid, channel, obj.author, obj.ts, obj.id, dumps(obj.body["policies"])))
        return channel if self.acts_as_admin(obj.author, obj.id) else None

    def _register_policy_channel(self, channel: str) -> None:
        """A channel an admin set policies for exists, named by its earliest object."""
        row = self.conn.execute(
            "SELECT o.raw FROM policies p JOIN objects o ON o.oid = p.oid WHERE p.channel = ? "
            f"AND {admin_act('p')} ORDER BY p.ts, p.id LIMIT 1",
            (channel,)).fetchone()
        if row:
            obj = decode_trusted(row[0])
            self.chat.channel(channel, obj.body["channel"], obj)

    def rehide(self, channel: str) -> None:
        """Re-decide the policy bit of everything in `channel` (policies apply retroactively)."""
        self._policies.pop(channel, None)
        rows = self.conn.execute(
            "SELECT DISTINCT author FROM messages WHERE channel = ?", (channel,)).fetchall()
        for (author,) in rows:
            bit = self.policy_bit(channel, author, "post/text")
            self.conn.execute(
                "UPDATE messages SET hidden = (hidden & ~1) | ? "
                "WHERE channel = ? AND author = ? AND (hidden & 1) != ?",
                (bit, channel, author, bit))
        rows = self.conn.execute(
            "SELECT DISTINCT author, kind FROM state WHERE channel = ?", (channel,)).fetchall()
        for author, kind in rows:
            bit = self.policy_bit(channel, author, STATE_RESOURCE[kind])
            self.conn.execute(
                "UPDATE state SET hidden = (hidden & ~1) | ? "
                "WHERE channel = ? AND author = ? AND kind = ? AND (hidden & 1) != ?",
                (bit, channel, author, kind, bit))
        _conversation.rehide(self.conn, channel,
                             lambda author, kind: self.policy_bit(channel, author, kind))
        self.chat.recount(channel)
        authors = {a for (a,) in self.conn.execute(
            "SELECT author FROM messages WHERE channel = ? UNION "
            "SELECT author FROM state WHERE channel = ? UNION "
            "SELECT author FROM members WHERE channel = ?", (channel, channel, channel))}
        for author in authors:
            self.chat.remember(channel, author)

    # Deletes (storage._deletes decides which count) ---------------------------------------

    def redecide(self, keys: set[bytes]) -> None:
        """The policies, hides, roles and deletes of `keys`, whose power changed, count or
        stop counting (what Batch.add does for the keys a batch changed)."""
        self._policies.clear()
        for (channel,) in self.conn.execute(
                f"SELECT DISTINCT channel FROM policies WHERE author IN "
                f"({placeholders(len(keys))})", sorted(keys)).fetchall():
            self._register_policy_channel(channel)
            self.rehide(channel)
        moderator = Moderator(self)
        moderator.refresh(moderator.granted(keys))
        for key in keys:
            self.deletes.redecide(key)

    def purge(self, oid: int, obj: Object) -> None:
        """Remove an object's content and every index entry, and recompute what it fed."""
        channel = None
        if obj.type in kinds.MESSAGE_KINDS:
            row = self.conn.execute(
                "SELECT channel, text, hidden, sk FROM messages WHERE oid = ?", (oid,)).fetchone()
            if row:
                channel, text, hidden, key = row
                self.conn.execute(
                    "INSERT INTO messages_fts (messages_fts, rowid, text) "
                    "VALUES ('delete', ?, ?)", (key, text))
                if not hidden:
                    self.conn.execute(
                        "UPDATE channels SET messages = messages - 1 WHERE key = ?", (channel,))
        elif obj.type in STATE_KINDS:
            row = self.conn.execute("SELECT channel FROM state WHERE oid = ?", (oid,)).fetchone()
            channel = row[0] if row else None
        self.unnamed.update(_files.named_by(self.conn, oid))
        self.conn.execute("DELETE FROM objects WHERE oid = ?", (oid,))  # cascades to views
        _heads.unlink(self.conn, obj)
        _conversation.purged(self.conn, obj)
        if channel is not None:
            self.chat.remember(channel, obj.author)
            self._rename(channel, obj.id)

    def _rename(self, channel: str, gone: bytes) -> None:
        """If the object that named the channel is gone, the next earliest names it."""
        found = self.conn.execute(
            "SELECT name_id FROM channels WHERE key = ?", (channel,)).fetchone()
        if not found or found[0] != gone:
            return
        self.chat.named.pop(channel, None)  # renamed to a later object, or gone
        # One indexed look-up per index prefix: deleting a channel's oldest posts one after
        # another must not cost a scan of the channel each time.
        first = []
        for hidden in range(2 * HIDDEN_REMOVED):
            first.append(self.conn.execute(
                "SELECT ts, id, oid FROM messages INDEXED BY messages_by_channel "
                "WHERE channel = ? AND hidden = ? ORDER BY ts, id LIMIT 1",
                (channel, hidden)).fetchone())
            for kind in STATE_RESOURCE:
                first.append(self.conn.execute(
                    "SELECT ts, id, oid FROM state INDEXED BY state_by_channel "
                    "WHERE channel = ? AND kind = ? AND hidden = ? ORDER BY ts, id LIMIT 1",
                    (channel, kind, hidden)).fetchone())
        first.append(self.conn.execute(
            f"SELECT ts, id, oid FROM policies WHERE channel = ? AND {admin_act()} "
            "ORDER BY ts, id LIMIT 1", (channel,)).fetchone())
        rows = [row for row in first if row is not None]
        if not rows:
            self.conn.execute("DELETE FROM channels WHERE key = ?", (channel,))
            return
        _, _, oid = min(rows)
        obj = decode_trusted(self.conn.execute(
            "SELECT raw FROM objects WHERE oid = ?", (oid,)).fetchone()[0])
        self.conn.execute("UPDATE channels SET name = ?, name_ts = ?, name_id = ? WHERE key = ?",
                          (obj.body["channel"], obj.ts, obj.id, channel))

    # Time ---------------------------------------------------------------------------------

    def mature(self) -> bool:
        """Show posts whose time has come (dated more than 7 days ahead when they arrived)."""
        changed = False
        rows = self.conn.execute(
            "SELECT channel, author, ts, id, hidden FROM messages "
            "WHERE hidden & 2 AND ts <= ?", (self.horizon,)).fetchall()
        if rows:
            changed = True
            self.conn.execute(
                "UPDATE messages SET hidden = hidden & ~2 WHERE hidden & 2 AND ts <= ?",
                (self.horizon,))
            for channel, author, ts, oid_id, hidden in rows:
                if hidden == HIDDEN_FUTURE:
                    self.conn.execute(
                        "UPDATE channels SET messages = messages + 1 WHERE key = ?", (channel,))
                    self.chat.advance_member(channel, author, True, ts, oid_id)
        rows = self.conn.execute(
            "SELECT channel, author, kind, ts, id, hidden FROM state "
            "WHERE hidden & 2 AND ts <= ?", (self.horizon,)).fetchall()
        if rows:
            changed = True
            self.conn.execute(
                "UPDATE state SET hidden = hidden & ~2 WHERE hidden & 2 AND ts <= ?",
                (self.horizon,))
            for channel, author, kind, ts, oid_id, hidden in rows:
                if hidden == HIDDEN_FUTURE and kind != "topic":
                    self.chat.advance_member(channel, author, kind == "join", ts, oid_id)
        cur = self.conn.execute(
            "UPDATE nicks SET hidden = hidden & ~2 WHERE hidden & 2 AND ts <= ?",
            (self.horizon,))
        changed = _conversation.mature(self.conn, self.horizon) or changed
        changed = Moderator(self).mature() or changed
        return changed or cur.rowcount > 0
