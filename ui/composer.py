"""The composer: where messages and slash commands are typed, and where a message is edited.

Keys: Enter sends (`submitted`), Shift+Enter starts a new line, Tab completes a nickname, Up in
an empty composer asks to edit my last message (`editLastRequested`; where nothing listens, it
brings back the last message sent instead). Typing a colon and two or more letters (":thu", at
the start or after a space) lists matching emoji under the cursor: Up and Down move, Tab or
Enter inserts, Esc closes. Typing the closing colon of a known shortcode (":tada:") turns it
into its emoji at once, and what is sent has every known shortcode turned (app.emojis.emojize).

Edit mode (`begin_edit`): a banner at the composer's top ("editBanner", a child the composer
places itself, also `banner()`) says a message is being edited; Enter emits
`editSubmitted(id, text)`, Esc or Enter on an emptied (or unchanged) text emits `editCancelled`,
and either way the draft that was in the composer comes back.

Files: pasting (Ctrl+V) or dropping files emits `filesPasted` with their paths, pasting image
data (a screenshot, "Copy image") emits `imagePasted` with the QImage; neither inserts anything
(where nothing listens, as in a thread's composer, or while editing, Qt pastes as usual).
Where `has_files` says files wait to go with the message, Enter sends even with no text.

`typing` is emitted when the person changes the text with the keyboard (not when the program
sets it, not on Enter, not while editing), at most once per TYPING_INTERVAL_S.

The composer assumes nothing about the window around it: the thread pane uses a second one."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QMetaMethod, QMimeData, QPoint, QRect, QSize, Qt, Signal
from PySide6.QtGui import (
    QFocusEvent,
    QImage,
    QInputMethodEvent,
    QKeyEvent,
    QPainter,
    QPalette,
    QTextCursor,
)
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QWidget,
)

from app import emojis

from . import _rows, theme
from .emoji_picker import CharRole, NameRole, emoji_font

TYPING_INTERVAL_S = 1.0  # `typing` at most this often (the Node rate-limits the wire)
COMPLETION_ROWS = 8  # matches the `:shortcode:` list shows
EDIT_BANNER_TEXT = "Editing message · Esc to cancel"


class ShortcodeDelegate(QStyledItemDelegate):
    """A match row: the emoji in a column of its own (clipped: a sequence the fonts draw as
    several glyphs must not push the name along), then its `:shortcode:`."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        self.initStyleOption(option, index)
        option.text = ""
        style = option.widget.style() if option.widget else QApplication.style()
        style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter,
                            option.widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.save()
        painter.setPen(option.palette.color(
            QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text))
        painter.setFont(option.font)
        glyph = QRect(option.rect.left() + 4, option.rect.top(), self.glyph_width(option),
                      option.rect.height())
        painter.setClipRect(glyph)
        painter.drawText(glyph, Qt.AlignmentFlag.AlignCenter, index.data(CharRole))
        painter.setClipping(False)
        painter.drawText(option.rect.adjusted(glyph.right() + 8, 0, -4, 0),
                         Qt.AlignmentFlag.AlignVCenter, index.data(NameRole))
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:  # noqa: N802
        name_width = option.fontMetrics.horizontalAdvance(index.data(NameRole))
        return QSize(self.glyph_width(option) + name_width + 20,
                     option.fontMetrics.height() + 6)

    @staticmethod
    def glyph_width(option: QStyleOptionViewItem) -> int:
        return option.fontMetrics.height() * 3 // 2


class ShortcodeList(QListWidget):
    """The `:shortcode:` matches under the composer's cursor: a window that never takes the
    focus, so the composer keeps the keyboard and drives it."""

    def __init__(self, composer: Composer):
        super().__init__(composer, objectName="shortcodeList")
        self.setWindowFlags(Qt.WindowType.ToolTip | Qt.WindowType.FramelessWindowHint)
        self.setAttribute(Qt.WidgetAttribute.WA_ShowWithoutActivating)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setUniformItemSizes(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setFont(emoji_font(composer.font()))
        self.setItemDelegate(ShortcodeDelegate(self))

    def show_matches(self, matches: list[tuple[str, str]], under: QRect) -> None:
        """List (shortcode, emoji) `matches` below the global rect `under` (the cursor), or
        above it where the screen has no room."""
        self.clear()
        for name, char in matches:
            item = QListWidgetItem(f"{char} {name}")  # what a screen reader says
            item.setData(CharRole, char)
            item.setData(NameRole, name)
            self.addItem(item)
        self.setCurrentRow(0)
        rows = min(len(matches), COMPLETION_ROWS)
        width = max(self.sizeHintForColumn(0) + 2 * self.frameWidth() + 8, 220)
        height = self.sizeHintForRow(0) * rows + 2 * self.frameWidth()
        self.resize(width, height)
        at = QPoint(under.left(), under.bottom() + 2)
        screen = self.screen().availableGeometry() if self.screen() else None
        if screen is not None and at.y() + height > screen.bottom():
            at = QPoint(under.left(), under.top() - height - 2)
        self.move(at)
        self.show()
        self.raise_()

    def step(self, delta: int) -> None:
        if self.count():
            self.setCurrentRow((self.currentRow() + delta) % self.count())

    def current_char(self) -> str | None:
        item = self.currentItem()
        return item.data(CharRole) if item else None


class EditBanner(QFrame):
    """A thin strip at the composer's top while a message is being edited."""

    def __init__(self, parent: QWidget):
        super().__init__(parent, objectName="editBanner")
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        self.label = QLabel(EDIT_BANNER_TEXT, objectName="editBannerText")
        self.label.setForegroundRole(QPalette.ColorRole.WindowText)
        self.cancel = QToolButton(objectName="editCancel", text="Cancel", autoRaise=True)
        self.cancel.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        for part in (self.label, self.cancel):
            part.setFont(theme.scaled(part.font(), 0.9))
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 0, 2, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.cancel)
        self.hide()


class Composer(QPlainTextEdit):
    """Enter sends, Shift+Enter starts a new line. Tab completes a nickname (again cycles
    through the matches, Shift+Tab backwards; ": " follows one at the start of the message).
    `:shortcode:`s complete and turn into emoji; `begin_edit` edits a message (see the module
    docstring)."""

    submitted = Signal(str)
    editSubmitted = Signal(bytes, str)  # the message's id, its new text
    editCancelled = Signal()
    editLastRequested = Signal()  # Up in an empty composer: the window finds my last message
    typing = Signal()
    filesPasted = Signal(list)  # paths (str) of local files pasted or dropped here
    imagePasted = Signal(QImage)  # image data pasted here

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.setTabChangesFocus(False)
        self._completer = _rows.NickCompleter()
        self._last_sent = ""
        self._shortcodes = ShortcodeList(self)
        self._shortcodes.itemClicked.connect(lambda item: self._insert_match(item.data(CharRole)))
        self._shortcodes.hide()
        self._banner = EditBanner(self)
        self._banner.cancel.clicked.connect(self.cancel_edit)
        self._editing: tuple[bytes, str] | None = None  # (id, the text before the edit)
        self._draft: tuple[str, int] | None = None  # what the edit displaced, and its cursor
        self.clock = time.monotonic  # what `typing`'s interval is measured with
        self.has_files: Callable[[], bool] = lambda: False  # files wait to be sent with it
        self._typed_at: float | None = None  # when `typing` was last emitted
        self._keyed = False  # a change now comes from a key the person pressed
        self.textChanged.connect(self._text_changed)
        self.cursorPositionChanged.connect(self._cursor_moved)

    closed_because: str | None = None  # why this box takes nothing any more (a removal)

    def close_for_good(self, why: str) -> None:
        """Take nothing from now on, and say why whatever conversation is shown."""
        self.closed_because = why
        self.setEnabled(False)
        self.setPlaceholderText(why)

    def setPlaceholderText(self, text: str) -> None:  # noqa: N802 (Qt's name)
        """Name the conversation the box posts to, and paint it now: Qt repaints an empty box
        only when its placeholder appears or goes, so a placeholder changed while shown would
        stay drawn as the old one (issue #29: "Message launch" drawn under #general)."""
        text = self.closed_because or text
        if text != self.placeholderText():
            super().setPlaceholderText(text)
            self.viewport().update()

    # Nicknames ---------------------------------------------------------------------------------

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

    # Emoji -------------------------------------------------------------------------------------

    def insert_emoji(self, char: str) -> None:
        """Put `char` at the cursor (replacing a selection), as the emoji picker does."""
        self.insertPlainText(char)
        self.setFocus()
        self._typed()

    def shortcode_list(self) -> ShortcodeList:
        """The `:shortcode:` matches list (visible while there are some for what is typed)."""
        return self._shortcodes

    def _before_cursor(self) -> tuple[str, int]:
        """The text of the cursor's block up to the cursor, and where that block starts."""
        cursor = self.textCursor()
        block = cursor.block()
        text = block.text()
        return text[:_rows.from_utf16(text, cursor.positionInBlock())], block.position()

    def _replace_before_cursor(self, start: int, before: str, replacement: str) -> None:
        """Replace `before[start:]` (the cursor's block text up to the cursor) by
        `replacement`, as one undo step."""
        cursor = self.textCursor()
        cursor.setPosition(cursor.position() - (_rows.to_utf16(before, len(before))
                                                - _rows.to_utf16(before, start)),
                           QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.insertText(replacement)
        cursor.endEditBlock()
        self.setTextCursor(cursor)

    def _close_shortcode(self) -> None:
        before, _ = self._before_cursor()
        closed = emojis.closed_shortcode(before)
        if closed is not None:
            self._replace_before_cursor(closed[0], before, closed[1])

    def _update_matches(self) -> None:
        if self.textCursor().hasSelection():
            self._shortcodes.hide()
            return
        before, _ = self._before_cursor()
        typed = emojis.typed_shortcode(before)
        matches = emojis.search(typed[1], COMPLETION_ROWS) if typed else []
        if not matches or not self.isVisible():
            self._shortcodes.hide()
            return
        rect = self.cursorRect()
        self._shortcodes.show_matches(
            matches, QRect(self.viewport().mapToGlobal(rect.topLeft()), rect.size()))

    def _insert_match(self, char: str | None) -> None:
        before, _ = self._before_cursor()
        typed = emojis.typed_shortcode(before)
        self._shortcodes.hide()
        if char and typed is not None:
            self._replace_before_cursor(typed[0], before, char)
            self._typed()
        self.setFocus()

    # Edit mode ---------------------------------------------------------------------------------

    def banner(self) -> QFrame:
        """The edit banner (a child the composer places at its top; shown while editing)."""
        return self._banner

    def editing(self) -> bytes | None:
        """The id of the message being edited, None when composing a new one."""
        return self._editing[0] if self._editing else None

    def begin_edit(self, message_id: bytes, text: str) -> None:
        """Edit the message `message_id` whose text is `text`: the banner shows, the composer
        holds `text`, and what was typed before waits until the edit ends."""
        if self._editing is None:
            self._draft = (self.toPlainText(), self.textCursor().position())
        self._editing = (bytes(message_id), text)
        self._shortcodes.hide()
        self._set_text(text, _rows.to_utf16(text, len(text)))
        self._banner.show()
        self._place_banner()
        self.setFocus()

    def cancel_edit(self) -> None:
        """End the edit without a change (`editCancelled`); the draft comes back."""
        if self._editing is not None:
            self._end_edit()
            self.editCancelled.emit()

    def _end_edit(self) -> None:
        self._editing = None
        self._banner.hide()
        self._place_banner()
        draft, at = self._draft or ("", 0)
        self._draft = None
        self._set_text(draft, at)

    def _submit_edit(self, text: str) -> None:
        assert self._editing is not None
        message_id, before = self._editing
        if not text or text == emojis.emojize(before.strip()):
            self.cancel_edit()
            return
        self._end_edit()
        self.editSubmitted.emit(message_id, text)

    def _set_text(self, text: str, at: int) -> None:
        self.setPlainText(text)
        cursor = self.textCursor()
        cursor.setPosition(min(at, _rows.to_utf16(text, len(text))))
        self.setTextCursor(cursor)

    def _place_banner(self) -> None:
        height = self._banner.sizeHint().height() if self._banner.isVisible() else 0
        self.setViewportMargins(0, height, 0, 0)
        inside = self.contentsRect()
        self._banner.setGeometry(inside.left(), inside.top(), inside.width(), height)

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._place_banner()

    # Typing ------------------------------------------------------------------------------------

    def _typed(self) -> None:
        if self._editing is not None:
            return
        now = self.clock()
        if self._typed_at is None or now - self._typed_at >= TYPING_INTERVAL_S:
            self._typed_at = now
            self.typing.emit()

    def _text_changed(self) -> None:
        if self._keyed:
            self._typed()
        else:  # the program set the text: what was being completed is gone
            self._shortcodes.hide()

    def _cursor_moved(self) -> None:
        if not self._keyed:  # a click elsewhere: keys update the list after they are handled
            self._shortcodes.hide()

    def _keyed_edit(self, edit, event) -> None:
        """Run Qt's own handling of a key or input-method `event`, as the person's edit."""
        self._keyed = True
        try:
            edit(event)
        finally:
            self._keyed = False

    # Keys --------------------------------------------------------------------------------------

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        key, modifiers = event.key(), event.modifiers()
        shift = bool(modifiers & Qt.KeyboardModifier.ShiftModifier)
        enter = key in (Qt.Key.Key_Return, Qt.Key.Key_Enter)
        if self._shortcodes.isVisible():
            if key in (Qt.Key.Key_Up, Qt.Key.Key_Down) and not modifiers:
                self._shortcodes.step(-1 if key == Qt.Key.Key_Up else 1)
                return
            if (enter or key == Qt.Key.Key_Tab) and not shift:
                self._insert_match(self._shortcodes.current_char())
                return
            if key == Qt.Key.Key_Escape:
                self._shortcodes.hide()
                return
        if enter and not shift:
            text = emojis.emojize(self.toPlainText().strip())
            if self._editing is not None:
                self._submit_edit(text)
            elif text or self.has_files():
                self._last_sent = text or self._last_sent
                self.submitted.emit(text)
                self.clear()
            return
        if key == Qt.Key.Key_Escape and self._editing is not None:
            self.cancel_edit()
            return
        if key in (Qt.Key.Key_Tab, Qt.Key.Key_Backtab) and not (
                modifiers & (Qt.KeyboardModifier.ControlModifier
                             | Qt.KeyboardModifier.AltModifier)):
            # With or without a match, Tab neither inserts a tab nor moves the focus.
            self.complete_nickname(backward=key == Qt.Key.Key_Backtab or shift)
            event.accept()
            return
        if key == Qt.Key.Key_Up and not modifiers and not self.toPlainText() \
                and self._editing is None:
            if self.isSignalConnected(QMetaMethod.fromSignal(self.editLastRequested)):
                self.editLastRequested.emit()
                return
            if self._last_sent:
                self._set_text(self._last_sent, _rows.to_utf16(self._last_sent, len(self._last_sent)))
                return
        self._keyed_edit(super().keyPressEvent, event)
        if event.text() == ":":
            self._close_shortcode()
        self._update_matches()

    def inputMethodEvent(self, event: QInputMethodEvent) -> None:  # noqa: N802 (Qt's name)
        self._keyed_edit(super().inputMethodEvent, event)
        if event.commitString().endswith(":"):
            self._close_shortcode()
        self._update_matches()

    # Files -------------------------------------------------------------------------------------

    @staticmethod
    def local_files(source: QMimeData) -> list[str]:
        """The local files `source` names (dropped or copied in a file manager)."""
        if not source.hasUrls():
            return []
        urls = source.urls()
        return [url.toLocalFile() for url in urls] if urls and all(
            url.isLocalFile() for url in urls) else []

    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802 (Qt's name)
        return ((bool(self.local_files(source)) and self._takes(self.filesPasted))
                or (source.hasImage() and self._takes(self.imagePasted))
                or super().canInsertFromMimeData(source))

    def _takes(self, signal) -> bool:
        """Whether files pasted here go somewhere (not while editing, nor where nothing
        listens, as in a thread's composer: there they paste as Qt pastes them)."""
        return self._editing is None and self.isSignalConnected(QMetaMethod.fromSignal(signal))

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt's name)
        files = self.local_files(source)
        if files and self._takes(self.filesPasted):
            self.filesPasted.emit(files)
            return
        # Image data alone (a screenshot); an image that comes with text pastes as the text.
        if source.hasImage() and not source.hasText() and self._takes(self.imagePasted):
            data = source.imageData()
            image = data.toImage() if hasattr(data, "toImage") else QImage(data)
            if not image.isNull():
                self.imagePasted.emit(image)
            return
        super().insertFromMimeData(source)

    def focusOutEvent(self, event: QFocusEvent) -> None:  # noqa: N802 (Qt's name)
        self._shortcodes.hide()
        super().focusOutEvent(event)

    def hideEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self._shortcodes.hide()
        super().hideEvent(event)
