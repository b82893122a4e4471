"""The composer: where messages and slash commands are typed."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent, QTextCursor
from PySide6.QtWidgets import QPlainTextEdit

from . import _rows


class Composer(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line. Tab completes a nickname (again cycles
    through the matches, Shift+Tab backwards; ": " follows one at the start of the message).
    Up in an empty composer brings back the last message sent."""

    submitted = Signal(str)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.setTabChangesFocus(False)
        self._completer = _rows.NickCompleter()
        self._last_sent = ""

    def set_nicknames(self, names: list[str]) -> None:
        """The nicknames Tab completes (the open channel's members)."""
        self._completer.set_names(names)

    def nicknames(self) -> list[str]:
        return list(self._completer.names)

    def complete_nickname(self, *, backward: bool = False) -> bool:
        """Complete the word before the cursor; False (and nothing changes) if none matches."""
        text = self.toPlainText()
        cursor = self.textCursor()
        if cursor.hasSelection():
            return False
        at = _rows.from_utf16(text, cursor.position())  # Qt counts UTF-16 units
        result = self._completer.complete(text, at, backward=backward)
        if result is None:
            return False
        new_text, new_at = result
        cursor.beginEditBlock()  # one undo step
        cursor.select(QTextCursor.SelectionType.Document)
        cursor.insertText(new_text)
        cursor.endEditBlock()
        cursor.setPosition(_rows.to_utf16(new_text, new_at))
        self.setTextCursor(cursor)
        return True

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        key, modifiers = event.key(), event.modifiers()
        if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and not (
                modifiers & Qt.KeyboardModifier.ShiftModifier):
            text = self.toPlainText().strip()
            if text:
                self._last_sent = text
                self.submitted.emit(text)
                self.clear()
            return
        if key in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab) and not (
                modifiers & (Qt.KeyboardModifier.ControlModifier
                             | Qt.KeyboardModifier.AltModifier)):
            # With or without a match, Tab neither inserts a tab nor moves the focus.
            self.complete_nickname(backward=key == Qt.Key.Key_Backtab
                                   or bool(modifiers & Qt.KeyboardModifier.ShiftModifier))
            event.accept()
            return
        if key == Qt.Key.Key_Up and not modifiers and not self.toPlainText() and self._last_sent:
            self.setPlainText(self._last_sent)
            self.moveCursor(QTextCursor.MoveOperation.End)
            return
        super().keyPressEvent(event)
