"""The comment calls of the documents facade (app/doc_facade.py)."""

from __future__ import annotations


class CommentsFacade:
    """The comment calls of DocumentsFacade, each a future run on the Node's thread."""
