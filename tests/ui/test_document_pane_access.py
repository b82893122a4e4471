"""Who may read and change a document, in the window over two real nodes (issue #15): the
creator's Share, Editors… and visibility toggle; a member who reads asks to edit, the creator
accepts in one click and their typing commits; someone with no key sees why and what to do,
never a page they could type into; and restoring a version from the history."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from app.doc_views import document_view  # noqa: E402
from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402

from .test_documents_pane import doc_text, type_into  # noqa: E402


def _synced(qtbot, node, doc: bytes, commits: int) -> None:
    """Wait until `node` holds the document and `commits` commits of its main branch."""
    def arrived() -> bool:
        try:
            return len(result(node.facade.run(on_document(doc, lambda docs, d: d.history("main"))))) == commits
        except Exception:  # the document has not arrived yet
            return False
    qtbot.waitUntil(arrived, timeout=WAIT_MS)


def open_written(qtbot, window, node, title: str, text: str) -> str:
    """A new document only the people its creator adds edit (what asking to edit is for;
    the window's default is every member: tests/ui/test_doc_new.py), `text` typed into it."""
    doc = bytes.fromhex(result(node.facade.run(lambda ws: ws.documents.new(title, editing="listed").id)))
    pane = _open_in(qtbot, window, doc)
    type_into(pane, text)
    qtbot.waitUntil(lambda: doc_text(node, doc.hex()) == text, timeout=WAIT_MS)
    return doc.hex()


def _open_in(qtbot, win, doc: bytes):
    qtbot.waitUntil(lambda: any(win.document_list.item(i).data(0x0100) == doc.hex()
                                for i in range(win.document_list.count())), timeout=WAIT_MS)
    win.open_document(doc.hex())
    pane = win.document_pane
    qtbot.waitUntil(lambda: pane.view is not None and pane.view.id == doc.hex(),
                    timeout=WAIT_MS)
    return pane


def test_the_creator_shares_and_makes_a_document_private(qtbot, window, ada_node):
    doc_id = open_written(qtbot, window, ada_node, "Roadmap", "q1 goals")
    pane = window.document_pane
    qtbot.waitUntil(lambda: pane.badge.text.text() == "Workspace", timeout=WAIT_MS)
    bar = pane.sharing
    assert bar.share.isVisible() and bar.editors.isVisible() and not bar.ask.isVisible()
    assert bar.toggle.isVisible() and bar.toggle.text() == "Make private"
    assert not pane.badge.icon.isVisible()

    QGuiApplication.clipboard().clear()
    bar.share.click()
    qtbot.waitUntil(lambda: bar.status.text().startswith("A link to read this branch is "
                                                         "copied"), timeout=WAIT_MS)
    assert QGuiApplication.clipboard().text().startswith("hearthcap1-")

    bar.toggle.click()
    qtbot.waitUntil(lambda: pane.badge.text.text() == "Private", timeout=WAIT_MS)
    assert pane.badge.icon.isVisible() and bar.toggle.text() == "Make visible to the workspace"
    doc = bytes.fromhex(doc_id)
    assert result(ada_node.facade.run(on_document(doc, lambda docs, d: document_view(docs, d)))).visibility == "private"
    bar.toggle.click()
    qtbot.waitUntil(lambda: pane.badge.text.text() == "Workspace", timeout=WAIT_MS)


def test_ask_to_edit_accept_and_the_readers_typing_commits(qtbot, window, window_b, pair):
    node_a, node_b = pair
    doc = bytes.fromhex(open_written(qtbot, window, node_a, "Minutes", "agenda"))
    _synced(qtbot, node_b, doc, 1)
    reader = _open_in(qtbot, window_b, doc)
    qtbot.waitUntil(lambda: reader.editor.toPlainText() == "agenda", timeout=WAIT_MS)
    # A reader: the text read-only, Ask to edit, nothing to share or manage.
    assert reader.editor.isVisible() and reader.editor.isReadOnly()
    assert reader.sharing.ask.isVisible() and reader.sharing.ask.text() == "Ask to edit"
    assert not (reader.sharing.share.isVisible() or reader.sharing.editors.isVisible()
                or reader.sharing.toggle.isVisible())
    assert reader.badge.text.text() == "Workspace"

    reader.sharing.ask.click()
    qtbot.waitUntil(lambda: reader.sharing.ask.text() == "Asked to edit", timeout=WAIT_MS)
    assert not reader.sharing.ask.isEnabled() and reader.editor.isReadOnly()

    # The creator's pane shows the request; one click accepts it.
    creator = window.document_pane
    qtbot.waitUntil(lambda: creator.requests.labels() == ["bob asks to edit"], timeout=WAIT_MS)
    assert creator.requests.isVisible()
    (accept,) = creator.requests.findChildren(QPushButton, "acceptRequest")
    assert accept.text() == "Accept"
    accept.click()
    qtbot.waitUntil(lambda: creator.requests.labels() == [] and creator.requests.isHidden(),
                    timeout=WAIT_MS)

    # The reader's pane becomes editable, and what they type is committed and counts.
    qtbot.waitUntil(lambda: not reader.editor.isReadOnly(), timeout=WAIT_MS)
    assert not reader.sharing.ask.isVisible() and reader.sharing.share.isVisible()
    type_into(reader, "agenda, decisions")
    qtbot.waitUntil(lambda: doc_text(node_a, doc.hex()) == "agenda, decisions",
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: creator.editor.toPlainText() == "agenda, decisions",
                    timeout=WAIT_MS)


def test_no_key_shows_why_and_what_to_do_never_an_editable_page(qtbot, window_b, pair):
    node_a, node_b = pair
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Salaries", private=True).id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "for editors only"))))
    _synced(qtbot, node_b, doc, 1)
    pane = _open_in(qtbot, window_b, doc)
    qtbot.waitUntil(lambda: pane.unreadable_note.isVisible(), timeout=WAIT_MS)
    assert pane.unreadable_note.objectName() == "unreadableNote"
    assert pane.unreadable_note.text().startswith("This document is private: only its editors")
    assert pane.locked.open_link.isVisible()
    # No page to type into: the editor is hidden, read-only and empty.
    assert not pane.editor.isVisible() and pane.editor.isReadOnly()
    assert pane.editor.toPlainText() == ""
    assert pane.badge.text.text() == "Private"
    assert not (pane.sharing.share.isVisible() or pane.sharing.editors.isVisible())
    assert pane.sharing.ask.isVisible()

    # A share link from an editor, opened here: the page reads, still read-only.
    pane.open_link(result(node_a.facade.run(on_document(doc, lambda docs, d: d.share("main").encode()))))
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "for editors only", timeout=WAIT_MS)
    assert pane.editor.isVisible() and pane.editor.isReadOnly()
    assert not pane.unreadable_note.isVisible()


def test_editors_are_added_by_nickname_and_a_refusal_is_shown(qtbot, window, window_b, pair):
    node_a, node_b = pair
    doc = bytes.fromhex(open_written(qtbot, window, node_a, "Budget", "numbers"))
    dialog = window.document_pane.show_editors()
    assert [dialog.list.item(i).text() for i in range(dialog.list.count())] == [
        "ada (creator, you)"]
    qtbot.waitUntil(lambda: "bob" in dialog.names.values(), timeout=WAIT_MS)
    dialog.entry.setText("bob")
    dialog.add.click()
    qtbot.waitUntil(lambda: dialog.list.count() == 2, timeout=WAIT_MS)
    assert dialog.list.item(1).text() == "bob" and dialog.entry.text() == ""
    assert node_b.key in result(node_a.facade.run(on_document(doc, lambda docs, d: sorted(d.editors()))))

    # Bob is an editor now, not the creator: the library refuses his change, the dialog says so.
    qtbot.waitUntil(lambda: node_b.key in result(node_b.facade.run(on_document(doc, lambda docs, d: sorted(d.editors())))),
                    timeout=WAIT_MS)
    pane_b = _open_in(qtbot, window_b, doc)
    qtbot.waitUntil(lambda: not pane_b.editor.isReadOnly(), timeout=WAIT_MS)
    assert not pane_b.sharing.toggle.isVisible() and pane_b.sharing.editors.isVisible()
    dialog_b = pane_b.show_editors()
    dialog_b.list.setCurrentRow(0)  # ada, the creator
    dialog_b.remove.click()
    qtbot.waitUntil(lambda: dialog_b.error.isVisible(), timeout=WAIT_MS)
    assert dialog_b.error.text() != ""
    assert node_a.key in result(node_b.facade.run(on_document(doc, lambda docs, d: sorted(d.editors()))))


def test_restore_this_version_puts_the_old_text_back(qtbot, window, ada_node):
    node_a = ada_node
    doc_id = open_written(qtbot, window, node_a, "Essay", "first")
    pane = window.document_pane
    type_into(pane, "first, second")
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == "first, second", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: pane.history.count() == 2, timeout=WAIT_MS)

    # The newest version cannot be restored: it is what the branch reads.
    pane.history.setCurrentRow(0)
    pane.history.itemClicked.emit(pane.history.item(0))
    qtbot.waitUntil(lambda: pane.version.toPlainText() == "first, second", timeout=WAIT_MS)
    assert not pane.restore_button.isEnabled()

    pane.history.setCurrentRow(1)
    pane.history.itemClicked.emit(pane.history.item(1))
    qtbot.waitUntil(lambda: pane.version.toPlainText() == "first"
                    and pane.restore_button.isVisible(), timeout=WAIT_MS)
    assert pane.restore_button.objectName() == "restoreVersion"
    assert pane.restore_button.isEnabled()
    pane.restore_button.click()
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "first", timeout=WAIT_MS)
    assert doc_text(node_a, doc_id) == "first"
    qtbot.waitUntil(lambda: pane.history.count() == 3, timeout=WAIT_MS)
    assert not pane.version_box.isVisible()


def test_a_reader_cannot_restore(qtbot, window, window_b, pair):
    node_a, node_b = pair
    doc = bytes.fromhex(open_written(qtbot, window, node_a, "Log", "a"))
    type_into(window.document_pane, "a b")
    qtbot.waitUntil(lambda: doc_text(node_a, doc.hex()) == "a b", timeout=WAIT_MS)
    _synced(qtbot, node_b, doc, 2)
    pane = _open_in(qtbot, window_b, doc)
    qtbot.waitUntil(lambda: pane.history.count() == 2, timeout=WAIT_MS)
    pane.history.setCurrentRow(1)
    pane.history.itemClicked.emit(pane.history.item(1))
    qtbot.waitUntil(lambda: pane.version.toPlainText() == "a", timeout=WAIT_MS)
    assert not pane.restore_button.isEnabled()
    (action,) = pane.history.context_menu(1).actions()
    assert not action.isEnabled()
