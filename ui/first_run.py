"""The welcome panel of a first run: pick a nickname, invite others (the invite dialog), or
join by code, through a member's address where the network hides them. Non-modal: it sits
above the conversation until dismissed."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QFrame,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
)

from app.errors import WorkspaceError
from app.joining import parse_peer

from .bridge import NodeBridge
from .dialogs import row


class FirstRunPanel(QFrame):
    nicknameSaved = Signal(str)
    joinRequested = Signal(str, str, str)  # invite code, nickname, member's HOST:PORT or ""
    inviteRequested = Signal()  # open the invite dialog
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
        invite = QPushButton("Invite people…", objectName="firstRunInvite")
        invite.clicked.connect(self.inviteRequested)
        self.code = QLineEdit(objectName="firstRunJoinCode",
                              placeholderText="Paste an invite code")
        self.code.returnPressed.connect(self._join)
        self.address = QLineEdit(objectName="firstRunJoinAddress",
                                 placeholderText="member's HOST:PORT (optional)",
                                 toolTip="Where the network hides other computers: the address "
                                         "of a member's Hearth that can admit you")
        self.address.setFixedWidth(  # room for the whole placeholder, and no more
            self.address.fontMetrics().horizontalAdvance(self.address.placeholderText()) + 24)
        self.address.returnPressed.connect(self._join)
        join = QPushButton("Join")
        join.clicked.connect(self._join)
        self.error = QLabel(objectName="firstRunError", wordWrap=True)
        done = QPushButton("Start chatting", objectName="dismissFirstRun")
        done.clicked.connect(self._dismiss)

        form = QFormLayout()
        form.addRow("Your nickname", row(self.nick, save))
        form.addRow("Invite others", row(invite, stretch=True))
        form.addRow("Or join theirs", row(self.code, self.address, join))
        layout = QVBoxLayout(self)
        layout.addWidget(heading)
        layout.addLayout(form)
        layout.addWidget(QLabel("An invite code admits as many people as you choose, until it "
                                "expires; a member's computer must be online to admit them.",
                                wordWrap=True))
        layout.addWidget(self.error)
        layout.addWidget(done)

        bridge.then(bridge.facade.run(lambda ws: ws.nickname()), done=self._nick_loaded)

    def _nick_loaded(self, nick: str | None) -> None:
        if not self.nick.text():
            self.nick.setText(nick or "")

    def save_nick(self) -> None:
        name = self.nick.text().strip()
        if not name:
            self.error.setText("A nickname needs at least one character.")
            return
        self.bridge.then(self.bridge.facade.run(lambda ws: ws.nick(name).id),
                         done=lambda _: self.nicknameSaved.emit(name), failed=self.error.setText)

    def _join(self) -> None:
        code, address = self.code.text().strip(), self.address.text().strip()
        if not code:
            self.error.setText("Paste the invite code first.")
            return
        if address:
            try:
                parse_peer(address)
            except WorkspaceError as exc:
                self.error.setText(f"That member's address cannot be used: {exc}")
                return
        self.error.clear()
        self.joinRequested.emit(code, self.nick.text().strip(), address)

    def _dismiss(self) -> None:
        self.hide()
        self.dismissed.emit()

