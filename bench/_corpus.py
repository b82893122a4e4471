"""Signed chat objects for the benchmarks, built the way `hearth post` (app/workspace.py) builds
them: each links to its channel's heads and is dated after them.

`posts` gives plain post/text messages; `conversation` gives the same messages with a
conversation mix among them: reactions on some (a few of them taken back later by a
post/delete), and edits of some by their authors."""

from __future__ import annotations

import os
import random
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from core import kinds
from core.identity import Identity
from core.objects import Object, authored

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "sync", "replica", "channel", "topic", "meeting", "lunch", "release", "bug", "review", "deploy", "coffee", "weekend", "document", "branch", "merge", "hearth", "cable", "network", "window", "message", "search"]
START_MS = 1_700_000_000_000
EMOJI = ["👍", "❤️", "😂", "🎉", "👀", "🙏"]  # ❤️ carries a variation selector, as people send it


@dataclass(frozen=True)
class Mix:
    """How much conversation there is around the messages."""

    reacted: float = 0.20  # share of messages that get reactions (1 to 3 each)
    edited: float = 0.05  # share of messages their author edits once
    unreacted: float = 0.05  # share of reactions their author takes back
    within: int = 30  # each of these follows what it is about within this many messages


@dataclass(frozen=True)
class Conversation:
    raws: list[bytes]  # in causal order: everything after what it links to and names
    kinds: Counter  # objects by kind

    @property
    def messages(self) -> int:
        return self.kinds["post/text"]


def _text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20))) + f" #{n}"


class _Streams:
    """The heads of each channel stream as a replica holding everything built so far keeps
    them (storage._ingest: a purged object's parents are heads again if nothing else links
    to them), and the objects built, in order."""

    def __init__(self, workspace: bytes, channels: int):
        self.names = [f"channel-{c}" for c in range(channels)]
        self.streams = [kinds.channel_stream(workspace, name) for name in self.names]
        self.heads: list[dict[bytes, int]] = [{} for _ in range(channels)]
        self.children: Counter = Counter()
        self.ts: dict[bytes, int] = {}
        self.raws: list[bytes] = []
        self.kinds: Counter = Counter()

    def publish(self, who: Identity, kind: str, channel: int, body: dict,
                now_ms: int) -> Object:
        heads = self.heads[channel]
        obj = authored(who, kind, stream=self.streams[channel], body=body, now_ms=now_ms,
                       heads=heads.items())
        for link in obj.links:
            self.children[link] += 1
            heads.pop(link, None)
        heads[obj.id] = self.ts[obj.id] = obj.ts
        self.raws.append(obj.raw)
        self.kinds[kind] += 1
        return obj

    def delete(self, who: Identity, channel: int, target: Object, now_ms: int) -> None:
        heads = self.heads[channel]
        heads.pop(target.id, None)
        for link in target.links:
            self.children[link] -= 1
            if not self.children[link] and link in self.ts:
                heads[link] = self.ts[link]
        self.ts.pop(target.id)
        self.publish(who, "post/delete", channel, {"targets": [target.id]}, now_ms)


def _build_range(args: tuple[int, int, int, int, int, bytes, Mix | None]
                 ) -> tuple[list[bytes], Counter]:
    start, stop, channels, authors, seed, workspace, mix = args
    rng = random.Random(seed)  # what the messages say and who says them: the same with a mix
    extra = random.Random(f"mix-{seed}")
    people = [Identity.from_seed(bytes([n % 256, n // 256]) * 16) for n in range(authors)]
    built = _Streams(workspace, channels)
    later: dict[int, list[Callable[[int, int], None]]] = {}  # after message n: these happen

    def soon(n: int, action: Callable[[int, int], None]) -> None:
        later.setdefault(min(n + extra.randint(0, mix.within), stop - 1), []).append(action)

    def react(who: Identity, target: Object, channel: int, emoji: str):
        def act(n: int, now_ms: int) -> None:
            body = {"channel": built.names[channel], "target": target.id, "emoji": emoji}
            reaction = built.publish(who, "post/react", channel, body, now_ms)
            if extra.random() < mix.unreacted:
                soon(n, lambda n, now_ms: built.delete(who, channel, reaction, now_ms))
        return act

    def edit(who: Identity, target: Object, channel: int):
        def act(n: int, now_ms: int) -> None:
            body = {"channel": built.names[channel], "target": target.id,
                    "text": f"{_text(extra, n)} (edited)"}
            built.publish(who, "post/edit", channel, body, now_ms)
        return act

    for n in range(start, stop):
        channel = n % channels
        text = _text(rng, n)
        author = people[rng.randrange(authors)]
        post = built.publish(author, "post/text", channel,
                             {"channel": built.names[channel], "text": text}, START_MS + n * 1000)
        if mix is None:
            continue
        if extra.random() < mix.reacted:
            pairs = {(extra.randrange(authors), extra.choice(EMOJI))
                     for _ in range(extra.randint(1, 3))}
            for who, emoji in sorted(pairs):
                soon(n, react(people[who], post, channel, emoji))
        if extra.random() < mix.edited:
            soon(n, edit(author, post, channel))
        step = 0
        while n in later:  # an action may add another one after the same message
            for action in later.pop(n):
                step += 1
                action(n, START_MS + n * 1000 + step)
    return built.raws, built.kinds


def _build(count: int, channels: int, authors: int, workspace: bytes, workers: int | None,
           offset: int, mix: Mix | None) -> Conversation:
    workers = workers or os.cpu_count() or 1
    step = -(-count // workers)
    jobs = [(i, min(i + step, offset + count), channels, authors, i, workspace, mix)
            for i in range(offset, offset + count, step)]
    raws: list[bytes] = []
    counts: Counter = Counter()
    with ProcessPoolExecutor(workers) as pool:
        for part, kinds_of_part in pool.map(_build_range, jobs):
            raws += part
            counts += kinds_of_part
    return Conversation(raws, counts)


def posts(count: int, *, channels: int = 50, authors: int = 200,
          workspace: bytes = bytes(32), workers: int | None = None,
          offset: int = 0) -> list[bytes]:
    """`count` signed post/text objects numbered from `offset`; within each worker's range
    a post links to the previous one of its channel."""
    return _build(count, channels, authors, workspace, workers, offset, None).raws


def conversation(count: int, *, channels: int = 50, authors: int = 200,
                 workspace: bytes = bytes(32), workers: int | None = None,
                 offset: int = 0, mix: Mix = Mix()) -> Conversation:
    """The `count` messages `posts` gives for the same arguments (same channels, authors,
    texts and times; their links differ), with `mix` among them: each reaction, edit and
    removal comes after what it names, within `mix.within` messages, and links to its
    channel's heads, as the next message does to it."""
    return _build(count, channels, authors, workspace, workers, offset, mix)
