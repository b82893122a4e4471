"""The member pane beside a channel: a heading that collapses it, the channel's members (who
is online first), and, while no peer is connected, what is happening and a button that asks
for the invite dialog. A member's context menu has what `menu_for` adds (ui.moderation: Hide
their posts, Block; ui.private_pane: Message…). Beside a private channel, its creator (or an
admin) also has "Add people…" (`show_add`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QPoint, QSize, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from . import theme
from .avatars import avatar

AVATAR = 22  # px, before the device pixel ratio
NameRole = Qt.ItemDataRole.UserRole + 1  # a member's name as shown, without marks

LOOKING = ("Looking for people on your network…\n\nComputers in this workspace find each "
           "other on the same network. Invite someone with an invite code.")
STYLE = """
#memberPane { background: palette(base); border-left: 1px solid palette(midlight); }
#memberPane QListWidget { background: transparent; border: none; }
#memberHeading { border: none; font-weight: bold; text-align: left; padding: 4px; }
"""


class MemberPane(QFrame):
    inviteRequested = Signal()
    addRequested = Signal()  # "Add people…" (to a private channel)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="memberPane")
        theme.styled(self, STYLE)
        self.heading = QToolButton(objectName="memberHeading", checkable=True, checked=True,
                                   toolButtonStyle=Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.heading.setArrowType(Qt.ArrowType.DownArrow)
        self.heading.toggled.connect(self.set_expanded)
        self.list = QListWidget(objectName="memberList")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setIconSize(QSize(AVATAR, AVATAR))
        self.list.setSpacing(2)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._menu_at)
        # Adds a member's entries to their menu: (menu, key, name); None: no menu.
        self.menu_for: Callable[[QMenu, bytes, str], None] | None = None
        self.looking = QWidget(objectName="emptyState")
        box = QVBoxLayout(self.looking)
        box.setContentsMargins(6, 6, 6, 6)
        self.looking_text = QLabel(LOOKING, wordWrap=True)
        invite = QPushButton("Invite people…", objectName="invitePeople")
        invite.clicked.connect(self.inviteRequested)
        box.addWidget(self.looking_text)
        box.addWidget(invite, 0, Qt.AlignmentFlag.AlignLeft)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 10, 8, 8)
        self.add_people = QPushButton("Add people…", objectName="addPrivateMembers",
                                      visible=False)
        self.add_people.clicked.connect(self.addRequested)
        layout.addWidget(self.heading)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.add_people, 0, Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.looking)
        self._shown: tuple[list, bool] | None = None
        self.set_members([], connected=False)

    def set_expanded(self, expanded: bool) -> None:
        self.heading.setArrowType(Qt.ArrowType.DownArrow if expanded
                                  else Qt.ArrowType.RightArrow)
        self.list.setVisible(expanded)

    def show_add(self, shown: bool) -> None:
        """Whether "Add people…" is offered (a private channel I may change who is in)."""
        self.add_people.setVisible(shown)

    @property
    def expanded(self) -> bool:
        return self.heading.isChecked()

    def set_members(self, rows: Iterable[tuple[bytes, str, bool]], *, connected: bool) -> None:
        """Rows of (key, shown name, online); `connected`: some peer is connected now. Each
        member shows their avatar, and whether they are online now."""
        rows = sorted(rows, key=lambda row: (not row[2], row[1].casefold()))
        if (rows, connected) == self._shown:
            return  # unchanged (a sync streaming in reloads the state again and again)
        self._shown = (rows, connected)
        self.list.clear()
        ratio = self.devicePixelRatioF()
        for key, name, online in rows:
            item = QListWidgetItem(QIcon(avatar(key, AVATAR, ratio)),
                                   f"{name}  {'●' if online else '○'}")
            item.setToolTip(f"{name}\n{'online' if online else 'offline'}\nkey {key.hex()}")
            item.setData(Qt.ItemDataRole.UserRole, key)
            item.setData(NameRole, name.removesuffix(" (you)"))
            if not online:
                item.setForeground(self.palette().placeholderText())
            self.list.addItem(item)
        online = sum(1 for row in rows if row[2])
        self.heading.setText(f"Members · {len(rows)}" + (f"  ({online} online)" if rows else ""))
        self.looking.setVisible(not connected)

    def context_menu(self, item: QListWidgetItem) -> QMenu | None:
        """The menu of a member's row (None when nothing is offered for them)."""
        if self.menu_for is None:
            return None
        menu = QMenu(self)
        self.menu_for(menu, item.data(Qt.ItemDataRole.UserRole), item.data(NameRole))
        if menu.isEmpty():
            menu.deleteLater()
            return None
        return menu

    def _menu_at(self, pos: QPoint) -> None:
        item = self.list.itemAt(pos)
        menu = self.context_menu(item) if item is not None else None
        if menu is not None:
            menu.exec(self.list.viewport().mapToGlobal(pos))
            menu.deleteLater()
