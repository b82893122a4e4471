"""The Document: building and loading one, snapshots of its branches, taking in objects, the
changes an editor makes (commits, undo and redo, forks), and the rest of its API, each part
held by the collaborator it names (`doc.root_branch`, `doc.branch_keys`, `doc.commits`, ...)."""

from __future__ import annotations

import os
from collections.abc import Callable, Container, Iterable

import nacl.secret

from .. import encoding
from ..causal import causal_order
from ..doc_kinds import EDITING
from ..identity import Identity
from ..objects import Object, build
from ._capability import Capability
from ._comments import Comments
from ._commits import Commits
from ._edits import _check_edits, _chunk_updates, _groups
from ._held import Held, _Cache
from ._keys import BranchKeys
from ._live import _Live
from ._records import BranchInfo, CommitInfo, DocumentError, Edit, RequestInfo
from ._review import Review
from ._root import RootBranch
from ._states import States


class Document:
    """One document, held in memory: its objects, the branch keys this holder has, and the
    states derived from them. Pure: no I/O; time only from the `clock` it is handed.

    Its parts, each built with the document it belongs to: `held` (the objects, caches and
    clock), `root_branch` (who counts and edits, title, visibility, requests, branches, main,
    tags), `branch_keys`, `commits` (visibility, heads, payloads, history), `states` (the Yjs
    states kept per branch), and the features on top: `comments` and `review` (versions,
    changes, merges). The methods here are the API the app calls; comments and review are
    called on their part."""

    def __init__(self, root: Object, *, identity: Identity | None = None,
                 clock: Callable[[], int] | None = None, undo: bool = True,
                 secret: bytes | None = None, secrets: tuple[bytes, ...] = (),
                 members: frozenset[bytes] = frozenset()) -> None:
        if root.type != "doc/root":
            raise DocumentError("a document starts from a doc/root object")
        self.root = root
        self.identity = identity
        # The workspace's members (the app hands them in: current ones and removed ones, whose
        # objects storage holds only where their removal kept them): while the document is
        # workspace-editable, each of them is an editor (`RootBranch.editors`).
        self.members = frozenset(members)
        self.track_undo = undo  # an editor wants it; a bulk import need not pay for it
        self.held = Held(root, clock)
        self.root_branch = RootBranch(self)
        self.branch_keys = BranchKeys(self, secret, secrets)
        self.commits = Commits(self)
        self.states = States(self)
        self.comments = Comments(self)
        self.review = Review(self)

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
        document.held.new.append(root)
        if secret is not None and not private:
            document.root_branch.publish_root(identity, "doc/visibility", {"mode": "workspace"})
        if editing == "workspace":
            document.root_branch.publish_root(identity, "doc/editing", {"mode": "workspace"})
        document.commits.new_branch(identity, "main", None, [])
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
            document.branch_keys.add(branch, epoch, key)
        document.add(objects)
        digests: dict[bytes, bytes] = {}
        taken = [(branch, document.commits.heads_cached(branch, field, digests), epoch, nonce, box)
                 for branch, field, epoch, nonce, box in snapshots]
        for branch, ids, epoch, nonce, box in taken:
            if ids is not None:
                document._restore(branch, ids, epoch, nonce, box)
        return document

    def snapshot(self, branch: str) -> tuple[bytes, bytes, int, bytes, bytes] | None:
        """The branch's state at its heads, sealed with its latest key:
        (branch, heads, epoch, nonce, box); None when this holder cannot read it."""
        branch_id = self.root_branch.branch(branch)
        epoch = self.branch_keys.latest_epoch(branch_id)
        if epoch is None:
            return None
        heads = frozenset(bytes.fromhex(h) for h in self.heads(branch_id.hex()))
        state = self.states.at(branch_id, heads).doc.get_update() if heads else b""
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        box = nacl.secret.SecretBox(self.branch_keys.by_epoch[(branch_id, epoch)][0]).encrypt(
            state, nonce).ciphertext
        return branch_id, encoding.dumps(self.commits.heads_record(branch_id)), epoch, nonce, box

    def _restore(self, branch: bytes, ids: frozenset[bytes], epoch: int, nonce: bytes,
                 box: bytes) -> None:
        try:
            state = self.branch_keys.open_box(branch, epoch, box, nonce)
        except TypeError:
            return  # a damaged cache is only a slower open
        if state is None or not all(
                (c := self.held.objects.get(h)) is not None and c.stream == branch
                and self.commits.visible(c) for h in ids):
            return
        if ids and state:
            self.states.checkpoints.setdefault(branch, []).append((ids, state))
        if ids != frozenset(bytes.fromhex(h) for h in self.heads(branch.hex())):
            return  # an older state than the branch's: kept only as a checkpoint
        live = _Live.empty()
        if state:
            live.absorb(state)
        live.heads = ids
        self.states.use(branch, live, own=True)

    def add(self, objects: Iterable[Object]) -> None:
        """Take in objects from elsewhere (sync, storage): state follows the set."""
        held, belongs = self.held.objects, self.held.belongs
        new = {o.id: o for o in objects if o.id not in held and belongs(o)}
        if not new:
            return
        if not self.held.cache.waiting.isdisjoint(new):  # a kept state may have passed over a
            self.states.reset()                          # commit that counts now: start again
        # Commits that a commit held already links to: heads are then worked out again.
        linked = self.held.linked
        early = {oid for oid, o in new.items() if oid in linked.get(o.stream, ())} if (
            linked) else set()
        me = self.identity.public_key if self.identity is not None else None
        store = self.held.store
        for obj in new.values():
            store(obj)
            if obj.type == "doc/branch-key" and obj.body["recipient"] == me:
                self.branch_keys.pending.append(obj)
        self.states.keep_complete()
        if all(o.type == "doc/commit" for o in new.values()):  # the common case: someone typed
            self.commits.took_commits(list(new.values()), early)
            return
        self.held.cache = _Cache()
        self.branch_keys.take_keys()
        self.branch_keys.take_workspace_keys()

    # Commits, undo and redo, forks (merges are `review`'s) --------------------------------

    def commit(self, identity: Identity, edits: list[Edit], parents: list[str],
               branch: str = "main", *, restores: str | None = None) -> str:
        """Apply `edits` to the text at `parents` and commit them to `branch`.

        Edits too large for one object (a long paste) become a chain of commits; the last
        one's id is returned. A refused edit leaves no trace. `restores` (a commit) marks the
        commits as restoring the text at it: their kind is "restore"."""
        self.root_branch.require_editor(identity)
        branch_id = self.root_branch.branch(branch)
        parent_ids = frozenset(self.commits.find(p).id for p in parents)
        if any(self.held.objects[p].stream != branch_id for p in parent_ids):
            raise DocumentError("a commit's parents must be on its branch")
        horizon = self.held.horizon()
        if horizon is not None and any(self.held.objects[p].ts > horizon for p in parent_ids):
            raise DocumentError("a parent is dated in the future; commit on the heads shown now")
        edits = list(edits)
        marks = {} if restores is None else {"k": "restore", "r": self.commits.find(restores).id}
        live = self.states.at(branch_id, parent_ids)
        _check_edits(live._length(), edits)
        obj = None
        try:
            for group in _groups(edits):
                update = live.apply(group, track_undo=self.track_undo)
                obj = self.commits.seal(identity, branch_id, parent_ids, {"u": update, **marks})
                live.advance(obj.id)
                parent_ids = live.heads
        except BaseException:
            self.states.drop(branch_id, live)  # the live text ran ahead of what was committed
            raise
        if obj is None:  # no edits: a commit that only acknowledges its parents
            obj = self.commits.seal(identity, branch_id, parent_ids, {"u": b""})
            live.advance(obj.id)
        self.states.use(branch_id, live, own=True)
        self.states.keep(branch_id, live)
        return obj.hex

    def undo(self, identity: Identity, branch: str = "main") -> str | None:
        """Commit the undoing of this holder's last edit on `branch` (others' edits stay).
        Returns the commit id, or None when there is nothing to undo."""
        return self._undo_redo(identity, branch, redo=False)

    def redo(self, identity: Identity, branch: str = "main") -> str | None:
        return self._undo_redo(identity, branch, redo=True)

    def _undo_redo(self, identity: Identity, branch: str, *, redo: bool) -> str | None:
        self.root_branch.require_editor(identity)
        branch_id = self.root_branch.branch(branch)
        heads = frozenset(bytes.fromhex(h) for h in self.heads(branch_id.hex()))
        live = self.states.at(branch_id, heads)
        manager = live.undo
        if manager is None or not (manager.can_redo() if redo else manager.can_undo()):
            return None
        update = live.capture(manager.redo if redo else manager.undo)
        live.forget()
        obj = self.commits.seal(identity, branch_id, heads, {"u": update})
        live.advance(obj.id)
        return obj.hex

    def fork(self, identity: Identity, source: str, name: str,
             at: list[str] | None = None) -> str:
        """A new branch that starts at commits `at` of `source` (default: its heads); its first
        commit carries a snapshot of the text there. Returns the branch id."""
        self.root_branch.require_editor(identity)
        source_id = self.root_branch.branch(source)
        at_ids = sorted(self.commits.find(c).id for c in (at if at is not None else
                                                          self.heads(source_id.hex())))
        if any(self.held.objects[c].stream != source_id for c in at_ids):
            raise DocumentError("a fork starts at commits of its source branch")
        # The state at `at`, as the source's own updates (so merges find shared history),
        # merged into as few commits as fit in objects.
        past = [c for c in self.held.past(at_ids, source_id)
                if c.type == "doc/commit" and self.commits.visible(c)]
        updates = [u for c in causal_order(past) if (u := self.commits.payload(c)["u"])]
        branch = self.commits.new_branch(identity, name, source_id, at_ids)
        parents: list[bytes] = []
        for chunk in _chunk_updates(updates) or [b""]:
            parents = [self.commits.seal(identity, branch, parents,
                                         {"u": chunk, "k": "snapshot"}).id]
        return branch.hex()

    # What it holds and hands out -------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.root.id.hex()

    def drain(self) -> list[Object]:
        """Objects created here since the last drain (for the replica to ingest)."""
        new, self.held.new = self.held.new, []
        return new

    def objects(self) -> list[Object]:
        return list(self.held.objects.values())

    def keys(self) -> list[tuple[bytes, int, bytes]]:
        """Every branch key this holder has: (branch id, epoch, key)."""
        return self.branch_keys.all()

    # Reading branches ------------------------------------------------------------------------

    def heads(self, branch: str = "main") -> list[str]:
        """The branch's visible commits that no other links to (`Commits.heads`)."""
        return self.commits.heads(branch)

    def text(self, heads: Iterable[str]) -> str:
        """The text at that set of commits (an empty set: the empty document)."""
        branch, ids = self.commits.heads_of(heads)
        if not ids:
            return ""
        return self.states.at(branch, ids).value()

    def latest(self, branch: str = "main") -> str:
        return self.commits.latest(branch)

    def history(self, branch: str = "main") -> list[CommitInfo]:
        return self.commits.history(branch)

    def commit_id(self, commit: str) -> str:
        return self.commits.commit_id(commit)

    def branches(self) -> list[BranchInfo]:
        return self.commits.branches()

    def tag(self, identity: Identity, name: str, commit: str) -> None:
        self.commits.tag(identity, name, commit)

    # The root branch: title, main, tags, who edits, visibility, requests to edit -------------

    @property
    def title(self) -> str:
        return self.root_branch.title

    def rename(self, identity: Identity, title: str) -> None:
        self.root_branch.rename(identity, title)

    def set_main(self, identity: Identity, branch: str) -> None:
        self.root_branch.set_main(identity, branch)

    def tags(self) -> dict[str, str]:
        return self.root_branch.tags()

    def editors(self, root_heads: Iterable[bytes] | None = None) -> frozenset[bytes]:
        return self.root_branch.editors(root_heads)

    def listed_editors(self) -> frozenset[bytes]:
        return self.root_branch.listed_editors()

    @property
    def editing(self) -> str:
        return self.root_branch.editing

    @property
    def visibility(self) -> str:
        return self.root_branch.visibility

    def requests(self) -> list[RequestInfo]:
        return self.root_branch.requests()

    def ask_edit(self, identity: Identity, note: str = "") -> None:
        self.root_branch.ask_edit(identity, note)

    def withdraw_request(self, identity: Identity) -> None:
        self.root_branch.withdraw_request(identity)

    # Keys: editors added and removed, visibility changed, keys refreshed and shared ----------

    def add_editor(self, identity: Identity, public_key: bytes) -> None:
        self.branch_keys.add_editor(identity, public_key)

    def remove_editor(self, identity: Identity, public_key: bytes) -> None:
        self.branch_keys.remove_editor(identity, public_key)

    def set_visibility(self, identity: Identity, mode: str) -> None:
        self.branch_keys.set_visibility(identity, mode)

    def refresh_key(self, identity: Identity, branch: str, *,
                    without: Iterable[bytes] = ()) -> int:
        return self.branch_keys.refresh_key(identity, branch, without=without)

    def key_since(self, branch: str, *, by: Container[bytes] | None = None) -> int:
        return self.branch_keys.key_since(branch, by=by)

    def share(self, branch: str) -> Capability:
        return self.branch_keys.share(branch)

    def open_capability(self, capability: Capability) -> None:
        self.branch_keys.open_capability(capability)
