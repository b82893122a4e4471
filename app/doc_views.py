"""A document as the window reads it, each record read in one go (on the Node's thread, where
the window's facade calls these): a branch's view, its comments, the open requests to edit,
and what committing typed text left."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .records import CommentsView, Committed, DocumentView, EditRequest

if TYPE_CHECKING:
    from core.documents import Document

    from .documents import Documents


def document_view(docs: Documents, document: Document, branch: str = "main") -> DocumentView:
    """What a branch shows: title, branches, heads, text, history and tags, read together
    (and the workspace's nicknames, to name the history's authors), whether I may change it
    and why not (Documents.read_only), which branches its merges took in, its visibility,
    editors and creator, the open requests to edit (for an editor) and whether I asked."""
    heads = document.heads(branch)
    why = docs.unreadable(document, branch)  # no key here: no text, and why
    history = document.history(branch)
    why_readonly = why or docs.read_only(document, branch)
    names = docs.ws.replica.nicknames()
    editors = document.editors()
    requests = edit_requests(document, names) if docs.ws.key in editors else ()
    return DocumentView(document.id, document.title, branch, document.branches(),
                        heads, "" if why else document.text(heads), history,
                        document.tags(), names, why,
                        why_readonly is None, why_readonly,
                        docs.merged_from(document, history),
                        document.visibility, tuple(sorted(editors)),
                        document.root.author, requests, docs.asked(document),
                        document.editing)


def edit_requests(document: Document, names: dict[bytes, str]) -> tuple[EditRequest, ...]:
    """The open requests to edit, oldest first, with each asker's nickname from `names`."""
    return tuple(EditRequest(r.id, r.author, names.get(r.author), r.ts, r.note)
                 for r in document.requests())


def comments_view(docs: Documents, document: Document, branch: str = "main") -> CommentsView:
    """The branch's comments with the text and heads they are anchored at, the workspace's
    nicknames and the editors; or why this computer cannot read the branch."""
    names = docs.ws.replica.nicknames()
    editors = tuple(sorted(document.editors()))
    why = docs.unreadable(document, branch)
    if why is not None:
        return CommentsView(branch, [], "", [], names, editors, why)
    heads = document.heads(branch)
    return CommentsView(branch, heads, document.text(heads),
                        docs.comments(document, branch), names, editors)


def commit_typed(docs: Documents, document: Document, seen: list[str], base: str, text: str,
                 branch: str = "main") -> Committed:
    """Commit what was typed: the edits from `base` (the text at commits `seen`) to `text`,
    merged with whatever else the branch took in meanwhile (Documents.edit_from)."""
    mine = docs.edit_from(document, list(seen), base, text, branch=branch)
    heads = document.heads(branch)
    return Committed(mine, heads, document.text(heads))
