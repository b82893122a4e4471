"""The Members dialog: the workspace's member directory. Each member is known by a signed
admission (app/membership.py), so each row says who admitted them, how and when; below, those
removed, by whom, when and why. Both are read again whenever objects arrive, while the dialog
is open. An admin's rows have Remove… (never on the creator's or their own), which says what a
removal means and asks for an optional reason before the library removes anyone; its refusals
are shown in the dialog. "Invite people…" asks the window for the invite dialog. The dialog is
deleted when it closes: answers that come back later are dropped."""

from __future__ import annotations

from collections.abc import Mapping

from PySide6.QtCore import QSize, Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.records import MemberRecord, RemovalRecord

from . import _rows, theme
from .avatars import avatar
from .bridge import NodeBridge, WhileOpen

AVATAR = 32  # px, before the device pixel ratio
RELOAD_MS = 100  # a burst of arriving objects reads the members once
MAX_REASON = 256  # codepoints, as core.kinds.MAX_REASON (the library refuses longer ones)
CONFIRM_WIDTH = 400  # px: the confirmation's text, wrapped
REMOVED_ROWS = 3  # the Removed list's height, in rows, before it scrolls
KeyRole = Qt.ItemDataRole.UserRole  # a row's member key
STYLE = """
#memberDirectory, #removedMembers { background: palette(base); }
#memberDirectory::item, #removedMembers::item { border-bottom: 1px solid palette(midlight); }
#adminBadge { color: palette(highlight); border: 1px solid palette(highlight);
              border-radius: 4px; padding: 0 4px; }
"""


def member_name(member: MemberRecord | RemovalRecord, names: Mapping[bytes, str]) -> str:
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


def removal(record: RemovalRecord, names: Mapping[bytes, str]) -> str:
    """"removed by ada, today: left the company" (no reason: no colon)."""
    by = names.get(record.by) or record.by.hex()[:8]
    reason = f": {record.reason}" if record.reason else ""
    return f"removed by {by}, {_day(record.at_ms)}{reason}"


def removable(member: MemberRecord, me: bytes, admin: bool) -> bool:
    """Whether my rows offer Remove… for `member`: I am an admin, and they are neither the
    workspace's creator nor me (the library refuses both)."""
    return admin and member.admitted_by is not None and member.key != me


def consequences(name: str) -> str:
    """What removing `name` means, in the confirmation's words."""
    return (f"{name}'s computer will be refused from now on. What they wrote so far stays; "
            "anything they write from now on is shown to no one. The workspace moves to a new "
            "secret, which everyone else's computer receives. Invites "
            f"{name} made stop working.\n\n"
            "This cannot be undone (you can invite them again).")


class MemberRow(QWidget):
    """A member's avatar, name, "(you)", an Admin badge, a line of detail (how they were
    admitted, or removed), and Remove… when `remove` is given."""

    def __init__(self, key: bytes, name: str, detail: str, ratio: float, *, me: bool = False,
                 admin: bool = False, remove: QPushButton | None = None):
        super().__init__(objectName="memberRow")
        picture = QLabel()
        picture.setPixmap(avatar(key, AVATAR, ratio))
        self.name = QLabel(f"{name} (you)" if me else name, objectName="memberName")
        self.name.setTextFormat(Qt.TextFormat.PlainText)
        self.name.setFont(theme.scaled(self.name.font(), 1.0, bold=True))
        self.badge = QLabel("Admin", objectName="adminBadge", visible=admin)
        self.badge.setFont(theme.scaled(self.badge.font(), 0.85))
        self.detail = QLabel(detail, objectName="memberAdmission")
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.detail.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.remove = remove
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
        if remove is not None:
            layout.addWidget(remove, 0, Qt.AlignmentFlag.AlignVCenter)
        self.setToolTip(f"key {key.hex()}")

    def text(self) -> str:
        """The row as one line: "ada (you) · Admin · created the workspace, today"."""
        parts = [self.name.text(), "Admin" if not self.badge.isHidden() else "",
                 self.detail.text()]
        return " · ".join(part for part in parts if part)


class RemoveDialog(QDialog):
    """Asks before a removal: what it means, and an optional reason (everyone can read it).
    `confirmed` carries the reason ("" for none) when Remove is clicked."""

    confirmed = Signal(str)

    def __init__(self, name: str, parent: QWidget | None = None):
        super().__init__(parent, objectName="confirmRemove")
        self.setWindowTitle("Remove member")
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.question = QLabel(f"Remove {name} from the workspace?", wordWrap=True,
                               objectName="removeQuestion")
        self.question.setTextFormat(Qt.TextFormat.PlainText)
        self.question.setFont(theme.scaled(self.question.font(), 1.1, bold=True))
        self.explanation = QLabel(consequences(name), wordWrap=True,
                                  objectName="removeConsequences")
        self.explanation.setTextFormat(Qt.TextFormat.PlainText)
        self.explanation.setMinimumWidth(CONFIRM_WIDTH)  # wrapped lines get their height
        self.reason = QLineEdit(objectName="removeReason", maxLength=MAX_REASON)
        self.reason.setPlaceholderText("Why")
        caption = QLabel("Reason (optional; every member can read it):", wordWrap=True)
        caption.setBuddy(self.reason)
        caption.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        buttons = QDialogButtonBox()
        self.remove = buttons.addButton("Remove", QDialogButtonBox.ButtonRole.DestructiveRole)
        self.remove.setObjectName("confirmRemoveButton")
        self.cancel = buttons.addButton(QDialogButtonBox.StandardButton.Cancel)
        for button in (self.remove, self.cancel):
            button.setAutoDefault(False)  # Enter after a reason neither removes nor cancels
        self.remove.clicked.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.question)
        layout.addWidget(self.explanation)
        layout.addSpacing(4)
        layout.addWidget(caption)
        layout.addWidget(self.reason)
        layout.addWidget(buttons)

    def accept(self) -> None:
        self.confirmed.emit(self.reason.text().strip())
        super().accept()


class MembersDialog(WhileOpen, QDialog):
    """One row per member, oldest first, those removed, newest first, and Invite people…."""

    inviteRequested = Signal()
    listed = Signal()  # the rows show what the library answered
    removed = Signal(bytes)  # the library removed this member, asked from here

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(parent, objectName="membersDialog")
        self.bridge = bridge
        self.admin = False  # as my own member record said at the last reload
        self._removing: set[bytes] = set()  # asked of the library, not answered yet
        self._watch_closing()
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle("Members")
        theme.styled(self, STYLE)
        self.count = QLabel(objectName="memberCount")
        self.list = self._list("memberDirectory")
        self.removed_label = QLabel(objectName="removedCount", visible=False)
        self.removed_list = self._list("removedMembers")
        self.removed_list.setVisible(False)
        self.error = QLabel(objectName="membersError", wordWrap=True, visible=False)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
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
        layout.addWidget(self.removed_label)
        layout.addWidget(self.removed_list)
        layout.addWidget(self.error)
        layout.addWidget(note)
        layout.addWidget(buttons)
        self.resize(520, 440)

        self._reload = QTimer(self, singleShot=True, interval=RELOAD_MS)
        self._reload.timeout.connect(self.reload)
        bridge.membershipChanged.connect(self._reload.start)  # admissions, removals
        bridge.nicknamesChanged.connect(self._reload.start)
        self.reload()

    @staticmethod
    def _list(name: str) -> QListWidget:
        rows = QListWidget(objectName=name)
        rows.setSelectionMode(QListWidget.SelectionMode.NoSelection)
        rows.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        rows.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        return rows

    def _say(self, message: str) -> None:
        """Why something could not be done (the library's words); "" hides the line."""
        self.error.setText(message)
        self.error.setVisible(bool(message))

    _refused = _say

    # The lists --------------------------------------------------------------------------------

    def reload(self) -> None:
        run = self.bridge.facade.run
        self._then(run(lambda ws: ws.members.all()),
                   done=lambda members: self._then(
                       run(lambda ws: ws.members.removed()),
                       done=lambda removed: self._show(members, removed)))

    def _show(self, members: list[MemberRecord], removed: list[RemovalRecord]) -> None:
        # Lookalike nicknames get a key suffix, as in the member pane.
        shown = _rows.member_names((m.key, m.nick) for m in [*members, *removed])
        names = {m.key: member_name(m, shown) for m in [*members, *removed]}
        me, ratio = self.bridge.facade.key, self.devicePixelRatioF()
        self.admin = any(m.key == me and m.admin for m in members)
        self.list.clear()
        for member in members:
            name = names[member.key]
            remove = None
            if removable(member, me, self.admin):
                remove = QPushButton("Remove…", objectName="removeMember", autoDefault=False,
                                     enabled=member.key not in self._removing)
                remove.setToolTip(f"Remove {name} from the workspace")
                remove.clicked.connect(
                    lambda _=False, key=member.key, name=name: self.confirm_remove(key, name))
            self._add(self.list, MemberRow(member.key, name, admission(member, names), ratio,
                                           me=member.key == me, admin=member.admin,
                                           remove=remove), member.key)
        count = len(members)
        self.count.setText(f"<b>{count} member{'s' if count != 1 else ''}</b> in this "
                           "workspace")
        self.removed_list.clear()
        for record in removed:
            row = MemberRow(record.key, names[record.key], removal(record, names), ratio)
            row.setToolTip(f"key {record.key.hex()}\nremoved {_rows.full_time(record.at_ms)}")
            self._add(self.removed_list, row, record.key)
        self.removed_label.setText(f"<b>Removed</b> ({len(removed)})")
        self.removed_label.setVisible(bool(removed))
        self.removed_list.setVisible(bool(removed))
        if removed:
            height = self.removed_list.sizeHintForRow(0) * min(len(removed), REMOVED_ROWS)
            self.removed_list.setFixedHeight(height + 2 * self.removed_list.frameWidth())
        self.listed.emit()

    @staticmethod
    def _add(rows: QListWidget, row: MemberRow, key: bytes) -> None:
        item = QListWidgetItem()
        item.setData(KeyRole, key)
        item.setData(Qt.ItemDataRole.AccessibleTextRole, row.text())
        item.setSizeHint(row.sizeHint().expandedTo(QSize(0, AVATAR + 12)))
        rows.addItem(item)
        rows.setItemWidget(item, row)

    def rows(self) -> list[str]:
        """Each member's row as one line (MemberRow.text), oldest member first."""
        return self._texts(self.list)

    def removed_rows(self) -> list[str]:
        """Each removed member's row as one line ("carol · removed by ada, today: …"),
        newest removal first."""
        return self._texts(self.removed_list)

    @staticmethod
    def _texts(rows: QListWidget) -> list[str]:
        return [rows.itemWidget(rows.item(i)).text() for i in range(rows.count())]

    def remove_button(self, key: bytes) -> QPushButton | None:
        """The Remove… button of `key`'s row (None: not offered, or no such row)."""
        for i in range(self.list.count()):
            if self.list.item(i).data(KeyRole) == key:
                return self.list.itemWidget(self.list.item(i)).remove
        return None

    # Removing ---------------------------------------------------------------------------------

    def confirm_remove(self, key: bytes, name: str) -> RemoveDialog:
        """Ask, then remove `key`; the window-modal dialog is returned."""
        dialog = RemoveDialog(name, self)
        dialog.confirmed.connect(lambda reason: self.remove(key, name, reason))
        dialog.open()
        return dialog

    def remove(self, key: bytes, name: str, reason: str = "") -> None:
        """Remove `key` (admins; the library's refusal is shown in the dialog)."""
        self._say("")
        self._removing.add(key)
        button = self.remove_button(key)
        if button is not None:
            button.setEnabled(False)
        self._then(self.bridge.facade.remove_member(key, reason),
                   done=lambda _: self._removed(key),
                   failed=lambda message: self._refused(key, name, message))

    def _removed(self, key: bytes) -> None:
        self._removing.discard(key)
        self.removed.emit(key)
        self.reload()

    def _refused(self, key: bytes, name: str, message: str) -> None:
        self._removing.discard(key)
        self._say(f"Could not remove {name}: {message}")
        self.reload()
