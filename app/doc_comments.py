"""Comments on documents: the library API behind `hearth doc comment` and the editor's margin."""

from __future__ import annotations


class DocComments:
    """The comment calls of app.documents.Documents."""
