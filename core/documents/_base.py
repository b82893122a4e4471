"""What a document holds: its objects by id and stream, the branch keys this holder has, the
states and caches derived from them, and time (only from the clock it is handed)."""

from __future__ import annotations

from bisect import bisect_left, insort
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import nacl.exceptions
import nacl.secret

from ..causal import HORIZON_MS, linkable
from ..identity import Identity
from ..objects import Object
from ._live import _Live
from ._records import DocumentError

CHECKPOINT_EVERY = 256  # commits made here between the states kept in memory
CHECKPOINTS_KEPT = 8
# Live states kept per branch besides the branch's own: one per line of work that commits
# continue from (each author's, when several commit at once), moved forward, never copied.
STATES_KEPT = 6


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


class _DocumentBase:
    """The objects, keys and caches of one document, and the clock. The layers above (_root,
    _keys, _commits, _document) give them meaning."""

    def __init__(self, root: Object, *, identity: Identity | None = None,
                 clock: Callable[[], int] | None = None, undo: bool = True,
                 secret: bytes | None = None, secrets: tuple[bytes, ...] = (),
                 members: frozenset[bytes] = frozenset()) -> None:
        if root.type != "doc/root":
            raise DocumentError("a document starts from a doc/root object")
        self.root = root
        self.identity = identity
        # The workspace secret (the app hands it in; core reads no files): it opens the
        # branch keys published to the whole workspace (`doc/workspace-key`), and editors
        # publish new keys under it while the document is workspace-readable.
        self.secret = secret
        # Every epoch's secret the holder has (core/membership.py): keys published under an
        # older one still open; new ones are published under `secret`, the newest.
        self.secrets = tuple(dict.fromkeys((*filter(None, [secret]), *secrets)))
        self._workspace_keys_taken: set[bytes] = set()  # doc/workspace-key ids opened
        # branch -> (epoch, key)s opened from doc/workspace-keys that count: what members
        # write with while the document is workspace-editable (`_keys._writing`)
        self._workspace_opened: dict[bytes, list[tuple[int, bytes]]] = {}
        # The workspace's members (the app hands them in: current ones and removed ones, whose
        # objects storage holds only where their removal kept them): while the document is
        # workspace-editable, each of them is an editor (`_root.editors`).
        self.members = frozenset(members)
        self._clock = clock
        self.track_undo = undo  # an editor wants it; a bulk import need not pay for it
        self._objects: dict[bytes, Object] = {root.id: root}
        self._streams: dict[bytes, list[Object]] = {}
        # branch -> what the branch's commits held link to (their parents), from when its
        # heads were first worked out
        self._linked: dict[bytes, set[bytes]] = {}
        self._root_kinds: dict[str, list[Object]] = {}
        # (branch, epoch) -> keys, for reading; two editors refreshing at once make two keys of
        # one epoch. Which key encrypts new commits is decided by `_writing` alone.
        self._keys: dict[tuple[bytes, int], list[bytes]] = {}
        self._unsealed: dict[bytes, bytes | None] = {}  # doc/branch-key id -> its key
        self._pending: list[Object] = []  # keys sealed to this holder, by no editor (yet)
        self._payloads: dict[bytes, dict | None] = {}
        self._live: dict[bytes, _Live] = {}
        self._others: dict[bytes, list[_Live]] = {}  # branch -> STATES_KEPT, latest used first
        # branch -> (heads, Yjs state there) from snapshots taken in: where states at other
        # heads start from, so that reading an old commit replays only what came after one.
        self._checkpoints: dict[bytes, list[tuple[frozenset[bytes], bytes]]] = {}
        # The same, taken here every CHECKPOINT_EVERY commits (the latest few): where a commit
        # on parents that are not the live state (someone else's commit came first) starts.
        self._recent: dict[bytes, deque[tuple[frozenset[bytes], bytes]]] = {}
        self._made: dict[bytes, int] = {}  # branch -> commits made here
        self._cache = _Cache()
        self._new: list[Object] = []
        # Pasts walked across branches (_review): (the cache and object count they were
        # walked with, heads -> commit -> parents); None until one is asked for.
        self._reaches: tuple[_Cache, int, dict] | None = None
        # Every commit's hex id, sorted, for lookups by prefix; None until one is asked for.
        self._commit_hexes: list[str] | None = None

    def _use(self, branch: bytes, live: _Live, *, own: bool = False) -> None:
        """Keep `live` among the branch's states, as the branch's own (commits and undo
        continue from it) when `own`; the state it displaces is kept among the others."""
        others = [s for s in self._others.get(branch, ()) if s is not live]
        if own:
            mine = self._live.get(branch)
            self._live[branch] = live
            live = mine  # type: ignore[assignment]
        if live is not None and live is not self._live.get(branch):
            others.insert(0, live)
        self._others[branch] = others[:STATES_KEPT]

    def _drop(self, branch: bytes, live: _Live) -> None:
        if self._live.get(branch) is live:
            del self._live[branch]
        self._others[branch] = [s for s in self._others.get(branch, ()) if s is not live]

    def _keep_state(self, branch: bytes, live: _Live) -> None:
        """Count a commit made here on `branch`; every so many, keep the state it left."""
        made = self._made[branch] = self._made.get(branch, 0) + 1
        if made % CHECKPOINT_EVERY == 0 and live.complete and live.heads:
            self._recent.setdefault(branch, deque(maxlen=CHECKPOINTS_KEPT)).append(
                (live.heads, live.doc.get_update()))

    def _store(self, obj: Object) -> None:
        self._objects[obj.id] = obj
        self._streams.setdefault(obj.stream, []).append(obj)
        if obj.type == "doc/commit":
            if (linked := self._linked.get(obj.stream)) is not None:
                linked.update(obj.links)
            if self._commit_hexes is not None:
                insort(self._commit_hexes, obj.id.hex())
        if obj.stream == self.root.id:
            self._root_kinds.setdefault(obj.type, []).append(obj)

    def _belongs(self, obj: Object) -> bool:
        if obj.stream == self.root.id:
            return obj.type.startswith("doc/")
        return obj.type == "doc/commit"

    def _with_prefix(self, prefix: str) -> list[bytes]:
        """Ids of the commits (visible or not) whose hex id starts with `prefix`."""
        if self._commit_hexes is None:
            self._commit_hexes = sorted(oid.hex() for oid, o in self._objects.items()
                                        if o.type == "doc/commit")
        hexes = self._commit_hexes
        out = []
        for n in range(bisect_left(hexes, prefix), len(hexes)):
            if not hexes[n].startswith(prefix):
                break
            out.append(bytes.fromhex(hexes[n]))
        return out

    def drain(self) -> list[Object]:
        """Objects created here since the last drain (for the replica to ingest)."""
        new, self._new = self._new, []
        return new

    def objects(self) -> list[Object]:
        return list(self._objects.values())

    def keys(self) -> list[tuple[bytes, int, bytes]]:
        """Every branch key this holder has: (branch id, epoch, key)."""
        return [(branch, epoch, key) for (branch, epoch), keys in self._keys.items()
                for key in keys]

    def _add_key(self, branch: bytes, epoch: int, key: bytes) -> None:
        keys = self._keys.setdefault((branch, epoch), [])
        if key not in keys:
            keys.append(key)
            self._payloads = {k: v for k, v in self._payloads.items() if v is not None}

    def _open_box(self, branch: bytes, epoch: int, box: bytes, nonce: bytes) -> bytes | None:
        """Decrypt with whichever of the epoch's keys fits; None when none does."""
        keys = self._keys.get((branch, epoch), [])
        for n, key in enumerate(keys):
            try:
                plain = nacl.secret.SecretBox(key).decrypt(box, nonce)
            except nacl.exceptions.CryptoError:
                continue
            if n:  # tried first next time: stray keys of an epoch cost one failure, not many
                keys.insert(0, keys.pop(n))
            return plain
        return None

    def _latest_epoch(self, branch: bytes) -> int | None:
        epochs = [epoch for (b, epoch) in self._keys if b == branch]
        return max(epochs) if epochs else None

    @property
    def id(self) -> str:
        return self.root.id.hex()

    def _now(self) -> int:
        return self._clock() if self._clock else 0

    def _horizon(self) -> int | None:
        """Objects dated after this are not visible yet; None without a clock."""
        return self._clock() + HORIZON_MS if self._clock else None

    def _current(self, objects: Iterable[Object]) -> list[Object]:
        horizon = self._horizon()
        return [o for o in objects if horizon is None or o.ts <= horizon]

    def _linkable(self, ids: Iterable[bytes], now: int) -> list[bytes]:
        """Of `ids`, those a new object made at `now` may link to and date itself after."""
        heads = [(i, self._objects[i].ts) for i in set(ids) if i in self._objects]
        if self._clock is None:  # no "now" to measure a horizon from: only cap the count
            now = max((ts for _, ts in heads), default=0)
        return [i for i, _ in linkable(heads, now)]

    def _past(self, heads: Iterable[bytes], stream: bytes) -> list[Object]:
        """Objects of `stream` in the causal past of `heads` (inclusive)."""
        seen: set[bytes] = set()
        stack = list(heads)
        out = []
        while stack:
            oid = stack.pop()
            if oid in seen:
                continue
            seen.add(oid)
            obj = self._objects.get(oid)
            if obj is None or obj.stream != stream:
                continue
            out.append(obj)
            stack.extend(obj.links)
        return out
