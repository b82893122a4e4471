"""Others' cursors in a document (issue #16, presence; ui/doc_presence.py, ui/doc_cursors.py).

The logic first, without a display: how a position crosses from one text to another, and the
book of who is where until when. Then two real Nodes with their windows offscreen: bob's cursor
shows in ada's editor with his name at his place, follows him, and goes when he closes the
document, or when his frames stop coming.
"""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QTextCursor  # noqa: E402

from app.doc_views import document_view  # noqa: E402
from app.documents import on_document  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.doc_cursors import (  # noqa: E402
    Presence,
    PresenceBook,
    common_prefix,
    common_suffix,
    map_position,
)

from .test_documents_pane import open_written  # noqa: E402

SHORT_TTL_S = 0.5  # how long a silent peer's cursor stays in the test (the app's: 5 s)
KEY_A, KEY_B = b"\x0a" * 32, b"\x0b" * 32
DOC, DOC2 = b"\x01" * 32, b"\x02" * 32


# Without a display ----------------------------------------------------------------------------


def test_common_prefix_and_suffix():
    assert common_prefix("", "abc") == 0
    assert common_prefix("hello world", "hello there") == 6
    assert common_prefix("same", "same") == 4
    assert common_suffix("hello world", "brave new world", 100) == 6
    assert common_suffix("aaaa", "aaaa", 2) == 2  # never more than the limit
    long = "x" * 100_000
    assert common_prefix(long + "a" + long, long + "b" + long) == 100_000
    assert common_suffix(long + "a" + long, long + "b" + long, 10**6) == 100_000


def test_a_position_keeps_its_characters_across_a_change():
    old = "héllo 😀 world"
    at_world = old.index("world")
    # Text inserted before it moves it; after it, not.
    assert map_position(old, "¡Hola! " + old, at_world) == at_world + 7
    assert map_position(old, old + " and more", at_world) == at_world
    # Inserted exactly there: it stays before the insertion.
    assert map_position(old, old[:at_world] + "big " + old[at_world:], at_world) == at_world
    # Inside text that is gone: where that text was.
    assert map_position(old, "héllo world", old.index("😀") + 1) == old.index("😀")
    assert map_position("abcdef", "abef", 3) == 2
    # Changes on both sides of it at once, with its own word kept.
    assert map_position("one two three", "zero one 2 three", 4) == 9  # "two" -> "2"
    assert map_position("one two three", "zero one 2 three", 8) == 11  # on "three"
    # Past the end is the end; the same text is the same position.
    assert map_position("abc", "abcd", 99) == 3
    assert map_position("abc", "abc", 2) == 2


def test_a_cursor_in_typing_not_committed_maps_to_where_the_typing_began():
    committed = "hello wor"
    editor = "hello world and more"  # typed on, not committed yet
    assert map_position(editor, committed, len(editor)) == len(committed)
    assert map_position(editor, committed, editor.index("and")) == len(committed)
    # And back: a peer's position in the committed text onto my editor.
    assert map_position(committed, editor, 6) == 6
    assert map_position("# Plan\n\nwork", "# Plan\n\nmore work", 8) == 8
    assert map_position("# Plan\n\nwork", "# Big Plan\n\nwork", 8) == 12


def test_a_large_change_still_maps_positions_outside_it():
    old = "a" * 3000 + "b" * 3000
    new = "c" * 3000 + "d" * 3000  # every codepoint differs: too large to match in detail
    assert map_position(old, new, 10) == 0
    assert map_position("keep " + old + " tail", "keep " + new + " tail",
                        len("keep " + old + " t")) == len("keep " + new + " t")


def presence(key=KEY_B, doc=DOC, branch="main", heads=("h1",), at=0, expires=10.0):
    return Presence(key, doc, branch, tuple(heads), at, at, expires)


def test_the_book_keeps_the_latest_per_person_and_document_until_it_expires_or_they_leave():
    book = PresenceBook()
    assert book.next_expiry() is None and book.expire(100.0) == []
    book.heard(presence(at=1, expires=10.0))
    book.heard(presence(at=2, expires=12.0))  # replaces bob's first in DOC
    book.heard(presence(key=KEY_A, expires=11.0))
    book.heard(presence(doc=DOC2, expires=15.0))
    assert book.get(KEY_B, DOC).at == 2
    assert {p.key for p in book.in_document(DOC)} == {KEY_A, KEY_B}
    assert book.next_expiry() == 11.0

    assert book.expire(10.5) == []  # bob's first expiry was replaced by his second
    assert [p.key for p in book.expire(11.0)] == [KEY_A]
    assert book.next_expiry() == 12.0
    assert book.left(KEY_B, DOC) and not book.left(KEY_B, DOC)
    assert book.in_document(DOC) == [] and book.get(KEY_B, DOC2).doc == DOC2
    assert [p.doc for p in book.expire(20.0)] == [DOC2] and book.next_expiry() is None


def test_a_presence_refers_to_the_same_set_of_heads_in_any_order():
    assert presence(heads=("b", "a")).refers_to(["a", "b"])
    assert not presence(heads=("a",)).refers_to(["a", "b"])
    assert presence(heads=()).refers_to([])


# Two real Nodes, two windows ------------------------------------------------------------------


def utf16(text: str, index: int) -> int:
    return len(text[:index].encode("utf-16-le")) // 2


def put_cursor(editor, anchor: int, position: int | None = None) -> None:
    cursor = editor.textCursor()
    cursor.setPosition(anchor)
    cursor.setPosition(anchor if position is None else position,
                       QTextCursor.MoveMode.KeepAnchor)
    editor.setTextCursor(cursor)


def both_open(qtbot, window, window_b, pair, text: str) -> tuple[str, object, object]:
    """ada writes a document, bob opens it: returns its id and both panes."""
    doc_id = open_written(qtbot, window, pair[0], "Shared plan", text)
    qtbot.waitUntil(lambda: window_b.document_list.count() == 1, timeout=WAIT_MS)
    window_b.open_document(doc_id)
    pane_a, pane_b = window.document_pane, window_b.document_pane
    qtbot.waitUntil(lambda: pane_b.editor.toPlainText() == text, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: pair[1].key in result(pair[0].facade.run(lambda ws: ws.nicknames())), timeout=WAIT_MS)
    return doc_id, pane_a, pane_b


def test_bobs_cursor_shows_with_his_name_follows_him_and_goes_when_he_closes(
        qtbot, window, window_b, pair):
    node_a, node_b = pair
    text = "# Plan\nhéllo 😀 world\nsecond line"
    doc_id, pane_a, pane_b = both_open(qtbot, window, window_b, pair, text)
    cursors = pane_a.presence.overlay
    pane_a.presence.ttl_s = 600.0  # here it goes by bob's `left`, not by time
    bob = node_b.key

    at_world = utf16(text, text.index("world"))
    put_cursor(pane_b.editor, at_world)
    qtbot.waitUntil(lambda: cursors.selection(bob) == (at_world, at_world), timeout=WAIT_MS)
    label = cursors.label(bob)
    qtbot.waitUntil(lambda: label.text() == "bob", timeout=WAIT_MS)
    assert label.isVisible() and label.objectName() == "remoteCursorLabel"
    caret = cursors.caret_rect(bob)
    where = pane_a.editor.cursorRect(_at(pane_a.editor, at_world))  # ada's own caret there
    assert (caret.left(), caret.top(), caret.height()) == (where.left(), where.top(),
                                                            where.height())
    assert label.geometry().left() == caret.left()  # his name sits on his caret
    assert label.geometry().bottom() < caret.top() or label.geometry().top() > caret.bottom()
    assert cursors.colour(bob) != cursors.colour(node_a.key)
    assert node_a.key not in cursors.people()  # ada never sees her own cursor

    # He selects "second": ada sees the selection; he moves on: so does his cursor.
    start = utf16(text, text.index("second"))
    put_cursor(pane_b.editor, start, start + len("second"))
    qtbot.waitUntil(lambda: cursors.selection(bob) == (start, start + 6), timeout=WAIT_MS)
    [tint] = cursors.selection_rects(bob)  # from the word's first letter to its last
    first, after = (pane_a.editor.cursorRect(_at(pane_a.editor, p)) for p in (start, start + 6))
    assert (round(tint.left()), round(tint.right()), tint.top()) == \
        (first.left(), after.left(), first.top())
    put_cursor(pane_b.editor, 2)
    qtbot.waitUntil(lambda: cursors.selection(bob) == (2, 2), timeout=WAIT_MS)

    # Ada types before it (not committed yet): his cursor stays on its character at once.
    edit = QTextCursor(pane_a.editor.document())
    edit.insertText("Our ")
    assert cursors.selection(bob) == (6, 6)
    qtbot.waitUntil(lambda: pane_b.editor.toPlainText() == "Our " + text, timeout=WAIT_MS)

    # He closes it (opens a channel): his cursor and name go, without waiting for time.
    window_b.show_channel("general")
    qtbot.waitUntil(lambda: bob not in cursors.people(), timeout=WAIT_MS)
    assert cursors.label(bob) is None
    assert not [w for w in cursors.findChildren(type(label)) if w.isVisible()]


def test_typing_the_sender_has_not_committed_lands_where_it_began_then_exactly(
        qtbot, window, window_b, pair):
    text = "alpha beta"
    doc_id, pane_a, pane_b = both_open(qtbot, window, window_b, pair, text)
    result(pair[0].facade.run(on_document(bytes.fromhex(doc_id), lambda docs, d: docs.add_editor(d, pair[1].key.hex()))))
    qtbot.waitUntil(lambda: not pane_b.editor.isReadOnly(), timeout=WAIT_MS)
    cursors, bob = pane_a.presence.overlay, pair[1].key

    put_cursor(pane_b.editor, len("alpha "))
    qtbot.keyClicks(pane_b.editor, "new ")  # bob types; committed after his pause
    qtbot.waitUntil(lambda: pane_a.editor.toPlainText() == "alpha new beta", timeout=WAIT_MS)
    # Once his commit is in on both sides, his cursor is after what he typed.
    qtbot.waitUntil(lambda: cursors.selection(bob) == (10, 10), timeout=WAIT_MS)


def test_a_cursor_whose_frames_stop_coming_goes_after_the_time_to_live(
        qtbot, window, pair):
    node_a, node_b = pair
    qtbot.waitUntil(lambda: node_b.key in result(node_a.facade.run(lambda ws: ws.nicknames())), timeout=WAIT_MS)
    doc_id = open_written(qtbot, window, node_a, "Quiet", "some words here")
    pane = window.document_pane
    pane.presence.ttl_s = SHORT_TTL_S
    cursors = pane.presence.overlay
    doc = bytes.fromhex(doc_id)
    qtbot.waitUntil(lambda: _text(node_b, doc) == "some words here", timeout=WAIT_MS)
    heads = result(node_b.facade.run(on_document(doc, lambda docs, d: document_view(docs, d)))).heads
    qtbot.waitUntil(lambda: sorted(pane.seen) == sorted(heads), timeout=WAIT_MS)

    with qtbot.waitSignal(window.bridge.presence, timeout=WAIT_MS):
        node_b.facade.presence(doc, "main", heads, 5, 10)  # once, and never again
    # Shown as it arrived (checked at once: the short time to live may be over by a poll).
    assert cursors.selection(node_b.key) == (5, 10)
    assert cursors.label(node_b.key).text() == "bob"
    qtbot.waitUntil(lambda: node_b.key not in cursors.people(), timeout=WAIT_MS)


def test_another_branch_or_my_own_key_shows_no_cursor(qtbot, window, pair):
    node_a, node_b = pair
    doc_id = open_written(qtbot, window, node_a, "Branches", "text")
    pane = window.document_pane
    qtbot.waitUntil(lambda: pane.committed == "text" and bool(pane.seen), timeout=WAIT_MS)
    doc = bytes.fromhex(doc_id)
    presence = pane.presence
    presence.heard(node_a.key, doc, "main", list(pane.seen), 1, 1)  # me, elsewhere
    presence.heard(node_b.key, doc, "draft", list(pane.seen), 1, 1)  # another branch
    assert presence.overlay.people() == set()
    presence.heard(node_b.key, doc, "main", list(pane.seen), 1, 2)
    assert presence.overlay.selection(node_b.key) == (1, 2)
    presence.heard(node_b.key, doc, "draft", list(pane.seen), 1, 1)  # he switched branch
    assert presence.overlay.people() == set()
    stranger = bytes.fromhex("3f2126de") + bytes(28)
    presence.heard(stranger, doc, "main", list(pane.seen), 0, 0)
    assert presence.overlay.label(stranger).text() == "anonymous ·3f2126"
    presence.heard(stranger, doc, "main", ["ff" * 32], 3, 3)  # other heads: stays put
    assert presence.overlay.selection(stranger) == (0, 0)
    presence.gone(stranger, doc)
    assert presence.overlay.people() == set()


def _at(editor, position: int) -> QTextCursor:
    cursor = QTextCursor(editor.document())
    cursor.setPosition(position)
    return cursor


def _text(node, doc: bytes) -> str | None:
    """The document's text as `node` reads it, None while it cannot."""
    try:
        return result(node.facade.run(on_document(doc, lambda docs, d: d.text(d.heads("main")))))
    except Exception:
        return None


def test_a_name_stays_on_its_caret_as_the_editor_scrolls(qtbot, window, pair):
    node_a, node_b = pair
    text = "\n".join(f"line {n}" for n in range(300))
    doc_id = open_written(qtbot, window, node_a, "Long", text)
    pane = window.document_pane
    qtbot.waitUntil(lambda: pane.committed == text, timeout=WAIT_MS)
    editor, cursors = pane.editor, pane.presence.overlay
    at = text.index("line 150")
    pane.presence.heard(node_b.key, bytes.fromhex(doc_id), "main", list(pane.seen), at, at)
    label = cursors.label(node_b.key)
    assert not label.isVisible()  # far below what shows

    bar = editor.verticalScrollBar()
    for value in (140, 145, 130):  # scrolled so that line 150 shows, by steps
        bar.setValue(value)
        qtbot.waitUntil(lambda: label.isVisible(), timeout=WAIT_MS)
        caret = cursors.caret_rect(node_b.key)
        where = editor.cursorRect(_at(editor, at))  # a caret of the editor's own there
        assert (caret.left(), caret.top()) == (where.left(), where.top())
        assert cursors.geometry() == editor.viewport().rect()
        assert label.geometry().left() == caret.left()
        assert label.geometry().bottom() < caret.top()
    bar.setValue(0)
    qtbot.waitUntil(lambda: not label.isVisible(), timeout=WAIT_MS)
