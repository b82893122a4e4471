"""Signed chat posts for the storage benchmarks, built the way `hearth post` builds them."""

from __future__ import annotations

import os
import random
from concurrent.futures import ProcessPoolExecutor

from core import kinds
from core.identity import Identity
from core.objects import build

WORDS = ["the", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "sync", "replica", "channel", "topic", "meeting", "lunch", "release", "bug", "review", "deploy", "coffee", "weekend", "document", "branch", "merge", "hearth", "cable", "network", "window", "message", "search"]
START_MS = 1_700_000_000_000


def _build_range(args: tuple[int, int, int, int, int, bytes]) -> list[bytes]:
    start, stop, channels, authors, seed, workspace = args
    rng = random.Random(seed)
    people = [Identity.from_seed(bytes([n % 256, n // 256]) * 16) for n in range(authors)]
    heads: dict[int, bytes] = {}
    out = []
    for n in range(start, stop):
        channel = n % channels
        name = f"channel-{channel}"
        text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 20)))
        prev = heads.get(channel)
        obj = build(people[rng.randrange(authors)], "post/text",
                    stream=kinds.channel_stream(workspace, name),
                    body={"channel": name, "text": f"{text} #{n}"},
                    ts=START_MS + n * 1000, links=[prev] if prev else [])
        heads[channel] = obj.id
        out.append(obj.raw)
    return out


def posts(count: int, *, channels: int = 50, authors: int = 200,
          workspace: bytes = bytes(32), workers: int | None = None,
          offset: int = 0) -> list[bytes]:
    """`count` signed post/text objects numbered from `offset`; within each worker's range
    a post links to the previous one of its channel."""
    workers = workers or os.cpu_count() or 1
    step = -(-count // workers)
    jobs = [(i, min(i + step, offset + count), channels, authors, i, workspace)
            for i in range(offset, offset + count, step)]
    with ProcessPoolExecutor(workers) as pool:
        return [raw for part in pool.map(_build_range, jobs) for raw in part]
