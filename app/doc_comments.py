"""Comments on documents: the library API behind `hearth doc comment` and the editor's margin.

A comment is on a range of a branch's text and follows its words as the text is edited
(core/documents/_comments.py). Anyone who can read the branch may comment and reply; the
comment's author or an editor may resolve it.

Finding the words (`hearth doc comment DOC --quote TEXT`): the quote must occur in the branch's
text as it is now. When it occurs more than once the comment is refused, with how many times it
occurs, unless `nth` picks one (1 is the first): a comment silently put on the first of several
"TODO"s would sit on words its author did not mean. The window needs no quote: it comments on
the selected characters, at the heads the editor showed (`comment_at`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from core.documents import CommentInfo, Document

from .errors import WorkspaceError

if TYPE_CHECKING:
    from core.objects import Object

    from .workspace import Workspace


def find_quote(text: str, quote: str, nth: int | None = None) -> int:
    """Where `quote` starts in `text` (codepoints): its only occurrence, or its `nth` (from 1)."""
    if not quote:
        raise WorkspaceError("give the words to comment on (--quote TEXT)")
    starts, at = [], text.find(quote)
    while at >= 0:
        starts.append(at)
        at = text.find(quote, at + 1)
    if not starts:
        raise WorkspaceError(f"{_shown(quote)} is not in the text of that branch")
    if nth is None:
        if len(starts) > 1:
            raise WorkspaceError(f"{_shown(quote)} occurs {len(starts)} times; quote more of "
                                 f"the words around it, or pick one with --nth N")
        return starts[0]
    if not 1 <= nth <= len(starts):
        raise WorkspaceError(f"{_shown(quote)} occurs {len(starts)} time"
                             f"{'s' if len(starts) > 1 else ''}, so there is no occurrence "
                             f"{nth}")
    return starts[nth - 1]


def _shown(quote: str) -> str:
    return repr(quote if len(quote) <= 40 else quote[:40] + "…")


class DocComments:
    """The comment calls of app.documents.Documents (each saves what it made)."""

    if TYPE_CHECKING:
        ws: Workspace

        def save(self, document: Document, *, cache: Sequence[str] = ()) -> list[Object]: ...

    def comment(self, document: Document, quote: str, text: str, *, branch: str = "main",
                nth: int | None = None) -> str:
        """Comment on the words `quote` of `branch` as it reads now (see `find_quote`).
        Returns the comment's id."""
        heads = document.heads(branch)
        start = find_quote(document.text(heads), quote, nth)
        return self.comment_at(document, start, start + len(quote), text, branch=branch,
                               heads=heads)

    def comment_at(self, document: Document, start: int, end: int, text: str, *,
                   branch: str = "main", heads: Iterable[str] | None = None) -> str:
        """Comment on the characters [start, end) (codepoints) of `branch`'s text at `heads`
        (default: as it reads now). Returns the comment's id."""
        comment = document.comments.add(self.ws.identity, branch, start, end, text,
                                   heads=None if heads is None else list(heads))
        self.save(document)
        return comment

    def reply(self, document: Document, comment: str, text: str) -> str:
        """Answer a comment (its id or a unique prefix; a reply's stands for its comment)."""
        reply = document.comments.reply(self.ws.identity, comment, text)
        self.save(document)
        return reply

    def resolve_comment(self, document: Document, comment: str) -> str:
        """Resolve a comment (its author or an editor). (`resolve` finds a document.)"""
        resolve = document.comments.resolve(self.ws.identity, comment)
        self.save(document)
        return resolve

    def comments(self, document: Document, branch: str = "main") -> list[CommentInfo]:
        """The branch's comments, in the order of the text (detached ones last)."""
        return document.comments.on(branch)
