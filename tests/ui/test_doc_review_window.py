"""Reviewing documents in the window (issue #16) over two real Nodes, offscreen: Merge into main
previews the merge with its conflict and merges the choice made; a version picked in the history
is compared with now; a branch opened again after the other member changed it says so and shows
their change; the comments margin beside the editor shows the other member's comment at its
words. Who changed a branch since I last looked is decided without a display (below)."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402

from app.documents import on_document
from app.records import CommitInfo, DocumentView  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.doc_review_bar import (  # noqa: E402
    LastLooked,
    authors_since,
    changed_by,
    notice_text,
)
from ui.doc_versions import COMPARE_NOW, SHOW_VERSION  # noqa: E402

from .test_doc_comments import line_top  # noqa: E402
from .test_doc_review import shared_roadmap  # noqa: E402
from .test_documents_pane import doc_text, open_written  # noqa: E402

PILCROW = "\N{PILCROW SIGN}"


def click(qtbot, button) -> None:
    """Click `button` as a person would: once it is laid out (a box just shown may give its
    buttons no height until the next layout pass, and a click there lands on nothing)."""
    qtbot.waitUntil(lambda: button.isVisible() and button.height() > 0, timeout=WAIT_MS)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def open_branch(qtbot, window, doc: bytes, branch: str) -> None:
    """Open the document in the window and pick `branch` in the selector, as a person does."""
    pane = window.document_pane
    window.open_document(doc.hex())
    qtbot.waitUntil(lambda: pane.branch_selector.findData(branch) >= 0, timeout=WAIT_MS)
    if branch != pane.branch:
        pane.branch_selector.activated.emit(pane.branch_selector.findData(branch))
    qtbot.waitUntil(lambda: pane.branch == branch and pane.view is not None
                    and pane.view.branch == branch, timeout=WAIT_MS)


def make_editor(qtbot, pair, doc: bytes) -> None:
    """Ada makes bob an editor of `doc`; returns once bob's node knows it."""
    node_a, node_b = pair
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.add_editor(d, node_b.key.hex()))))

    def bob_may_edit() -> bool:
        try:
            return node_b.key in result(node_b.facade.run(on_document(doc, lambda docs, d: sorted(d.editors()))))
        except Exception:  # not arrived yet
            return False

    qtbot.waitUntil(bob_may_edit, timeout=WAIT_MS)


def test_merge_into_main_opens_the_dialog_and_merges_the_choice(qtbot, window, pair):
    node_a = pair[0]
    doc = shared_roadmap(qtbot, pair, "# Roadmap MAIN\n\nQ1: editor\n",
                         "# Roadmap ALT\n\nQ1: editor\nQ2: merges\n",
                         base="# Roadmap\n\nQ1: editor\n")
    pane = window.document_pane
    open_branch(qtbot, window, doc, "alt")
    qtbot.waitUntil(lambda: pane.editor.toPlainText().startswith("# Roadmap ALT")
                    and pane.merge_button.isEnabled(), timeout=WAIT_MS)
    assert pane.merge_dialog is None
    click(qtbot, pane.merge_button)
    dialog = pane.merge_dialog
    assert dialog is not None and dialog.isVisible()
    assert dialog.windowTitle() == "Merge alt into main"
    qtbot.waitUntil(lambda: dialog.preview is not None, timeout=WAIT_MS)
    assert dialog.summary.text().startswith("1 conflict")
    assert not dialog.merge_button.isEnabled()
    assert result(node_a.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == "# Roadmap MAIN\n\nQ1: editor\n"

    dialog.choose(0, "theirs")
    click(qtbot, dialog.merge_button)
    merged = "# Roadmap ALT\n\nQ1: editor\nQ2: merges\n"
    qtbot.waitUntil(lambda: pane.branch == "main" and pane.editor.toPlainText() == merged,
                    timeout=WAIT_MS)
    assert not dialog.isVisible()
    assert pane.branch_selector.currentData() == "main"
    assert pane.changed_notice.isHidden()  # main moved by my merge: nothing to tell me
    assert result(node_a.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == merged


def test_merge_takes_in_typing_not_committed_yet(qtbot, window, ada_node):
    doc_id = open_written(qtbot, window, ada_node, "Plan", "step one\n")
    pane = window.document_pane
    pane.fork("draft")
    qtbot.waitUntil(lambda: pane.branch == "draft" and pane.merge_button.isEnabled(),
                    timeout=WAIT_MS)
    pane.editor.setPlainText("step one\nstep two\n")  # typed; the pause has not passed
    click(qtbot, pane.merge_button)
    dialog = pane.merge_dialog
    qtbot.waitUntil(lambda: dialog.preview is not None
                    and dialog.result.toPlainText() == "step one\nstep two\n", timeout=WAIT_MS)
    assert dialog.summary.text().startswith("No conflicts")
    click(qtbot, dialog.merge_button)
    qtbot.waitUntil(lambda: pane.branch == "main"
                    and pane.editor.toPlainText() == "step one\nstep two\n", timeout=WAIT_MS)
    assert doc_text(ada_node, doc_id) == "step one\nstep two\n"


A, B, C = "The plan for the spring release\n", "ship it on Friday\n", "documents with branches\n"
D, E, Z = "comments in the margin\n", "presence\n", "Draft\n"


def test_a_version_compared_with_now(qtbot, window, pair):
    node_a, node_b = pair
    ada, bob = node_a.key.hex(), node_b.key.hex()
    doc_id = open_written(qtbot, window, node_a, "Steps", A + B + C)
    doc = bytes.fromhex(doc_id)
    pane = window.document_pane
    pane.editor.setPlainText(A + C + D)
    pane.commit_now()
    qtbot.waitUntil(lambda: pane.history.count() == 2, timeout=WAIT_MS)

    # The older version, picked in the history, reads as it did; compared with now, what was
    # removed since is struck through and what was added highlighted, both mine.
    pane.history.setCurrentRow(1)
    pane.history.itemClicked.emit(pane.history.item(1))
    compared = pane.history.item(1).data(Qt.ItemDataRole.UserRole)
    versions = pane.versions
    qtbot.waitUntil(lambda: versions.isVisible()
                    and pane.version.toPlainText() == A + B + C, timeout=WAIT_MS)
    assert versions.compare_button.text() == COMPARE_NOW
    pane.editor.setPlainText(A + C + D + E)  # typed, not committed yet
    with qtbot.waitSignal(versions.diff.shown, timeout=WAIT_MS):
        click(qtbot, versions.compare_button)
    # My typing goes in first; if the diff was read before the history showed it, it is read
    # again ("Comparing…" meanwhile) and then shows it.
    expected = [
        ("=", A, ""), ("-", B.replace("\n", PILCROW), ada), ("=", C, ""), ("+", D + E, ada)]
    qtbot.waitUntil(lambda: versions.diff.heading.text() == "What changed from it to now"
                    and versions.diff.changes() == expected, timeout=WAIT_MS)
    assert versions.diff.isVisible() and not pane.version.isVisible()
    assert versions.caption.text().startswith("The version of ")
    assert doc_text(node_a, doc_id) == A + C + D + E  # my typing went in first
    # The version compared stays picked, wherever my typing's commit puts its row.
    assert pane.history.currentItem().data(Qt.ItemDataRole.UserRole) == compared

    # Now moves on with the branch: bob's edit shows in the diff, in his name.
    make_editor(qtbot, pair, doc)
    qtbot.waitUntil(lambda: _reads(node_b, doc, A + C + D + E), timeout=WAIT_MS)  # or his is concurrent
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.write(d, Z + A + C + D + E))))
    qtbot.waitUntil(lambda: ("+", Z, bob) in versions.diff.changes(), timeout=WAIT_MS)
    assert "bob" in versions.diff.legend.text() and "ada" in versions.diff.legend.text()

    # Back to the version's text.
    assert versions.compare_button.text() == SHOW_VERSION
    click(qtbot, versions.compare_button)
    qtbot.waitUntil(lambda: pane.version.isVisible(), timeout=WAIT_MS)
    assert pane.version.toPlainText() == A + B + C
    assert versions.compare_button.text() == COMPARE_NOW


def test_changed_since_you_last_looked(qtbot, window, pair):
    node_a, node_b = pair
    text = "# Plan\n\nship on Friday\n"
    doc_id = open_written(qtbot, window, node_a, "Plan", text)
    doc = bytes.fromhex(doc_id)
    pane, notice = window.document_pane, window.document_pane.changed_notice
    make_editor(qtbot, pair, doc)
    qtbot.waitUntil(lambda: pane.history.count() >= 1, timeout=WAIT_MS)

    # Opened again with only my own change (from elsewhere): nothing to say.
    window.show_channel("general")
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, text + "with notes\n"))))
    window.open_document(doc_id)
    qtbot.waitUntil(lambda: pane.editor.toPlainText() == text + "with notes\n", timeout=WAIT_MS)
    assert notice.isHidden()

    # Bob changes it while I look at a channel: opening it again says so.
    window.show_channel("general")
    changed = "# Plan\n\nship on Monday\nwith notes\n"
    qtbot.waitUntil(lambda: _reads(node_b, doc, text + "with notes\n"), timeout=WAIT_MS)
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.write(d, changed))))
    qtbot.waitUntil(lambda: doc_text(node_a, doc_id) == changed, timeout=WAIT_MS)
    window.open_document(doc_id)
    qtbot.waitUntil(lambda: notice.isVisible(), timeout=WAIT_MS)
    assert notice.texts() == ["Changed by bob since you last looked", "·", "Show changes"]
    assert pane.editor.toPlainText() == changed
    assert not pane.versions.isVisible()

    with qtbot.waitSignal(pane.versions.diff.shown, timeout=WAIT_MS):
        click(qtbot, notice.show_button)
    assert notice.isHidden() and pane.versions.diff.isVisible()
    diff = pane.versions.diff
    assert diff.heading.text() == "What changed on main since you last looked"
    bob = node_b.key.hex()
    assert [c for c in diff.changes() if c[0] != "="] == [("-", "Fri", bob), ("+", "Mon", bob)]
    assert "".join(t for op, t, _ in diff.changes() if op != "-") == changed

    # Once looked at, opening it again says nothing.
    window.show_channel("general")
    with qtbot.waitSignal(pane.changed, timeout=WAIT_MS):
        window.open_document(doc_id)
    assert notice.isHidden()


def test_the_comments_margin_shows_the_other_members_comment_at_its_words(
        qtbot, window, pair):
    node_a, node_b = pair
    lines = [f"line {n} of the plan" for n in range(10)]
    text = "\n".join([*lines[:6], "ship the brave words here", *lines[6:]])
    doc_id = open_written(qtbot, window, node_a, "Plan", text)
    doc = bytes.fromhex(doc_id)
    pane = window.document_pane
    margin = pane.comments
    qtbot.waitUntil(lambda: margin.notice.text().startswith("No comments yet"), timeout=WAIT_MS)
    assert margin.isVisible()
    # Beside the editor, at its right.
    editor_right = pane.editor.mapTo(pane, pane.editor.rect().topRight()).x()
    assert margin.mapTo(pane, margin.rect().topLeft()).x() > editor_right

    make_editor(qtbot, pair, doc)
    qtbot.waitUntil(lambda: _reads(node_b, doc, text), timeout=WAIT_MS)
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.comment(d, "brave words", "Which words, exactly?"))))
    qtbot.waitUntil(lambda: len(margin.comment_cards()) == 1, timeout=WAIT_MS)
    [card] = margin.comment_cards()
    assert card.texts() == ["“brave words”", "bob", "Which words, exactly?"]
    start = text.index("brave words")
    qtbot.waitUntil(lambda: card.geometry().top() == line_top(margin, start) > 0,
                    timeout=WAIT_MS)
    assert line_top(margin, start) > line_top(margin, 0)


def test_a_branch_i_cannot_read_shows_no_comments(qtbot, window_b, pair):
    node_a = pair[0]
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Secret", private=True).id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "for editors only"))))
    qtbot.waitUntil(lambda: window_b.document_list.count() == 1, timeout=WAIT_MS)
    window_b.open_document(doc.hex())
    pane = window_b.document_pane
    qtbot.waitUntil(lambda: pane.view is not None and pane.locked.isVisible(), timeout=WAIT_MS)
    assert not pane.comments.isVisible()


def _reads(node, doc: bytes, text: str) -> bool:
    try:
        return result(node.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main"))))) == text
    except Exception:  # not arrived yet
        return False


# Who changed a branch since I last looked, without a display -----------------------------------

ADA, BOB, CAROL, DAN = (bytes([n]) * 32 for n in range(1, 5))


def commit(id_: str, author: bytes, *parents: str) -> CommitInfo:
    return CommitInfo(id_, "b", tuple(parents), author, 0, "edit")


HISTORY = [commit("1", ADA), commit("2", BOB, "1"), commit("3", ADA, "1"),
           commit("4", CAROL, "2", "3")]


def view(heads: list[str], history=HISTORY) -> DocumentView:
    return DocumentView("d", "Plan", "main", [], heads, "", list(history), {},
                        names={ADA: "ada", BOB: "bob", CAROL: "carol", DAN: "dan"})


def test_authors_since_follow_the_parents() -> None:
    assert authors_since(HISTORY, ["4"]) == []
    assert authors_since(HISTORY, ["3"]) == [BOB, CAROL]  # 1 and 3 were held
    assert authors_since(HISTORY, ["2", "3"]) == [CAROL]
    assert authors_since(HISTORY, ["1"]) == [BOB, ADA, CAROL]
    assert authors_since(HISTORY, ["gone"]) == [ADA, BOB, CAROL]  # nothing known was held


def test_what_the_notice_says() -> None:
    assert changed_by(["bob"]) == "Changed by bob since you last looked"
    assert changed_by(["bob", "carol"]) == "Changed by bob and carol since you last looked"
    assert changed_by(["bob", "carol", "dan"]) == \
        "Changed by bob, carol and dan since you last looked"
    assert changed_by(["bob", "carol", "dan", "eve"]) == \
        "Changed by bob, carol and 2 others since you last looked"
    assert notice_text(view(["4"]), ["4"], ADA) is None  # nothing new
    assert notice_text(view(["4"]), ["2", "3"], ADA) == "Changed by carol since you last looked"
    assert notice_text(view(["4"]), ["1"], ADA) == \
        "Changed by bob and carol since you last looked"  # not by me
    mine = [*HISTORY, commit("5", ADA, "4")]
    assert notice_text(view(["5"], mine), ["4"], ADA) is None  # only I changed it


def test_last_looked_is_per_document_and_branch() -> None:
    looked = LastLooked()
    looked.saw(b"d", "main", ["1"])
    looked.saw(b"d", "alt", [])  # an empty branch: nothing to compare with later
    looked.saw(b"e", "main", ["9"])
    assert looked.heads(b"d", "main") == ("1",)
    assert looked.heads(b"d", "alt") is None and looked.heads(b"e", "main") == ("9",)
    looked.saw(b"d", "main", ["2", "3"])
    assert looked.heads(b"d", "main") == ("2", "3")
