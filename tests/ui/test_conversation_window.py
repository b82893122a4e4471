"""Conversation in the window, over two real Nodes on 127.0.0.1: reactions, edits, threads,
typing and mentions as a person uses them, and what the window shows of the other's."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pytestqt")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from tests.support import node_channels, node_online  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts  # noqa: E402

CHANNEL = "general"


def shown(win, text: str):
    """The Message the window's channel shows whose text starts with `text`."""
    return next((m for m in win.messages.messages if m.text.startswith(text)), None)


def post_and_wait(qtbot, win, node, text: str) -> bytes:
    message_id = result(node.facade.run(lambda ws: ws.post(CHANNEL, text).id))
    qtbot.waitUntil(lambda: shown(win, text) is not None, timeout=WAIT_MS)
    return message_id


def test_a_reaction_from_the_other_node_shows_and_a_chip_click_adds_mine(qtbot, window, pair):
    ada, bob = pair
    hello = post_and_wait(qtbot, window, ada, "hello team")
    qtbot.waitUntil(lambda: any(m.id == hello for m in result(bob.facade.run(lambda ws: ws.read(CHANNEL)))),
                    timeout=WAIT_MS)
    result(bob.facade.run(lambda ws: ws.conversation.react(hello, "👍").id))
    qtbot.waitUntil(lambda: [(r.emoji, r.by) for r in shown(window, "hello").reactions] ==
                    [("👍", (bob.key,))], timeout=WAIT_MS)
    window.message_view.reactionToggled.emit(hello, "👍")  # what a click on the chip sends
    qtbot.waitUntil(lambda: shown(window, "hello").reactions[0].by == (bob.key, ada.key),
                    timeout=WAIT_MS)
    window.message_view.reactionToggled.emit(hello, "👍")  # again: mine is taken back
    qtbot.waitUntil(lambda: shown(window, "hello").reactions[0].by == (bob.key,),
                    timeout=WAIT_MS)
    # The picker adds a new one.
    window.message_view.reactRequested.emit(hello, QPoint(10, 10))
    assert window.emoji_picker.isVisible()
    picker = window.emoji_picker
    picker.search.setText("party popper")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)  # the first match is picked
    assert not picker.isVisible()
    qtbot.waitUntil(lambda: [r.emoji for r in shown(window, "hello").reactions] == ["👍", "🎉"],
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: any(r.emoji == "🎉" for m in result(bob.facade.run(lambda ws: ws.read(CHANNEL)))
                                for r in m.reactions), timeout=WAIT_MS)


def test_editing_my_last_message_from_the_composer(qtbot, window, pair):
    ada, _ = pair
    post_and_wait(qtbot, window, ada, "see you at 5")
    window.composer.setFocus()
    qtbot.keyClick(window.composer, Qt.Key.Key_Up)  # Up in an empty composer: edit my last
    assert window.composer.editing() == shown(window, "see you").id
    assert window.composer.toPlainText() == "see you at 5"
    window.composer.setPlainText("see you at 6")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: shown(window, "see you") is not None and
                    shown(window, "see you").text == "see you at 6", timeout=WAIT_MS)
    assert shown(window, "see you").edited and window.composer.editing() is None
    assert texts(window).count("see you at 6") == 1


def test_up_never_edits_a_message_i_imported_from_slack(qtbot, window, pair, tmp_path):
    """The importer signed every imported message, but wrote none: Up passes over them."""
    import json
    import time
    import zipfile

    from app.slack_import import import_slack

    ada, _ = pair
    post_and_wait(qtbot, window, ada, "my own words")
    export = tmp_path / "export.zip"
    with zipfile.ZipFile(export, "w") as zf:  # dmitri's message, newer than mine
        zf.writestr("users.json", json.dumps([{"id": "U1", "name": "dmitri"}]))
        zf.writestr("channels.json", json.dumps([{"id": "C1", "name": CHANNEL, "members": []}]))
        day = time.strftime("%Y-%m-%d", time.gmtime())
        zf.writestr(f"{CHANNEL}/{day}.json", json.dumps([
            {"type": "message", "user": "U1", "ts": f"{time.time() + 60:.6f}",
             "text": "dmitri's words"}]))
    result(ada.facade.run(lambda ws: import_slack(ws, export)))
    qtbot.waitUntil(lambda: texts(window)[-1:] == ["dmitri's words"], timeout=WAIT_MS)
    window.composer.setFocus()
    qtbot.keyClick(window.composer, Qt.Key.Key_Up)
    assert window.composer.editing() == shown(window, "my own words").id


def test_a_thread_opens_beside_the_channel_and_a_reply_can_go_to_the_channel_too(
        qtbot, window, pair):
    ada, bob = pair
    question = post_and_wait(qtbot, window, ada, "who reviews the release?")
    qtbot.waitUntil(lambda: any(m.id == question for m in result(bob.facade.run(lambda ws: ws.read(CHANNEL)))),
                    timeout=WAIT_MS)
    result(bob.facade.run(lambda ws: ws.conversation.reply(question, "I can").id))
    qtbot.waitUntil(lambda: shown(window, "who reviews").replies == 1, timeout=WAIT_MS)
    assert "I can" not in texts(window)  # a reply stays in its thread
    window.message_view.threadRequested.emit(question)  # the "1 reply" link
    pane = window.thread_pane
    qtbot.waitUntil(lambda: [m.text for m in pane.model.messages] ==
                    ["who reviews the release?", "I can"], timeout=WAIT_MS)
    assert pane.isVisible() and not window.member_pane.isVisible()
    assert pane.where.text() == "#general" and pane.title.text() == "Thread · 1 reply"
    pane.also.setChecked(True)
    pane.composer.setPlainText("thanks, bob")
    qtbot.keyClick(pane.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: [m.text for m in pane.model.messages][-1:] == ["thanks, bob"],
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "thanks, bob" in texts(window), timeout=WAIT_MS)  # also in #general
    assert shown(window, "thanks").reply_to == question and not pane.also.isChecked()
    pane.close_thread()
    assert pane.isHidden() and window.member_pane.isVisible()


def test_the_other_person_typing_shows_under_the_composer(qtbot, window, pair):
    ada, bob = pair
    qtbot.waitUntil(lambda: bob.key in node_online(ada), timeout=WAIT_MS)
    label = window.typing_label
    # The window learns nicknames from the channel's state; bob's join brings his.
    qtbot.waitUntil(lambda: bob.key in result(ada.facade.run(lambda ws: ws.nicknames())), timeout=WAIT_MS)
    window._load_state()

    def typing_shown() -> bool:
        bob.facade.typing(CHANNEL)  # a person keeps typing; frames are rate-limited
        return label.text() == "bob is typing…"
    qtbot.waitUntil(typing_shown, timeout=WAIT_MS)
    result(bob.facade.run(lambda ws: ws.post(CHANNEL, "done typing").id))
    qtbot.waitUntil(lambda: label.text() == "", timeout=WAIT_MS)


def test_mentions_of_me_are_listed_and_open_in_their_channel(qtbot, window, pair):
    ada, bob = pair
    node_channels(bob, "random")
    result(bob.facade.run(lambda ws: ws.post("random", "@ada can you look at this?").id))
    result(bob.facade.run(lambda ws: ws.post("random", "nothing for anyone").id))
    qtbot.waitUntil(lambda: len(result(ada.facade.run(lambda ws: ws.conversation.mentions()))) == 1, timeout=WAIT_MS)
    qtbot.mouseClick(window.sidebar.mentions, Qt.MouseButton.LeftButton)
    panel = window.search_results
    qtbot.waitUntil(lambda: panel.count_label.text() == "1 mention of you", timeout=WAIT_MS)
    assert window.reading.currentWidget() is panel and window.sidebar.mentions.isChecked()
    [row] = panel.rows()
    assert "@ada can you look at this?" in row.text()
    panel.list.itemClicked.emit(row)
    qtbot.waitUntil(lambda: window.channel == "random" and
                    "@ada can you look at this?" in texts(window), timeout=WAIT_MS)
    assert not window.sidebar.mentions.isChecked()


def test_an_admin_deletes_someone_elses_message_from_the_context_menu(qtbot, window, pair):
    ada, bob = pair  # ada created the workspace: she is its admin, bob is not
    qtbot.waitUntil(window.message_view.is_admin, timeout=WAIT_MS)
    spam = result(bob.facade.run(lambda ws: ws.post(CHANNEL, "buy cheap watches").id))
    qtbot.waitUntil(lambda: shown(window, "buy cheap") is not None, timeout=WAIT_MS)
    index = window.messages.index(window.messages.row_of(spam))
    menu = window.message_view.context_menu(index)
    [delete] = [action for action in menu.actions() if action.text() == "Delete"]
    delete.trigger()
    box = window.message_view.findChild(QMessageBox, "confirmDelete")
    assert box is not None and "bob" in box.text()
    [confirm] = [b for b in box.buttons() if b.text() == "Delete"]
    confirm.click()
    qtbot.waitUntil(lambda: shown(window, "buy cheap") is None, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: all(m.id != spam for m in result(bob.facade.run(lambda ws: ws.read(CHANNEL)))),
                    timeout=WAIT_MS)  # gone on bob's computer too
