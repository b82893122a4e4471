"""The documents of a workspace: core.documents over the replica (the library API that the
`hearth doc` commands and the window call).

Objects take the one path of data (Replica.ingest). Branch keys this person holds, and an
encrypted snapshot of each readable branch at its heads, stay in the local replica only.

Visibility: new documents are readable by the whole workspace unless made private. The
workspace's secrets (every epoch's this member holds: app/membership.py `secrets`) are handed
to every Document opened here, so it reads the branch keys published to the workspace, and
publishes new ones under the newest (core/documents/_keys.py).

Editing: new documents are edited by every member of the workspace (a `doc/editing`
"workspace"; core/documents/_root.py) unless made editable by "only the people I add"
(`editing="listed"`, and always for a private one). The members handed to every Document are the
membership view's, with the removed ones: storage keeps of theirs only what their removal kept,
and that counts as it did; a removed member is told they may not edit (`read_only`).

Reviewing (app/review.py does the text work): a version is named by a ref, a branch's name
(its heads), `BRANCH@COMMIT` (a commit of that branch, by id or unique prefix) or a tag's
name. `diff` compares two versions with the authors of each change; `merge_preview` finds a
merge's conflicts without committing anything, and `merge` refuses (MergeConflicts) while a
conflict has no resolution, else commits the CRDT merge and the resolutions together.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

from core.causal import HORIZON_MS
from core.documents import (
    BranchInfo,
    Capability,
    CommitInfo,
    Document,
    DocumentError,
    Edit,
    RequestInfo,
)
from core.errors import InvalidObject
from core.objects import MIN_ID_PREFIX, Object, decode_trusted

from . import review
from .doc_comments import DocComments
from .doc_records import (
    ALREADY,
    ALREADY_MERGED,
    KEY_NOT_HERE,
    ONLY_EDITORS,
    READ_ONLY,
    RESOLUTIONS,
    Conflict,
    DocDiff,
    DocumentSummary,
    MergeConflicts,
    Merged,
    MergePreview,
)
from .errors import WorkspaceError
from .keys import parse_key
from .text_edits import minimal_edits

if TYPE_CHECKING:
    from .workspace import Workspace

T = TypeVar("T")


def on_document(doc: bytes | str, action: Callable[[Documents, Document], T]
                ) -> Callable[[Workspace], T]:
    """A call for Node.run (`facade.run(on_document(doc, lambda docs, d: docs.undo(d)))`):
    action(the workspace's documents, document `doc` as Documents.current holds it)."""
    return lambda ws: action(ws.documents, ws.documents.current(doc))


class Documents(DocComments):
    """Documents of one workspace, for the person whose identity the workspace holds."""

    def __init__(self, workspace: Workspace):
        self.ws = workspace
        self._open: dict[bytes, Document] = {}
        self._read_to: dict[bytes, int] = {}  # document -> the last replica row taken in
        self._left_out = (workspace.replica.documents.left_out(),
                          workspace.replica.membership.version())

    def secret(self) -> bytes:
        """The newest epoch's workspace secret (every member holds it: core/membership.py);
        new workspace keys are published under it."""
        return self.ws.members.newest_secret()[1]

    def secrets(self) -> tuple[bytes, ...]:
        """Every epoch's secret held, newest first: workspace keys under any of them open."""
        held = self.ws.members.secrets()
        return tuple(held[epoch] for epoch in sorted(held, reverse=True))

    def members(self) -> frozenset[bytes]:
        """Who edits a workspace-editable document: the members, and the removed (of whom
        storage holds only what their removal kept)."""
        view = self.ws.members.view()
        return frozenset(view.members) | frozenset(view.removed)

    def _clock(self) -> int:
        return int(self.ws.clock() * 1000)

    # Finding ----------------------------------------------------------------------------------

    def all(self) -> list[DocumentSummary]:
        """Every document held, with the title its creator gave it last."""
        out = []
        horizon = self._clock() + HORIZON_MS  # a title dated later is not visible yet
        for raw in self.ws.replica.documents.roots():
            root = decode_trusted(raw)
            titles = [decode_trusted(t) for t in self.ws.replica.documents.titles(root.id)]
            titles = [t for t in titles if t.author == root.author and t.ts <= horizon]
            title = max(titles, key=lambda t: (t.ts, t.id)).body["title"] if titles else \
                root.body["title"]
            out.append(DocumentSummary(root.hex, title, root.author, root.ts))
        return out

    def refresh_for_epoch(self) -> int:
        """After a removal: a new key for each branch of the workspace-readable documents I
        edit whose newest key is older than the newest epoch, sealed to their editors but the
        removed and published under the new secret, so a removed member reads nothing written
        from now on. Any editor's node does it; a refresh one did is seen by the others.
        Returns how many keys were made."""
        view = self.ws.members.view()
        since = view.since.get(view.epoch)
        if since is None or view.epoch not in self.ws.members.secrets():
            return 0
        made = 0
        for summary in self.all():
            document = self.current(bytes.fromhex(summary.id))
            if document.visibility != "workspace" or self.ws.key not in document.editors():
                continue
            stale = [b.name for b in document.branches()
                     if b.readable and document.key_since(b.name, by=view.members) < since]
            for branch in stale:
                document.refresh_key(self.ws.identity, branch, without=view.removed)
            if stale:
                self.save(document)
                made += len(stale)
        return made

    def resolve(self, ref: str) -> bytes:
        """A document by hex id, unique id prefix (MIN_ID_PREFIX+ characters) or exact title."""
        summaries = self.all()
        ref = ref.strip()
        exact = [s for s in summaries if s.id == ref.lower()]
        prefixed = [s for s in summaries
                    if len(ref) >= MIN_ID_PREFIX and s.id.startswith(ref.lower())]
        titled = [s for s in summaries if s.title == ref]
        for found in (exact, prefixed, titled):
            if len(found) == 1:
                return bytes.fromhex(found[0].id)
            if len(found) > 1:
                raise WorkspaceError(f"{ref!r} matches {len(found)} documents; give more of it")
        raise WorkspaceError(f"no document {ref!r}; see `hearth doc list`")

    def open(self, ref: str | bytes) -> Document:
        doc_id = ref if isinstance(ref, bytes) else self.resolve(ref)
        raws, read_to = self.ws.replica.documents.objects_after(doc_id, 0)
        objects = [decode_trusted(raw) for raw in raws]
        if not any(o.id == doc_id for o in objects):
            raise WorkspaceError(f"no document {doc_id.hex()}")
        branches = [o.id for o in objects if o.type == "doc/branch"]
        snapshots = [(b, *cached) for b in branches
                     if (cached := self.ws.replica.documents.cached_state(b)) is not None]
        document = Document.load(objects, identity=self.ws.identity,
                                 keys=self.ws.replica.documents.branch_keys(branches),
                                 snapshots=snapshots, clock=self._clock, secret=self.secret(),
                                 secrets=self.secrets(), members=self.members())
        self._open[doc_id], self._read_to[doc_id] = document, read_to
        return document

    def current(self, ref: bytes | str) -> Document:
        """The document (its id, or a hex id, unique prefix or exact title) as opened before,
        taking in what arrived since; else opened now. A removal that left objects out since
        (a removed member's, not kept) opens it anew."""
        doc_id = ref if isinstance(ref, bytes) else self.resolve(ref)
        # A removal (objects left out since, or a new epoch's secret) opens documents anew.
        changed = (self.ws.replica.documents.left_out(), self.ws.replica.membership.version())
        if changed != self._left_out:
            self._open.clear()
            self._read_to.clear()
            self._left_out = changed
        document = self._open.get(doc_id)
        if document is None:
            return self.open(doc_id)
        self.refresh(document)
        return document

    def refresh(self, document: Document) -> None:
        """Take in what arrived by sync since the document was opened (or last refreshed):
        only those rows are read, so an open document costs what arrives, not its history. A
        new branch's commits may have been stored before its `doc/branch` (before they were
        the document's): its arrival has every row read again."""
        doc_id = document.root.id
        raws, self._read_to[doc_id] = self.ws.replica.documents.objects_after(
            doc_id, self._read_to.get(doc_id, 0))
        arrived = [decode_trusted(raw) for raw in raws]
        if any(o.type == "doc/branch" for o in arrived):
            raws, self._read_to[doc_id] = self.ws.replica.documents.objects_after(doc_id, 0)
            arrived = [decode_trusted(raw) for raw in raws]
        document.add(arrived)

    def unreadable(self, document: Document, branch: str = "main") -> str | None:
        """Why this holder cannot read `branch` (a sentence for a person), or None when it can.
        Branch keys are sealed to editors; a capability or being added as an editor brings
        them (by sync), and the branch reads from then on."""
        found = _branch_info(document, branch)
        nokey = KEY_NOT_HERE if document.visibility == "workspace" else ONLY_EDITORS
        if found is not None and not found.readable:
            return nokey
        try:
            document.text(document.heads(branch))
        except DocumentError as exc:  # e.g. keys of newer epochs were never sealed to me
            return nokey if "no read key" in str(exc) else str(exc)
        return None

    def read_only(self, document: Document, branch: str = "main") -> str | None:
        """Why this holder cannot change `branch` (a sentence for a person), or None when it
        can. Commits, forks, merges, tags and the main pointer count only from the document's
        editors ("Who may do what"), and an editor must be able to read the branch; a reader
        by capability, or a member who is no editor, holds keys for reading only."""
        why = self.unreadable(document, branch)
        if why is not None:
            return why
        if self.ws.identity.public_key not in document.editors() \
                or self.ws.key in self.ws.members.view().removed:
            return READ_ONLY
        return None

    def merged_from(self, document: Document,
                    history: list[CommitInfo]) -> dict[str, tuple[str, ...]]:
        """Merge commit id -> the names of the branches it merged, resolved from the heads it
        names (a head not held yet, or on a branch that does not count, is left out)."""
        wanted = {bytes.fromhex(head) for commit in history for head in commit.merged}
        if not wanted:
            return {}
        names = {b.id: b.name for b in document.branches()}
        stream_of = {o.hex: o.stream.hex() for o in document.objects() if o.id in wanted}
        out = {}
        for commit in history:
            if commit.merged:
                found = (names.get(stream_of.get(head, "")) for head in commit.merged)
                out[commit.id] = tuple(dict.fromkeys(n for n in found if n is not None))
        return out

    # Saving -----------------------------------------------------------------------------------

    def save(self, document: Document, *, cache: Sequence[str] = ()) -> list[Object]:
        """Ingest what `document` created, keep its keys, and cache the branches' states."""
        new = document.drain()
        self.ws.add_own(new)
        self.ws.replica.documents.save_branch_keys(document.keys())
        for branch in cache:
            snapshot = document.snapshot(branch)
            if snapshot is not None:
                self.ws.replica.documents.save_cached_state(*snapshot)
        return new

    # Operations (each saves) ------------------------------------------------------------------

    def new(self, title: str, *, private: bool = False, editing: str | None = None) -> Document:
        """A new document, readable by every member of the workspace unless `private` (then
        by its editors and those they share a branch with), and edited by every member unless
        `editing` is "listed" (only the editors its creator adds) or it is private."""
        if editing is None:
            editing = "listed" if private else "workspace"
        if private and editing == "workspace":
            raise WorkspaceError("a private document is edited only by the people you add")
        try:
            document = Document.create(self.ws.identity, title, workspace=self.ws.id,
                                       clock=self._clock, secret=self.secret(),
                                       private=private, editing=editing,
                                       members=self.members())
        except (InvalidObject, DocumentError) as exc:
            raise WorkspaceError(str(exc)) from None
        self.save(document)
        return document

    def write(self, document: Document, text: str, *, branch: str = "main") -> str | None:
        """Make `branch` read `text`, with the smallest edits; None when nothing changed."""
        heads = document.heads(branch)
        edits = minimal_edits(document.text(heads), text)
        if not edits:
            return None
        commit = document.commit(self.ws.identity, edits, heads, branch=branch)
        self.save(document, cache=[branch])
        return commit

    def edit(self, document: Document, edits: list[Edit], *, branch: str = "main") -> str:
        commit = document.commit(self.ws.identity, edits, document.heads(branch),
                                 branch=branch)
        self.save(document, cache=[branch])
        return commit

    def edit_from(self, document: Document, seen: list[str], base: str, text: str, *,
                  branch: str = "main") -> str:
        """Commit the edits that turn `base`, the text at commits `seen`, into `text` (what a
        person typed in an editor that showed `base`). If the branch moved on meanwhile, a
        merge commit acknowledges both, so the branch is left with one head. Returns my
        commit."""
        mine = document.commit(self.ws.identity, minimal_edits(base, text), seen, branch=branch)
        if len(document.heads(branch)) > 1:
            document.commit(self.ws.identity, [], document.heads(branch), branch=branch)
        self.save(document, cache=[branch])
        return mine

    def undo(self, document: Document, branch: str = "main") -> str | None:
        """Undo my last edit on `branch`; None when there is nothing to undo."""
        commit = document.undo(self.ws.identity, branch)
        self.save(document, cache=[branch])
        return commit

    def redo(self, document: Document, branch: str = "main") -> str | None:
        commit = document.redo(self.ws.identity, branch)
        self.save(document, cache=[branch])
        return commit

    def fork(self, document: Document, source: str, name: str,
             at: str | None = None) -> str:
        branch = document.fork(self.ws.identity, source, name, [at] if at else None)
        self.save(document, cache=[branch])
        return branch

    def merge(self, document: Document, source: str, target: str, *,
              prefer: str | None = None, resolutions: Sequence[str] | None = None,
              expect: tuple[Sequence[str], Sequence[str]] | None = None) -> str | None:
        """Merge `source` into `target`; the merge commit's id, None when `target` held all
        of `source` already (see `merged`)."""
        return self.merged(document, source, target, prefer=prefer, resolutions=resolutions,
                           expect=expect).commit

    def merged(self, document: Document, source: str, target: str, *,
               prefer: str | None = None, resolutions: Sequence[str] | None = None,
               expect: tuple[Sequence[str], Sequence[str]] | None = None) -> Merged:
        """Merge `source` into `target`: where both changed the same text since their common
        past, each conflict is resolved by `resolutions` (one of RESOLUTIONS per conflict, in
        order) or else by `prefer`; with neither, MergeConflicts and nothing changes. The
        resolutions are part of the merge commit. `expect` (the source's and the target's
        heads a preview showed) refuses the merge if either branch moved since. When `target`
        already holds every commit of `source` (merged before, and not moved since), nothing
        is committed and the commit is None (ALREADY_MERGED)."""
        preview = self.merge_preview(document, source, target)
        if expect is not None and (tuple(expect[0]), tuple(expect[1])) != (
                preview.source_heads, preview.target_heads):
            raise WorkspaceError("the branches changed since the merge was shown; look at it "
                                 "again")
        if preview.already_merged:
            return Merged(None, (), ())
        for choice in ([prefer] if prefer is not None else []) + list(resolutions or []):
            if choice not in RESOLUTIONS:
                raise WorkspaceError(f"resolve a conflict with one of {', '.join(RESOLUTIONS)}, "
                                     f"not {choice!r}")
        count = len(preview.conflicts)
        choices: list[str] = []
        if resolutions is not None:
            choices = list(resolutions)
            if len(choices) != count:
                raise WorkspaceError(f"give one resolution per conflict: there are {count}")
        elif prefer is not None:
            choices = [prefer] * count
        elif count:
            raise MergeConflicts(preview)
        commit = document.review.merge(self.ws.identity, source, target,
                                edits=self._edits(preview, choices), resolutions=choices)
        self.save(document, cache=[target])
        if self.ws.on_merged is not None:
            self.ws.on_merged(document.root.id, count)
        return Merged(commit, preview.conflicts, tuple(choices))

    @staticmethod
    def _edits(preview: MergePreview, choices: Sequence[str]) -> list[Edit]:
        """The smallest edits turning the CRDT's merged text into the result, region by
        region (positions move as the edits before them apply)."""
        out: list[Edit] = []
        shift = 0
        for start, end, text in preview.replacements(choices):
            out += [(start + shift + position, delete, insert) for position, delete, insert
                    in minimal_edits(preview.merged[start:end], text)]
            shift += len(text) - (end - start)
        return out

    # Reviewing --------------------------------------------------------------------------------

    def version(self, document: Document, ref: str | Sequence[str]) -> list[str]:
        """The commits (hex) a ref names: a branch's name or id (its heads), `BRANCH@COMMIT`,
        a tag's name; or a list of commit ids (a version as it was shown)."""
        if not isinstance(ref, str):
            return [document.commit_id(c) for c in ref]
        branch, at, commit = ref.partition("@")
        if at:
            found = document.commit_id(commit)
            if document.review.branch_of(found) != self._branch_id(document, branch):
                raise WorkspaceError(f"commit {commit} is not on branch {branch!r}")
            return [found]
        try:
            return document.heads(ref)
        except DocumentError:
            tags = document.tags()
            if ref in tags:
                return [tags[ref]]
        raise WorkspaceError(f"no branch or tag {ref!r}; see `hearth doc branches DOC`")

    @staticmethod
    def _branch_id(document: Document, name: str) -> str:
        found = _branch_info(document, name)
        if found is None:
            raise WorkspaceError(f"no branch {name!r}; see `hearth doc branches DOC`")
        return found.id

    def branch_name(self, document: Document, branch: str) -> str:
        """A branch's name, given its name or id ("main": the document's main branch)."""
        found = _branch_info(document, branch)
        if found is None:
            raise WorkspaceError(f"no branch {branch!r}; see `hearth doc branches DOC`")
        return found.name

    def diff(self, document: Document, old: str | Sequence[str],
             new: str | Sequence[str]) -> DocDiff:
        """What changed from version `old` to `new` (refs, see `version`), and who changed
        it: compared from their common past, so changes on either side are named."""
        old_ids, new_ids = self.version(document, old), self.version(document, new)
        common = document.review.common(old_ids, new_ids)
        older = None if set(common) == set(old_ids) else document.review.changes(common, old_ids)
        newer = None if set(common) == set(new_ids) else document.review.changes(common, new_ids)
        return review.diff(document.review.version_text(old_ids), document.review.version_text(new_ids),
                           older, newer, old_ref=self._label(document, old),
                           new_ref=self._label(document, new),
                           names=self.ws.replica.nicknames())

    def _label(self, document: Document, ref: str | Sequence[str]) -> str:
        if isinstance(ref, str):
            return ref
        commits = list(ref)
        branch = next((b.name for b in document.branches()
                       if commits and b.id == document.review.branch_of(commits[0])), "")
        return f"{branch}@{','.join(c[:12] for c in commits)}"

    def merge_preview(self, document: Document, source: str, target: str) -> MergePreview:
        """What merging `source` into `target` would make, and its conflicts with each side's
        authors; nothing is committed."""
        source_heads, target_heads = document.heads(source), document.heads(target)
        base = document.review.merge_base(source, target)
        already = bool(source_heads) and set(source_heads) <= set(base)
        base_text = document.review.version_text(base)
        ours, theirs = document.text(target_heads), document.text(source_heads)
        merged = document.review.merged_text(source, target)
        regions = review.regions(base_text, ours, theirs, merged)
        conflicts: tuple[Conflict, ...] = ()
        if any(r.conflict for r in regions):
            conflicts = review.conflicts(regions, ours, document.review.changes(base, target_heads),
                                         document.review.changes(base, source_heads))
        return MergePreview(document.id, self.branch_name(document, source),
                            self.branch_name(document, target), tuple(source_heads),
                            tuple(target_heads), merged, tuple(regions), conflicts,
                            self.ws.replica.nicknames(), already_merged=already)

    def set_main(self, document: Document, branch: str) -> None:
        document.set_main(self.ws.identity, branch)
        self.save(document)

    def tag(self, document: Document, name: str, commit: str | None, branch: str) -> str:
        target = document.commit_id(commit) if commit else document.latest(branch)
        document.tag(self.ws.identity, name, target)
        self.save(document)
        return target

    def rename(self, document: Document, title: str) -> None:
        document.rename(self.ws.identity, title)
        self.save(document)

    def add_editor(self, document: Document, key: str) -> None:
        document.add_editor(self.ws.identity, parse_key(key))
        self.save(document)

    def remove_editor(self, document: Document, key: str) -> None:
        document.remove_editor(self.ws.identity, parse_key(key))
        self.save(document)

    def set_visibility(self, document: Document, mode: str) -> None:
        """"workspace" or "private" (the creator's choice; see core/documents/_keys.py)."""
        document.set_visibility(self.ws.identity, mode)
        self.save(document)

    def ask_edit(self, document: Document, note: str = "") -> None:
        """Ask the editors to make me one (they see it in `requests`)."""
        document.ask_edit(self.ws.identity, note)
        self.save(document)

    def withdraw_request(self, document: Document) -> None:
        document.withdraw_request(self.ws.identity)
        self.save(document)

    def requests(self, document: Document) -> list[RequestInfo]:
        """Open requests to edit, oldest first."""
        return document.requests()

    def asked(self, document: Document) -> bool:
        """Whether I have an open request to edit."""
        return any(r.author == self.ws.key for r in document.requests())

    def accept(self, document: Document, key: str) -> None:
        """Make the member who asked (hex key) an editor, which answers their request."""
        who = parse_key(key)
        if not any(r.author == who for r in document.requests()):
            raise WorkspaceError("they have no open request to edit this document; "
                                 "`hearth doc editors DOC --add` adds anyone")
        self.add_editor(document, key)

    def restore(self, document: Document, at: str, branch: str = "main") -> str:
        """A new commit on `branch` that makes it read as it did at commit `at` (the smallest
        edits from now to then; history is kept). Refused when it reads like that already."""
        old = document.text([document.commit_id(at)])
        heads = document.heads(branch)
        edits = minimal_edits(document.text(heads), old)
        if not edits:
            raise WorkspaceError(ALREADY)
        commit = document.commit(self.ws.identity, edits, heads, branch=branch, restores=at)
        self.save(document, cache=[branch])
        return commit

    def open_capability(self, text: str) -> Document:
        capability = Capability.decode(text)
        self.ws.replica.documents.save_branch_keys(
            (capability.branch, epoch, key) for epoch, key in capability.keys)
        try:
            return self.open(capability.document)
        except WorkspaceError:
            raise WorkspaceError("the keys are saved, but this replica does not hold that "
                                 "document yet; it opens once it arrives by sync") from None


def _branch_info(document: Document, branch: str) -> BranchInfo | None:
    """A branch by id or name ("main": the document's main branch), None when there is none."""
    infos = document.branches()
    found = ([b for b in infos if b.main] if branch == "main" else []) or \
        [b for b in infos if b.id == branch] or [b for b in infos if b.name == branch]
    return found[0] if found else None


__all__ = ["ALREADY", "ALREADY_MERGED", "KEY_NOT_HERE", "ONLY_EDITORS", "READ_ONLY", "DocDiff",
           "DocumentError", "Documents", "DocumentSummary", "MergeConflicts", "MergePreview",
           "Merged", "RequestInfo", "minimal_edits"]
