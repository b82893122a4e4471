"""The Document: building and loading one, snapshots of its branches, taking in objects, and the
changes an editor makes (commits, undo and redo, forks, merges)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable

import nacl.secret

from .. import encoding
from ..causal import causal_order
from ..identity import Identity
from ..objects import Object, build
from ._base import _Cache
from ._comments import _Comments
from ._edits import _check_edits, _chunk_updates, _groups
from ._live import _Live
from ._records import DocumentError, Edit
from ._review import _Review
from ._root import EDITING


class Document(_Review, _Comments):
    """One document, held in memory: its objects, the branch keys this holder has, and the
    states derived from them. Pure: no I/O; time only from the `clock` it is handed."""

    # Constructed by _DocumentBase.__init__(root, *, identity=None, clock=None, undo=True,
    # secret=None).

    # Building ----------------------------------------------------------------------------------

    @classmethod
    def create(cls, identity: Identity, title: str, *, workspace: bytes = bytes(32),
               clock: Callable[[], int] | None = None, undo: bool = True,
               secret: bytes | None = None, private: bool = False,
               editing: str = "listed", members: frozenset[bytes] = frozenset()) -> Document:
        """A new document whose first editor is `identity`, with an empty `main` branch.
        Given the workspace `secret` it is readable by the whole workspace (a
        `doc/visibility` first, so main's key is published under the secret) unless
        `private`; without one it is private. `editing` "workspace" makes every member an
        editor (a `doc/editing`; it needs the document workspace-readable)."""
        if editing not in EDITING:
            raise DocumentError(f"editing is one of {', '.join(EDITING)}, not {editing!r}")
        if editing == "workspace" and (secret is None or private):
            raise DocumentError("a document every member edits is readable by the workspace")
        root = build(identity, "doc/root", stream=workspace,
                     body={"title": title, "editors": [identity.public_key],
                           "nonce": os.urandom(16)},
                     ts=clock() if clock else 0)
        document = cls(root, identity=identity, clock=clock, undo=undo, secret=secret,
                       members=members)
        document._new.append(root)
        if secret is not None and not private:
            document._root_publish(identity, "doc/visibility", {"mode": "workspace"})
        if editing == "workspace":
            document._root_publish(identity, "doc/editing", {"mode": "workspace"})
        document._new_branch(identity, "main", None, [])
        return document

    @classmethod
    def load(cls, objects: Iterable[Object], *, identity: Identity | None = None,
             keys: Iterable[tuple[bytes, int, bytes]] = (),
             snapshots: Iterable[tuple[bytes, bytes, int, bytes, bytes]] = (),
             clock: Callable[[], int] | None = None, undo: bool = True,
             secret: bytes | None = None, secrets: tuple[bytes, ...] = (),
             members: frozenset[bytes] = frozenset()) -> Document:
        """A document from its objects (any order), the branch keys already known, and
        snapshots written by `snapshot` (so opening does not replay every update). A branch's
        snapshot at its heads is its state; any others of it (taken every so many commits) are
        where reading the text at an older commit starts from. The workspace `secret` (the
        newest epoch's) and `secrets` (every epoch's held) open the keys published to the
        workspace; `members` (the workspace's) edit while it is workspace-editable."""
        objects = list(objects)
        roots = [o for o in objects if o.type == "doc/root"]
        if len(roots) != 1:
            raise DocumentError("a document needs exactly one doc/root object")
        document = cls(roots[0], identity=identity, clock=clock, undo=undo, secret=secret,
                       secrets=secrets, members=members)
        for branch, epoch, key in keys:
            document._add_key(branch, epoch, key)
        document.add(objects)
        digests: dict[bytes, bytes] = {}
        snapshots = [(s[0], document._heads_cached(s[0], s[1], digests), *s[2:])
                     for s in snapshots]
        for branch, ids, epoch, nonce, box in snapshots:
            if ids is not None:
                document._restore(branch, ids, epoch, nonce, box)
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
        return branch_id, encoding.dumps(self._heads_record(branch_id)), epoch, nonce, box

    def _restore(self, branch: bytes, ids: frozenset[bytes], epoch: int, nonce: bytes,
                 box: bytes) -> None:
        try:
            state = self._open_box(branch, epoch, box, nonce)
        except TypeError:
            return  # a damaged cache is only a slower open
        if state is None or not all(
                (c := self._objects.get(h)) is not None and c.stream == branch
                and self._visible(c) for h in ids):
            return
        if ids and state:
            self._checkpoints.setdefault(branch, []).append((ids, state))
        if ids != frozenset(bytes.fromhex(h) for h in self.heads(branch.hex())):
            return  # an older state than the branch's: kept only as a checkpoint
        live = _Live.empty()
        if state:
            live.absorb(state)
        live.heads = ids
        self._use(branch, live, own=True)

    def add(self, objects: Iterable[Object]) -> None:
        """Take in objects from elsewhere (sync, storage): state follows the set."""
        held, belongs = self._objects, self._belongs
        new = {o.id: o for o in objects if o.id not in held and belongs(o)}
        if not new:
            return
        if not self._cache.waiting.isdisjoint(new):  # a kept state may have passed over a
            self._live, self._others = {}, {}       # commit that counts now: start again
        # Commits that a commit held already links to: heads are then worked out again.
        linked = self._linked
        early = {oid for oid, o in new.items() if oid in linked.get(o.stream, ())} if (
            linked) else set()
        me = self.identity.public_key if self.identity is not None else None
        store = self._store
        for obj in new.values():
            store(obj)
            if obj.type == "doc/branch-key" and obj.body["recipient"] == me:
                self._pending.append(obj)
        self._live = {b: live for b, live in self._live.items() if live.complete}
        self._others = {b: [s for s in states if s.complete]
                        for b, states in self._others.items()}
        if all(o.type == "doc/commit" for o in new.values()):  # the common case: someone typed
            self._took_commits(list(new.values()), early)
            return
        self._cache = _Cache()
        self._take_keys()
        self._take_workspace_keys()

    # Commits, undo and redo, forks and merges ----------------------------------------------

    def commit(self, identity: Identity, edits: list[Edit], parents: list[str],
               branch: str = "main", *, restores: str | None = None) -> str:
        """Apply `edits` to the text at `parents` and commit them to `branch`.

        Edits too large for one object (a long paste) become a chain of commits; the last
        one's id is returned. A refused edit leaves no trace. `restores` (a commit) marks the
        commits as restoring the text at it: their kind is "restore"."""
        self._require_editor(identity)
        branch_id = self._branch(branch)
        parent_ids = frozenset(self._commit(p).id for p in parents)
        if any(self._objects[p].stream != branch_id for p in parent_ids):
            raise DocumentError("a commit's parents must be on its branch")
        horizon = self._horizon()
        if horizon is not None and any(self._objects[p].ts > horizon for p in parent_ids):
            raise DocumentError("a parent is dated in the future; commit on the heads shown now")
        edits = list(edits)
        marks = {} if restores is None else {"k": "restore", "r": self._commit(restores).id}
        live = self._state(branch_id, parent_ids)
        _check_edits(live._length(), edits)
        obj = None
        try:
            for group in _groups(edits):
                update = live.apply(group, track_undo=self.track_undo)
                obj = self._seal_commit(identity, branch_id, parent_ids, {"u": update, **marks})
                live.advance(obj.id)
                parent_ids = live.heads
        except BaseException:
            self._drop(branch_id, live)  # the live text ran ahead of what was committed
            raise
        if obj is None:  # no edits: a commit that only acknowledges its parents
            obj = self._seal_commit(identity, branch_id, parent_ids, {"u": b""})
            live.advance(obj.id)
        self._use(branch_id, live, own=True)
        self._keep_state(branch_id, live)
        return obj.hex

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
        live.advance(obj.id)
        return obj.hex

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
