"""The welcome panel of a first run: pick a nickname, invite others, or join by code.
Non-modal: it sits above the conversation until dismissed."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
)

from .bridge import NodeBridge
from .dialogs import row


class FirstRunPanel(QFrame):
    nicknameSaved = Signal(str)
    joinRequested = Signal(str, str)  # invite code, nickname
    dismissed = Signal()

    def __init__(self, bridge: NodeBridge):
        super().__init__(objectName="firstRunPanel", frameShape=QFrame.Shape.StyledPanel)
        self.bridge = bridge
        heading = QLabel("<b>Welcome to Hearth.</b> Your messages and documents live on this "
                         "computer and sync with the people on your network: no server, no "
                         "account.", wordWrap=True)
        self.nick = QLineEdit(objectName="firstRunNick", placeholderText="How others see you")
        self.nick.returnPressed.connect(self.save_nick)
        save = QPushButton("Save")
        save.clicked.connect(self.save_nick)
        self.invite = QLineEdit(objectName="firstRunInvite", readOnly=True)
        copy = QPushButton("Copy", objectName="copyInvite")
        copy.clicked.connect(self.copy_invite)
        self.code = QLineEdit(objectName="firstRunJoinCode",
                              placeholderText="Paste an invite code from someone's Hearth")
        join = QPushButton("Join")
        join.clicked.connect(self._join)
        self.error = QLabel(objectName="firstRunError", wordWrap=True)
        done = QPushButton("Start chatting", objectName="dismissFirstRun")
        done.clicked.connect(self._dismiss)

        form = QFormLayout()
        form.addRow("Your nickname", row(self.nick, save))
        form.addRow("Invite others", row(self.invite, copy))
        form.addRow("Or join theirs", row(self.code, join))
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addLayout(form)
        layout.addWidget(QLabel("Anyone with the invite code can read and write in this "
                                "workspace: share it only with the people you mean to.",
                                wordWrap=True))
        layout.addWidget(self.error)
        layout.addWidget(done)

        bridge.then(bridge.facade.nickname(), done=self._nick_loaded)
        bridge.then(bridge.facade.invite(), done=self.invite.setText)

    def _nick_loaded(self, nick: str | None) -> None:
        if not self.nick.text():
            self.nick.setText(nick or "")

    def save_nick(self) -> None:
        name = self.nick.text().strip()
        if not name:
            self.error.setText("A nickname needs at least one character.")
            return
        self.bridge.then(self.bridge.facade.nick(name),
                         done=lambda _: self.nicknameSaved.emit(name), failed=self.error.setText)

    def copy_invite(self) -> None:
        QGuiApplication.clipboard().setText(self.invite.text())

    def _join(self) -> None:
        code = self.code.text().strip()
        if not code:
            self.error.setText("Paste the invite code first.")
            return
        self.error.clear()
        self.joinRequested.emit(code, self.nick.text().strip())

    def _dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()

