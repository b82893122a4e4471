"""The documents of a running Node (`node.facade.documents`), each call a future run on the Node's
thread; see app/facade.py for the rules every facade call follows."""

from __future__ import annotations

import builtins  # `list` in the class body names DocumentsFacade.list
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import TYPE_CHECKING, Any, TypeVar

from .doc_comment_facade import CommentsFacade
from .doc_views import commit_typed, document_view, edit_requests
from .documents import Documents
from .records import (
    BranchInfo,
    CommitInfo,
    Committed,
    DocDiff,
    DocumentSummary,
    DocumentView,
    EditRequest,
    MergePreview,
)

if TYPE_CHECKING:
    from core.documents import Document

    from .node import Node

T = TypeVar("T")
DocRef = bytes | str  # a document's id, or (as the CLI takes it) its hex id, a prefix or title


class DocumentsFacade(CommentsFacade):
    """The documents of the Node's workspace (`node.facade.documents`): app.documents'
    Documents and the `hearth doc` commands, each returning a future. A document is named by
    its id (bytes), or as the CLI takes it (hex id, unique prefix or exact title)."""

    def __init__(self, node: Node):
        self._node = node

    def _run(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        return self._node.run(lambda _: fn(*args))

    def _library(self) -> Documents:  # on the Node's thread only
        return self._node.documents()

    def _open(self, doc: DocRef) -> tuple[Documents, Document]:
        """The document as opened before, with what arrived since (Documents.current)."""
        docs = self._library()
        doc_id = doc if isinstance(doc, bytes) else docs.resolve(doc)
        return docs, docs.current(doc_id)

    def _on(self, doc: DocRef, action: Callable[[Documents, Document], T]) -> Future[T]:
        return self._run(lambda: action(*self._open(doc)))

    # Reading -----------------------------------------------------------------------------------

    def list(self) -> Future[builtins.list[DocumentSummary]]:
        return self._run(lambda: self._library().all())

    def open(self, doc: DocRef, branch: str = "main") -> Future[DocumentView]:
        """What a branch shows, read together (app.doc_views.document_view)."""
        return self._on(doc, lambda docs, document: document_view(docs, document, branch))

    def requests(self, doc: DocRef) -> Future[builtins.list[EditRequest]]:
        """Open requests to edit, oldest first (editors accept them with `accept`)."""
        return self._on(doc, lambda docs, document: list(
            edit_requests(document, docs.ws.replica.nicknames())))

    def unreadable(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        """Why this computer cannot read the branch (it holds no key for it), None when it
        can (Documents.unreadable)."""
        return self._on(doc, lambda docs, document: docs.unreadable(document, branch))

    def show(self, doc: DocRef, branch: str = "main", at: str | None = None) -> Future[str]:
        """The text of a branch at its heads, or at commit `at`."""
        return self._on(doc, lambda _, document: document.text(
            [at] if at else document.heads(branch)))

    def history(self, doc: DocRef, branch: str = "main") -> Future[builtins.list[CommitInfo]]:
        return self._on(doc, lambda _, document: document.history(branch))

    def branches(self, doc: DocRef) -> Future[builtins.list[BranchInfo]]:
        return self._on(doc, lambda _, document: document.branches())

    def tags(self, doc: DocRef) -> Future[dict[str, str]]:
        return self._on(doc, lambda _, document: document.tags())

    def read_only(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        """Why I cannot change the branch (a reader only, or I cannot read it), None when I can
        (Documents.read_only)."""
        return self._on(doc, lambda docs, document: docs.read_only(document, branch))

    def editors(self, doc: DocRef) -> Future[builtins.list[bytes]]:
        return self._on(doc, lambda _, document: sorted(document.editors()))

    # Writing -----------------------------------------------------------------------------------

    def new(self, title: str, *, private: bool = False,
            editing: str | None = None) -> Future[str]:
        """Create a document (readable by the whole workspace unless `private`; edited by every
        member unless `editing` is "listed" or it is private); the future holds its id (hex)."""
        return self._run(lambda: self._library().new(title, private=private,
                                                     editing=editing).id)

    def set_visibility(self, doc: DocRef, visibility: str) -> Future[None]:
        """"workspace" or "private" (the creator only)."""
        return self._on(doc, lambda docs, document: docs.set_visibility(document, visibility))

    def ask_edit(self, doc: DocRef, note: str = "") -> Future[None]:
        """Ask the editors to make me one."""
        return self._on(doc, lambda docs, document: docs.ask_edit(document, note))

    def accept(self, doc: DocRef, key: str) -> Future[None]:
        """Make a member who asked an editor (their key, hex, or nickname); it answers the
        request."""
        def work(docs: Documents, document: Document) -> None:
            docs.accept(document, docs.ws.resolve_person(key).hex())
        return self._on(doc, work)

    def restore(self, doc: DocRef, at: str, *, branch: str = "main") -> Future[str]:
        """A new commit that makes `branch` read as it did at commit `at`; the future holds
        its id."""
        return self._on(doc, lambda docs, document: docs.restore(document, at, branch))

    def edit(self, doc: DocRef, seen: builtins.list[str], base: str, text: str, *,
             branch: str = "main") -> Future[Committed]:
        """Commit what was typed: the edits from `base` (the text at commits `seen`) to `text`,
        merged with whatever else the branch took in meanwhile (Documents.edit_from)."""
        return self._on(doc, lambda docs, document: commit_typed(
            docs, document, list(seen), base, text, branch))

    def write(self, doc: DocRef, text: str, *, branch: str = "main") -> Future[str | None]:
        """Make `branch` read `text` with the smallest edits (`hearth doc write`)."""
        return self._on(doc, lambda docs, document: docs.write(document, text, branch=branch))

    def undo(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        return self._on(doc, lambda docs, document: docs.undo(document, branch))

    def redo(self, doc: DocRef, branch: str = "main") -> Future[str | None]:
        return self._on(doc, lambda docs, document: docs.redo(document, branch))

    def fork(self, doc: DocRef, source: str, name: str,
             at: str | None = None) -> Future[str]:
        return self._on(doc, lambda docs, document: docs.fork(document, source, name, at))

    def merge(self, doc: DocRef, source: str, into: str, *, prefer: str | None = None,
              resolutions: Sequence[str] | None = None,
              expect: tuple[Sequence[str], Sequence[str]] | None = None) -> Future[str | None]:
        """Merge `source` into `into`; the future holds the merge commit, or None when `into`
        already held all of `source` (nothing is committed: ALREADY_MERGED). Where both changed
        the same text, each conflict takes its resolution from `resolutions` (one per
        conflict, in order: "ours", "theirs" or "both") or `prefer`; with neither it fails
        with MergeConflicts and nothing changes. `expect`: the (source, into) heads the
        preview showed; the merge is refused if either branch moved since."""
        return self._on(doc, lambda docs, document: docs.merge(
            document, source, into, prefer=prefer, resolutions=resolutions, expect=expect))

    def merge_preview(self, doc: DocRef, source: str, into: str) -> Future[MergePreview]:
        """What merging `source` into `into` would make, its conflicts (each side's text and
        authors) and the heads it was read at; nothing is committed."""
        return self._on(doc, lambda docs, document: docs.merge_preview(document, source, into))

    def diff(self, doc: DocRef, old: str | Sequence[str],
             new: str | Sequence[str]) -> Future[DocDiff]:
        """What changed from version `old` to `new`, and who changed it. A version is a ref (a
        branch's name, `BRANCH@COMMIT`, a tag's name) or a list of commit ids, e.g. the heads
        shown when a branch was last looked at."""
        return self._on(doc, lambda docs, document: docs.diff(document, old, new))

    def set_main(self, doc: DocRef, branch: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.set_main(document, branch))

    def tag(self, doc: DocRef, name: str, at: str | None = None, *,
            branch: str = "main") -> Future[str]:
        """Name commit `at` (default: the branch's newest); the future holds the commit."""
        return self._on(doc, lambda docs, document: docs.tag(document, name, at, branch))

    def rename(self, doc: DocRef, title: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.rename(document, title))

    def add_editor(self, doc: DocRef, key: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.add_editor(document, key))

    def remove_editor(self, doc: DocRef, key: str) -> Future[None]:
        return self._on(doc, lambda docs, document: docs.remove_editor(document, key))

    # Capabilities (`hearth doc share`, `doc open-cap`) -----------------------------------------

    def share(self, doc: DocRef, branch: str = "main") -> Future[str]:
        """A capability to read one branch (`hearthcap1-...`)."""
        return self._on(doc, lambda _, document: document.share(branch).encode())

    def open_cap(self, cap: str) -> Future[str]:
        """Keep a capability's keys; the future holds the document's id (hex)."""
        return self._run(lambda: self._library().open_capability(cap).id)
