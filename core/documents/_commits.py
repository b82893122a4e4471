"""Branches and commits: which commits are visible, their heads, what they carry (decrypted
once), sealing a new commit, and the heads recorded in snapshots."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterable
from itertools import chain, compress
from operator import attrgetter, itemgetter, not_
from typing import TYPE_CHECKING

import nacl.secret

from .. import encoding
from ..causal import causal_order
from ..identity import Identity
from ..objects import MIN_ID_PREFIX, Object
from ._capability import KEY_SIZE
from ._records import BranchInfo, CommitInfo, DocumentError

if TYPE_CHECKING:
    from ._document import Document

_HEX = re.compile("[0-9a-f]*")
_ID, _BODY, _LINKS = attrgetter("id"), attrgetter("body"), attrgetter("links")
_AUTHOR = attrgetter("author")
_ROOT = itemgetter("root")


class Commits:
    """A document's branches of commits (`doc.commits`), on top of its keys and root-branch
    state."""

    def __init__(self, doc: Document) -> None:
        self.held = doc.held
        self.root = doc.root
        self.root_branch = doc.root_branch
        self.branch_keys = doc.branch_keys

    # Branches and commits ----------------------------------------------------------------------

    def new_branch(self, identity: Identity, name: str, source: bytes | None,
                   at: list[bytes]) -> bytes:
        branch = self.root_branch.publish_root(identity, "doc/branch",
                                    {"name": name, "source": source, "at": at})
        key = os.urandom(KEY_SIZE)
        self.branch_keys.add(branch.id, 0, key)
        self.branch_keys.seal(identity, branch.id, 0, key, self.branch_keys.recipients(identity))
        return branch.id

    def of_branch(self, branch: bytes) -> list[Object]:
        return [o for o in self.held.streams.get(branch, ()) if o.type == "doc/commit"]

    def root_of(self, commit: Object) -> tuple[bytes, ...] | None:
        """The root-branch heads a commit names: its own, or (when it names none and has
        parents) its first parent's, so unchanged roots cost no bytes. None while a parent
        it depends on is missing, and for good when that parent is on another branch (only
        crafted commits have one: heads move per branch)."""
        roots = self.held.cache.roots
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
            parent = self.held.objects.get(commit.links[0])
            if parent is None or parent.type != "doc/commit" or parent.stream != commit.stream:
                if parent is None:
                    self.held.cache.waiting.add(commit.links[0])
                root = None
                break
            commit = parent
        # Every commit walked gets the answer, "none yet" too: else a long chain above a missing
        # parent is walked again from each of its commits, and opening becomes quadratic.
        for oid in chain:
            roots[oid] = root
        if root is None:
            self.held.cache.rootless = True
        return root

    def visible(self, commit: Object) -> bool:
        if commit.id in self.held.cache.all_visible.get(commit.stream, ()):
            return True
        found = self.held.cache.visible.get(commit.id)
        if found is None:
            root = self.root_of(commit)
            found = self.held.cache.visible[commit.id] = (
                root is not None and commit.author in self.root_branch.editors(root)
                and commit.stream in self.root_branch.branch_ids())
            if not found and root is not None:  # root heads not held yet may make it count
                self.held.cache.waiting.update(h for h in root if h not in self.held.objects)
        return found

    def _all_visible(self, branch: bytes, commits: list[Object], ids: set[bytes],
                     linked: set[bytes]) -> bool:
        """Whether every one of the branch's `commits` (whose ids are `ids`, linking to
        `linked`) is visible, found in one light pass: each links only to commits of the
        branch (so a commit that names no root has its first parent's), and every author was
        an editor in every root named (by commits that name one or have no parents). False
        only means: ask each commit (`visible`). Written with map and sets: a document's whole
        history passes here when it opens."""
        if branch not in self.root_branch.branch_ids() or not linked <= ids:
            return False
        named = set(map(tuple, filter(None, map(_ROOT, map(_BODY, commits)))))
        for commit in compress(commits, map(not_, map(_LINKS, commits))):
            named.add(tuple(commit.body["root"]))
        authors = set(map(_AUTHOR, commits))
        return all(authors <= self.root_branch.editors(root) for root in named)

    def find(self, commit: str | bytes) -> Object:
        """A visible commit by id (bytes or hex) or by a unique hex prefix."""
        obj = None
        if isinstance(commit, str) and len(commit) == 64 and commit.isalnum():
            with contextlib.suppress(ValueError):  # a whole id, as the app hands them: no scan
                obj = self.held.objects.get(bytes.fromhex(commit))
            if obj is not None and obj.type == "doc/commit" and self.visible(obj):
                return obj
        ref = commit.strip().lower() if isinstance(commit, str) else ""
        if isinstance(commit, bytes):
            obj = self.held.objects.get(commit)
        elif len(ref) == 64 and _HEX.fullmatch(ref):
            obj = self.held.objects.get(bytes.fromhex(ref))  # a whole id: no scan of every object
        else:
            matches = self.held.with_prefix(ref) if len(ref) >= MIN_ID_PREFIX else []
            if len(matches) > 1:
                raise DocumentError(f"{commit!r} matches {len(matches)} commits; give more of it")
            obj = self.held.objects[matches[0]] if matches else None
        if obj is None or obj.type != "doc/commit" or not self.visible(obj):
            shown = commit.hex()[:16] if isinstance(commit, bytes) else repr(commit)
            raise DocumentError(f"no commit {shown} in this document")
        return obj

    def commit_id(self, commit: str) -> str:
        """The whole id (hex) of a visible commit given by id or unique prefix."""
        return self.find(commit).hex

    def heads(self, branch: str = "main") -> list[str]:
        """The branch's visible commits that no other links to; a commit dated beyond the
        horizon is left out until its time comes (and new commits do not build on it)."""
        branch_id = self.root_branch.branch(branch)
        horizon = self.held.horizon()
        found = self.held.cache.heads.get(branch_id)
        if found is None or (found[1] is not None and horizon is not None
                             and found[1] <= horizon):
            commits = self.of_branch(branch_id)
            ids = {c.id for c in commits}
            linked = self.held.linked.get(branch_id)
            if linked is None:
                linked = self.held.linked[branch_id] = set(
                    chain.from_iterable(map(_LINKS, commits)))
            every = self._all_visible(branch_id, commits, ids, linked)
            if every:
                self.held.cache.all_visible[branch_id] = ids
            else:
                commits = [c for c in commits if self.visible(c)]
                ids = {c.id for c in commits}
            later = [] if horizon is None or not commits or max(
                c.ts for c in commits) <= horizon else [c.ts for c in commits if c.ts > horizon]
            if later:
                commits = [c for c in commits if c.ts <= horizon]  # type: ignore[operator]
                ids = {c.id for c in commits}
            if later or not every:
                unlinked = set(ids)
                unlinked.difference_update(chain.from_iterable([c.links for c in commits]))
            else:  # every commit held counts: what any of them links to is what they link to
                unlinked = ids.difference(linked)
            found = self.held.cache.heads[branch_id] = (tuple(sorted(unlinked)),
                                                        min(later, default=None))
        return [h.hex() for h in found[0]]

    def heads_of(self, heads: Iterable[str]) -> tuple[bytes, frozenset[bytes]]:
        commits = [self.find(h) for h in heads]
        branches = {c.stream for c in commits}
        if len(branches) > 1:
            raise DocumentError("those commits are on different branches")
        return (branches.pop() if branches else b""), frozenset(c.id for c in commits)

    def latest(self, branch: str = "main") -> str:
        """The branch's newest head (by time, then id)."""
        heads = [self.find(h) for h in self.heads(branch)]
        if not heads:
            raise DocumentError("that branch has no commits yet")
        return max(heads, key=lambda c: (c.ts, c.id)).hex

    def history(self, branch: str = "main") -> list[CommitInfo]:
        """The branch's visible commits in causal order."""
        branch_id = self.root_branch.branch(branch)
        out = []
        for commit in causal_order(c for c in self.of_branch(branch_id) if self.visible(c)):
            try:
                payload = self.payload(commit)
                kind = payload.get("k", "edit")
                kind = kind if isinstance(kind, str) else "?"
                merged = tuple(
                    m.hex() for m in payload.get("m", ()) if isinstance(m, bytes))
                restores = payload.get("r")
            except DocumentError:
                kind, merged, restores = "?", (), None
            out.append(CommitInfo(commit.hex, branch_id.hex(),
                                  tuple(p.hex() for p in commit.links), commit.author,
                                  commit.ts, kind, merged,
                                  restores.hex() if isinstance(restores, bytes) else None))
        return out

    def branches(self) -> list[BranchInfo]:
        main = self.root_branch.main()
        return [BranchInfo(b.id.hex(), b.body["name"],
                           b.body["source"].hex() if b.body["source"] else None,
                           tuple(c.hex() for c in b.body["at"]), tuple(self.heads(b.id.hex())),
                           b.id == main, self.branch_keys.latest_epoch(b.id) is not None)
                for b in self.root_branch.branch_objects()]

    def tag(self, identity: Identity, name: str, commit: str) -> None:
        """Point the tag `name` at `commit` (moving it if it exists: the latest wins)."""
        self.root_branch.require_editor(identity)
        target = self.find(commit)
        self.root_branch.publish_root(identity, "doc/tag", {"name": name, "commit": target.id})

    # What commits carry, and sealing new ones --------------------------------------------------

    def payload(self, commit: Object) -> dict:
        if self.held.payloads.get(commit.id) is None:
            if not self.branch_keys.by_epoch.get((commit.stream, commit.body["epoch"])):
                self.held.payloads[commit.id] = None
                raise DocumentError("you have no read key for this branch (an editor can give "
                                    "you one with `hearth doc share`)")
            plain = self.branch_keys.open_box(commit.stream, commit.body["epoch"],
                                              commit.body["box"], commit.body["nonce"])
            try:
                payload = encoding.loads(plain) if plain is not None else None
                if not isinstance(payload, dict) or not isinstance(payload.get("u"), bytes):
                    raise ValueError
            except (encoding.EncodingError, ValueError):
                raise DocumentError(f"commit {commit.id.hex()[:16]} cannot be read") from None
            self.held.payloads[commit.id] = payload
        return self.held.payloads[commit.id]  # type: ignore[return-value]

    def seal(self, identity: Identity, branch: bytes, parents: Iterable[bytes],
             payload: dict) -> Object:
        writing = self.branch_keys.writing(identity, branch)
        if writing is None:
            raise DocumentError("you have no key for this branch")
        epoch, key = writing
        self.branch_keys.add(branch, epoch, key)
        nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
        plain = (encoding.dumps_ordered if payload.keys() == {"u"} else encoding.dumps)(payload)
        box = nacl.secret.SecretBox(key).encrypt(plain, nonce).ciphertext
        root = tuple(self.held.linkable(self.root_branch.heads(), self.held.now()))
        parents = sorted(parents)
        first = self.held.objects.get(parents[0]) if parents else None
        same = first is not None and self.root_of(first) == root
        known = self.held.cache.heads.get(branch)
        obj = self.root_branch.publish(identity, "doc/commit", branch,
                            {"box": box, "root": [] if same else list(root), "epoch": epoch,
                             "nonce": nonce}, parents)  # in canonical order: built faster
        self.held.payloads[obj.id] = payload
        self._moved(branch, known, obj)
        return obj

    def _moved(self, branch: bytes, known: tuple[tuple[bytes, ...], int | None] | None,
               obj: Object) -> None:
        """The branch's heads after its new commit `obj`, from those known before it (nothing
        links to a commit just made), so that asking for them after each commit walks nothing."""
        horizon = self.held.horizon()
        if known is None or not self.visible(obj) or (horizon is not None
                                                      and obj.ts > horizon):
            return  # worked out from the branch when next asked
        heads = set(known[0]).difference(obj.links)
        heads.add(obj.id)
        self.held.cache.heads[branch] = (tuple(sorted(heads)), known[1])
    # Heads recorded in snapshots, and commits taken in -----------------------------------------

    def _digest(self, stream: bytes) -> bytes:
        """A digest of the objects of `stream` held: their count and the sum of their ids."""
        objects = self.held.streams.get(stream, ())
        total = sum(map(int.from_bytes, map(_ID, objects))) % (1 << 256)
        return len(objects).to_bytes(8, "big") + total.to_bytes(32, "big")

    def heads_record(self, branch: bytes) -> dict:
        """What a snapshot records of the branch's heads: the heads, the roots they name (a
        function of the commits alone), and while no commit is beyond the horizon, digests of
        the objects of the branch and of the root branch, so that a document loaded from the
        same objects takes the heads as they were instead of working them out again."""
        found = self.held.cache.heads.get(branch)
        if found is None:
            self.heads(branch.hex())
            found = self.held.cache.heads[branch]
        roots = [[h, list(root)] for h in found[0]
                 if (root := self.root_of(self.held.objects[h])) is not None]
        record: dict = {"heads": list(found[0]), "roots": roots}
        if found[1] is None:
            record["held"] = self._digest(branch) + self._digest(self.root.id)
        return record

    def heads_cached(self, branch: bytes, field: bytes,
                     digests: dict[bytes, bytes]) -> frozenset[bytes] | None:
        """The heads a snapshot names (`heads_record`; before it, a list of them), or None
        when it cannot be read. The roots it names are taken in; the heads too, when the
        objects held are those it was taken from (`digests`: the branches' `_digest` found so
        far, as several snapshots of a branch are read at once)."""
        try:
            record = encoding.loads(field)
            if isinstance(record, list):
                record = {"heads": record}
            heads = frozenset(record["heads"])
            commits = [self.held.objects.get(h) for h in heads]
            if not all(c is not None and c.stream == branch and c.type == "doc/commit"
                       for c in commits):
                return heads  # a checkpoint of commits not held: `Document._restore` passes it by
            for head, root in record.get("roots", ()):
                if head in heads and all(isinstance(r, bytes) for r in root):
                    self.held.cache.roots.setdefault(head, tuple(root))
        except (encoding.EncodingError, KeyError, TypeError, ValueError):
            return None  # a damaged cache is only a slower open
        held = record.get("held")
        if held is not None and branch not in self.held.cache.heads:
            for stream in (branch, self.root.id):
                if stream not in digests:
                    digests[stream] = self._digest(stream)
            if held == digests[branch] + digests[self.root.id]:
                self.held.cache.heads[branch] = (tuple(sorted(heads)), None)
        return heads

    def took_commits(self, commits: list[Object], early: set[bytes]) -> None:
        """Bring what is derived from the objects up to date after only `commits` arrived
        (else everything is recomputed): their branches' heads move by them, so a remote
        keystroke costs what it brings, not the history. `early`: those of them that commits
        held before already linked to."""
        cache = self.held.cache
        if cache.rootless:  # an arrival may be a missing parent: roots and visibility change
            cache.roots = {k: v for k, v in cache.roots.items() if v is not None}
            cache.visible = {k: v for k, v in cache.visible.items() if v}
            cache.rootless = False
        horizon = self.held.horizon()
        for commit in causal_order(commits):
            branch = commit.stream
            known = cache.heads.pop(branch, None)
            # Worked out from the branch when next asked: also when a commit linking to this
            # one came first (whether that one counts is not known here).
            if known is None or known[1] is not None or commit.id in early or (
                    branch not in self.held.linked) or not self.visible(commit) or (
                    horizon is not None and commit.ts > horizon):
                continue  # (no `held.linked`: heads taken from a snapshot, early ones unknown)
            heads = set(known[0]).difference(commit.links)
            heads.add(commit.id)
            cache.heads[branch] = (tuple(sorted(heads)), None)

