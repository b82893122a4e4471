"""The merge dialog (issue #29, "Also seen"), over real Nodes offscreen: every conflict's choices
show whole ("Both, markec" was clipped), also with long branch names; a branch merged already
says there is nothing to do, and Merge adds nothing; so does the pane's merge."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtWidgets import QRadioButton, QScrollArea  # noqa: E402

from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.merge_dialog import MergeDialog  # noqa: E402

from .test_documents_pane import doc_text, open_written, type_into  # noqa: E402


def conflicting(node, source: str) -> bytes:
    """A document whose main and `source` changed its one line apart."""
    doc = bytes.fromhex(result(node.facade.run(lambda ws: ws.documents.new("Notes").id)))
    result(node.facade.run(on_document(doc, lambda docs, d: docs.write(d, "4. x\n"))))
    result(node.facade.run(on_document(doc, lambda docs, d: docs.fork(d, "main", source))))
    result(node.facade.run(on_document(doc, lambda docs, d: docs.write(d, "4. z (main by bob)\n"))))
    result(node.facade.run(on_document(doc, lambda docs, d: docs.write(d, "4. y (draft by ada)\n", branch=source))))
    return doc


def shown_whole(dialog: MergeDialog, button: QRadioButton) -> bool:
    """The button is as wide as its text needs and lies inside the visible conflicts column."""
    area = dialog.findChild(QScrollArea)
    viewport = area.viewport()
    left = button.mapTo(viewport, QPoint(0, 0)).x()
    return (button.width() >= button.sizeHint().width() and left >= 0
            and left + button.width() <= viewport.width())


@pytest.mark.parametrize("source", ["draft", "a-much-longer-branch-name-for-the-spring-release"])
def test_every_choice_shows_whole(qtbot, pair, bridges, source):
    doc = conflicting(pair[0], source)
    dialog = MergeDialog(bridges[0], doc, source, "main")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.previewed, timeout=WAIT_MS):
        dialog.show()
    buttons = dialog.conflict_rows.findChildren(QRadioButton)
    assert [b.text() for b in buttons] == ["Keep main's", f"Take {source}'s", "Both, marked"]
    qtbot.waitUntil(lambda: all(b.isVisible() for b in buttons), timeout=WAIT_MS)
    for button in buttons:
        assert shown_whole(dialog, button), (button.text(), button.width(),
                                             button.sizeHint().width())


def test_a_branch_merged_already_says_so_and_merges_nothing(qtbot, pair, bridges):
    doc = conflicting(pair[0], "draft")
    assert result(pair[0].facade.run(on_document(doc, lambda docs, d: docs.merge(d, "draft", "main", prefer="theirs")))) is not None
    history = result(pair[0].facade.run(on_document(doc, lambda docs, d: d.history("main"))))
    dialog = MergeDialog(bridges[0], doc, "draft", "main")
    qtbot.addWidget(dialog)
    with qtbot.waitSignal(dialog.previewed, timeout=WAIT_MS):
        dialog.show()
    assert dialog.summary.text() == ("Already merged: main holds every change of draft, so "
                                     "there is nothing to do.")
    assert not dialog.merge_button.isEnabled()
    assert dialog.merge_button.toolTip() == "Already merged: nothing to do"
    assert result(pair[0].facade.run(on_document(doc, lambda docs, d: docs.merge(d, "draft", "main")))) is None  # the library: nothing to do
    assert result(pair[0].facade.run(on_document(doc, lambda docs, d: d.history("main")))) == history


def test_the_pane_merging_a_branch_merged_already_says_so(qtbot, ada_node, window):
    doc_id = open_written(qtbot, window, ada_node, "Plan", "step one\n")
    pane = window.document_pane
    pane.fork("draft")
    qtbot.waitUntil(lambda: pane.branch == "draft" and pane.merge_button.isEnabled(),
                    timeout=WAIT_MS)
    type_into(pane, "step one\nstep two\n")
    qtbot.waitUntil(lambda: doc_text(ada_node, doc_id, "draft") == "step one\nstep two\n",
                    timeout=WAIT_MS)
    pane.merge("draft", "main")
    qtbot.waitUntil(lambda: pane.branch == "main"
                    and pane.editor.toPlainText() == "step one\nstep two\n", timeout=WAIT_MS)
    history = result(ada_node.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: d.history("main"))))
    pane.merge("draft", "main")
    qtbot.waitUntil(lambda: pane.sharing.status.text() == "Already merged: nothing to do",
                    timeout=WAIT_MS)
    assert result(ada_node.facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: d.history("main")))) == history
