"""The thread pane beside a channel: a thread's first message and its replies, and a composer
that replies there (and, when asked, in the channel too)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.records import Message

from . import theme
from .bridge import NodeBridge
from .composer import Composer
from .message_view import MessageView
from .models import MessageListModel

STYLE = """
#threadPane { background: palette(base); border-left: 1px solid palette(midlight); }
#threadClose { border: none; font-size: 14pt; padding: 0 6px; }
"""


class ThreadPane(QFrame):
    """Open with `open(message_id)`; the window calls `reload` when objects arrive (coalesced
    with its own reload, as for the channel)."""

    closed = Signal()
    loaded = Signal()  # the thread's messages are shown (after every read)

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(parent, objectName="threadPane")
        theme.styled(self, STYLE)
        self.bridge = bridge
        self.root: bytes | None = None
        self.channel: str | bytes | None = None

        self.title = QLabel("Thread", objectName="threadTitle")
        self.title.setFont(theme.scaled(self.title.font(), 1.15, bold=True))
        self.where = QLabel(objectName="threadChannel")
        self.where.setTextFormat(Qt.TextFormat.PlainText)
        self.where.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        close = QToolButton(objectName="threadClose", text="×", toolTip="Close the thread")
        close.clicked.connect(self.close_thread)
        heading = QHBoxLayout()
        heading.addWidget(self.title)
        heading.addWidget(self.where, 1)
        heading.addWidget(close)

        self.model = MessageListModel(bridge)
        self.view = MessageView(self.model)
        self.view.setObjectName("threadMessages")
        self.view.setFrameShape(QFrame.Shape.NoFrame)
        self.view.show_reply_counts = False  # the pane is the thread
        self.composer = Composer(objectName="threadComposer")
        self.composer.setFixedHeight(64)
        self.composer.setPlaceholderText("Reply…")
        self.composer.submitted.connect(self.reply)
        self.also = QCheckBox("Also send to the channel", objectName="alsoChannel")

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 10, 8, 8)
        layout.addLayout(heading)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.composer)
        layout.addWidget(self.also)

    def open(self, message_id: bytes) -> None:
        """Show the thread of `message_id` (a reply stands for its thread)."""
        self.root = message_id
        self.model.set_messages([])
        self.show()
        self.reload()
        self.composer.setFocus()

    def close_thread(self) -> None:
        self.root = None
        self.hide()
        self.closed.emit()

    def reload(self) -> None:
        if self.root is None or self.isHidden():
            return
        root = self.root
        self.bridge.then(self.bridge.facade.run(lambda ws: ws.conversation.thread(root)),
                         done=lambda messages: self._loaded(root, messages),
                         failed=lambda message: self._gone(root, message))

    def _loaded(self, root: bytes, messages: list[Message]) -> None:
        if root != self.root:
            return
        if messages:
            self.root = messages[0].id  # a reply opened the thread: its first message is the root
            first = messages[0]
            # What arrivals name: a private channel's id, a public one's name.
            self.channel = first.private if first.private is not None else first.channel
            where = first.channel if first.private is not None else f"#{first.channel}"
            self.where.setText(where)
            self.also.setText(f"Also send to {where}")
            count = len(messages) - 1
            self.title.setText("Thread" if not count else
                               f"Thread · {count} {'reply' if count == 1 else 'replies'}")
        self.model.set_messages(messages, None)
        self.loaded.emit()

    def _gone(self, root: bytes, message: str) -> None:
        """The thread's first message was deleted (or never arrived): say so."""
        if root == self.root:
            self.model.set_messages([])
            self.title.setText("Thread")
            self.where.setText(message)
            self.loaded.emit()

    def reply(self, text: str) -> None:
        if self.root is None or not text.strip():
            return
        root, broadcast = self.root, self.also.isChecked()
        self.bridge.then(self.bridge.facade.run(
                             lambda ws: ws.conversation.reply(root, text, broadcast=broadcast).id),
                         done=lambda _: self.reload())
        self.also.setChecked(False)
