"""The comments margin (ui/doc_comments.py) over real Nodes, offscreen: a comment made on the
words selected in the editor shows level with them, the other member's reply arrives in it,
it follows its words when text is typed above them, Resolve hides it, and once its words are
deleted it is listed "On deleted text". The margin stands beside a plain editor here, wired as
the document pane wires it (show_branch, and reload when objects arrive); the decisions it
makes without Qt (follow, stack, cards) are tested without a display below."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QTextCursor  # noqa: E402
from PySide6.QtWidgets import QHBoxLayout, QPlainTextEdit, QWidget  # noqa: E402

from app.doc_views import comments_view  # noqa: E402
from app.documents import on_document  # noqa: E402
from app.records import CommentInfo, CommentReply, CommentsView  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.doc_comments import (  # noqa: E402
    DETACHED,
    EMPTY,
    SELECT_FIRST,
    CommentMargin,
    cards,
    carried,
    follow,
    shown_quote,
    stack,
)

WORDS = "the brave 😀 words"
LINES = [f"line {n} of the plan" for n in range(12)]
TEXT = "\n".join([*LINES[:8], f"about {WORDS} here", *LINES[8:]])


def utf16(text: str, position: int) -> int:
    return len(text[:position].encode("utf-16-le")) // 2


@pytest.fixture
def margin(qtbot, pair):
    """ada's margin beside an editor, wired as the document pane wires it."""
    bridge = NodeBridge(pair[0])
    host = QWidget()
    editor = QPlainTextEdit()
    view = CommentMargin(bridge, editor)
    row = QHBoxLayout(host)
    row.addWidget(editor, 3)
    row.addWidget(view, 1)
    bridge.changed.connect(lambda _: view.reload())
    host.resize(1000, 700)
    qtbot.addWidget(host)
    host.show()
    yield view
    bridge.close()


def select(editor: QPlainTextEdit, start: int, end: int) -> None:
    text = editor.toPlainText()
    cursor = QTextCursor(editor.document())
    cursor.setPosition(utf16(text, start))
    cursor.setPosition(utf16(text, end), QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)


def line_top(margin: CommentMargin, position: int) -> int:
    """Where the line holding codepoint `position` of the editor's text is, in the margin's
    canvas (what a card beside it lines up with)."""
    editor = margin.editor
    cursor = QTextCursor(editor.document())
    cursor.setPosition(utf16(editor.toPlainText(), position))
    top = editor.cursorRect(cursor).top()
    return margin.canvas.mapFromGlobal(editor.viewport().mapToGlobal(QPoint(0, top))).y()


def shown(margin: CommentMargin) -> list[list[str]]:
    return [card.texts() for card in margin.comment_cards()]


def test_comments_in_the_margin(qtbot, margin, pair) -> None:
    node_a, node_b = pair
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Plan").id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, TEXT))))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.add_editor(d, node_b.key.hex()))))
    margin.editor.setPlainText(TEXT)  # what the pane shows
    with qtbot.waitSignal(margin.changed, timeout=WAIT_MS):
        margin.show_branch(doc)
    assert margin.comment_cards() == [] and margin.notice.text() == EMPTY

    # Comment… with nothing selected says what to do; with the words selected it comments.
    qtbot.mouseClick(margin.add_button, Qt.MouseButton.LeftButton)
    assert margin.notice.text() == SELECT_FIRST and not margin.composer.isVisible()
    start = TEXT.index(WORDS)
    select(margin.editor, start, start + len(WORDS))
    qtbot.mouseClick(margin.add_button, Qt.MouseButton.LeftButton)
    assert margin.composer.isVisible()
    assert margin.composer_quote.text() == f"“{WORDS}”"
    margin.composer_body.setPlainText("Is this right?")
    qtbot.mouseClick(margin.post_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(margin.comment_cards()) == 1, timeout=WAIT_MS)
    assert not margin.composer.isVisible()
    [card] = margin.comment_cards()
    assert card.texts() == [f"“{WORDS}”", "ada", "Is this right?"]
    assert margin.count.text() == "1 open"
    # Level with its words (once the margin is laid out without the composer).
    qtbot.waitUntil(lambda: card.geometry().top() == line_top(margin, start) > 0,
                    timeout=WAIT_MS)
    [stored] = result(node_a.facade.run(on_document(doc, lambda docs, d: comments_view(docs, d)))).comments
    assert TEXT[stored.start:stored.end] == WORDS

    # Bob, the other member, replies; the reply arrives in the card.
    def bob_reads_it() -> bool:
        try:
            view = result(node_b.facade.run(on_document(doc, lambda docs, d: comments_view(docs, d))))
            text = result(node_b.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main")))))
            return len(view.comments) == 1 and text == TEXT  # else his write below is concurrent
        except Exception:
            return False
    qtbot.waitUntil(bob_reads_it, timeout=WAIT_MS)
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.reply(d, stored.id, "Yes, it is"))))
    qtbot.waitUntil(lambda: "Yes, it is" in shown(margin)[0], timeout=WAIT_MS)
    assert shown(margin)[0][3].startswith("bob · ")

    # Bob types lines above the words: once the editor shows them, the card is level with
    # the words' new line (before the margin has read the comments again, and after).
    moved = "new first line\nand another 😀\n" + TEXT
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.write(d, moved))))
    margin.editor.setPlainText(moved)  # the pane steps the editor to the remote commits
    qtbot.waitUntil(lambda: card.geometry().top() == line_top(margin, moved.index(WORDS)),
                    timeout=WAIT_MS)
    assert line_top(margin, moved.index(WORDS)) > line_top(margin, 0)
    qtbot.waitUntil(lambda: margin.view is not None and margin.view.text == moved,
                    timeout=WAIT_MS)
    assert card.geometry().top() == line_top(margin, moved.index(WORDS))

    # Clicking the card selects its words in the editor.
    qtbot.mouseClick(card, Qt.MouseButton.LeftButton, pos=QPoint(5, 5))
    assert margin.editor.textCursor().selectedText() == WORDS
    # The card is marked while the editor's cursor is in its words.
    select(margin.editor, moved.index(WORDS) + 2, moved.index(WORDS) + 2)
    assert card.property("current") is True
    select(margin.editor, 0, 0)
    assert card.property("current") is False

    # Resolve hides it unless resolved comments are shown.
    qtbot.mouseClick(card.resolve_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: margin.comment_cards() == [], timeout=WAIT_MS)
    assert margin.count.text() == "0 open, 1 resolved"
    margin.show_resolved.setChecked(True)
    [card] = margin.comment_cards()
    assert card.texts()[-1] == "Resolved by ada" and not card.resolve_button.isVisible()

    # Once its words are deleted, it is listed below, on deleted text.
    gone = moved.replace(WORDS, "")
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, gone))))
    margin.editor.setPlainText(gone)
    qtbot.waitUntil(lambda: margin.detached_box.isVisible(), timeout=WAIT_MS)
    assert card.parent() is margin.detached_box
    assert margin.detached_box.findChild(type(margin.notice), "detachedHeading").text() == DETACHED
    assert shown(margin)[0][0] == f"“{WORDS}”"


def test_a_comment_on_typing_not_saved_yet_waits(qtbot, margin, pair) -> None:
    doc = bytes.fromhex(result(pair[0].facade.run(lambda ws: ws.documents.new("Draft").id)))
    result(pair[0].facade.run(on_document(doc, lambda docs, d: docs.write(d, "saved text"))))
    margin.editor.setPlainText("saved text")
    with qtbot.waitSignal(margin.changed, timeout=WAIT_MS):
        margin.show_branch(doc)
    margin.editor.setPlainText("saved text, and typed")  # not committed yet
    select(margin.editor, len("saved text, "), len("saved text, and typed"))
    qtbot.mouseClick(margin.add_button, Qt.MouseButton.LeftButton)
    margin.composer_body.setPlainText("on unsaved words")
    qtbot.mouseClick(margin.post_button, Qt.MouseButton.LeftButton)
    assert "not saved yet" in margin.notice.text()
    # Words that are saved can be commented on while others are being typed.
    select(margin.editor, 0, len("saved"))
    qtbot.mouseClick(margin.add_button, Qt.MouseButton.LeftButton)
    margin.composer_body.setPlainText("on saved words")
    qtbot.mouseClick(margin.post_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: len(margin.comment_cards()) == 1, timeout=WAIT_MS)
    [stored] = result(pair[0].facade.run(on_document(doc, lambda docs, d: comments_view(docs, d)))).comments
    assert (stored.start, stored.end, stored.text) == (0, 5, "on saved words")


# Without a display ------------------------------------------------------------------------------

@pytest.mark.parametrize(("position", "after", "expected"), [
    (5, True, 8),  # "abc" inserted at 2 moves it on
    (2, True, 5),  # inserted exactly at a start: the start moves on
    (2, False, 2),  # exactly at an end: the end stays
    (1, True, 1),  # before the edit: unchanged
])
def test_follow_an_insertion(position: int, after: bool, expected: int) -> None:
    assert follow(position, [(2, 0, "abc")], after=after) == expected


def test_follow_deletions_and_carried_ranges() -> None:
    assert follow(6, [(2, 3, "")], after=True) == 3
    assert follow(3, [(2, 3, "")], after=True) == 2  # in deleted text: where it was
    assert carried("one two four", "one four", 4, 7) == (4, 4)  # its words are gone
    assert carried("a😀b word", "xx a😀b word", 4, 8) == (7, 11)
    assert carried("same", "same", 1, 3) == (1, 3)


def test_stack_keeps_cards_apart_in_order() -> None:
    assert stack([0, 100], [40, 40], gap=6) == [0, 100]
    assert stack([0, 10, 12], [40, 40, 40], gap=6) == [0, 46, 92]
    assert stack([], []) == []


def test_cards_name_people_and_offer_resolve_to_authors_and_editors() -> None:
    ada, bob, eve = b"a" * 32, b"b" * 32, b"e" * 32
    mine = CommentInfo("1" * 64, "f" * 64, ada, 0, "mine", "x " * 60, 0, 3,
                       (CommentReply("2" * 64, bob, 0, "ok"),))
    bobs = CommentInfo("3" * 64, "f" * 64, bob, 0, "bob's", "y", 4, 5, resolved=True,
                       resolved_by=ada)
    view = CommentsView("main", [], "", [mine, bobs], {ada: "ada", bob: "bob"}, (ada,))
    as_ada = cards(view, ada)
    assert [(c.name, c.can_resolve, c.resolved) for c in as_ada] == [
        ("ada", True, ""), ("bob", False, "Resolved by ada")]
    assert as_ada[0].quote == shown_quote("x " * 60) and as_ada[0].quote.endswith("…”")
    assert [r[1] for r in as_ada[0].replies] == ["bob"]
    assert [c.can_resolve for c in cards(view, bob)] == [False, False]  # resolved already
    assert [c.can_resolve for c in cards(view, eve)] == [False, False]
    assert cards(view, eve)[0].name == "ada"
