"""The main window's documents: the sidebar's list (their titles), opening one in the document
pane, and making a new one. Owned by the window (`window.documents`), which makes the pane when
it is first asked for (`window.document_pane`): most sessions open no document, and the pane's
widgets would otherwise be built before the first page of messages shows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt

from app.records import DocumentSummary

from .doc_new import NewDocumentDialog
from .document_pane import DocumentPane
from .switcher import visited

if TYPE_CHECKING:
    from .main_window import MainWindow


class WindowDocuments:
    def __init__(self, window: MainWindow):
        self.window = window
        window.document_list.itemClicked.connect(
            lambda item: self.open(item.data(Qt.ItemDataRole.UserRole)))
        self._pane: DocumentPane | None = None

    @property
    def pane(self) -> DocumentPane:
        """The document pane, made (and added to the window's pages) on the first call."""
        if self._pane is None:
            w = self.window
            self._pane = DocumentPane(w.bridge)
            self._pane.title.hide()  # the window's header names the open document
            self._pane.changed.connect(self._changed)
            w.pages.addWidget(self._pane)
        return self._pane

    def showing(self) -> bool:
        """Whether the window shows the document pane (never made: it does not)."""
        return self._pane is not None and self.window.pages.currentWidget() is self._pane

    def load(self) -> None:
        w = self.window
        w.bridge.then(w.facade.run(lambda ws: ws.documents.all()), done=self._loaded)

    def titles(self) -> list[tuple[str, str]]:
        """(id as hex, title) of the documents listed, in order."""
        listed = self.window.document_list
        return [(listed.item(i).data(Qt.ItemDataRole.UserRole), listed.item(i).text())
                for i in range(listed.count())]

    def _loaded(self, summaries: list[DocumentSummary]) -> None:
        w = self.window
        w.sidebar.show_documents_empty(not summaries)
        if self.titles() == [(s.id, s.title) for s in summaries]:
            return
        w.document_list.clear()
        for summary in summaries:
            w.document_list.addItem(summary.title)
            w.document_list.item(w.document_list.count() - 1).setData(
                Qt.ItemDataRole.UserRole, summary.id)
        w._highlight()

    def open(self, doc_id: str, title: str | None = None) -> None:
        """Show a document (`title` when the caller knows it: a new one is not listed yet)."""
        w = self.window
        w._recent = visited(w._recent, "document", doc_id)
        w.private.clear()
        w.pages.setCurrentWidget(w.document_pane)
        w.member_pane.hide()
        w.document_pane.open(bytes.fromhex(doc_id))
        w.header.show_document(title or dict(self.titles()).get(doc_id, "Document"))
        w._highlight()

    def _changed(self) -> None:
        w = self.window
        if self.showing() and self.pane.title.text():
            w.header.show_document(self.pane.title.text())

    def new(self, title: str, *, private: bool = False, editing: str | None = None) -> None:
        """Create a document (every member reads it unless `private`, and edits it unless
        `editing` is "listed") and open it."""
        w = self.window
        w.bridge.then(w.facade.run(lambda ws: ws.documents.new(title, private=private,
                                                             editing=editing).id),
                      done=lambda doc_id: (self.load(), self.open(doc_id, title)))

    def new_dialog(self) -> NewDocumentDialog:
        """The New document dialog (a title, who can read it and who can edit it); creates on
        "Create"."""
        dialog = NewDocumentDialog(self.window)

        def create() -> None:
            title, private = dialog.choice()
            self.new(title, private=private, editing=dialog.editing())

        dialog.accepted.connect(create)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.open()
        return dialog
