"""Causal order inside a set of objects (docs/ARCHITECTURE.md "Objects", causal order).

An object comes after everything it links to; concurrent objects are ordered by `ts`, then by
id. Links to objects that are not in the set (missing or deleted) are ignored, so the order is a
function of the set alone, whatever order the objects arrived in.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable
from typing import Protocol, TypeVar

# Objects dated further ahead than this are hidden until their time comes (docs/ARCHITECTURE.md,
# "Chat kinds"). Authors neither link to nor date after them: a far-future object must not
# drag every later object of its stream into the future with it.
HORIZON_MS = 7 * 24 * 3600 * 1000


class Linked(Protocol):
    @property
    def id(self) -> bytes: ...

    @property
    def ts(self) -> int: ...

    @property
    def links(self) -> tuple[bytes, ...]: ...


L = TypeVar("L", bound=Linked)


def heads(objects: Iterable[Linked]) -> set[bytes]:
    """Ids of the objects no object in the set links to (more than one head is a fork)."""
    objects = list(objects)
    linked = {link for obj in objects for link in obj.links}
    return {obj.id for obj in objects} - linked


def causal_order(objects: Iterable[L],
                 links: Callable[[L], Iterable[bytes]] | None = None) -> list[L]:
    """The objects in causal order: Kahn's algorithm, always taking the smallest (ts, id).

    Taking the smallest ready object each time makes the result the unique smallest linear
    extension of the link order, so it depends only on the set (duplicates are dropped).
    `links` gives what an object comes after, when not its own links (documents across
    branches: core.documents._review).
    """
    by_id = {obj.id: obj for obj in objects}
    waiting: dict[bytes, int] = {}
    children: dict[bytes, list[bytes]] = {}
    for obj in by_id.values():
        parents = {link for link in (obj.links if links is None else links(obj))
                   if link in by_id}
        waiting[obj.id] = len(parents)
        for parent in parents:
            children.setdefault(parent, []).append(obj.id)
    ready = [(obj.ts, obj.id) for obj in by_id.values() if waiting[obj.id] == 0]
    heapq.heapify(ready)
    order: list[L] = []
    while ready:
        _, oid = heapq.heappop(ready)
        order.append(by_id[oid])
        for child in children.get(oid, ()):
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, (by_id[child].ts, child))
    # Ids are hashes of content, so a cycle would need a hash collision; never drop objects.
    if len(order) != len(by_id):  # pragma: no cover
        placed = {obj.id for obj in order}
        order.extend(sorted((o for o in by_id.values() if o.id not in placed),
                            key=lambda o: (o.ts, o.id)))
    return order


def next_ts(now_ms: int, parents_ts: Iterable[int]) -> int:
    """A timestamp for a new object: now, but always after everything it links to.

    With every author doing this, ordering by (ts, id) is itself a causal order, which is what
    lets the replica keep last-writer-wins views with an index instead of a graph walk.
    """
    return max([now_ms, *(ts + 1 for ts in parents_ts)])


def linkable(heads: Iterable[tuple[bytes, int]], now_ms: int,
             limit: int = 64) -> list[tuple[bytes, int]]:
    """The (id, ts) heads a new object may link to and date itself after: those not beyond
    the horizon, at most `limit` (the newest, ties by id), sorted by id."""
    horizon = now_ms + HORIZON_MS
    within = sorted((h for h in heads if h[1] <= horizon), key=lambda h: (-h[1], h[0]))
    return sorted(within[:limit])
