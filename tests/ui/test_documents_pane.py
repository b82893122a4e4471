"""The document pane over real nodes: typing commits, remote edits keep my cursor, branches,
the header, read-only readers and the empty state."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent  # noqa: E402
from PySide6.QtWidgets import QApplication, QStyle, QStyleOptionComboBox  # noqa: E402

from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.document_pane import utf16_offset  # noqa: E402


def doc_text(node, doc_id: str, branch: str = "main") -> str:
    return result(node.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: d.text(d.heads(branch)))))


def open_new(qtbot, window, title: str) -> str:
    window.new_document(title)
    qtbot.waitUntil(lambda: window.document_list.count() == 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.document_pane.title.text() == title, timeout=WAIT_MS)
    return window.document_list.item(0).data(0x0100)  # Qt.UserRole


def type_into(pane, text: str) -> None:
    pane.editor.setPlainText(text)
    pane.commit_now()


def open_written(qtbot, window, node, title: str, text: str) -> str:
    """A new document, `text` typed into it and stored by `node`; returns its id."""
    doc_id = open_new(qtbot, window, title)
    type_into(window.document_pane, text)
    qtbot.waitUntil(lambda: doc_text(node, doc_id) == text, timeout=WAIT_MS)
    return doc_id


def test_typing_is_committed_and_stored(qtbot, window, ada_node):
    open_written(qtbot, window, ada_node, "Notes", "first draft 😀")
    qtbot.waitUntil(lambda: window.document_pane.history.count() == 1, timeout=WAIT_MS)


def test_a_remote_insert_before_my_cursor_keeps_it_on_its_character(qtbot, window, pair):
    node_a, node_b = pair
    doc_id = open_written(qtbot, window, node_a, "Shared", "héllo 😀 world")
    pane = window.document_pane
    result(node_a.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: docs.add_editor(d, node_b.key.hex()))))
    # Bob's write replaces the text he reads: he must read mine first, or his is concurrent.
    qtbot.waitUntil(lambda: _is_editor(node_b, doc_id, "héllo 😀 world"), timeout=WAIT_MS)
    # My cursor sits on the "w" of "world".
    text = pane.editor.toPlainText()
    cursor = pane.editor.textCursor()
    cursor.setPosition(utf16_offset(text, text.index("w")))
    pane.editor.setTextCursor(cursor)

    result(node_b.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: docs.write(d, "¡Hola! héllo 😀 world"))))
    expected = "¡Hola! héllo 😀 world"
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == expected, timeout=WAIT_MS)
    shown = pane.editor.toPlainText()
    position = pane.editor.textCursor().position()
    assert shown.encode("utf-16-le")[position * 2:position * 2 + 2].decode("utf-16-le") == "w"
    assert doc_text(node_a, doc_id) == doc_text(node_b, doc_id) == expected


def _is_editor(node, doc_id: str, text: str) -> bool:
    """The node reads `text` on main and has learned that it may edit the document."""
    try:
        if doc_text(node, doc_id) != text:
            return False
        return node.key in result(node.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: sorted(d.editors()))))
    except Exception:
        return False


def test_fork_and_merge_from_the_branch_selector(qtbot, window, ada_node):
    doc_id = open_written(qtbot, window, ada_node, "Plan", "step one")
    pane = window.document_pane
    pane.fork("draft")
    qtbot.waitUntil(lambda: pane.branch == "draft"
                    and pane.branch_selector.findData("draft") >= 0, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "step one", timeout=WAIT_MS)
    type_into(pane, "step one, step two")
    qtbot.waitUntil(lambda: doc_text(ada_node, doc_id, "draft") == "step one, step two",
                    timeout=WAIT_MS)
    assert doc_text(ada_node, doc_id, "main") == "step one"
    pane.merge("draft", "main")
    qtbot.waitUntil(lambda: pane.branch == "main"
                    and pane.editor.toPlainText() == "step one, step two", timeout=WAIT_MS)
    assert doc_text(ada_node, doc_id, "main") == "step one, step two"


def test_rename_tag_set_main_and_undo_from_the_pane(qtbot, window, ada_node):
    node_a = ada_node
    doc_id = open_written(qtbot, window, node_a, "Draft", "one")
    pane = window.document_pane
    pane.rename("Final")
    qtbot.waitUntil(lambda: pane.title.text() == "Final", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.document_list.item(0).text() == "Final", timeout=WAIT_MS)

    pane.tag("v1")
    qtbot.waitUntil(lambda: any("v1" in entry.tags for entry in pane.history.entries()),
                    timeout=WAIT_MS)

    pane.editor.setPlainText("one two")
    pane.commit_now()
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == "one two", timeout=WAIT_MS)
    pane.undo()
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == "one", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "one", timeout=WAIT_MS)

    pane.fork("wip")
    qtbot.waitUntil(lambda: pane.branch == "wip" and pane.branch_selector.count() == 2,
                    timeout=WAIT_MS)
    pane.set_main("wip")
    qtbot.waitUntil(lambda: pane.branch_selector.currentText() == "wip · main branch",
                    timeout=WAIT_MS)


def test_a_document_i_hold_no_key_for_says_why_and_keeps_nothing_typed(qtbot, window_b, pair):
    node_a, node_b = pair
    doc_id = result(node_a.facade.run(lambda ws: ws.documents.new("Secret", private=True).id))
    doc = bytes.fromhex(doc_id)
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "for editors only"))))
    qtbot.waitUntil(lambda: window_b.document_list.count() == 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(result(node_b.facade.run(on_document(doc, lambda docs, d: d.history("main"))))) == 1,
                    timeout=WAIT_MS)

    window_b.open_document(doc_id)
    pane = window_b.document_pane
    qtbot.waitUntil(lambda: pane.editor.isReadOnly(), timeout=WAIT_MS)
    assert pane.title.text() == "Secret" and pane.notice.isVisible()
    assert pane.notice.text() == ("This document cannot be read on this computer. Only its "
                                  "editors can read it: ask one of them to share it or add "
                                  "you as an editor.")
    assert pane.editor.isReadOnly() and pane.editor.property("emptyState") is True
    assert pane.editor.toPlainText() == ""
    buttons = (pane.fork_button, pane.merge_button, pane.tag_button, pane.main_button,
               pane.rename_button, pane.undo_button, pane.redo_button)
    assert not any(button.isEnabled() for button in buttons)

    qtbot.keyClicks(pane.editor, "typed anyway")
    assert pane.editor.toPlainText() == ""
    pane.editor.setPlainText("pasted anyway")  # even text that gets in is not kept
    pane.commit_now()
    assert pane.editor.toPlainText() == ""
    assert len(result(node_b.facade.run(on_document(doc, lambda docs, d: d.history("main"))))) == 1

    # Made an editor, the key arrives by sync and the pane reads the document.
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.add_editor(d, node_b.key.hex()))))
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "for editors only", timeout=WAIT_MS)
    assert not pane.editor.isReadOnly() and pane.editor.property("emptyState") is False
    assert not pane.notice.isVisible()
    on_main = (pane.merge_button, pane.main_button)  # main is not merged into itself
    assert all(button.isEnabled() for button in buttons if button not in on_main)
    assert not any(button.isEnabled() for button in on_main)


def _history_shows(qtbot, pane, node, doc_id: str, branch: str) -> None:
    """Wait until the pane lists the branch's history (newest first) as the node holds it."""
    ids = [c.id for c in reversed(result(node.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: d.history(branch)))))]
    qtbot.waitUntil(lambda: pane.branch == branch and ids == [
        pane.history.item(i).data(0x0100) for i in range(pane.history.count())],
        timeout=WAIT_MS)


def _pick_latest_version(qtbot, pane, text: str) -> None:
    pane.history.setCurrentRow(0)
    pane.history.itemActivated.emit(pane.history.item(0))
    qtbot.waitUntil(lambda: pane.version.isVisible() and pane.version.toPlainText() == text,
                    timeout=WAIT_MS)


def test_the_version_view_follows_a_branch_switch_and_a_merge(qtbot, window, ada_node):
    node_a = ada_node
    doc_id = open_written(qtbot, window, node_a, "Versions", "one")
    pane = window.document_pane
    pane.fork("draft")
    qtbot.waitUntil(lambda: pane.branch == "draft" and pane.editor.toPlainText() == "one",
                    timeout=WAIT_MS)
    type_into(pane, "one two")
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id, "draft") == "one two", timeout=WAIT_MS)
    _history_shows(qtbot, pane, node_a, doc_id, "draft")
    _pick_latest_version(qtbot, pane, "one two")

    # Switching branch: the draft's version no longer shows beside main's history.
    pane.branch_selector.activated.emit(pane.branch_selector.findData("main"))
    qtbot.waitUntil(lambda: pane.branch == "main" and pane.editor.toPlainText() == "one",
                    timeout=WAIT_MS)
    _history_shows(qtbot, pane, node_a, doc_id, "main")
    assert pane.version.toPlainText() == "" and not pane.version.isVisible()
    assert pane.history.currentItem() is None

    # A version of main stays shown (and selected) while main takes in my typing.
    _pick_latest_version(qtbot, pane, "one")
    selected = pane.history.currentItem().data(0x0100)
    type_into(pane, "zero one")
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == "zero one", timeout=WAIT_MS)
    _history_shows(qtbot, pane, node_a, doc_id, "main")
    assert pane.history.currentItem().data(0x0100) == selected
    assert pane.version.toPlainText() == "one"

    # Merging the draft (its version shown) into main: main opens with no stale version.
    pane.branch_selector.activated.emit(pane.branch_selector.findData("draft"))
    _history_shows(qtbot, pane, node_a, doc_id, "draft")
    assert pane.version.toPlainText() == "" and not pane.version.isVisible()
    _pick_latest_version(qtbot, pane, "one two")
    pane.merge("draft", "main")
    qtbot.waitUntil(lambda: pane.branch == "main"
                    and pane.editor.toPlainText() == "zero one two", timeout=WAIT_MS)
    _history_shows(qtbot, pane, node_a, doc_id, "main")
    assert pane.version.toPlainText() == "" and not pane.version.isVisible()


# The header, read-only readers and the empty state -------------------------------------------

def _shows_whole(combo, text: str) -> bool:
    """Whether the combo, showing `text`, has room for all of it (the field it draws in)."""
    option = QStyleOptionComboBox()
    combo.initStyleOption(option)
    field = combo.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, option,
                                         QStyle.SubControl.SC_ComboBoxEditField, combo)
    return combo.fontMetrics().horizontalAdvance(text) <= field.width()


def test_the_branch_selector_shows_whole_names_and_marks_the_main_branch(qtbot, window, ada_node):
    open_written(qtbot, window, ada_node, "Release", "notes")
    pane = window.document_pane
    pane.fork("release-candidate-2")
    selector = pane.branch_selector
    qtbot.waitUntil(lambda: pane.branch == "release-candidate-2"
                    and selector.currentText() == "release-candidate-2", timeout=WAIT_MS)
    assert [selector.itemText(i) for i in range(selector.count())] == [
        "main · main branch", "release-candidate-2"]
    # At the window's usual size, and narrower: every name fits the selector's field.
    for width in (window.width(), 800):
        window.resize(width, window.height())
        qtbot.waitUntil(lambda w=width: window.width() == w, timeout=WAIT_MS)
        qtbot.waitUntil(lambda: all(_shows_whole(selector, selector.itemText(i))
                                    for i in range(selector.count())), timeout=WAIT_MS)
    assert selector.isVisible() and pane.width() < 800


@pytest.fixture
def capability_reader(qtbot, window_b, pair):
    """A document by the first node that the second (a member, no editor) reads by a
    capability for its main branch, opened in the second's window: (pane, doc id)."""
    node_a, node_b = pair
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Handbook", editing="listed").id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "read me"))))
    cap = result(node_a.facade.run(on_document(doc, lambda docs, d: d.share("main").encode())))
    qtbot.waitUntil(lambda: window_b.document_list.count() == 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: len(result(node_b.facade.run(on_document(doc, lambda docs, d: d.history("main"))))) == 1,
                    timeout=WAIT_MS)
    result(node_b.facade.run(lambda ws: ws.documents.open_capability(cap).id))
    window_b.open_document(doc.hex())
    pane = window_b.document_pane
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "read me", timeout=WAIT_MS)
    return pane, doc


def test_a_capability_reader_gets_a_read_only_pane_that_says_why(qtbot, capability_reader,
                                                                 pair):
    pane, doc = capability_reader
    qtbot.waitUntil(lambda: pane.notice.isVisible(), timeout=WAIT_MS)
    assert pane.notice.text() == "You can read this branch; only its editors can change it."
    assert pane.editor.isReadOnly() and pane.editor.property("emptyState") is False
    buttons = (pane.fork_button, pane.merge_button, pane.tag_button, pane.main_button,
               pane.rename_button, pane.undo_button, pane.redo_button)
    assert not any(button.isEnabled() for button in buttons)
    assert pane.branch_selector.isEnabled()  # reading another branch is still a choice
    assert [e.what for e in pane.history.entries()] == ["edited"]

    qtbot.keyClicks(pane.editor, "typed anyway")
    assert pane.editor.toPlainText() == "read me"
    pane.editor.setPlainText("pasted anyway")  # even text that gets in is not kept
    pane.commit_now()
    assert pane.editor.toPlainText() == "read me"
    pane.undo()
    assert len(result(pair[1].facade.run(on_document(doc, lambda docs, d: d.history("main"))))) == 1
    assert result(pair[1].facade.run(on_document(doc, lambda docs, d: docs.read_only(d)))) == pane.notice.text()


def test_a_new_document_invites_writing(qtbot, window):
    open_new(qtbot, window, "Blank")
    pane = window.document_pane
    qtbot.waitUntil(lambda: pane.editor.placeholderText().startswith("Start writing."),
                    timeout=WAIT_MS)
    assert pane.editor.placeholderText() == (
        "Start writing. Everyone in the workspace sees your edits as you type; fork a branch "
        "to draft on your own.")
    assert pane.editor.toPlainText() == "" and not pane.editor.isReadOnly()
    assert not pane.notice.isVisible()
    assert all(b.isEnabled() for b in (pane.fork_button, pane.undo_button, pane.tag_button))


def test_a_long_branch_name_does_not_widen_the_window(qtbot, window, ada_node):
    """Issue 29: after search and a document, a window of 1000 px became 1052 px wide."""
    node_a = ada_node
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Conference plan").id)))
    long_name = "release-candidate-for-the-spring-conference-2027-final-final-v2"
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.fork(d, "main", long_name))))
    window.resize(1000, 700)
    qtbot.waitUntil(lambda: window.width() == 1000, timeout=WAIT_MS)
    window.search_box.setText("conference")
    window.search_box.returnPressed.emit()  # as Enter in the box
    qtbot.waitUntil(lambda: window.reading.currentWidget() is window.search_results,
                    timeout=WAIT_MS)
    window.open_document(doc.hex())
    pane, selector = window.document_pane, window.document_pane.branch_selector
    qtbot.waitUntil(lambda: pane.view is not None and selector.count() == 2, timeout=WAIT_MS)
    # Laid out with the branches: the selector as wide as the longest name.
    qtbot.waitUntil(lambda: selector.isVisible()
                    and selector.width() == selector.sizeHint().width(), timeout=WAIT_MS)
    QApplication.sendPostedEvents(None, QEvent.Type.LayoutRequest)  # the layouts settle
    assert window.width() == 1000
    assert window.minimumSizeHint().width() <= 1000
    # The name is cut only for want of room, and reads whole in the tooltip then.
    if selector.width() < selector.sizeHint().width():
        assert selector.toolTip() == selector.currentText()
