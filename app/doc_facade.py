"""The documents of a running Node (`node.facade.documents`): what remains of the documents'
facade while ui/window_documents.py calls it. Every other caller runs the library itself,
`facade.run(on_document(doc, lambda docs, d: docs.undo(d, branch)))` (app.documents)."""

from __future__ import annotations

import builtins  # `list` in the class body names DocumentsFacade.list
from concurrent.futures import Future
from typing import TYPE_CHECKING

from .records import DocumentSummary

if TYPE_CHECKING:
    from .node import Node


class DocumentsFacade:
    """Forwarding only, kept while ui/window_documents.py calls it (`list`, `new`)."""

    def __init__(self, node: Node):
        self._node = node

    def list(self) -> Future[builtins.list[DocumentSummary]]:
        return self._node.run(lambda ws: ws.documents.all())

    def new(self, title: str, *, private: bool = False,
            editing: str | None = None) -> Future[str]:
        """Create a document (readable by the whole workspace unless `private`; edited by every
        member unless `editing` is "listed" or it is private); the future holds its id (hex)."""
        return self._node.run(lambda ws: ws.documents.new(title, private=private,
                                                          editing=editing).id)
