"""The comment calls of the documents facade (app/doc_facade.py): each a future run on the
Node's thread, as every facade call is (app/facade.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from .doc_views import comments_view
from .records import CommentsView

if TYPE_CHECKING:
    from core.documents import Document

    from .documents import Documents

T = TypeVar("T")


class CommentsFacade:
    """The comment calls of DocumentsFacade, each a future run on the Node's thread. A document
    is named as DocumentsFacade names it (its id, or as the CLI takes it)."""

    if TYPE_CHECKING:
        def _on(self, doc: bytes | str,
                action: Callable[[Documents, Document], T]) -> Future[T]: ...

    def comments(self, doc: bytes | str, branch: str = "main") -> Future[CommentsView]:
        """The branch's comments with the text they are anchored in (app.doc_views)."""
        return self._on(doc, lambda docs, document: comments_view(docs, document, branch))

    def comment(self, doc: bytes | str, quote: str, text: str, *, branch: str = "main",
                nth: int | None = None) -> Future[str]:
        """Comment on the words `quote` (`hearth doc comment --quote`); the future holds the
        comment's id."""
        return self._on(doc, lambda docs, document: docs.comment(
            document, quote, text, branch=branch, nth=nth))

    def comment_at(self, doc: bytes | str, start: int, end: int, text: str, *,
                   branch: str = "main", heads: Iterable[str] | None = None) -> Future[str]:
        """Comment on the characters [start, end) (codepoints) of the text at `heads` (what
        the editor showed); the future holds the comment's id."""
        at = None if heads is None else list(heads)
        return self._on(doc, lambda docs, document: docs.comment_at(
            document, start, end, text, branch=branch, heads=at))

    def reply(self, doc: bytes | str, comment: str, text: str) -> Future[str]:
        return self._on(doc, lambda docs, document: docs.reply(document, comment, text))

    def resolve_comment(self, doc: bytes | str, comment: str) -> Future[str]:
        """Resolve a comment (its author or an editor); the future holds the resolve's id."""
        return self._on(doc, lambda docs, document: docs.resolve_comment(document, comment))
