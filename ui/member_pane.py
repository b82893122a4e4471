"""The member pane beside a channel: a heading that collapses it, the channel's members (who
is online first), and, while no peer is connected, what is happening and how to invite."""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QFrame,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from . import theme

LOOKING = ("Looking for people on your network…\n\nComputers in this workspace find each "
           "other on the same network. Invite someone with the workspace's invite code.")
STYLE = """
#memberPane { background: palette(base); border-left: 1px solid palette(midlight); }
#memberPane QListWidget { background: transparent; border: none; }
#memberHeading { border: none; font-weight: bold; text-align: left; padding: 4px; }
"""


class MemberPane(QFrame):
    inviteRequested = Signal()

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
        layout.addWidget(self.heading)
        layout.addWidget(self.list, 1)
        layout.addWidget(self.looking)
        self.set_members([], connected=False)

    def set_expanded(self, expanded: bool) -> None:
        self.heading.setArrowType(Qt.ArrowType.DownArrow if expanded
                                  else Qt.ArrowType.RightArrow)
        self.list.setVisible(expanded)

    @property
    def expanded(self) -> bool:
        return self.heading.isChecked()

    def set_members(self, rows: Iterable[tuple[str, str, bool]], *, connected: bool) -> None:
        """Rows of (shown name, tooltip, online); `connected`: some peer is connected now."""
        rows = sorted(rows, key=lambda row: (not row[2], row[0].casefold()))
        self.list.clear()
        for name, tip, online in rows:
            item = QListWidgetItem(f"{'●' if online else '○'}  {name}")
            item.setToolTip(tip)
            if not online:
                item.setForeground(self.palette().placeholderText())
            self.list.addItem(item)
        online = sum(1 for row in rows if row[2])
        self.heading.setText(f"Members · {len(rows)}" + (f"  ({online} online)" if rows else ""))
        self.looking.setVisible(not connected)
