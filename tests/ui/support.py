"""Helpers of the window tests (their fixtures are in tests/ui/conftest.py)."""

from __future__ import annotations

import os
from dataclasses import dataclass

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QObject, Qt, QUrl, Slot  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402

from app.node import Node  # noqa: E402
from app.records import Message  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.message_view import MessageView  # noqa: E402
from ui.models import MessageListModel  # noqa: E402

WAIT_MS = 20_000  # generous: latency belongs in the benchmarks


def result(future):
    """What a facade call answers (tests may wait; the window never does)."""
    return future.result(WAIT_MS / 1000)


def texts(win: MainWindow) -> list[str]:
    return [m.text for m in win.messages.messages]


def type_and_send(qtbot, win: MainWindow, text: str) -> None:
    win.composer.setPlainText(text)
    qtbot.keyClick(win.composer, Qt.Key.Key_Return)


class UrlCatcher(QObject):
    """Collects the links the app asked the desktop to open (`url_catcher`)."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    @Slot(QUrl)
    def capture(self, url: QUrl) -> None:
        self.urls.append(url.toString())


# A message view alone (`board`) ------------------------------------------------------------------

BOB = b"\xb0" * 32
NOON = 1_709_640_000_000


def message(text: str, n: int = 0, author: bytes = BOB, **fields) -> Message:
    return Message(bytes([n + 1]) * 32, "general", author, "bob", NOON + n * 1000, text,
                   **fields)


@dataclass
class Board:
    """A message view (no window) on ada's computer, alone."""

    qtbot: object
    node: Node
    model: MessageListModel
    view: MessageView

    def post(self, *texts: str) -> list:
        """Post `texts` to #general and show them; the indexes of their rows."""
        for text in texts:
            result(self.node.facade.run(lambda ws, text=text: ws.post("general", text).id))
        self.model.show_channel("general")
        self.qtbot.waitUntil(lambda: [m.text for m in self.model.messages][-len(texts):]
                             == list(texts) and self.laid_out(), timeout=WAIT_MS)
        return [self.model.index(self.model.rowCount() - len(texts) + i)
                for i in range(len(texts))]

    def show(self, messages: list[Message]) -> list:
        """Show these records (not the channel's); the indexes of their rows."""
        self.model.set_messages(messages, "general")
        self.qtbot.waitUntil(self.laid_out, timeout=WAIT_MS)
        return [self.model.index(i) for i in range(len(messages))]

    def show_texts(self, *texts: str, author: bytes = BOB) -> list:
        """Show messages of these texts by `author` (delivered: drawn at full strength)."""
        return self.show([message(text, n, author) for n, text in enumerate(texts)])

    def laid_out(self) -> bool:
        count = self.model.rowCount()
        return count == 0 or self.view.visualRect(self.model.index(count - 1)).isValid()

    def image(self) -> QImage:
        return self.view.viewport().grab().toImage()
