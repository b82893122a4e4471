"""Shared helpers for the replica tests: a builder of signed objects (the clock is FakeClock).

`World` mirrors `app.workspace.Workspace.publish` without a replica: every object is signed by a
real Ed25519 identity, lives in the stream docs/ARCHITECTURE.md gives its kind, links to the heads of that
stream that the builder has seen, and is dated with `core.causal.next_ts`. Tests that need a
particular shape (a fork, a tie in ts, a wrong stream, a date far ahead) pass `links`, `ts` or
`stream` explicitly.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

import pytest

from core import kinds
from core.causal import next_ts
from core.identity import Identity
from core.objects import Object, authored, build
from core.policy import Policy
from storage import Replica, Status, StorageError
from tests.support import FakeClock

T0 = 1_700_000_000  # seconds; every test starts its clock (tests.support.FakeClock) here
T0_MS = T0 * 1000
DAY_MS = 24 * 3600 * 1000
WEEK_MS = 7 * DAY_MS


def identity(name: str) -> Identity:
    """A deterministic identity per name (so examples and failures are reproducible)."""
    return Identity.from_seed(hashlib.blake2b(name.encode(), digest_size=32).digest())


class World:
    """Builds the objects of one workspace the way app.workspace does, without storing them."""

    def __init__(self, root: Identity | None = None, *, name: str = "test", start_ms: int = T0_MS):
        self.root = root or identity("root")
        self.genesis = build(self.root, "workspace/genesis", stream=kinds.GENESIS_STREAM,
                             body={"name": name, "nonce": bytes(16)}, ts=start_ms)
        self.ws = self.genesis.id
        self.now_ms = start_ms
        self._heads: dict[bytes, dict[bytes, int]] = {}

    # Streams ---------------------------------------------------------------------------------

    def channel(self, name: str) -> bytes:
        return kinds.channel_stream(self.ws, name)

    @staticmethod
    def profile(who: Identity) -> bytes:
        return kinds.profile_stream(who.public_key)

    def heads(self, stream: bytes) -> list[bytes]:
        return sorted(self._heads.get(stream, {}))

    # Building --------------------------------------------------------------------------------

    def publish(self, who: Identity, kind: str, stream: bytes, body: dict, *,
                ts: int | None = None, links: Iterable[bytes] | None = None,
                track: bool = True) -> Object:
        """Sign an object linking the known heads of `stream` (or `links`), dated after them."""
        known = self._heads.setdefault(stream, {})
        if ts is None and links is None:  # as a member's app authors it
            self.now_ms += 1000
            obj = authored(who, kind, stream=stream, body=body, now_ms=self.now_ms,
                           heads=known.items())
        else:
            links = sorted(known) if links is None else sorted(set(links))
            if ts is None:
                self.now_ms += 1000
                ts = next_ts(self.now_ms, (known[link] for link in links if link in known))
            obj = build(who, kind, stream=stream, body=body, ts=ts, links=links)
        if track:
            for link in obj.links:
                known.pop(link, None)
            known[obj.id] = obj.ts
        return obj

    def text(self, who: Identity, channel: str, text: str, **kw) -> Object:
        stream = kw.pop("stream", None) or self.channel(channel)
        return self.publish(who, "post/text", stream, {"channel": channel, "text": text}, **kw)

    def reply(self, who: Identity, parent: Object, text: str, *, broadcast: bool = False,
              **kw) -> Object:
        channel = parent.body["channel"]
        stream = kw.pop("stream", None) or self.channel(channel)
        body = {"channel": channel, "text": text, "parent": parent.id, "broadcast": broadcast}
        return self.publish(who, "post/reply", stream, body, **kw)

    def edit(self, who: Identity, target: Object, text: str, **kw) -> Object:
        channel = target.body["channel"]
        stream = kw.pop("stream", None) or self.channel(channel)
        body = {"channel": channel, "target": target.id, "text": text}
        return self.publish(who, "post/edit", stream, body, **kw)

    def react(self, who: Identity, target: Object, emoji: str, **kw) -> Object:
        channel = target.body["channel"]
        stream = kw.pop("stream", None) or self.channel(channel)
        body = {"channel": channel, "target": target.id, "emoji": emoji}
        return self.publish(who, "post/react", stream, body, **kw)

    def topic(self, who: Identity, channel: str, topic: str, **kw) -> Object:
        stream = kw.pop("stream", None) or self.channel(channel)
        return self.publish(who, "post/topic", stream, {"channel": channel, "topic": topic}, **kw)

    def join(self, who: Identity, channel: str, **kw) -> Object:
        stream = kw.pop("stream", None) or self.channel(channel)
        return self.publish(who, "post/join", stream, {"channel": channel}, **kw)

    def leave(self, who: Identity, channel: str, **kw) -> Object:
        stream = kw.pop("stream", None) or self.channel(channel)
        return self.publish(who, "post/leave", stream, {"channel": channel}, **kw)

    def nick(self, who: Identity, name: str, **kw) -> Object:
        stream = kw.pop("stream", None) or self.profile(who)
        return self.publish(who, "post/info", stream, {"name": name}, **kw)

    def delete(self, who: Identity, *targets: Object | bytes, **kw) -> Object:
        """A post/delete in the stream of its (first) target, unless `stream` says otherwise."""
        ids = [t.id if isinstance(t, Object) else t for t in targets]
        stream = kw.pop("stream", None)
        if stream is None:
            first = targets[0]
            if not isinstance(first, Object):
                raise TypeError("pass the target object, or the stream explicitly")
            stream = first.stream
        return self.publish(who, "post/delete", stream, {"targets": ids}, **kw)

    def grant(self, who: Identity, key: Identity | bytes, **kw) -> Object:
        key = key.public_key if isinstance(key, Identity) else key
        stream = kw.pop("stream", None) or self.ws
        return self.publish(who, "workspace/admin-grant", stream, {"key": key}, **kw)

    def policy(self, who: Identity, channel: str, policies: Iterable[Policy], **kw) -> Object:
        stream = kw.pop("stream", None) or self.ws
        body = {"channel": channel, "policies": [p.to_dict() for p in policies]}
        return self.publish(who, "channel/policy", stream, body, **kw)

    def unknown(self, who: Identity, stream: bytes | None = None, **kw) -> Object:
        return self.publish(who, "future/thing", stream or self.ws, {"x": 1, "note": "new"}, **kw)


def deny(subjects: Iterable[Identity | str] = (), resources: Iterable[str] = ()) -> Policy:
    return Policy("deny", _subjects(subjects), frozenset(resources), frozenset({"append"}))


def allow(subjects: Iterable[Identity | str] = (), resources: Iterable[str] = ()) -> Policy:
    return Policy("allow", _subjects(subjects), frozenset(resources), frozenset({"append"}))


def _subjects(subjects: Iterable[Identity | str]) -> frozenset[str]:
    return frozenset(s.public_key.hex() if isinstance(s, Identity) else s for s in subjects)


def new_replica(path: Path, world: World, clock: FakeClock | None = None) -> Replica:
    """A fresh replica of `world`'s workspace holding its genesis."""
    replica = Replica.create(path, world.ws, world.root.public_key, clock=clock or FakeClock(T0))
    assert replica.ingest([world.genesis])[0].status is Status.ADDED
    return replica


def add(replica: Replica, *objects: Object) -> None:
    """Ingest `objects` in one batch and insist that each is added."""
    results = replica.ingest(objects)
    assert [r.status for r in results] == [Status.ADDED] * len(objects), results


def texts(replica: Replica, channel: str, **kw) -> list[str]:
    return [m.text for m in replica.messages(channel, **kw)]


def member_keys(replica: Replica, channel: str) -> set[bytes]:
    return {m.key for m in replica.members(channel)}


def channel_info(replica: Replica, channel: str):
    key = kinds.channel_key(channel)
    found = [c for c in replica.channels() if kinds.channel_key(c.name) == key]
    assert len(found) <= 1
    return found[0] if found else None


def assert_healthy(replica: Replica) -> None:
    """integrity_check() is 'ok', and the derived tables agree with what they derive from."""
    assert replica.integrity_check() == "ok"
    conn = replica.conn
    # FTS5's own check does not compare an external-content index with its table unless asked.
    conn.execute("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute(
        "SELECT key, messages FROM channels WHERE messages != (SELECT COUNT(*) FROM messages m "
        "WHERE m.channel = channels.key AND m.hidden = 0)").fetchall() == []
    assert conn.execute(
        "SELECT id FROM tombstones WHERE id IN (SELECT id FROM objects)").fetchall() == []
    assert conn.execute(
        "SELECT h.id FROM heads h LEFT JOIN objects o ON o.id = h.id AND o.stream = h.stream "
        "WHERE o.id IS NULL").fetchall() == []
    assert conn.execute("SELECT id FROM members WHERE member NOT IN (0, 1)").fetchall() == []


# Fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
def clock() -> FakeClock:
    """The replica's wall clock (seconds), at T0 until the test moves it."""
    return FakeClock(T0)


@pytest.fixture
def world() -> World:
    return World()


@pytest.fixture
def people() -> dict[str, Identity]:
    return {name: identity(name) for name in ("alice", "bob", "carol", "dave")}


@pytest.fixture
def replica(tmp_path: Path, world: World, clock: FakeClock):
    """A fresh replica; integrity_check() must be 'ok' whatever the test did to it."""
    rep = new_replica(tmp_path / "ws.sqlite", world, clock)
    yield rep
    try:
        rep.conn  # noqa: B018 - raises if the test closed it
    except StorageError:
        return
    assert_healthy(rep)
    rep.close()
