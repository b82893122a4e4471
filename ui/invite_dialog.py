"""The Invite people dialog: make an invite (how many people, for how long) and copy its code,
or a personal code for one person's key; below, the workspace's invites and what became of
them, with Revoke for the open ones.

An invite is a signed object (app/membership.py), so a code is made only when the person
clicks Create; the list and its states come from the library (ws.members.invites) and are read
again whenever objects arrive. The dialog is deleted when it closes: answers that come back
later are dropped."""

from __future__ import annotations

import time

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QSpinBox,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.records import InviteRecord

from . import _rows
from .bridge import NodeBridge, WhileOpen
from .dialogs import row

MAX_PEOPLE = 100
HOUR_S = 3600
EXPIRY = (("1 hour", HOUR_S), ("24 hours", 24 * HOUR_S), ("7 days", 7 * 24 * HOUR_S),
          ("never", 0))
DEFAULT_EXPIRY = "7 days"
KEY_SIZE = 32  # bytes of an identity key
RELOAD_MS = 100  # a burst of arriving objects reads the list once

INVITE_NOTE = ("The code holds no secret of the workspace: a member's computer must be online "
               "to admit the person (on their network, through one of the workspace's relays, "
               "or at an address they give).")
PERSONAL_NOTE = ("This code admits only the person whose key it was made for, with no member "
                 "online: they are a member from now on.")
EMPTY = "No invites yet."
BAD_KEY = ("That is not an identity key: a key is 64 hexadecimal characters (their Settings "
           "show it as Your key).")
InviteRole = Qt.ItemDataRole.UserRole  # a row's InviteRecord
STATE, USED, EXPIRES, MADE_BY, ACTION = range(5)


def used_text(invite: InviteRecord) -> str:
    """"used 1 of 3", or "used 2 (any number)" for an invite without a limit."""
    if invite.uses:
        return f"used {invite.used} of {invite.uses}"
    return f"used {invite.used} (any number)"


def expiry_text(invite: InviteRecord) -> str:
    return _rows.time_label(invite.expires_ms) if invite.expires_ms else "never"


class InviteDialog(WhileOpen, QDialog):
    """Create an invite (its code, with Copy), a personal code, and the invites list."""

    created = Signal(str)  # a code was made (an invite's or a personal one)
    listed = Signal()  # the invites list shows what the library answered
    revoked = Signal()  # an invite was revoked (the library said so)

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(parent, objectName="inviteDialog")
        self.bridge, self.facade = bridge, bridge.facade
        self._names: dict[bytes, str] = {}
        self._watch_closing()
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle("Invite people")

        self.people = QSpinBox(objectName="inviteUses", minimum=1, maximum=MAX_PEOPLE, value=1,
                               suffix=" person")
        self.people.valueChanged.connect(
            lambda n: self.people.setSuffix(" person" if n == 1 else " people"))
        self.any_number = QCheckBox("Any number", objectName="inviteAnyNumber")
        self.any_number.toggled.connect(lambda on: self.people.setEnabled(not on))
        self.expiry = QComboBox(objectName="inviteExpiry")
        for label, seconds in EXPIRY:
            self.expiry.addItem(label, seconds)
        self.expiry.setCurrentIndex(self.expiry.findText(DEFAULT_EXPIRY))
        # No button is a default: Enter in the key field must not make an invite too.
        self.create = QPushButton("Create invite code", objectName="createInvite",
                                  autoDefault=False)
        self.create.clicked.connect(self.create_invite)
        self.code = QLineEdit(objectName="inviteCode", readOnly=True,
                              placeholderText="The code appears here")
        self.copy = QPushButton("Copy", objectName="copyInvite", enabled=False,
                                autoDefault=False)
        self.copy.clicked.connect(self.copy_code)
        self.note = QLabel(INVITE_NOTE, objectName="inviteNote", wordWrap=True)
        self.note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.key = QLineEdit(objectName="personalKey",
                             placeholderText="Their identity key (from their Settings)")
        self.key.returnPressed.connect(self.personal_code)
        personal = QPushButton("Make personal code", objectName="makePersonalCode",
                               autoDefault=False)
        personal.clicked.connect(self.personal_code)
        self.error = QLabel(objectName="inviteError", wordWrap=True, visible=False)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.list = self._invite_list()
        self.empty = QLabel(EMPTY, objectName="invitesEmpty")
        self.empty.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.button(QDialogButtonBox.StandardButton.Close).setAutoDefault(False)
        close.rejected.connect(self.reject)

        form = QFormLayout()
        form.addRow("How many people", row(self.people, self.any_number, stretch=True))
        form.addRow("Expires after", row(self.expiry, stretch=True))
        form.addRow("", row(self.create, stretch=True))
        code = QVBoxLayout()
        code.setSpacing(4)
        code.addLayout(row(self.code, self.copy))
        code.addWidget(self.note)
        form.addRow("Code", code)
        form.addRow("Or for one person", row(self.key, personal))
        layout = QVBoxLayout(self)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addSpacing(8)
        layout.addWidget(QLabel("<b>Invites</b>"))
        layout.addWidget(self.list, 1)
        layout.addWidget(self.empty)
        layout.addWidget(close)
        self.resize(640, 480)
        self.create.setFocus()

        self._reload = QTimer(self, singleShot=True, interval=RELOAD_MS)
        self._reload.timeout.connect(self.reload)
        bridge.membershipChanged.connect(self._reload.start)  # admissions, revocations, invites
        self.reload()

    def _invite_list(self) -> QTreeWidget:
        tree = QTreeWidget(objectName="inviteList", rootIsDecorated=False,
                           uniformRowHeights=True)
        tree.setHeaderLabels(["State", "Used", "Expires", "Made by", ""])
        tree.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        tree.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        header = tree.header()
        header.setStretchLastSection(False)
        for column in (STATE, USED, EXPIRES, ACTION):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(MADE_BY, QHeaderView.ResizeMode.Stretch)
        return tree

    def _say(self, message: str) -> None:
        """Why something could not be done (the library's words); "" hides the line."""
        self.error.setText(message)
        self.error.setVisible(bool(message))

    _refused = _say

    # Making codes ---------------------------------------------------------------------------

    def choice(self) -> tuple[int, int]:
        """(uses, expires_ms) as chosen: 0 uses is any number, 0 expires_ms is never."""
        uses = 0 if self.any_number.isChecked() else self.people.value()
        seconds = self.expiry.currentData()
        return uses, (int(time.time() * 1000) + seconds * 1000 if seconds else 0)

    def create_invite(self) -> None:
        """A new invite (a signed object everyone's computer will hold) and its code."""
        uses, expires_ms = self.choice()
        self._say("")
        self.create.setEnabled(False)
        self._then(self.facade.run(lambda ws: ws.members.invite(uses=uses, expires_ms=expires_ms)[0]),
                   done=lambda code: self._show_code(code, INVITE_NOTE),
                   failed=self._create_failed)

    def _create_failed(self, message: str) -> None:
        self.create.setEnabled(True)
        self._say(message)

    def personal_code(self) -> None:
        """A personal code for the key typed (it admits that person now)."""
        text = "".join(self.key.text().split())
        try:
            key = bytes.fromhex(text)
        except ValueError:
            key = b""
        if len(key) != KEY_SIZE:
            self._say(BAD_KEY)
            return
        self._say("")
        self._then(self.facade.run(lambda ws: ws.members.invite_for(key)),
                   done=lambda code: self._show_code(code, PERSONAL_NOTE))

    def _show_code(self, code: str, note: str) -> None:
        self.create.setEnabled(True)
        self.code.setText(code)
        self.code.setCursorPosition(0)
        self.copy.setEnabled(True)
        self.note.setText(note)
        self.created.emit(code)
        self.reload()

    def copy_code(self) -> None:
        QGuiApplication.clipboard().setText(self.code.text())

    # The invites ----------------------------------------------------------------------------

    def reload(self) -> None:
        self._then(self.facade.run(lambda ws: ws.nicknames()), done=self._named)

    def _named(self, names: dict[bytes, str]) -> None:
        self._names = names
        self._then(self.facade.run(lambda ws: ws.members.invites()), done=self._show_invites)

    def _made_by(self, invite: InviteRecord) -> str:
        who = ("you" if invite.creator == self.facade.key
               else self._names.get(invite.creator) or invite.creator.hex()[:8])
        return f"{who}, {_rows.time_label(invite.created_ms)}"

    def _show_invites(self, invites: list[InviteRecord]) -> None:
        """Newest first; open ones with Revoke, the others dimmed."""
        self.list.clear()
        now_ms = int(time.time() * 1000)
        dim = self.palette().placeholderText()
        for invite in invites:
            state = invite.state(now_ms)
            item = QTreeWidgetItem([state, used_text(invite), expiry_text(invite),
                                    self._made_by(invite), ""])
            item.setData(STATE, InviteRole, invite)
            item.setToolTip(STATE, f"invite {invite.id.hex()}")
            self.list.addTopLevelItem(item)
            if state == "open":
                revoke = QPushButton("Revoke", objectName="revokeInvite", autoDefault=False)
                revoke.clicked.connect(lambda _=False, i=invite: self.confirm_revoke(i))
                self.list.setItemWidget(item, ACTION, revoke)
            else:
                for column in range(ACTION):
                    item.setForeground(column, dim)
        self.empty.setVisible(not invites)
        self.list.setVisible(bool(invites))
        self.listed.emit()

    def rows(self) -> list[tuple[str, str, str, str]]:
        """What the list shows: (state, used, expires, made by) of each invite, newest first."""
        return [tuple(self.list.topLevelItem(i).text(c) for c in range(ACTION))
                for i in range(self.list.topLevelItemCount())]

    def invite_at(self, row: int) -> InviteRecord:
        return self.list.topLevelItem(row).data(STATE, InviteRole)

    def revoke_button(self, row: int) -> QPushButton | None:
        """The Revoke button of a row (None: the invite is not open)."""
        widget = self.list.itemWidget(self.list.topLevelItem(row), ACTION)
        return widget if isinstance(widget, QPushButton) else None

    def confirm_revoke(self, invite: InviteRecord) -> QMessageBox:
        """Ask, then revoke `invite`; the window-modal box is returned."""
        box = QMessageBox(QMessageBox.Icon.Question, "Revoke invite", "Revoke this invite?",
                          parent=self, objectName="confirmRevoke")
        box.setInformativeText(f"Its code ({used_text(invite)}, made by "
                               f"{self._made_by(invite)}) admits no one from now on. Those it "
                               "admitted already stay members.")
        revoke = box.addButton("Revoke", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda button: self.revoke(invite)
                                  if button is revoke else None)
        box.open()
        return box

    def revoke(self, invite: InviteRecord) -> None:
        """Revoke `invite` (its creator or an admin may; the library's refusal is shown)."""
        self._say("")
        ref = invite.id.hex()
        self._then(self.facade.run(lambda ws: ws.members.revoke_invite(ref)),
                   done=lambda _: (self.revoked.emit(), self.reload()))
