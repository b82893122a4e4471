"""What the message list shows over its rows: the sticky day label in the band above them
(DayHeader) and an empty channel's start (EmptyState). ui/message_view.py places them."""

from __future__ import annotations

from PySide6.QtCore import QRect, QRectF, Qt
from PySide6.QtGui import QFont, QPainter, QPalette
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

from .row_paint import paint_pill
from .theme import scaled

EMPTY_TITLE_SCALE = 1.5
EMPTY_HINT = ("Write the first message below. People you invite will see everything "
              "posted here.")
PRIVATE_EMPTY_HINT = ("Write the first message below. Only the people in it can read it: it "
                      "is encrypted for them.")


class DayHeader(QLabel):
    """The band above the list's rows, in the list's Base colour, with the sticky day label
    centred in it: the topmost row's day while that day's separator is scrolled out of sight,
    drawn as the separators' pill. The band is the list's top viewport margin (MessageView
    `band`), so the label never covers a row's text."""

    def __init__(self, parent: QWidget):
        super().__init__(parent, objectName="dayHeader")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.pill = QRect()  # where the label's pill is (in the band); empty: no label

    def show_day(self, label: str, pill: QRect) -> None:
        if (label, pill) != (self.text(), self.pill):
            self.setText(label)
            self.pill = pill
            self.update()

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.fillRect(self.rect(), self.palette().color(QPalette.ColorRole.Base))
        if self.text() and not self.pill.isEmpty():
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            paint_pill(painter, QRectF(self.pill), self.text(), self.font(), self.palette())
        painter.end()


class EmptyState(QWidget):
    """What an empty channel shows instead of a blank box: whose start this is, and what to
    do."""

    def __init__(self, parent: QWidget):
        super().__init__(parent, objectName="emptyState")
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.title = QLabel(objectName="emptyTitle", alignment=Qt.AlignmentFlag.AlignCenter,
                            wordWrap=True)
        self.hint = QLabel(EMPTY_HINT, objectName="emptyHint", wordWrap=True,
                           alignment=Qt.AlignmentFlag.AlignCenter)
        self.title.setForegroundRole(QPalette.ColorRole.Text)  # it sits on the list's Base
        self.hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        column = QVBoxLayout(self)
        column.setContentsMargins(24, 24, 24, 24)
        column.addStretch(1)
        column.addWidget(self.title)
        column.addWidget(self.hint)
        column.addStretch(1)
        self.restyle(parent.font())
        self.hide()

    def restyle(self, font: QFont) -> None:
        title = scaled(font, EMPTY_TITLE_SCALE)
        title.setBold(True)
        self.title.setFont(title)
        self.hint.setFont(font)

    def show_channel(self, channel: str, *, private: bool = False) -> None:
        """A channel's start, or (`private`) a private channel's, named as it is."""
        self.title.setText(f"This is the start of {channel}" if private
                           else f"This is the start of #{channel}")
        self.hint.setText(PRIVATE_EMPTY_HINT if private else EMPTY_HINT)
