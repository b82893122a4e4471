"""The bar above the messages: `#channel` (or a document's title, or a private channel's name
after a lock), the topic beside it (a click edits it in place, for those the channel's policies
allow; a private channel shows "Private · ada, bob" there), the search box, and the button that
shows or hides the member pane."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSizePolicy,
    QWidget,
)

from . import theme
from .private_icons import lock_pixmap

NO_TOPIC = "Add a topic"
TITLE_SCALE = 1.3
STYLE = """
#header { background: palette(base); border-bottom: 1px solid palette(midlight); }
#topicLabel { color: palette(placeholder-text); }
#topicLabel[editable="true"]:hover { color: palette(text); }
"""


class _Topic(QLabel):
    """The topic: its whole text in text(), drawn elided to the room there is; clickable."""

    clicked = Signal()

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.button() == Qt.MouseButton.LeftButton:
            self.clicked.emit()
        super().mouseReleaseEvent(event)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        room = self.contentsRect()
        painter.drawText(room, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter),
                         self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                                       room.width()))


class ChannelHeader(QFrame):
    topicEdited = Signal(str)  # the new topic, Enter pressed in the editor
    searchRequested = Signal(str)
    membersToggled = Signal(bool)  # the member pane should show

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="header")
        theme.styled(self, STYLE)
        self.title = QLabel(objectName="channelHeader")
        self.title.setFont(theme.scaled(self.title.font(), TITLE_SCALE, bold=True))
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.lock = QLabel(objectName="privateLock", toolTip="Private: only its members read it",
                           visible=False)
        self.topic_label = _Topic(objectName="topicLabel")
        self.topic_label.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.topic_label.clicked.connect(self.edit_topic)
        self.topic_bar = QLineEdit(objectName="topicBar", placeholderText="Set a topic")
        self.topic_bar.hide()
        self.topic_bar.returnPressed.connect(self._topic_entered)
        self.topic_bar.editingFinished.connect(self._stop_editing)
        self.search_box = QLineEdit(objectName="searchBox", clearButtonEnabled=True,
                                    placeholderText="Search (Ctrl+F)",
                                    toolTip="Words, \"a phrase\", in:#channel, from:name, "
                                            "before:2026-03-01, after:2026-02-01")
        self.search_box.setMinimumWidth(240)
        self.search_box.setMaximumWidth(360)
        self.search_box.returnPressed.connect(
            lambda: self.searchRequested.emit(self.search_box.text()))
        self.members_button = QPushButton(objectName="membersToggle", checkable=True,
                                          checked=True, flat=True,
                                          toolTip="Show or hide the members")
        self.members_button.toggled.connect(self.membersToggled)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(16, 10, 12, 10)
        layout.setSpacing(12)
        name = QHBoxLayout()
        name.setSpacing(4)  # the lock sits close to the name it marks
        name.addWidget(self.lock)
        name.addWidget(self.title)
        layout.addLayout(name)
        layout.addWidget(self.topic_label, 1)
        layout.addWidget(self.topic_bar, 1)
        self._spacer = QWidget()  # keeps the search box at the right beside a document
        self._spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        self._spacer.hide()
        layout.addWidget(self._spacer, 1)
        layout.addWidget(self.search_box)
        layout.addWidget(self.members_button)
        self._topic = ""
        self._editable = False
        self._shown = False  # set_topic has run since the channel changed

    def show_channel(self, label: str) -> None:
        self.title.setText(f"#{label}")
        self.lock.hide()
        self._shown = False
        self._editable = False  # until the channel's policies are known (set_topic)
        self.topic_label.show()
        self._spacer.hide()
        self.members_button.show()

    def show_private(self, name: str, members: list[str]) -> None:
        """A private channel (or direct messages): its name after a lock, and who is in it
        where the topic goes (private channels have no topics yet)."""
        self._stop_editing()
        self.show_channel(name)
        self.title.setText(name)
        self._draw_lock()
        self.lock.show()
        self._topic, self._editable, self._shown = "", False, True
        line = f"Private · {', '.join(members)}"
        self.topic_label.setText(line)
        self.topic_label.setToolTip(line)
        self.topic_label.setProperty("editable", False)
        self.topic_label.setCursor(Qt.CursorShape.ArrowCursor)
        self.topic_label.style().unpolish(self.topic_label)
        self.topic_label.style().polish(self.topic_label)

    def _draw_lock(self) -> None:
        self.lock.setPixmap(lock_pixmap(self.title.fontMetrics().height(),
                                        self.palette().text().color(), self.devicePixelRatioF()))

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "lock"):
            self._draw_lock()  # the appearance changed: the lock in the new text colour
        super().changeEvent(event)

    @property
    def private_line(self) -> str:
        """What the topic's place shows ("Private · ada, bob" beside a private channel)."""
        return self.topic_label.text()

    def show_place(self, title: str) -> None:
        """What is no channel (Mentions, search results): its title alone, no `#`, no topic
        to read or edit, no members."""
        self._stop_editing()
        self.lock.hide()
        self.title.setText(title)
        self._topic, self._editable, self._shown = "", False, True
        self.topic_label.setText("")
        self.topic_label.hide()
        self._spacer.show()
        self.members_button.hide()

    @property
    def offers_topic(self) -> bool:
        """A click on the header would edit a topic (or the place for one shows)."""
        return self._editable and not self.topic_label.isHidden() or self.topic_bar.isVisible()

    def show_document(self, title: str) -> None:
        self._stop_editing()
        self.lock.hide()
        self.title.setText(title)
        self.topic_label.hide()
        self._spacer.show()
        self.members_button.hide()

    def set_topic(self, topic: str, *, editable: bool) -> None:
        """The channel's topic, and whether a click may edit it (the policies allow me)."""
        if (topic, editable) == (self._topic, self._editable) and self._shown:
            return  # asked again on every reload while a sync streams in: no re-polish
        self._topic, self._editable, self._shown = topic, editable, True
        if not self.topic_bar.hasFocus():
            self.topic_bar.setText(topic)
        self.topic_label.setText(topic or (NO_TOPIC if editable else ""))
        self.topic_label.setToolTip(topic + ("\n(click to edit)" if editable else "")
                                    if topic else "")
        self.topic_label.setProperty("editable", editable)
        self.topic_label.setCursor(Qt.CursorShape.PointingHandCursor if editable
                                   else Qt.CursorShape.ArrowCursor)
        self.topic_label.style().unpolish(self.topic_label)
        self.topic_label.style().polish(self.topic_label)

    @property
    def topic(self) -> str:
        return self._topic

    @property
    def editable(self) -> bool:
        return self._editable

    def edit_topic(self) -> None:
        if not self._editable:
            return
        self.topic_bar.setText(self._topic)
        self.topic_label.hide()
        self.topic_bar.show()
        self.topic_bar.setFocus()
        self.topic_bar.selectAll()

    def _topic_entered(self) -> None:
        text = self.topic_bar.text().strip()
        if text != self._topic:
            self.topicEdited.emit(text)
        self._stop_editing()

    def _stop_editing(self) -> None:
        if self.topic_bar.isVisible():
            self.topic_bar.hide()
            self.topic_label.setVisible(self.members_button.isVisible())

    def set_member_count(self, count: int) -> None:
        self.members_button.setText(f"Members {count}")
