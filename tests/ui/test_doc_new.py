"""The New document dialog (issue #15; ui/doc_new.py): a title, and who can read it, everyone
in the workspace by default or only editors (`hearth doc new --private`), over real Nodes."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402

from app.doc_views import document_view  # noqa: E402
from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.doc_new import EVERYONE, EVERYONE_EDITS, ONLY_ADDED, ONLY_EDITORS  # noqa: E402


def create(qtbot, window, title: str, *, only_editors: bool) -> None:
    dialog = window.new_document_dialog()
    assert dialog.isVisible() and dialog.windowTitle() == "New document"
    assert dialog.everyone.text() == EVERYONE and dialog.only_editors.text() == ONLY_EDITORS
    assert dialog.everyone.isChecked() and not dialog.only_editors.isChecked()  # the default
    assert not dialog.create_button.isEnabled()  # no title yet
    qtbot.keyClicks(dialog.title, "   ")
    assert not dialog.create_button.isEnabled()
    dialog.title.clear()
    qtbot.keyClicks(dialog.title, title)
    if only_editors:
        dialog.only_editors.click()
    qtbot.mouseClick(dialog.create_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.document_pane.title.text() == title, timeout=WAIT_MS)


def test_a_new_document_is_readable_by_the_workspace_unless_only_editors_is_chosen(
        qtbot, window, ada_node):
    node_a = ada_node
    pane = window.document_pane

    create(qtbot, window, "Open notes", only_editors=False)
    qtbot.waitUntil(lambda: pane.badge.text.text() == "Workspace", timeout=WAIT_MS)
    assert result(node_a.facade.run(on_document(pane.doc_id, lambda docs, d: document_view(docs, d)))).visibility == "workspace"

    create(qtbot, window, "Secret notes", only_editors=True)
    qtbot.waitUntil(lambda: pane.badge.text.text() == "Private", timeout=WAIT_MS)
    assert result(node_a.facade.run(on_document(pane.doc_id, lambda docs, d: document_view(docs, d)))).visibility == "private"
    qtbot.waitUntil(lambda: window.document_list.count() == 2, timeout=WAIT_MS)


def test_cancel_creates_nothing(qtbot, window, ada_node):
    dialog = window.new_document_dialog()
    qtbot.keyClicks(dialog.title, "Never mind")
    dialog.buttons.rejected.emit()
    assert not dialog.isVisible()
    assert result(ada_node.facade.run(lambda ws: ws.documents.all())) == []


def test_everyone_in_the_workspace_edits_a_new_document_by_default(
        qtbot, window, ada_node):
    node_a = ada_node
    dialog = window.new_document_dialog()
    assert dialog.everyone_edits.text() == EVERYONE_EDITS and dialog.only_added.text() == ONLY_ADDED
    assert dialog.everyone_edits.isChecked() and dialog.editing() == "workspace"
    dialog.only_added.click()
    assert dialog.editing() == "listed"
    dialog.everyone_edits.click()
    dialog.only_editors.click()  # a private document is edited by those added alone
    assert dialog.only_added.isChecked() and not dialog.everyone_edits.isEnabled()
    assert dialog.editing() == "listed"
    dialog.everyone.click()
    assert dialog.everyone_edits.isEnabled()
    dialog.buttons.rejected.emit()

    create(qtbot, window, "Team notes", only_editors=False)
    view = result(node_a.facade.run(on_document(window.document_pane.doc_id, lambda docs, d: document_view(docs, d))))
    assert view.editing == "workspace"
    listed = result(node_a.facade.run(lambda ws: ws.documents.new("Mine", editing="listed").id))
    assert result(node_a.facade.run(on_document(listed, lambda docs, d: document_view(docs, d)))).editing == "listed"
    # The window passes the dialog's choice on: only the people I add.
    dialog = window.new_document_dialog()
    qtbot.keyClicks(dialog.title, "Board minutes")
    dialog.only_added.click()
    qtbot.mouseClick(dialog.create_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: window.document_pane.title.text() == "Board minutes",
                    timeout=WAIT_MS)
    view = result(node_a.facade.run(on_document(window.document_pane.doc_id, lambda docs, d: document_view(docs, d))))
    assert view.editing == "listed"
