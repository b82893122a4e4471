"""The Members dialog: the workspace's member directory. Each member is known by a signed
admission (app/membership.py), so each row says who admitted them, how and when; it is read
again whenever objects arrive, while the dialog is open. "Invite people…" asks the window for
the invite dialog. The dialog is deleted when it closes: answers that come back later are
dropped."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.membership import MemberRecord

from . import _rows, theme
from .avatars import avatar
from .bridge import NodeBridge

AVATAR = 32  # px, before the device pixel ratio
RELOAD_MS = 100  # a burst of arriving objects reads the members once
KeyRole = Qt.ItemDataRole.UserRole  # a row's member key
STYLE = """
#memberDirectory { background: palette(base); }
#memberDirectory::item { border-bottom: 1px solid palette(midlight); }
#adminBadge { color: palette(highlight); border: 1px solid palette(highlight);
              border-radius: 4px; padding: 0 4px; }
"""


def member_name(member: MemberRecord, names: Mapping[bytes, str]) -> str:
    """The nickname as the member list shows it, or the key's first characters."""
    return names.get(member.key) if member.nick else member.key.hex()[:8]


def _day(ms: int) -> str:
    day = _rows.day_label(ms)
    return day.lower() if day in ("Today", "Yesterday") else day


def admission(member: MemberRecord, names: Mapping[bytes, str]) -> str:
    """"admitted by ada with an invite, today", "… with a personal code, 3 Mar", or
    "created the workspace, …" for its creator."""
    if member.admitted_by is None:
        return f"created the workspace, {_day(member.since_ms)}"
    by = names.get(member.admitted_by) or member.admitted_by.hex()[:8]
    how = "with a personal code" if member.invite is None else "with an invite"
    return f"admitted by {by} {how}, {_day(member.since_ms)}"


class MemberRow(QWidget):
    """A member's avatar, name, "(you)", an Admin badge, and how they were admitted."""

    def __init__(self, member: MemberRecord, name: str, detail: str, me: bool, ratio: float):
        super().__init__(objectName="memberRow")
        picture = QLabel()
        picture.setPixmap(avatar(member.key, AVATAR, ratio))
        self.name = QLabel(f"{name} (you)" if me else name, objectName="memberName")
        self.name.setTextFormat(Qt.TextFormat.PlainText)
        self.name.setFont(theme.scaled(self.name.font(), 1.0, bold=True))
        self.badge = QLabel("Admin", objectName="adminBadge", visible=member.admin)
        self.badge.setFont(theme.scaled(self.badge.font(), 0.85))
        self.detail = QLabel(detail, objectName="memberAdmission")
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.detail.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        heading = QHBoxLayout()
        heading.setSpacing(8)
        heading.addWidget(self.name)
        heading.addWidget(self.badge)
        heading.addStretch(1)
        text = QVBoxLayout()
        text.setSpacing(1)
        text.addLayout(heading)
        text.addWidget(self.detail)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(8, 6, 8, 6)
        layout.setSpacing(10)
        layout.addWidget(picture, 0, Qt.AlignmentFlag.AlignTop)
        layout.addLayout(text, 1)
        self.setToolTip(f"key {member.key.hex()}")

    def text(self) -> str:
        """The row as one line: "ada (you) · Admin · created the workspace, today"."""
        parts = [self.name.text(), "Admin" if not self.badge.isHidden() else "",
                 self.detail.text()]
        return " · ".join(part for part in parts if part)


class MembersDialog(QDialog):
    """One row per member, oldest first, and Invite people…."""

    inviteRequested = Signal()
    listed = Signal()  # the rows show what the library answered

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(parent, objectName="membersDialog")
        self.bridge = bridge
        self._closed = False
        self.finished.connect(lambda _: setattr(self, "_closed", True))
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle("Members")
        theme.styled(self, STYLE)
        self.count = QLabel(objectName="memberCount")
        self.list = QListWidget(objectName="memberDirectory")
        self.list.setSelectionMode(QListWidget.SelectionMode.NoSelection)
        self.list.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        note = QLabel("Everyone here was admitted by a member, who signed their admission; "
                      "every member's computer holds the same list.", wordWrap=True)
        note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        invite = QPushButton("Invite people…", objectName="invitePeople")
        invite.clicked.connect(self.inviteRequested)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.addButton(invite, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.count)
        layout.addWidget(self.list, 1)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(480, 420)

        self._reload = QTimer(self, singleShot=True, interval=RELOAD_MS)
        self._reload.timeout.connect(self.reload)
        bridge.objectsAdded.connect(self._reload.start)  # admissions, nicknames, admins
        self.reload()

    def reload(self) -> None:
        self.bridge.then(self.bridge.facade.workspace_members(),
                         done=lambda members: None if self._closed else self._show(members))

    def _show(self, members: list[MemberRecord]) -> None:
        # Lookalike nicknames get a key suffix, as in the member pane.
        shown = _rows.member_names((m.key, m.nick) for m in members)
        names = {m.key: member_name(m, shown) for m in members}
        me, ratio = self.bridge.facade.key, self.devicePixelRatioF()
        self.list.clear()
        for member in members:
            row = MemberRow(member, names[member.key], admission(member, names),
                            member.key == me, ratio)
            item = QListWidgetItem()
            item.setData(KeyRole, member.key)
            item.setData(Qt.ItemDataRole.AccessibleTextRole, row.text())
            item.setSizeHint(row.sizeHint().expandedTo(QSize(0, AVATAR + 12)))
            self.list.addItem(item)
            self.list.setItemWidget(item, row)
        count = len(members)
        self.count.setText(f"<b>{count} member{'s' if count != 1 else ''}</b> in this "
                           "workspace")
        self.listed.emit()

    def rows(self) -> list[str]:
        """Each row as one line (MemberRow.text), oldest member first."""
        return [self.list.itemWidget(self.list.item(i)).text()
                for i in range(self.list.count())]
