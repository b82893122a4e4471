"""Desktop notifications for mentions while the window is in the background."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon, QWidget

SHOW_MS = 8000


class Notifier(QObject):
    notified = Signal(str, str)  # title, text

    def __init__(self, window: QWidget, icon: QIcon):
        super().__init__(window)
        self.window = window
        self.tray: QSystemTrayIcon | None = None
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(icon, window)
            self.tray.setToolTip("Hearth")
            self.tray.activated.connect(self._bring_forward)
            self.tray.messageClicked.connect(self._bring_forward)
            self.tray.show()

    def notify(self, title: str, text: str) -> None:
        if self.tray is not None and QSystemTrayIcon.supportsMessages():
            self.tray.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, SHOW_MS)
        else:  # no tray here: at least mark the window in the task bar
            QApplication.alert(self.window)
        self.notified.emit(title, text)

    def set_unread(self, count: int) -> None:
        if self.tray is not None:
            self.tray.setToolTip(f"Hearth: {count} unread" if count else "Hearth")

    def _bring_forward(self, *_) -> None:
        self.window.showNormal()
        self.window.raise_()
        self.window.activateWindow()

    def close(self) -> None:
        if self.tray is not None:
            self.tray.hide()
