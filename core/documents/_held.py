"""What a document holds: its objects by id and stream, what is derived from them (the caches
dropped when objects arrive that can change it, the payloads decrypted), and time (only from
the clock it is handed)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from ..causal import HORIZON_MS, linkable
from ..objects import Object

COMMENT = "doc/comment"  # kept in its branch's stream beside the commits (`_comments`)


@dataclass
class _RootIndex:
    """The root branch's causal structure, from one pass over it, so that asking who was an
    editor in a root state walks nothing."""

    # root object -> the creator's doc/editors and doc/editing objects in its causal past
    # (itself included)
    changes: dict[bytes, frozenset[bytes]]
    every_change: frozenset[bytes]
    # removed key -> (removal id, ids in that removal's causal past)
    removals: dict[bytes, list[tuple[bytes, frozenset[bytes]]]]
    heads: set[bytes] | None = None  # heads among the objects that count


@dataclass
class _Cache:
    """What is derived from the objects; dropped when objects arrive that can change it."""

    # the creator's changes in a root state -> (editors listed, whether members edit too)
    editors: dict[frozenset[bytes], tuple[frozenset[bytes], bool]] = field(default_factory=dict)
    # branch -> (heads, ts of the earliest commit left out for being beyond the horizon)
    heads: dict[bytes, tuple[tuple[bytes, ...], int | None]] = field(default_factory=dict)
    visible: dict[bytes, bool] = field(default_factory=dict)
    # branch -> ids of its commits, when every one of them was found visible at once
    all_visible: dict[bytes, set[bytes]] = field(default_factory=dict)
    roots: dict[bytes, tuple[bytes, ...] | None] = field(default_factory=dict)
    rootless: bool = False  # whether `roots` holds a None (a parent was missing)
    # ids not held that a commit found not to count would count with (a missing parent or
    # root head): their arrival may change the text at heads a kept state is at
    waiting: set[bytes] = field(default_factory=set)
    branches: list[Object] | None = None
    branch_ids: frozenset[bytes] | None = None
    # main's branch, and the ts of the earliest doc/main left out for being beyond the horizon
    main: tuple[bytes | None, int | None] | None = None
    index: _RootIndex | None = None
    counts: dict[bytes, bool] = field(default_factory=dict)
    # recipient -> branch -> [(epoch, key)] sealed to it by editors
    sealed: dict[bytes, dict[bytes, list[tuple[int, bytes]]]] = field(default_factory=dict)


class Held:
    """The objects of one document, the caches derived from them, and the clock. The
    collaborators of `Document` give them meaning."""

    def __init__(self, root: Object, clock: Callable[[], int] | None) -> None:
        self.root = root
        self.clock = clock
        self.objects: dict[bytes, Object] = {root.id: root}
        self.streams: dict[bytes, list[Object]] = {}
        # branch -> what the branch's commits held link to (their parents), from when its
        # heads were first worked out
        self.linked: dict[bytes, set[bytes]] = {}
        self.root_kinds: dict[str, list[Object]] = {}
        self.cache = _Cache()
        # commit or comment id -> its payload, decrypted once; None: no key held opened it
        self.payloads: dict[bytes, dict | None] = {}
        self.new: list[Object] = []  # made here since the last `Document.drain`
        # Every commit's hex id, sorted, for lookups by prefix; None until one is asked for.
        self.commit_hexes: list[str] | None = None

    def store(self, obj: Object) -> None:
        self.objects[obj.id] = obj
        self.streams.setdefault(obj.stream, []).append(obj)
        if obj.type == "doc/commit":
            if (linked := self.linked.get(obj.stream)) is not None:
                linked.update(obj.links)
            if self.commit_hexes is not None:
                insort(self.commit_hexes, obj.id.hex())
        if obj.stream == self.root.id:
            self.root_kinds.setdefault(obj.type, []).append(obj)

    def belongs(self, obj: Object) -> bool:
        if obj.stream == self.root.id:
            return obj.type.startswith("doc/")
        return obj.type in ("doc/commit", COMMENT)

    def in_root(self, kind: str) -> list[Object]:
        return self.root_kinds.get(kind, [])

    def forget_unread(self) -> None:
        """A key arrived: payloads no key opened before may open now."""
        self.payloads = {k: v for k, v in self.payloads.items() if v is not None}

    def with_prefix(self, prefix: str) -> list[bytes]:
        """Ids of the commits (visible or not) whose hex id starts with `prefix`."""
        if self.commit_hexes is None:
            self.commit_hexes = sorted(oid.hex() for oid, o in self.objects.items()
                                       if o.type == "doc/commit")
        hexes = self.commit_hexes
        out = []
        for n in range(bisect_left(hexes, prefix), len(hexes)):
            if not hexes[n].startswith(prefix):
                break
            out.append(bytes.fromhex(hexes[n]))
        return out

    def now(self) -> int:
        return self.clock() if self.clock else 0

    def horizon(self) -> int | None:
        """Objects dated after this are not visible yet; None without a clock."""
        return self.clock() + HORIZON_MS if self.clock else None

    def current(self, objects: Iterable[Object]) -> list[Object]:
        horizon = self.horizon()
        return [o for o in objects if horizon is None or o.ts <= horizon]

    def linkable(self, ids: Iterable[bytes], now: int) -> list[bytes]:
        """Of `ids`, those a new object made at `now` may link to and date itself after."""
        heads = [(i, self.objects[i].ts) for i in set(ids) if i in self.objects]
        if self.clock is None:  # no "now" to measure a horizon from: only cap the count
            now = max((ts for _, ts in heads), default=0)
        return [i for i, _ in linkable(heads, now)]

    def past(self, heads: Iterable[bytes], stream: bytes) -> list[Object]:
        """Objects of `stream` in the causal past of `heads` (inclusive)."""
        seen: set[bytes] = set()
        stack = list(heads)
        out = []
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            obj = self.objects.get(oid)
            if obj is None or obj.stream != stream:
                continue
            out.append(obj)
            stack.extend(obj.links)
        return out
