"""Fixtures for the sync session and store tests: real signed objects of one workspace.

Objects are built the way app.workspace.Workspace.publish builds them: signed by real Ed25519
identities, in the stream docs/ARCHITECTURE.md gives their kind (a channel's stream, a delete in its
target's stream), linking the heads of that stream the builder has seen, dated with
core.causal.next_ts. The shared pool is built once per test session (3,000 posts take ~0.2 s).
"""

from __future__ import annotations

import hashlib
import os

import pytest

from core import kinds
from core.identity import Identity
from core.objects import Object, authored, build

T0_MS = 1_700_000_000_000
POOL_SIZE = 3000
CHANNELS = ("general", "random", "dev")


def identity(name: str) -> Identity:
    """A deterministic identity per name, so failures are reproducible."""
    return Identity.from_seed(hashlib.blake2b(name.encode(), digest_size=32).digest())


class Chat:
    """Builds the objects of one workspace, without storing them."""

    def __init__(self, root: Identity | None = None, *, start_ms: int = T0_MS):
        self.root = root or identity("root")
        self.genesis = build(self.root, "workspace/genesis", stream=kinds.GENESIS_STREAM,
                             body={"name": "sync-tests", "nonce": bytes(16)}, ts=start_ms)
        self.ws = self.genesis.id
        self.now_ms = start_ms
        self.people = {name: identity(name) for name in ("alice", "bob", "carol", "dave")}
        self._heads: dict[bytes, dict[bytes, int]] = {}

    def channel(self, name: str) -> bytes:
        return kinds.channel_stream(self.ws, name)

    def publish(self, who: Identity, kind: str, stream: bytes, body: dict, *,
                ts: int | None = None, step_ms: int = 1000) -> Object:
        known = self._heads.setdefault(stream, {})
        if ts is None:  # as a member's app authors it
            self.now_ms += step_ms
            obj = authored(who, kind, stream=stream, body=body, now_ms=self.now_ms,
                           heads=known.items())
        else:
            obj = build(who, kind, stream=stream, body=body, ts=ts, links=sorted(known)[:64])
        for link in obj.links:
            known.pop(link, None)
        known[obj.id] = obj.ts
        return obj

    def post(self, who: Identity | str, channel: str, text: str, **kw) -> Object:
        who = self.people[who] if isinstance(who, str) else who
        return self.publish(who, "post/text", self.channel(channel),
                            {"channel": channel, "text": text}, **kw)

    def delete(self, who: Identity | str, target: Object, **kw) -> Object:
        """A post/delete in the stream of its target (docs/ARCHITECTURE.md "Objects")."""
        who = self.people[who] if isinstance(who, str) else who
        return self.publish(who, "post/delete", target.stream, {"targets": [target.id]}, **kw)

    def author_of(self, obj: Object) -> Identity:
        for person in (self.root, *self.people.values()):
            if person.public_key == obj.author:
                return person
        raise KeyError(obj.author.hex())


def build_pool(chat: Chat, count: int) -> list[Object]:
    """`count` posts by four authors in three channels: groups of three share a ts (ties are
    ordered by id), and they span many 65.5 s item buckets, with empty buckets between."""
    names = sorted(chat.people)
    out = []
    for i in range(count):
        ts = T0_MS + (i // 3) * 1_500 + (i // 300) * 200_000
        out.append(chat.post(names[i % 4], CHANNELS[i % 3], f"message {i} " + "x" * (i % 50),
                             ts=ts))
    return out


@pytest.fixture(scope="session")
def chat() -> Chat:
    return Chat()


@pytest.fixture(scope="session")
def pool(chat: Chat) -> list[Object]:
    """3,000 distinct, real signed posts of `chat`'s workspace."""
    objects = build_pool(chat, POOL_SIZE)
    assert len({o.id for o in objects}) == POOL_SIZE
    return objects


@pytest.fixture
def secret() -> bytes:
    return os.urandom(32)
