"""The chat views' rows inside one ingest batch: channels (named by their earliest object),
messages with their full-text rows, edits and reactions (storage._conversation), channel state
(topic, join, leave), nicknames and membership. A collaborator of storage._ingest.Batch, whose
lookups (policies, moderators' hides, removals, the future) decide each row's hidden bits."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from core import kinds
from core.objects import Object

from . import _conversation, _files
from ._sort_keys import sort_keys

if TYPE_CHECKING:
    from ._ingest import Batch

STATE_KINDS = {"post/topic": "topic", "post/join": "join", "post/leave": "leave"}
STATE_RESOURCE = {v: k for k, v in STATE_KINDS.items()}


class ChatRows:
    def __init__(self, batch: Batch):
        self.batch = batch
        self.conn = batch.conn
        # Per channel key: the stored name's (ts, id) is at most this (an object this batch
        # named it by, or one earlier), so a later object cannot rename it.
        self.named: dict[str, tuple[int, bytes]] = {}
        self._streams: dict[str, tuple[bytes, str]] = {}  # channel name -> (stream, key)
        # Per (channel, author): the stored membership's (ts, id) is at least this, so an
        # older event cannot advance it (a newest-first catch-up brings mostly older ones).
        self._member_newest: dict[tuple[str, bytes], tuple[int, bytes]] = {}

    def channel_of(self, name: str) -> tuple[bytes, str]:
        """(stream id, key) of the channel named `name` (deriving a stream id is a hash, and
        names repeat)."""
        found = self._streams.get(name)
        if found is None:
            found = self._streams[name] = (kinds.channel_stream(self.batch.ws.id, name),
                                           kinds.channel_key(name))
        return found

    def channel(self, key: str, name: str, obj: Object) -> None:
        """Register a channel; its display name is the one of its earliest object."""
        bound = self.named.get(key)
        if bound is not None and (obj.ts, obj.id) >= bound:
            return
        self.named[key] = (obj.ts, obj.id)
        self.conn.execute(
            "INSERT INTO channels (key, name, name_ts, name_id) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET name = excluded.name, name_ts = excluded.name_ts, "
            "name_id = excluded.name_id WHERE (excluded.name_ts, excluded.name_id) "
            "< (channels.name_ts, channels.name_id)", (key, name, obj.ts, obj.id))

    def _in_channel_stream(self, obj: Object) -> str | None:
        name = obj.body["channel"]
        if obj.stream != kinds.channel_stream(self.batch.ws.id, name):
            return None
        return kinds.channel_key(name)

    def texts(self, objects: Sequence[Object], oids: dict[bytes, int]) -> None:
        rows = []
        with_files: list[tuple[int, Object]] = []
        newest: dict[tuple[str, bytes], tuple[int, bytes]] = {}
        visible: dict[str, int] = {}
        first: dict[str, Object] = {}
        for obj in objects:
            stream, channel = self.channel_of(obj.body["channel"])
            if obj.stream != stream:
                continue
            if channel not in first or (obj.ts, obj.id) < (first[channel].ts, first[channel].id):
                first[channel] = obj
            hidden = self.batch.policy_bit(channel, obj.author, "post/text") | \
                self.batch.future_bit(obj.ts) | self.batch.mod_bit(channel, obj.id, obj.author)
            reply_to = obj.body.get("parent")
            in_channel = reply_to is None or obj.body["broadcast"]
            rows.append((oids[obj.id], obj.id, channel, obj.author, obj.ts, obj.body["text"],
                         hidden, reply_to, int(in_channel)))
            if "files" in obj.body:
                with_files.append((oids[obj.id], obj))
            if not hidden:
                visible[channel] = visible.get(channel, 0) + 1
                key = (channel, obj.author)
                if key not in newest or (obj.ts, obj.id) > newest[key]:
                    newest[key] = (obj.ts, obj.id)
        for channel, obj in first.items():
            self.channel(channel, obj.body["channel"], obj)
        keys = sort_keys(self.conn, [(row[4], row[1]) for row in rows])
        self.conn.executemany(
            "INSERT INTO messages (oid, id, channel, author, ts, text, hidden, reply_to, "
            "in_channel, sk) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*row, key) for row, key in zip(rows, keys, strict=True)])
        # In rowid order: a rowid below the last one written makes FTS5 flush what it holds
        # into a new segment, so a catch-up's newest-first messages would each cost a segment.
        self.conn.executemany(
            "INSERT INTO messages_fts (rowid, text) VALUES (?, ?)",
            sorted((key, row[5]) for row, key in zip(rows, keys, strict=True)))
        _files.record(self.conn, with_files)
        self.conn.executemany(
            "UPDATE channels SET messages = messages + ? WHERE key = ?",
            [(count, channel) for channel, count in visible.items()])
        self._advance_members([(channel, author, 1, ts, oid_id)
                               for (channel, author), (ts, oid_id) in newest.items()])
        # Edits that arrived before their message apply now.
        _conversation.refresh_texts(
            self.conn, _conversation.edited_among(self.conn, [row[1] for row in rows]))

    def edits(self, objects: Sequence[Object], oids: dict[bytes, int]) -> None:
        _conversation.add_edits(self.conn, self._targeted(objects, oids, "text"))

    def reactions(self, objects: Sequence[Object], oids: dict[bytes, int]) -> None:
        _conversation.add_reactions(self.conn, self._targeted(objects, oids, "emoji"))

    def _targeted(self, objects: Sequence[Object], oids: dict[bytes, int],
                  field: str) -> list[tuple]:
        """Rows (oid, id, target, channel, author, ts, body[field], hidden) of the objects
        that name a message and are in their channel's stream."""
        rows = []
        for obj in objects:
            stream, channel = self.channel_of(obj.body["channel"])
            if obj.stream == stream:
                hidden = self.batch.policy_bit(channel, obj.author, obj.type) | \
                    self.batch.future_bit(obj.ts) | self.batch.mod_bit(channel, obj.id, obj.author)
                rows.append((oids[obj.id], obj.id, obj.body["target"], channel, obj.author,
                             obj.ts, obj.body[field], hidden))
        return rows

    def state(self, obj: Object, oid: int) -> None:
        channel = self._in_channel_stream(obj)
        if channel is None:
            return
        self.channel(channel, obj.body["channel"], obj)
        kind = STATE_KINDS[obj.type]
        hidden = self.batch.policy_bit(channel, obj.author, obj.type) | self.batch.future_bit(obj.ts) | \
            self.batch.mod_bit(channel, obj.id, obj.author)
        self.conn.execute(
            "INSERT INTO state (oid, id, channel, kind, author, ts, value, hidden) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (oid, obj.id, channel, kind, obj.author, obj.ts, obj.body.get("topic"), hidden))
        if kind != "topic" and not hidden:
            self.advance_member(channel, obj.author, kind == "join", obj.ts, obj.id)

    def info(self, obj: Object, oid: int) -> None:
        if obj.stream != kinds.profile_stream(obj.author):
            return
        self.conn.execute(
            "INSERT INTO nicks (oid, id, author, ts, name, hidden) VALUES (?, ?, ?, ?, ?, ?)",
            (oid, obj.id, obj.author, obj.ts, obj.body["name"],
             self.batch.future_bit(obj.ts) | self.batch.removed_bit(obj.id, obj.author)))

    _ADVANCE = (
        "INSERT INTO members (channel, author, member, ts, id) VALUES (?, ?, ?, ?, ?) "
        "ON CONFLICT (channel, author) DO UPDATE SET member = excluded.member, "
        "ts = excluded.ts, id = excluded.id "
        "WHERE (excluded.ts, excluded.id) > (members.ts, members.id)")

    def advance_member(self, channel: str, author: bytes, member: bool, ts: int,
                        oid_id: bytes) -> None:
        """Membership after one more visible event: the newest (ts, id) event decides."""
        self._advance_members([(channel, author, int(member), ts, oid_id)])

    def _advance_members(self, rows: list[tuple[str, bytes, int, int, bytes]]) -> None:
        newest = self._member_newest
        fresh = []
        for row in rows:
            key, at = (row[0], row[1]), (row[3], row[4])
            known = newest.get(key)
            if known is None or at > known:
                fresh.append(row)
                newest[key] = at
        self.conn.executemany(self._ADVANCE, fresh)

    def remember(self, channel: str, author: bytes) -> None:
        """Recompute membership of `author` in `channel` from the visible events left."""
        self._member_newest.pop((channel, author), None)
        self.conn.execute("DELETE FROM members WHERE channel = ? AND author = ?",
                          (channel, author))
        row = self.conn.execute(
            "SELECT kind = 'join', ts, id FROM state WHERE channel = ? AND author = ? "
            "AND kind != 'topic' AND hidden = 0 ORDER BY ts DESC, id DESC LIMIT 1",
            (channel, author)).fetchone()
        if row:
            self.advance_member(channel, author, bool(row[0]), row[1], row[2])
        row = self.conn.execute(
            "SELECT ts, id FROM messages INDEXED BY messages_by_channel WHERE channel = ? "
            "AND hidden = 0 AND author = ? ORDER BY ts DESC, id DESC LIMIT 1",
            (channel, author)).fetchone()
        if row:
            self.advance_member(channel, author, True, row[0], row[1])

    def recount(self, channel: str) -> None:
        self.conn.execute(
            "UPDATE channels SET messages = (SELECT COUNT(*) FROM messages "
            "WHERE channel = ?1 AND hidden = 0) WHERE key = ?1", (channel,))
