"""The conversation in message rows, offscreen (pytest-qt, real Nodes): reaction chips and who
reacted, reply counts and "replied to a thread", "(edited)" and the versions dialog, mentions,
the context menu for mine, others' and an admin's, and rows that update in place. The Qt-free
words (ui/_rows.py) are checked without a display."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QEvent, QPoint, Qt  # noqa: E402
from PySide6.QtGui import QHelpEvent, QPalette  # noqa: E402
from PySide6.QtWidgets import QApplication, QMessageBox, QToolTip  # noqa: E402

from app.records import MessageVersion, Reaction  # noqa: E402
from tests.support import node_post  # noqa: E402
from tests.ui.support import BOB, WAIT_MS, message, result, texts  # noqa: E402
from tests.ui.test_message_markdown import painted, rgb  # noqa: E402
from tests.ui.test_message_view import menu_texts  # noqa: E402
from ui._rows import MentionFinder, join_names, reaction_tooltip, replies_label  # noqa: E402
from ui.message_versions import MessageVersionsDialog  # noqa: E402
from ui.models import (  # noqa: E402
    CONTENT_ROLES,
    EditedRole,
    MentionsMeRole,
    MentionsRole,
    ReactionsRole,
    RepliesRole,
    ThreadRole,
)

CY = b"\xc1" * 32

# Words, without Qt -------------------------------------------------------------------------------


def test_reaction_tooltips_name_who_reacted_me_first():
    me = b"\xad" * 32
    names = {BOB: "bob", CY: "cy", me: "ada"}
    assert reaction_tooltip(Reaction("👍", (BOB,)), names, me) == \
        "bob reacted with :thumbs_up:"
    assert reaction_tooltip(Reaction("👍", (BOB, me)), names, me) == \
        "You and bob reacted with :thumbs_up:"
    others = tuple(bytes([n]) * 32 for n in range(3))
    assert reaction_tooltip(Reaction("🎉", (BOB, CY, me, *others)), names, me) == \
        "You, bob and 4 others reacted with :party_popper:"
    stranger = b"\x3f\x2a\x9c" + bytes(29)
    assert reaction_tooltip(Reaction("ok", (stranger,)), names, me) == \
        "anonymous ·3f2a9c reacted with ok"  # no emoji: named as it is


def test_names_and_reply_counts_read_as_sentences():
    assert [join_names(["a", "b", "c", "d", "e"][:n]) for n in range(6)] == \
        ["", "a", "a and b", "a, b and c", "a, b and 2 others", "a, b and 3 others"]
    assert [replies_label(n) for n in (1, 2, 12)] == ["1 reply", "2 replies", "12 replies"]


def test_mentions_are_members_nicknames_after_an_at_and_mine_anywhere():
    finder = MentionFinder(["ada", "ada lovelace", "bob", "Élise"], me="ada")
    text = "hi @ada lovelace and @Bob, ada: look; adam, @bobby, a@bob.org, @élise! @zed"
    found = [(text[m.start:m.end], m.me) for m in finder.find(text)]
    assert found == [("@ada lovelace", False), ("@Bob", False), ("ada", True), ("@élise", False)]
    again = "@ada, again"
    assert [(again[m.start:m.end], m.me) for m in finder.find(again)] == [("@ada", True)]
    assert finder.find("* ada waves at @bob", skip=6)[0].start == 15  # a /me row's own name
    assert MentionFinder(["ada"]).find("ada is here") == []  # without me: only "@" counts


# Reaction chips ----------------------------------------------------------------------------------

def tooltip_at(view, pos: QPoint) -> str:
    QToolTip.hideText()
    event = QHelpEvent(QEvent.Type.ToolTip, pos, view.viewport().mapToGlobal(pos))
    QApplication.sendEvent(view.viewport(), event)
    return QToolTip.text()


def test_reaction_chips_show_counts_mine_highlighted_and_who_reacted(qtbot, board):
    me = board.model.me
    board.model.set_nicknames({me: "ada", BOB: "bob", CY: "cy"})
    reactions = (Reaction("👍", (BOB, me)), Reaction("🎉", (CY,)))
    plain, reacted = board.show([message("nobody reacted", 0),
                                 message("lunch?", 1, reactions=reactions)])
    assert plain.data(ReactionsRole) == [] and board.view.delegate.parts(plain).chips == ()
    chips = reacted.data(ReactionsRole)
    assert [(c.label, c.mine) for c in chips] == [("👍 2", True), ("🎉 1", False)]
    assert [c.tooltip for c in chips] == ["You and bob reacted with :thumbs_up:",
                                          "cy reacted with :party_popper:"]
    parts = board.view.delegate.parts(reacted)
    assert [emoji for _, emoji in parts.chips] == ["👍", "🎉", None]  # then "+"
    assert all(parts.row.contains(rect) for rect, _ in parts.chips)
    assert all(rect.top() > parts.body.bottom() for rect, _ in parts.chips)
    below = parts.row.bottom() - parts.body.bottom()
    assert below > board.view.delegate.parts(plain).row.bottom() - \
        board.view.delegate.parts(plain).body.bottom()
    # What a pointer resting on a chip reads, though no font here draws the emoji.
    assert tooltip_at(board.view, parts.chips[0][0].center()) == \
        "You and bob reacted with :thumbs_up:"
    assert tooltip_at(board.view, parts.chips[1][0].center()) == \
        "cy reacted with :party_popper:"
    assert tooltip_at(board.view, parts.chips[2][0].center()) == "Add a reaction"
    # Mine is drawn in the Highlight colour; the other is not.
    image = board.image()
    highlight = painted(board.view, QPalette.ColorRole.Highlight)

    def edge(rect) -> tuple[int, int, int]:
        return rgb(image.pixelColor(rect.center().x(), rect.top()))

    def distance(a, b) -> int:
        return sum(abs(x - y) for x, y in zip(a, b, strict=True))

    mine, other = parts.chips[0][0], parts.chips[1][0]
    assert distance(edge(mine), highlight) < 40 < distance(edge(other), highlight)


def test_clicking_a_chip_toggles_it_and_plus_asks_for_an_emoji(qtbot, board):
    (index,) = board.show([message("react to me", reactions=(Reaction("🎉", (CY,)),))])
    view = board.view
    parts = view.delegate.parts(index)
    with qtbot.waitSignal(view.reactionToggled, timeout=WAIT_MS) as toggled:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         pos=parts.chips[0][0].center())
    assert toggled.args == [bytes([1]) * 32, "🎉"]
    add = parts.chips[1][0]
    with qtbot.waitSignal(view.reactRequested, timeout=WAIT_MS) as asked:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=add.center())
    message_id, where = asked.args
    assert message_id == bytes([1]) * 32
    assert where == view.viewport().mapToGlobal(add.bottomLeft())  # the picker opens below
    with qtbot.waitSignal(view.reactRequested, timeout=WAIT_MS) as from_menu:
        action = next(a for a in view.context_menu(index).actions()
                      if a.text() == "Add reaction…")
        action.trigger()
    assert from_menu.args[0] == message_id


def test_a_reaction_made_on_one_computer_shows_as_a_chip_on_the_other(
        qtbot, window, pair):
    node_a, node_b = pair
    node_post(node_a, "general", "who is in for lunch?")
    qtbot.waitUntil(lambda: "who is in for lunch?" in [
        m.text for m in result(node_b.facade.run(lambda ws: ws.read("general")))], timeout=WAIT_MS)
    posted = next(m for m in result(node_b.facade.run(lambda ws: ws.read("general")))
                  if m.text == "who is in for lunch?")
    result(node_b.facade.run(lambda ws: ws.conversation.react(posted.id, "👍").id))
    model = window.messages
    model.set_nicknames(result(node_a.facade.run(lambda ws: ws.nicknames())))  # what the window does

    def chips():
        row = model.row_of(posted.id)
        return model.index(row).data(ReactionsRole) if row is not None else []

    qtbot.waitUntil(lambda: [c.label for c in chips()] == ["👍 1"], timeout=WAIT_MS)
    assert chips()[0].tooltip == "bob reacted with :thumbs_up:" and not chips()[0].mine
    parts = window.message_view.delegate.parts(model.index(model.row_of(posted.id)))
    assert [emoji for _, emoji in parts.chips] == ["👍", None]


# Replies and threads -------------------------------------------------------------------------

def test_reply_counts_and_replied_to_a_thread_open_the_thread(qtbot, board):
    root, one, reply = board.show([
        message("where do we meet?", 0, replies=3),
        message("another question", 1, replies=1),
        message("at the station", 2, reply_to=bytes([1]) * 32, in_channel=True)])
    view, delegate = board.view, board.view.delegate
    assert [i.data(RepliesRole) for i in (root, one, reply)] == ["3 replies", "1 reply", None]
    assert reply.data(ThreadRole) == bytes([1]) * 32
    parts = delegate.parts(root)
    assert parts.replies is not None and parts.thread is None
    assert parts.replies.top() > parts.body.bottom() and parts.row.contains(parts.replies)
    with qtbot.waitSignal(view.threadRequested, timeout=WAIT_MS) as opened:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=parts.replies.center())
    assert opened.args == [bytes([1]) * 32]
    broadcast = delegate.parts(reply)
    assert broadcast.replies is None and broadcast.thread is not None
    assert broadcast.thread.bottom() < broadcast.body.top()  # a line above the reply's text
    with qtbot.waitSignal(view.threadRequested, timeout=WAIT_MS) as opened:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         pos=broadcast.thread.center())
    assert opened.args == [bytes([1]) * 32]  # the thread it belongs to
    with qtbot.waitSignal(view.replyRequested, timeout=WAIT_MS) as replying:
        next(a for a in view.context_menu(reply).actions()
             if a.text() == "Reply in thread").trigger()
    assert replying.args == [bytes([1]) * 32]
    # A thread's own list shows neither.
    tall = view.visualRect(root).height()
    view.show_reply_counts = False
    qtbot.waitUntil(lambda: view.visualRect(root).height() < tall, timeout=WAIT_MS)
    assert delegate.parts(root).replies is None and delegate.parts(reply).thread is None
    assert "Reply in thread" not in menu_texts(view.context_menu(root))


# Edits -------------------------------------------------------------------------------------------

def test_edited_shows_after_the_text_and_opens_the_versions(qtbot, board):
    plain, edited = board.show([message("as first written", 0),
                                message("changed *since*", 1, edited=True)])
    view, delegate = board.view, board.view.delegate
    assert not plain.data(EditedRole) and edited.data(EditedRole)
    assert delegate.parts(plain).edited is None
    parts = delegate.parts(edited)
    lines = delegate.line_rects(edited)
    assert parts.edited.left() > lines[-1].right()  # after the text, on its line
    assert lines[-1].top() <= parts.edited.top() and parts.edited.bottom() <= lines[-1].bottom()
    image = board.image()
    base = painted(view, QPalette.ColorRole.Base)
    inked = [rgb(image.pixelColor(x, y)) for x in range(parts.edited.left(), parts.edited.right())
             for y in range(parts.edited.top(), parts.edited.bottom())]
    assert any(pixel != base for pixel in inked)
    text = painted(view, QPalette.ColorRole.Text)
    assert text not in inked  # muted: drawn in PlaceholderText, not Text
    assert "(edited)" in edited.data()  # read aloud too
    assert tooltip_at(view, parts.edited.center()) == "Edited: click to see earlier versions"
    with qtbot.waitSignal(view.versionsRequested, timeout=WAIT_MS) as asked:
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=parts.edited.center())
    assert asked.args == [bytes([2]) * 32]
    assert "Show earlier versions" not in menu_texts(view.context_menu(plain))
    with qtbot.waitSignal(view.versionsRequested, timeout=WAIT_MS) as asked:
        next(a for a in view.context_menu(edited).actions()
             if a.text() == "Show earlier versions").trigger()
    assert asked.args == [bytes([2]) * 32]


def test_an_edit_updates_its_row_in_place_and_the_versions_dialog_lists_both(qtbot, board):
    (index,) = board.post("teh first version")
    model, view = board.model, board.view
    posted = model.messages[index.row()]
    resets: list[bool] = []
    changes: list[list[int]] = []
    model.modelReset.connect(lambda: resets.append(True))
    model.dataChanged.connect(lambda top, bottom, roles: changes.append(list(roles)))
    with qtbot.waitSignal(view.editRequested, timeout=WAIT_MS) as editing:
        next(a for a in view.context_menu(index).actions() if a.text() == "Edit").trigger()
    assert editing.args[0] == posted
    result(board.node.facade.run(lambda ws: ws.conversation.edit(posted.id, "the **second** version").id))
    model.reload()
    qtbot.waitUntil(lambda: model.messages[index.row()].edited, timeout=WAIT_MS)
    assert resets == [] and CONTENT_ROLES in changes
    assert view.delegate.shown_text(index) == "the second version"
    qtbot.waitUntil(lambda: view.delegate.parts(index).edited is not None, timeout=WAIT_MS)
    versions = result(board.node.facade.run(lambda ws: ws.conversation.versions(posted.id)))
    dialog = MessageVersionsDialog(list(reversed(versions)), view)
    qtbot.addWidget(dialog)
    dialog.show()
    shown = dialog.entries()
    assert [(text, current) for _, text, current in shown] == \
        [("teh first version", False), ("the **second** version", True)]
    assert shown[1][0].endswith("current") and not shown[0][0].endswith("current")


def test_the_versions_dialog_shows_texts_as_typed_oldest_first():
    app = QApplication.instance() or QApplication([])
    assert app is not None
    dialog = MessageVersionsDialog([MessageVersion(3_000, "<b>third</b>"),
                                    MessageVersion(1_000, "first"),
                                    MessageVersion(2_000, "second")])
    entries = dialog.entries()
    assert [text for _, text, _ in entries] == ["first", "second", "<b>third</b>"]
    assert [current for _, _, current in entries] == [False, False, True]
    dialog.deleteLater()


# Menu and deleting -----------------------------------------------------------------------------

def test_the_menu_offers_what_i_may_do(qtbot, board):
    me = board.model.me
    mine, theirs, edited = board.show([message("mine", 0, author=me),
                                       message("theirs", 1),
                                       message("theirs, edited", 2, edited=True)])
    view = board.view
    assert menu_texts(view.context_menu(mine)) == \
        ["Copy text", "Reply in thread", "Add reaction…", "Edit", "Delete"]
    assert menu_texts(view.context_menu(theirs)) == \
        ["Copy text", "Reply in thread", "Add reaction…"]
    view.set_admin(True)
    assert menu_texts(view.context_menu(edited)) == \
        ["Copy text", "Reply in thread", "Add reaction…", "Show earlier versions", "Delete"]


def test_an_admin_deletes_anothers_message_after_saying_yes(qtbot, window, pair):
    node_a, node_b = pair  # ada created the workspace: she is its admin
    assert result(node_a.facade.run(lambda ws: ws.is_admin()))
    node_post(node_b, "general", "spam, to remove")
    node_post(node_b, "general", "bob's, to keep")
    qtbot.waitUntil(lambda: {"spam, to remove", "bob's, to keep"} <= set(texts(window)),
                    timeout=WAIT_MS)
    view, model = window.message_view, window.messages
    view.set_admin(False)
    assert "Delete" not in menu_texts(view.context_menu(
        model.index(texts(window).index("spam, to remove"))))
    view.set_admin(True)

    def ask(text: str) -> QMessageBox:
        menu = view.context_menu(model.index(texts(window).index(text)))
        next(a for a in menu.actions() if a.text() == "Delete").trigger()
        box = view.findChild(QMessageBox, "confirmDelete")
        qtbot.waitUntil(lambda: box is not None and box.isVisible(), timeout=WAIT_MS)
        return box

    box = ask("bob's, to keep")
    assert "bob's message" in box.text()
    box.button(QMessageBox.StandardButton.Cancel).click()
    qtbot.waitUntil(lambda: view.findChild(QMessageBox, "confirmDelete") is None,
                    timeout=WAIT_MS)
    box = ask("spam, to remove")
    next(b for b in box.buttons() if b.text() == "Delete").click()
    qtbot.waitUntil(lambda: "spam, to remove" not in texts(window), timeout=WAIT_MS)
    assert "bob's, to keep" in texts(window)
    qtbot.waitUntil(lambda: "spam, to remove" not in [
        m.text for m in result(node_b.facade.run(lambda ws: ws.read("general")))], timeout=WAIT_MS)


# Mentions ----------------------------------------------------------------------------------------

def test_mentions_are_highlighted_and_a_mention_of_me_marks_the_row(qtbot, board):
    me = board.model.me
    board.model.set_nicknames({me: "ada", BOB: "bob", CY: "cy"})
    rows = board.show([message("lunch at noon", 0),
                       message("ada: are you coming? @cy too", 1),
                       message("ask **@ada** about `@bob`", 2),
                       message("@bob and @cy only", 3),
                       message("note to self, @ada", 4, author=me)])
    plain, named, marked, others, mine = rows
    assert [i.data(MentionsMeRole) for i in rows] == [False, True, True, False, False]
    assert [(m.start, m.end, m.me) for m in named.data(MentionsRole)] == \
        [(0, 3, True), (21, 24, False)]
    image = board.image()

    def backdrop(index) -> tuple[int, int, int]:  # right of the text, inside the row
        rect = board.view.visualRect(index)
        return rgb(image.pixelColor(rect.right() - 20, rect.bottom() - 2))

    assert backdrop(named) == backdrop(marked) != backdrop(plain) == backdrop(others)
    assert backdrop(mine) != backdrop(named)
    # Inside the text the mention of me stands out more than one of someone else.
    base = painted(board.view, QPalette.ColorRole.Base)

    def strength(index, word: str) -> int:
        line = board.view.delegate.line_rects(index)[0]
        shown = board.view.delegate.shown_text(index)
        before = shown.index(word)
        font_width = line.width() / len(shown.split("\n")[0])
        x = line.left() + round((before + len(word) / 2) * font_width)
        pixel = rgb(image.pixelColor(x, line.top() + 1))
        return sum(abs(a - b) for a, b in zip(pixel, base, strict=True))

    assert strength(others, "@bob") > 0
    assert strength(marked, "@ada") > strength(others, "@bob")
    # Renaming: the model hears of a new nickname, and mentions follow.
    board.model.set_nicknames({me: "ada lovelace", BOB: "bob", CY: "cy"})
    assert not named.data(MentionsMeRole)


# Rows in place ---------------------------------------------------------------------------------

def test_rows_update_in_place_and_the_view_keeps_its_place(qtbot, board):
    texts_ = [f"message {n} " + "with a few more words " * (n % 3) for n in range(60)]
    board.show([message(text, n) for n, text in enumerate(texts_)])
    model, view = board.model, board.view
    bar = view.verticalScrollBar()
    bar.setValue(bar.maximum() // 2)
    bar.triggerAction(bar.SliderAction.SliderSingleStepAdd)  # the person reads mid-way
    top = view.indexAt(QPoint(30, 0))
    reading, offset = model.messages[top.row()].id, view.visualRect(top).top()
    resets: list[bool] = []
    changed: list[tuple[int, int]] = []
    model.modelReset.connect(lambda: resets.append(True))
    model.dataChanged.connect(lambda a, b, roles: changed.append((a.row(), b.row()))
                              if CONTENT_ROLES[0] in roles else None)
    above, visible = top.row() - 5, top.row() + 1
    updated = list(model.messages)
    updated[above] = message(texts_[above], above, reactions=(Reaction("🎉", (CY,)),),
                             replies=2)
    updated[visible] = message("rewritten", visible, edited=True,
                               reactions=(Reaction("👍", (BOB, CY)),))
    model.set_messages(updated, "general")
    assert resets == [] and changed == [(above, above), (visible, visible)]
    assert model.index(visible).data(ReactionsRole)[0].label == "👍 2"
    assert model.index(above).data(RepliesRole) == "2 replies"
    qtbot.waitUntil(lambda: board.laid_out() and view.delegate.parts(
        model.index(visible)).chips != (), timeout=WAIT_MS)
    row = model.row_of(reading)
    qtbot.waitUntil(lambda: view.visualRect(model.index(row)).top() == offset, timeout=WAIT_MS)
    assert view.delegate.shown_text(model.index(visible)) == "rewritten"
    # The same fields again change nothing.
    model.set_messages(list(updated), "general")
    assert resets == [] and len(changed) == 2


@pytest.fixture(autouse=True)
def _no_tooltip():
    yield
    QToolTip.hideText()
