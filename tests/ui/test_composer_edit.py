"""The composer's edit mode (begin_edit, the banner, editSubmitted / editCancelled, the draft
coming back), Up in an empty composer asking for my last message, and the `typing` signal,
offscreen with a real Composer."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QFrame, QLabel, QToolButton, QVBoxLayout, QWidget  # noqa: E402

from ui.composer import EDIT_BANNER_TEXT, Composer  # noqa: E402

MESSAGE_ID = bytes(range(32))


@pytest.fixture
def composer(qtbot):
    holder = QWidget()
    column = QVBoxLayout(holder)
    box = Composer(objectName="composer")
    box.setFixedHeight(72)  # as the window has it
    column.addWidget(box)
    qtbot.addWidget(holder)
    holder.resize(480, 120)
    holder.show()
    qtbot.waitExposed(holder)
    box.setFocus()
    yield box
    holder.close()


def banner(composer: Composer) -> QFrame:
    return composer.findChild(QFrame, "editBanner")


def test_edit_mode_shows_the_banner_and_enter_sends_the_edit_not_a_message(qtbot, composer):
    sent, edits = [], []
    composer.submitted.connect(sent.append)
    composer.editSubmitted.connect(lambda *edit: edits.append(edit))
    qtbot.keyClicks(composer, "half a thought")
    assert not banner(composer).isVisible()

    composer.begin_edit(MESSAGE_ID, "helo world")
    strip = banner(composer)
    assert strip is composer.banner() and strip.isVisible()
    assert strip.findChild(QLabel, "editBannerText").text() == EDIT_BANNER_TEXT
    assert composer.toPlainText() == "helo world" and composer.editing() == MESSAGE_ID
    assert composer.textCursor().position() == len("helo world")
    # The banner sits above the text, not over it.
    assert strip.geometry().bottom() < composer.viewport().geometry().top()

    qtbot.keyClick(composer, Qt.Key.Key_Home)
    qtbot.keyClick(composer, Qt.Key.Key_Right)
    qtbot.keyClick(composer, Qt.Key.Key_Right)
    qtbot.keyClicks(composer, "l")
    with qtbot.waitSignal(composer.editSubmitted) as signal:
        qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert signal.args == [MESSAGE_ID, "hello world"]
    assert isinstance(signal.args[0], bytes)
    assert sent == [] and edits == [(MESSAGE_ID, "hello world")]
    # The edit is over: the draft is back, the banner gone.
    assert composer.toPlainText() == "half a thought" and composer.editing() is None
    assert not strip.isVisible()
    assert composer.viewport().geometry().top() <= composer.frameWidth()


def test_escape_cancels_and_restores_the_draft_and_its_cursor(qtbot, composer):
    cancelled, edits = [], []
    composer.editCancelled.connect(lambda: cancelled.append(True))
    composer.editSubmitted.connect(lambda *edit: edits.append(edit))
    qtbot.keyClicks(composer, "draft text")
    qtbot.keyClick(composer, Qt.Key.Key_Left)
    composer.begin_edit(MESSAGE_ID, "old")
    qtbot.keyClicks(composer, " and more")
    with qtbot.waitSignal(composer.editCancelled):
        qtbot.keyClick(composer, Qt.Key.Key_Escape)
    assert composer.toPlainText() == "draft text"
    assert composer.textCursor().position() == len("draft tex")
    assert not banner(composer).isVisible() and composer.editing() is None
    assert edits == [] and cancelled == [True]


def test_an_emptied_or_unchanged_edit_cancels(qtbot, composer):
    edits, cancelled = [], []
    composer.editSubmitted.connect(lambda *edit: edits.append(edit))
    composer.editCancelled.connect(lambda: cancelled.append(True))
    composer.begin_edit(MESSAGE_ID, "keep")
    composer.selectAll()
    qtbot.keyClick(composer, Qt.Key.Key_Delete)
    qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert cancelled == [True] and composer.toPlainText() == ""
    composer.begin_edit(MESSAGE_ID, "keep")
    qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert cancelled == [True, True] and edits == []


def test_the_banners_cancel_button_cancels(qtbot, composer):
    composer.begin_edit(MESSAGE_ID, "old")
    with qtbot.waitSignal(composer.editCancelled):
        qtbot.mouseClick(banner(composer).findChild(QToolButton, "editCancel"),
                         Qt.MouseButton.LeftButton)
    assert composer.toPlainText() == "" and not banner(composer).isVisible()


def test_shift_enter_in_edit_mode_starts_a_line_and_shortcodes_are_turned(qtbot, composer):
    composer.begin_edit(MESSAGE_ID, "one")
    qtbot.keyClick(composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    composer.insertPlainText("two :thumbs_up")  # inserted: the colon is not typed
    with qtbot.waitSignal(composer.editSubmitted) as signal:
        composer.insertPlainText(":")
        qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert signal.args == [MESSAGE_ID, "one\ntwo 👍"]


def test_up_in_an_empty_composer_asks_for_my_last_message(qtbot, composer):
    composer.editLastRequested.connect(lambda: composer.begin_edit(MESSAGE_ID, "my last"))
    qtbot.keyClicks(composer, "sent")
    qtbot.keyClick(composer, Qt.Key.Key_Return)
    with qtbot.waitSignal(composer.editLastRequested):
        qtbot.keyClick(composer, Qt.Key.Key_Up)
    assert composer.toPlainText() == "my last" and banner(composer).isVisible()
    with qtbot.assertNotEmitted(composer.editLastRequested):
        qtbot.keyClick(composer, Qt.Key.Key_Up)  # not empty: Up moves the cursor
    composer.cancel_edit()
    qtbot.keyClicks(composer, "x")
    with qtbot.assertNotEmitted(composer.editLastRequested):
        qtbot.keyClick(composer, Qt.Key.Key_Up)
    # A composer whose window does not edit (nothing listens) brings back the last one sent.
    composer.clear()
    composer.editLastRequested.disconnect()
    qtbot.keyClick(composer, Qt.Key.Key_Up)
    assert composer.toPlainText() == "sent" and composer.editing() is None


def test_typing_is_emitted_for_keys_not_for_text_the_program_sets(qtbot, composer):
    typed = []
    composer.typing.connect(lambda: typed.append(True))
    composer.setPlainText("set by the program")
    composer.clear()
    composer.begin_edit(MESSAGE_ID, "an edit")
    qtbot.keyClicks(composer, " typed while editing")
    composer.cancel_edit()
    assert typed == []
    qtbot.keyClick(composer, Qt.Key.Key_Left)  # moves, changes nothing
    assert typed == []
    with qtbot.waitSignal(composer.typing):
        qtbot.keyClicks(composer, "hello")
    assert 1 <= len(typed) <= 5
    composer.typing.disconnect()
    with qtbot.assertNotEmitted(composer.typing):
        qtbot.keyClick(composer, Qt.Key.Key_Return)  # sending is not typing
    assert composer.toPlainText() == ""


def test_typing_is_emitted_at_most_once_a_second(qtbot, composer):
    typed, now = [], [100.0]
    composer.clock = lambda: now[0]
    composer.typing.connect(lambda: typed.append(now[0]))
    qtbot.keyClicks(composer, "quick")
    now[0] += 0.9
    qtbot.keyClicks(composer, "ly")
    assert typed == [100.0]
    now[0] += 0.1
    qtbot.keyClicks(composer, " now")
    assert typed == [100.0, 101.0]
