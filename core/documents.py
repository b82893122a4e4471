"""Documents: repos of branches whose content is a pycrdt (Yjs) text (DESIGN.md "Documents").

A document is its signed objects (core.kinds documents the bodies):
- `doc/root` (its id is the document's id) names the title and first editors;
- the root branch, the stream named by that id, holds `doc/editors`, `doc/title`, `doc/branch`,
  `doc/main`, `doc/tag`, `doc/branch-key` and `doc/key-refresh`;
- each branch is the stream named by its `doc/branch` id, a DAG of `doc/commit`s whose links
  are their parents.

A commit carries the Yjs update of its own transaction, encrypted with its branch's key of an
epoch; the text at a set of commits is the union of the updates in their causal past, so it
depends on that set alone. A commit names the root-branch heads its author had seen and counts
only if its author was an editor there, so removing an editor does not depend on arrival
order. Only the creator changes editors or the title. Other root-branch objects count when
their author was an editor in the root state they name and, if the author was removed, the
removal acknowledged them. Branch keys reach editors sealed to their identity; a capability
hands one branch's keys to anyone. New commits are encrypted only with keys editors sealed
(capabilities and strangers' keys are for reading). Objects dated beyond the horizon
(core.causal.HORIZON_MS) are not linked to, dated after, or chosen as the latest yet.

Positions at this API are Unicode codepoints; pycrdt counts UTF-8 bytes (see `_Live`).
"""

from __future__ import annotations

import base64
import hashlib
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import nacl.exceptions
import nacl.secret
import pycrdt

from . import encoding
from .causal import HORIZON_MS, causal_order, linkable, next_ts
from .identity import Identity, IdentityError, seal_to
from .objects import Object, build

Edit = tuple[int, int, str]  # (position, delete count, inserted text), in codepoints
KEY_SIZE = nacl.secret.SecretBox.KEY_SIZE
CLIENT_ID_BITS = 53  # Yjs client ids are safe integers in JavaScript
CAP_PREFIX = "hearthcap1-"
_CAP_CHECKSUM = 4
TEXT = "text"
LOCAL = "local"  # origin of this holder's own edits: the only ones undo and redo touch


class DocumentError(ValueError):
    """A document operation that cannot be done; the message is for a person."""


@dataclass(frozen=True)
class CommitInfo:
    id: str
    branch: str
    parents: tuple[str, ...]
    author: bytes
    ts: int
    kind: str  # edit | snapshot | merge, or "?" when this holder cannot read the branch
    merged: tuple[str, ...] = ()


@dataclass(frozen=True)
class BranchInfo:
    id: str
    name: str
    source: str | None
    at: tuple[str, ...]
    heads: tuple[str, ...]
    main: bool
    readable: bool


@dataclass
class _Live:
    """A pycrdt document at a set of heads, that commits may continue from.

    Its client id is used by this instance only, and only while its state moves forward, so a
    client id is never reused from two different states.
    """

    heads: frozenset[bytes]
    doc: pycrdt.Doc
    text: pycrdt.Text
    mirror: str | None = None  # the text, kept only once it holds non-ASCII characters
    ascii: bool = True
    undo: pycrdt.UndoManager | None = None
    length: int | None = None  # in codepoints; None when unknown
    complete: bool = True  # False when built while an ancestor commit was missing

    @classmethod
    def empty(cls) -> _Live:
        doc = pycrdt.Doc(client_id=secrets.randbits(CLIENT_ID_BITS) or 1)
        return cls(frozenset(), doc, doc.get(TEXT, type=pycrdt.Text))

    def absorb(self, update: bytes) -> None:
        self.doc.apply_update(update)
        self.forget()

    def forget(self) -> None:
        """The text changed in ways not tracked here: recompute what is derived from it."""
        self.mirror, self.ascii, self.length = None, False, None

    def value(self) -> str:
        if self.mirror is not None:
            return self.mirror
        value = str(self.text)
        self.ascii = value.isascii()
        if not self.ascii:
            self.mirror = value
        return value

    def _offset(self, position: int) -> int:
        """UTF-8 byte offset of a codepoint position (pycrdt counts bytes)."""
        if self.ascii and self.mirror is None:
            return position
        return len(self.value()[:position].encode())

    def apply(self, edits: Iterable[Edit], *, track_undo: bool = True) -> bytes:
        """Apply edits in one transaction; returns that transaction's Yjs update."""
        if self.undo is None and track_undo:
            self.undo = pycrdt.UndoManager(scopes=[self.text], capture_timeout_millis=0)
            self.undo.include_origin(LOCAL)
        if self.mirror is None and not self.ascii:
            self.value()

        def run() -> None:
            with self.doc.transaction(origin=LOCAL):
                for position, delete, insert in edits:
                    self._edit(position, delete, insert)
        return self.capture(run)

    def capture(self, action: Callable[[], object]) -> bytes:
        """Run `action`; return the Yjs update of the transactions it made."""
        updates: list[bytes] = []
        subscription = self.doc.observe(lambda event: updates.append(event.update))
        try:
            action()
        finally:
            self.doc.unobserve(subscription)
        return updates[0] if len(updates) == 1 else _merge(updates)

    def _length(self) -> int:
        """Length in codepoints (cached: pycrdt's len() is bytes, and not free)."""
        if self.length is None:
            self.length = len(self.value())
        return self.length

    def _edit(self, position: int, delete: int, insert: str) -> None:
        length = self._length()  # edits were checked against it (_check_edits)
        start = self._offset(position)
        if delete:
            end = self._offset(position + delete)
            del self.text[start:end]
        if insert:
            self.text.insert(start, insert)
        self.length = length - delete + len(insert)
        if self.mirror is not None:
            self.mirror = self.mirror[:position] + insert + self.mirror[position + delete:]
        elif not insert.isascii():
            self.ascii = False
            self.mirror = None
            self.value()


def _merge(updates: list[bytes]) -> bytes:
    if not updates:
        return b""
    return pycrdt.merge_updates(*updates)


MAX_COMMIT_BYTES = 40_000  # text or update bytes per commit: with its envelope, < 64 KiB
MAX_INSERT = 10_000  # codepoints (at most 4 bytes each) per piece of a long insert


def _check_edits(length: int, edits: list[Edit]) -> None:
    """Refuse edits that fall outside the text, before any is applied."""
    for position, delete, insert in edits:
        if not (isinstance(insert, str) and 0 <= position <= length
                and 0 <= delete <= length - position):
            raise DocumentError(f"edit ({position}, {delete}) is outside the text "
                                f"({length} characters)")
        length += len(insert) - delete


def _groups(edits: list[Edit]) -> list[list[Edit]]:
    """Edits in groups small enough for one commit each (long inserts cut into pieces)."""
    pieces: list[Edit] = []
    for position, delete, insert in edits:
        if len(insert) <= MAX_INSERT:
            pieces.append((position, delete, insert))
            continue
        for start in range(0, len(insert), MAX_INSERT):
            pieces.append((position + start, delete if start == 0 else 0,
                           insert[start:start + MAX_INSERT]))
    groups: list[list[Edit]] = []
    size = MAX_COMMIT_BYTES
    for edit in pieces:
        cost = len(edit[2].encode()) + 16
        if size + cost > MAX_COMMIT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(edit)
        size += cost
    return groups


def _chunk_updates(updates: list[bytes]) -> list[bytes]:
    """Yjs updates merged into as few chunks as fit in one commit each."""
    chunks: list[bytes] = []
    group: list[bytes] = []
    size = 0
    for update in updates:
        if group and size + len(update) > MAX_COMMIT_BYTES:
            chunks.append(_merge(group))
            group, size = [], 0
        group.append(update)
        size += len(update)
    if group:
        chunks.append(_merge(group))
    return chunks


# Capabilities ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Capability:
    """Read access to one branch: its keys, by epoch."""

    document: bytes
    branch: bytes
    keys: tuple[tuple[int, bytes], ...]

    def encode(self) -> str:
        data = encoding.dumps({"d": self.document, "b": self.branch,
                               "k": [[epoch, key] for epoch, key in self.keys]})
        data += hashlib.blake2b(data, digest_size=_CAP_CHECKSUM).digest()
        return CAP_PREFIX + base64.b32encode(data).decode().rstrip("=").lower()

    @classmethod
    def decode(cls, text: str) -> Capability:
        text = "".join(text.split()).lower()
        if not text.startswith(CAP_PREFIX):
            raise DocumentError("that is not a Hearth read capability")
        body = text[len(CAP_PREFIX):].upper()
        try:
            data = base64.b32decode(body + "=" * (-len(body) % 8))
        except ValueError:
            raise DocumentError("that capability has characters it cannot have") from None
        payload, checksum = data[:-_CAP_CHECKSUM], data[-_CAP_CHECKSUM:]
        if hashlib.blake2b(payload, digest_size=_CAP_CHECKSUM).digest() != checksum:
            raise DocumentError("that capability is damaged or incomplete; copy it again")
        try:
            record = encoding.loads(payload)
            keys = tuple((e, bytes(k)) for e, k in record["k"])
            cap = cls(bytes(record["d"]), bytes(record["b"]), keys)
        except (encoding.EncodingError, KeyError, TypeError, ValueError):
            raise DocumentError("that capability is damaged") from None
        if len(cap.document) != 32 or len(cap.branch) != 32 or not keys or any(
                type(e) is not int or not 0 <= e < 2**63 or len(k) != KEY_SIZE
                for e, k in keys):
            raise DocumentError("that capability is damaged")
        return cap


# The document ------------------------------------------------------------------------------

@dataclass
class _RootIndex:
    """The root branch's causal structure, from one pass over it, so that asking who was an
    editor in a root state walks nothing."""

    # root object -> the creator's doc/editors objects in its causal past (itself included)
    changes: dict[bytes, frozenset[bytes]]
    every_change: frozenset[bytes]
    # removed key -> (removal id, ids in that removal's causal past)
    removals: dict[bytes, list[tuple[bytes, frozenset[bytes]]]]
    heads: set[bytes] | None = None  # heads among the objects that count


@dataclass
class _Cache:
    """What is derived from the objects; dropped when objects arrive that can change it."""

    editors: dict[frozenset[bytes], frozenset[bytes]] = field(default_factory=dict)
    # branch -> (heads, ts of the earliest commit left out for being beyond the horizon)
    heads: dict[bytes, tuple[tuple[bytes, ...], int | None]] = field(default_factory=dict)
    visible: dict[bytes, bool] = field(default_factory=dict)
    roots: dict[bytes, tuple[bytes, ...] | None] = field(default_factory=dict)
    branches: list[Object] | None = None
    branch_ids: frozenset[bytes] | None = None
    index: _RootIndex | None = None
    counts: dict[bytes, bool] = field(default_factory=dict)
    # recipient -> branch -> [(epoch, key)] sealed to it by editors
    sealed: dict[bytes, dict[bytes, list[tuple[int, bytes]]]] = field(default_factory=dict)


class Document:
    """One document, held in memory: its objects, the branch keys this holder has, and the
    states derived from them. Pure: no I/O; time only from the `clock` it is handed."""

    def __init__(self, root: Object, *, identity: Identity | None = None,
                 clock: Callable[[], int] | None = None, undo: bool = True):
        if root.type != "doc/root":
            raise DocumentError("a document starts from a doc/root object")
        self.root = root
        self.identity = identity
        self._clock = clock
        self.track_undo = undo  # an editor wants it; a bulk import need not pay for it
        self._objects: dict[bytes, Object] = {root.id: root}
        self._streams: dict[bytes, list[Object]] = {}
        self._root_kinds: dict[str, list[Object]] = {}
        # (branch, epoch) -> keys, for reading; two editors refreshing at once make two keys of
        # one epoch. Which key encrypts new commits is decided by `_writing` alone.
        self._keys: dict[tuple[bytes, int], list[bytes]] = {}
        self._unsealed: dict[bytes, bytes | None] = {}  # doc/branch-key id -> its key
        self._pending: list[Object] = []  # keys sealed to this holder, by no editor (yet)
        self._payloads: dict[bytes, dict | None] = {}
        self._live: dict[bytes, _Live] = {}
        self._cache = _Cache()
        self._new: list[Object] = []

    # Building ----------------------------------------------------------------------------------

    @classmethod
    def create(cls, identity: Identity, title: str, *, workspace: bytes = bytes(32),
               clock: Callable[[], int] | None = None, undo: bool = True) -> Document:
        """A new document whose first editor is `identity`, with an empty `main` branch."""
        root = build(identity, "doc/root", stream=workspace,
                     body={"title": title, "editors": [identity.public_key],
                           "nonce": os.urandom(16)},
                     ts=clock() if clock else 0)
        document = cls(root, identity=identity, clock=clock, undo=undo)
        document._new.append(root)
        document._new_branch(identity, "main", None, [])
        return document

    @classmethod
    def load(cls, objects: Iterable[Object], *, identity: Identity | None = None,
             keys: Iterable[tuple[bytes, int, bytes]] = (),
             snapshots: Iterable[tuple[bytes, bytes, int, bytes, bytes]] = (),
             clock: Callable[[], int] | None = None, undo: bool = True) -> Document:
        """A document from its objects (any order), the branch keys already known, and
        snapshots written by `snapshot` (so opening does not replay every update)."""
        objects = list(objects)
        roots = [o for o in objects if o.type == "doc/root"]
        if len(roots) != 1:
            raise DocumentError("a document needs exactly one doc/root object")
        document = cls(roots[0], identity=identity, clock=clock, undo=undo)
        for branch, epoch, key in keys:
            document._add_key(branch, epoch, key)
        document.add(objects)
        for snapshot in snapshots:
            document._restore(*snapshot)
        return document

    def snapshot(self, branch: str) -> tuple[bytes, bytes, int, bytes, bytes] | None:
        """The branch's state at its heads, sealed with its latest key:
        (branch, heads, epoch, nonce, box); None when this holder cannot read it."""
        branch_id = self._branch(branch)
        epoch = self._latest_epoch(branch_id)
        if epoch is None:
            return None
        heads = frozenset(bytes.fromhex(h) for h in self.heads(branch_id.hex()))
        state = self._state(branch_id, heads).doc.get_update() if heads else b""
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(self._keys[(branch_id, epoch)][0]).encrypt(
            state, nonce).ciphertext
        return branch_id, encoding.dumps(sorted(heads)), epoch, nonce, box

    def _restore(self, branch: bytes, heads: bytes, epoch: int, nonce: bytes,
                 box: bytes) -> None:
        try:
            ids = frozenset(encoding.loads(heads))
            state = self._open_box(branch, epoch, box, nonce)
        except (encoding.EncodingError, TypeError):
            return  # a damaged cache is only a slower open
        if state is None or not all(
                (c := self._objects.get(h)) is not None and c.stream == branch
                and self._visible(c) for h in ids):
            return
        live = _Live.empty()
        if state:
            live.absorb(state)
        live.heads = ids
        self._live[branch] = live

    def add(self, objects: Iterable[Object]) -> None:
        """Take in objects from elsewhere (sync, storage): state follows the set."""
        changed = False
        for obj in objects:
            if obj.id in self._objects or not self._belongs(obj):
                continue
            self._store(obj)
            changed = True
            if (obj.type == "doc/branch-key" and self.identity is not None
                    and obj.body["recipient"] == self.identity.public_key):
                self._pending.append(obj)
        if changed:
            self._cache = _Cache()
            self._live = {b: live for b, live in self._live.items() if live.complete}
            self._take_keys()

    def _store(self, obj: Object) -> None:
        self._objects[obj.id] = obj
        self._streams.setdefault(obj.stream, []).append(obj)
        if obj.stream == self.root.id:
            self._root_kinds.setdefault(obj.type, []).append(obj)

    def _belongs(self, obj: Object) -> bool:
        if obj.stream == self.root.id:
            return obj.type.startswith("doc/")
        return obj.type == "doc/commit"

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

    def _publish(self, identity: Identity, kind: str, stream: bytes, body: dict,
                 links: Iterable[bytes]) -> Object:
        now = self._now()
        links = self._linkable(links, now)
        ts = next_ts(now, (self._objects[link].ts for link in links))
        obj = build(identity, kind, stream=stream, body=body, ts=ts, links=links)
        self._store(obj)
        self._new.append(obj)
        if kind == "doc/commit":  # a new commit changes its branch's heads and nothing else
            self._cache.heads.pop(stream, None)
        elif stream == self.root.id and kind != "doc/editors" and self._cache.index is not None:
            self._extend_index(obj)
        else:
            self._cache = _Cache()
        return obj

    def _root_publish(self, identity: Identity, kind: str, body: dict) -> Object:
        return self._publish(identity, kind, self.root.id, body, self._root_heads())

    # The root branch: editors, title, branches, main, tags ------------------------------------

    def _in_root(self, kind: str) -> list[Object]:
        return self._root_kinds.get(kind, [])

    def _is_change(self, obj: Object) -> bool:
        return obj.type == "doc/editors" and obj.author == self.root.author

    def _inherit(self, changes: dict[bytes, frozenset[bytes]], obj: Object) -> frozenset[bytes]:
        parents = {changes[link] for link in obj.links if link in changes}
        own = frozenset([obj.id]) if self._is_change(obj) else frozenset()
        if len(parents) == 1 and not own:
            return parents.pop()
        return own.union(*parents)

    def _index(self) -> _RootIndex:
        index = self._cache.index
        if index is None:
            members = self._streams.get(self.root.id, [])
            changes: dict[bytes, frozenset[bytes]] = {}
            for obj in causal_order(members):
                changes[obj.id] = self._inherit(changes, obj)
            removals: dict[bytes, list[tuple[bytes, frozenset[bytes]]]] = {}
            for obj in self._in_root("doc/editors"):
                if self._is_change(obj) and obj.body["remove"]:
                    past = frozenset(o.id for o in self._past([obj.id], self.root.id))
                    for key in obj.body["remove"]:
                        removals.setdefault(key, []).append((obj.id, past))
            every = frozenset(o.id for o in self._in_root("doc/editors") if self._is_change(o))
            index = self._cache.index = _RootIndex(changes, every, removals)
        return index

    def _extend_index(self, obj: Object) -> None:
        """Take in a root object just made here (no editor change): nothing links to it yet."""
        index = self._index()
        index.changes[obj.id] = self._inherit(index.changes, obj)
        if index.heads is not None and self._counts(obj):
            index.heads.difference_update(obj.links)
            index.heads.add(obj.id)
        self._cache.branches = self._cache.branch_ids = None
        self._cache.sealed.clear()

    def _counts(self, obj: Object) -> bool:
        """Whether a root-branch object takes effect. Editors and titles: the creator's only.
        Others: its author was an editor in the root state it names, and each removal of its
        author either is in its causal past or acknowledges it (so what a removed editor makes
        in a stale view, or dates before the removal without it being seen, counts for nothing).
        """
        found = self._cache.counts.get(obj.id)
        if found is None:
            if obj.type in ("doc/editors", "doc/title"):
                found = obj.author == self.root.author
            else:
                index = self._index()
                before = index.changes.get(obj.id, frozenset())
                found = obj.author in self.editors(obj.links) and all(
                    removal in before or obj.id in past
                    for removal, past in index.removals.get(obj.author, ()))
            self._cache.counts[obj.id] = found
        return found

    def _root_heads(self) -> list[bytes]:
        """Heads of the root branch among the objects that count: what a new one acknowledges."""
        index = self._index()
        if index.heads is None:
            counting = [o for o in self._streams.get(self.root.id, []) if self._counts(o)]
            linked = {link for o in counting for link in o.links}
            index.heads = {o.id for o in counting if o.id not in linked}
        return sorted(index.heads)

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

    def editors(self, root_heads: Iterable[bytes] | None = None) -> frozenset[bytes]:
        """Editors in the root-branch state at `root_heads` (default: everything held)."""
        index = self._index()
        if root_heads is None:
            changes = index.every_change
        else:
            found = {index.changes[h] for h in root_heads if h in index.changes}
            changes = found.pop() if len(found) == 1 else frozenset().union(*found)
        editors = self._cache.editors.get(changes)
        if editors is None:
            current = set(self.root.body["editors"])
            for change in causal_order(self._objects[c] for c in changes):
                current.update(change.body["add"])  # only the creator's changes are here
                current.difference_update(change.body["remove"])
            editors = self._cache.editors[changes] = frozenset(current)
        return editors

    def _require_editor(self, identity: Identity) -> None:
        if identity.public_key not in self.editors():
            raise DocumentError("only the document's editors can do that")

    def _require_creator(self, identity: Identity) -> None:
        if identity.public_key != self.root.author:
            raise DocumentError("only the document's creator can do that")

    def add_editor(self, identity: Identity, public_key: bytes) -> None:
        """`identity` (the creator) makes `public_key` an editor; it gets every branch key."""
        self._require_creator(identity)
        if public_key in self.editors():
            raise DocumentError("already an editor")
        self._root_publish(identity, "doc/editors", {"add": [public_key], "remove": []})
        # Only keys editors sealed: a key from a capability, or a stranger, is for reading.
        for branch, keys in sorted(self._sealed_to(identity).items()):
            for epoch, key in keys:
                self._seal(identity, branch, epoch, key, [public_key])

    def remove_editor(self, identity: Identity, public_key: bytes) -> None:
        """Remove an editor and refresh every branch key, so later commits are closed to them."""
        self._require_creator(identity)
        if public_key not in self.editors():
            raise DocumentError("not an editor")
        if public_key == self.root.author:
            raise DocumentError("the creator stays an editor")
        self._root_publish(identity, "doc/editors", {"add": [], "remove": [public_key]})
        for branch in self._branch_objects():
            if self._latest_epoch(branch.id) is not None:
                self.refresh_key(identity, branch.id.hex())

    @property
    def title(self) -> str:
        titles = [o for o in self._current(self._in_root("doc/title")) if self._counts(o)]
        return max(titles, key=lambda o: (o.ts, o.id)).body["title"] if titles else \
            self.root.body["title"]

    def rename(self, identity: Identity, title: str) -> None:
        self._require_creator(identity)
        self._root_publish(identity, "doc/title", {"title": title})

    def _branch_objects(self) -> list[Object]:
        if self._cache.branches is None:
            self._cache.branches = sorted(
                (o for o in self._in_root("doc/branch") if self._counts(o)),
                key=lambda o: (o.ts, o.id))
        return self._cache.branches

    def _branch_ids(self) -> frozenset[bytes]:
        if self._cache.branch_ids is None:
            self._cache.branch_ids = frozenset(b.id for b in self._branch_objects())
        return self._cache.branch_ids

    def _main(self) -> bytes | None:
        branches = self._branch_ids()
        pointers = [o for o in self._current(self._in_root("doc/main"))
                    if self._counts(o) and o.body["branch"] in branches]
        if pointers:
            return max(pointers, key=lambda o: (o.ts, o.id)).body["branch"]
        first = [b for b in self._branch_objects() if b.body["name"] == "main"]
        return first[0].id if first else None

    def _branch(self, name_or_id: str) -> bytes:
        """A branch by name ("main" follows set_main) or by hex id."""
        branches = self._branch_objects()
        if name_or_id == "main" and (main := self._main()) is not None:
            return main
        for branch in branches:
            if branch.id.hex() == name_or_id:
                return branch.id
        named = [b for b in branches if b.body["name"] == name_or_id]
        if not named:
            raise DocumentError(f"no branch {name_or_id!r}")
        return named[0].id

    def branches(self) -> list[BranchInfo]:
        main = self._main()
        return [BranchInfo(b.id.hex(), b.body["name"],
                           b.body["source"].hex() if b.body["source"] else None,
                           tuple(c.hex() for c in b.body["at"]), tuple(self.heads(b.id.hex())),
                           b.id == main, self._latest_epoch(b.id) is not None)
                for b in self._branch_objects()]

    def set_main(self, identity: Identity, branch: str) -> None:
        """Make `branch` the document's main (what opens by default)."""
        self._require_editor(identity)
        self._root_publish(identity, "doc/main", {"branch": self._branch(branch)})

    def tag(self, identity: Identity, name: str, commit: str) -> None:
        """Point the tag `name` at `commit` (moving it if it exists: the latest wins)."""
        self._require_editor(identity)
        target = self._commit(commit)
        self._root_publish(identity, "doc/tag", {"name": name, "commit": target.id})

    def tags(self) -> dict[str, str]:
        latest: dict[str, Object] = {}
        for tag in self._current(self._in_root("doc/tag")):
            if self._counts(tag):
                current = latest.get(tag.body["name"])
                if current is None or (tag.ts, tag.id) > (current.ts, current.id):
                    latest[tag.body["name"]] = tag
        return {name: tag.body["commit"].hex() for name, tag in sorted(latest.items())}

    # Keys ---------------------------------------------------------------------------------------

    def _seal(self, identity: Identity, branch: bytes, epoch: int, key: bytes,
              recipients: Iterable[bytes]) -> None:
        for recipient in sorted(set(recipients)):
            obj = self._root_publish(identity, "doc/branch-key",
                                     {"branch": branch, "epoch": epoch, "recipient": recipient,
                                      "sealed": seal_to(recipient, key)})
            if recipient == identity.public_key:
                self._unsealed[obj.id] = key

    def _unseal(self, identity: Identity, obj: Object) -> bytes | None:
        if obj.id not in self._unsealed:
            try:
                key: bytes | None = identity.unseal(obj.body["sealed"])
            except IdentityError:
                key = None
            self._unsealed[obj.id] = key if key is not None and len(key) == KEY_SIZE else None
        return self._unsealed[obj.id]

    def _take_keys(self) -> None:
        """Read keys sealed to this holder by anyone who is or was an editor (whose sealing
        counts for writing is `_sealed_to`'s question); a stranger's are never even opened."""
        if not self._pending or self.identity is None:
            return
        ever = set(self.root.body["editors"]).union(
            *(c.body["add"] for c in self._in_root("doc/editors") if self._is_change(c)))
        waiting = []
        for obj in self._pending:
            if obj.author not in ever:
                waiting.append(obj)
            elif (key := self._unseal(self.identity, obj)) is not None:
                self._add_key(obj.body["branch"], obj.body["epoch"], key)
        self._pending = waiting

    def _sealed_to(self, identity: Identity) -> dict[bytes, list[tuple[int, bytes]]]:
        """Branch -> (epoch, key)s sealed to `identity` by objects that count."""
        found = self._cache.sealed.get(identity.public_key)
        if found is None:
            found = {}
            for obj in self._in_root("doc/branch-key"):
                if obj.body["recipient"] == identity.public_key and self._counts(obj):
                    key = self._unseal(identity, obj)
                    if key is not None:
                        found.setdefault(obj.body["branch"], []).append((obj.body["epoch"], key))
            for keys in found.values():
                keys.sort()
            self._cache.sealed[identity.public_key] = found
        return found

    def _writing(self, identity: Identity, branch: bytes) -> tuple[int, bytes] | None:
        """The (epoch, key) that `identity` encrypts new commits of `branch` with: the newest
        epoch that editors sealed to it (the smallest key of it, as every holder picks)."""
        keys = self._sealed_to(identity).get(branch)
        if not keys:
            return None
        epoch = keys[-1][0]
        return epoch, min(k for e, k in keys if e == epoch)

    def _latest_epoch(self, branch: bytes) -> int | None:
        epochs = [epoch for (b, epoch) in self._keys if b == branch]
        return max(epochs) if epochs else None

    def refresh_key(self, identity: Identity, branch: str) -> int:
        """A new key for `branch`, sealed to the current editors: later commits are closed to
        anyone who only had the earlier keys. Returns the new epoch."""
        self._require_editor(identity)
        branch_id = self._branch(branch)
        epoch = 1 + max((o.body["epoch"] for kind in ("doc/key-refresh", "doc/branch-key")
                         for o in self._in_root(kind)
                         if o.body["branch"] == branch_id and self._counts(o)), default=0)
        key = os.urandom(KEY_SIZE)
        self._add_key(branch_id, epoch, key)
        self._root_publish(identity, "doc/key-refresh", {"branch": branch_id, "epoch": epoch})
        self._seal(identity, branch_id, epoch, key, self.editors())
        return epoch

    def share(self, branch: str) -> Capability:
        """A capability to read `branch` (its keys so far), and nothing else."""
        branch_id = self._branch(branch)
        keys = tuple(sorted((e, k) for (b, e), ks in self._keys.items() if b == branch_id
                            for k in ks))
        if not keys:
            raise DocumentError("you cannot read that branch, so you cannot share it")
        return Capability(self.root.id, branch_id, keys)

    def open_capability(self, capability: Capability) -> None:
        if capability.document != self.root.id:
            raise DocumentError("that capability is for another document")
        for epoch, key in capability.keys:
            self._add_key(capability.branch, epoch, key)

    # Branches and commits -------------------------------------------------------------------

    def _new_branch(self, identity: Identity, name: str, source: bytes | None,
                    at: list[bytes]) -> bytes:
        branch = self._root_publish(identity, "doc/branch",
                                    {"name": name, "source": source, "at": at})
        key = os.urandom(KEY_SIZE)
        self._add_key(branch.id, 0, key)
        self._seal(identity, branch.id, 0, key, self.editors())
        return branch.id

    def _commits(self, branch: bytes) -> list[Object]:
        return [o for o in self._streams.get(branch, ()) if o.type == "doc/commit"]

    def _root_of(self, commit: Object) -> tuple[bytes, ...] | None:
        """The root-branch heads a commit names: its own, or (when it names none and has
        parents) its first parent's, so unchanged roots cost no bytes. None while a parent
        it depends on is missing."""
        roots = self._cache.roots
        chain = []
        root: tuple[bytes, ...] | None
        while True:
            if commit.id in roots:
                root = roots[commit.id]
                break
            chain.append(commit.id)
            if commit.body["root"] or not commit.links:
                root = tuple(commit.body["root"])
                break
            parent = self._objects.get(commit.links[0])
            if parent is None or parent.type != "doc/commit":
                root = None
                break
            commit = parent
        # Every commit walked gets the answer, "none yet" too: else a long chain above a missing
        # parent is walked again from each of its commits, and opening becomes quadratic.
        for oid in chain:
            roots[oid] = root
        return root

    def _visible(self, commit: Object) -> bool:
        found = self._cache.visible.get(commit.id)
        if found is None:
            root = self._root_of(commit)
            found = self._cache.visible[commit.id] = (
                root is not None and commit.author in self.editors(root)
                and commit.stream in self._branch_ids())
        return found

    def _commit(self, commit: str | bytes) -> Object:
        """A visible commit by id (bytes or hex) or by a unique hex prefix."""
        ref = commit.strip().lower() if isinstance(commit, str) else ""
        if isinstance(commit, bytes):
            obj = self._objects.get(commit)
        elif len(ref) == 64 and all(c in "0123456789abcdef" for c in ref):
            obj = self._objects.get(bytes.fromhex(ref))  # a whole id: no scan of every object
        else:
            matches = [o for oid, o in self._objects.items()
                       if o.type == "doc/commit" and oid.hex().startswith(ref)] \
                if len(ref) >= 6 else []
            if len(matches) > 1:
                raise DocumentError(f"{commit!r} matches {len(matches)} commits; give more of it")
            obj = matches[0] if matches else None
        if obj is None or obj.type != "doc/commit" or not self._visible(obj):
            shown = commit.hex()[:16] if isinstance(commit, bytes) else repr(commit)
            raise DocumentError(f"no commit {shown} in this document")
        return obj

    def heads(self, branch: str = "main") -> list[str]:
        """The branch's visible commits that no other links to; a commit dated beyond the
        horizon is left out until its time comes (and new commits do not build on it)."""
        branch_id = self._branch(branch)
        horizon = self._horizon()
        found = self._cache.heads.get(branch_id)
        if found is None or (found[1] is not None and horizon is not None
                             and found[1] <= horizon):
            commits = [c for c in self._commits(branch_id) if self._visible(c)]
            later = [c.ts for c in commits if horizon is not None and c.ts > horizon]
            if later:
                commits = [c for c in commits if c.ts <= horizon]  # type: ignore[operator]
            linked = {link for c in commits for link in c.links}
            found = self._cache.heads[branch_id] = (
                tuple(sorted(c.id for c in commits if c.id not in linked)),
                min(later, default=None))
        return [h.hex() for h in found[0]]

    def _payload(self, commit: Object) -> dict:
        if self._payloads.get(commit.id) is None:
            if not self._keys.get((commit.stream, commit.body["epoch"])):
                self._payloads[commit.id] = None
                raise DocumentError("you have no read key for this branch (an editor can give "
                                    "you one with `hearth doc share`)")
            plain = self._open_box(commit.stream, commit.body["epoch"], commit.body["box"],
                                   commit.body["nonce"])
            try:
                payload = encoding.loads(plain) if plain is not None else None
                if not isinstance(payload, dict) or not isinstance(payload.get("u"), bytes):
                    raise ValueError
            except (encoding.EncodingError, ValueError):
                raise DocumentError(f"commit {commit.id.hex()[:16]} cannot be read") from None
            self._payloads[commit.id] = payload
        return self._payloads[commit.id]  # type: ignore[return-value]

    def _state(self, branch: bytes, heads: frozenset[bytes]) -> _Live:
        """A live document at `heads`. The branch's cached one is reused when it is there
        already, or moved forward when `heads` descend from it (remote commits arriving);
        otherwise a new one (with a new client id) replays the causal past."""
        live = self._live.get(branch)
        if live is not None and live.heads == heads:
            return live
        past = {c.id: c for c in self._past(heads, branch)
                if c.type == "doc/commit" and self._visible(c)}
        forward = live is not None and live.heads <= past.keys()
        if forward:
            done = {c.id for c in self._past(live.heads, branch)}
            todo = [c for oid, c in past.items() if oid not in done]
        else:  # another version: built aside, so the branch's state (and undo) stays
            live, todo = _Live.empty(), list(past.values())
        for commit in causal_order(todo):
            update = self._payload(commit)["u"]
            if update:
                live.absorb(update)
        live.heads = heads
        # A state built while an ancestor was missing must not outlive that ancestor's arrival.
        live.complete = all(link in self._objects for c in past.values() for link in c.links)
        if forward or branch not in self._live:
            self._live[branch] = live
        return live

    def _heads_of(self, heads: Iterable[str]) -> tuple[bytes, frozenset[bytes]]:
        commits = [self._commit(h) for h in heads]
        branches = {c.stream for c in commits}
        if len(branches) > 1:
            raise DocumentError("those commits are on different branches")
        return (branches.pop() if branches else b""), frozenset(c.id for c in commits)

    def text(self, heads: Iterable[str]) -> str:
        """The text at that set of commits (an empty set: the empty document)."""
        branch, ids = self._heads_of(heads)
        if not ids:
            return ""
        return self._state(branch, ids).value()

    def commit(self, identity: Identity, edits: list[Edit], parents: list[str],
               branch: str = "main") -> str:
        """Apply `edits` to the text at `parents` and commit them to `branch`.

        Edits too large for one object (a long paste) become a chain of commits; the last
        one's id is returned. A refused edit leaves no trace."""
        self._require_editor(identity)
        branch_id = self._branch(branch)
        parent_ids = frozenset(self._commit(p).id for p in parents)
        if any(self._objects[p].stream != branch_id for p in parent_ids):
            raise DocumentError("a commit's parents must be on its branch")
        horizon = self._horizon()
        if horizon is not None and any(self._objects[p].ts > horizon for p in parent_ids):
            raise DocumentError("a parent is dated in the future; commit on the heads shown now")
        edits = list(edits)
        live = self._state(branch_id, parent_ids)
        _check_edits(live._length(), edits)
        obj = None
        try:
            for group in _groups(edits):
                update = live.apply(group, track_undo=self.track_undo)
                obj = self._seal_commit(identity, branch_id, parent_ids, {"u": update})
                parent_ids = live.heads = frozenset([obj.id])
        except BaseException:
            self._live.pop(branch_id, None)  # the live text ran ahead of what was committed
            raise
        if obj is None:  # no edits: a commit that only acknowledges its parents
            obj = self._seal_commit(identity, branch_id, parent_ids, {"u": b""})
            live.heads = frozenset([obj.id])
        self._live[branch_id] = live
        return obj.hex

    def latest(self, branch: str = "main") -> str:
        """The branch's newest head (by time, then id)."""
        heads = [self._commit(h) for h in self.heads(branch)]
        if not heads:
            raise DocumentError("that branch has no commits yet")
        return max(heads, key=lambda c: (c.ts, c.id)).hex

    def undo(self, identity: Identity, branch: str = "main") -> str | None:
        """Commit the undoing of this holder's last edit on `branch` (others' edits stay).
        Returns the commit id, or None when there is nothing to undo."""
        return self._undo_redo(identity, branch, redo=False)

    def redo(self, identity: Identity, branch: str = "main") -> str | None:
        return self._undo_redo(identity, branch, redo=True)

    def _undo_redo(self, identity: Identity, branch: str, *, redo: bool) -> str | None:
        self._require_editor(identity)
        branch_id = self._branch(branch)
        heads = frozenset(bytes.fromhex(h) for h in self.heads(branch_id.hex()))
        live = self._state(branch_id, heads)
        manager = live.undo
        if manager is None or not (manager.can_redo() if redo else manager.can_undo()):
            return None
        update = live.capture(manager.redo if redo else manager.undo)
        live.forget()
        obj = self._seal_commit(identity, branch_id, heads, {"u": update})
        live.heads = frozenset([obj.id])
        return obj.hex

    def _seal_commit(self, identity: Identity, branch: bytes, parents: Iterable[bytes],
                     payload: dict) -> Object:
        writing = self._writing(identity, branch)
        if writing is None:
            raise DocumentError("you have no key for this branch")
        epoch, key = writing
        self._add_key(branch, epoch, key)
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(key).encrypt(encoding.dumps(payload), nonce).ciphertext
        root = tuple(self._linkable(self._root_heads(), self._now()))
        parents = sorted(parents)
        first = self._objects.get(parents[0]) if parents else None
        same = first is not None and self._root_of(first) == root
        obj = self._publish(identity, "doc/commit", branch,
                            {"root": [] if same else list(root), "epoch": epoch,
                             "nonce": nonce, "box": box}, parents)
        self._payloads[obj.id] = payload
        return obj

    def fork(self, identity: Identity, source: str, name: str,
             at: list[str] | None = None) -> str:
        """A new branch that starts at commits `at` of `source` (default: its heads); its first
        commit carries a snapshot of the text there. Returns the branch id."""
        self._require_editor(identity)
        source_id = self._branch(source)
        at_ids = sorted(self._commit(c).id for c in (at if at is not None else
                                                     self.heads(source_id.hex())))
        if any(self._objects[c].stream != source_id for c in at_ids):
            raise DocumentError("a fork starts at commits of its source branch")
        # The state at `at`, as the source's own updates (so merges find shared history),
        # merged into as few commits as fit in objects.
        past = [c for c in self._past(at_ids, source_id)
                if c.type == "doc/commit" and self._visible(c)]
        updates = [u for c in causal_order(past) if (u := self._payload(c)["u"])]
        branch = self._new_branch(identity, name, source_id, at_ids)
        parents: list[bytes] = []
        for chunk in _chunk_updates(updates) or [b""]:
            parents = [self._seal_commit(identity, branch, parents,
                                         {"u": chunk, "k": "snapshot"}).id]
        return branch.hex()

    def _ancestry(self, branch: bytes) -> list[bytes]:
        chain = []
        objects = {b.id: b for b in self._branch_objects()}
        while branch in objects and branch not in chain:
            chain.append(branch)
            branch = objects[branch].body["source"]
        return chain

    def merge(self, identity: Identity, source: str, target: str) -> str:
        """A commit on `target` that acknowledges `source`'s heads and carries the changes
        `target` lacked. Returns the commit id."""
        self._require_editor(identity)
        source_id, target_id = self._branch(source), self._branch(target)
        if source_id == target_id:
            raise DocumentError("a branch cannot be merged into itself")
        if not set(self._ancestry(source_id)) & set(self._ancestry(target_id)):
            raise DocumentError("those branches share no history")
        source_heads = [bytes.fromhex(h) for h in self.heads(source_id.hex())]
        target_heads = frozenset(bytes.fromhex(h) for h in self.heads(target_id.hex()))
        live = self._state(target_id, target_heads)
        theirs = self._state(source_id, frozenset(source_heads))
        update = theirs.doc.get_update(live.doc.get_state())
        live.absorb(update)
        obj = self._seal_commit(identity, target_id, target_heads,
                                {"u": update, "k": "merge", "m": source_heads})
        live.heads = frozenset([obj.id])
        self._live[target_id] = live
        return obj.hex

    def history(self, branch: str = "main") -> list[CommitInfo]:
        """The branch's visible commits in causal order."""
        branch_id = self._branch(branch)
        out = []
        for commit in causal_order(c for c in self._commits(branch_id) if self._visible(c)):
            try:
                payload = self._payload(commit)
                kind, merged = payload.get("k", "edit"), tuple(
                    m.hex() for m in payload.get("m", ()))
            except DocumentError:
                kind, merged = "?", ()
            out.append(CommitInfo(commit.hex, branch_id.hex(),
                                  tuple(p.hex() for p in commit.links), commit.author,
                                  commit.ts, kind, merged))
        return out
