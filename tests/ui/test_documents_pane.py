"""The document pane over real nodes: typing commits, remote edits keep my cursor, branches."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from ui.document_pane import utf16_offset  # noqa: E402

from .test_window import WAIT_MS, pair, result, window  # noqa: E402, F401


def doc_text(node, doc_id: str, branch: str = "main") -> str:
    return result(node.facade.documents.show(bytes.fromhex(doc_id), branch))


def open_new(qtbot, window, title: str) -> str:  # noqa: F811
    window.new_document(title)
    qtbot.waitUntil(lambda: window.document_list.count() == 1, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.document_pane.title.text() == title, timeout=WAIT_MS)
    return window.document_list.item(0).data(0x0100)  # Qt.UserRole


def type_into(pane, text: str) -> None:
    pane.editor.setPlainText(text)
    pane.commit_now()


def test_typing_is_committed_and_stored(qtbot, window, pair):  # noqa: F811
    doc_id = open_new(qtbot, window, "Notes")
    type_into(window.document_pane, "first draft 😀")
    qtbot.waitUntil(lambda: doc_text(pair[0], doc_id) == "first draft 😀", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.document_pane.history.count() == 1, timeout=WAIT_MS)


def test_a_remote_insert_before_my_cursor_keeps_it_on_its_character(qtbot, window, pair):  # noqa: F811
    node_a, node_b = pair
    doc_id = open_new(qtbot, window, "Shared")
    pane = window.document_pane
    type_into(pane, "héllo 😀 world")
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == "héllo 😀 world", timeout=WAIT_MS)
    result(node_a.facade.documents.add_editor(bytes.fromhex(doc_id), node_b.key.hex()))
    qtbot.waitUntil(lambda: _is_editor(node_b, doc_id), timeout=WAIT_MS)
    # My cursor sits on the "w" of "world".
    text = pane.editor.toPlainText()
    cursor = pane.editor.textCursor()
    cursor.setPosition(utf16_offset(text, text.index("w")))
    pane.editor.setTextCursor(cursor)

    result(node_b.facade.documents.write(bytes.fromhex(doc_id), "¡Hola! héllo 😀 world"))
    expected = "¡Hola! héllo 😀 world"
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == expected, timeout=WAIT_MS)
    shown = pane.editor.toPlainText()
    position = pane.editor.textCursor().position()
    assert shown.encode("utf-16-le")[position * 2:position * 2 + 2].decode("utf-16-le") == "w"
    assert doc_text(node_a, doc_id) == doc_text(node_b, doc_id) == expected


def _is_editor(node, doc_id: str) -> bool:
    """The node can read the document and has learned that it may edit it."""
    documents = node.facade.documents
    try:
        result(documents.show(bytes.fromhex(doc_id)))
        return node.key in result(documents.editors(bytes.fromhex(doc_id)))
    except Exception:
        return False


def test_fork_and_merge_from_the_branch_selector(qtbot, window, pair):  # noqa: F811
    doc_id = open_new(qtbot, window, "Plan")
    pane = window.document_pane
    type_into(pane, "step one")
    qtbot.waitUntil(lambda: doc_text(pair[0], doc_id) == "step one", timeout=WAIT_MS)
    pane.fork("draft")
    qtbot.waitUntil(lambda: pane.branch == "draft"
                    and pane.branch_selector.findData("draft") >= 0, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == "step one", timeout=WAIT_MS)
    type_into(pane, "step one, step two")
    qtbot.waitUntil(lambda: doc_text(pair[0], doc_id, "draft") == "step one, step two",
                    timeout=WAIT_MS)
    assert doc_text(pair[0], doc_id, "main") == "step one"
    pane.merge("draft", "main")
    qtbot.waitUntil(lambda: pane.branch == "main"
                    and pane.editor.toPlainText() == "step one, step two", timeout=WAIT_MS)
    assert doc_text(pair[0], doc_id, "main") == "step one, step two"


def test_rename_tag_set_main_and_undo_from_the_pane(qtbot, window, pair):  # noqa: F811
    node_a = pair[0]
    doc_id = open_new(qtbot, window, "Draft")
    pane = window.document_pane
    type_into(pane, "one")
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == "one", timeout=WAIT_MS)
    pane.rename("Final")
    qtbot.waitUntil(lambda: pane.title.text() == "Final", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.document_list.item(0).text() == "Final", timeout=WAIT_MS)

    pane.tag("v1")
    qtbot.waitUntil(lambda: any("[v1]" in pane.history.item(i).text()
                                for i in range(pane.history.count())), timeout=WAIT_MS)

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
    qtbot.waitUntil(lambda: pane.branch_selector.currentText() == "wip (main)",
                    timeout=WAIT_MS)
