"""The sidebar: the workspace's name, its channels and documents (the open one highlighted),
an empty state while there are no documents, and the data folder's other workspaces."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFont
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from . import theme

NAME_SCALE = 1.2
STYLE = """
#sidebar { background: palette(alternate-base); border-right: 1px solid palette(midlight); }
#sidebar QListView { background: transparent; border: none; outline: 0; }
#sidebar QListView::item { padding: 3px 6px; border-radius: 5px; }
#sidebar QListView::item:hover { background: palette(midlight); }
#sidebar QListView::item:selected { background: palette(highlight);
                                    color: palette(highlighted-text); }
#sectionHeading { color: palette(placeholder-text); font-weight: bold; }
#sidebar QPushButton[add="true"] { border: none; font-weight: bold; padding: 0 6px;
                                   background: transparent; }
#sidebar QPushButton[add="true"]:hover { background: palette(midlight); border-radius: 4px; }
#mentionsButton { border: none; text-align: left; padding: 4px 6px; margin: 6px 0 2px 0;
                  background: transparent; border-radius: 5px; }
#mentionsButton:hover { background: palette(midlight); }
#mentionsButton:checked { background: palette(highlight); color: palette(highlighted-text); }
"""


def _heading(text: str, add: QPushButton | None = None) -> QWidget:
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(6, 10, 0, 2)
    label = QLabel(text.upper(), objectName="sectionHeading")
    font = theme.scaled(label.font(), 0.85)
    font.setLetterSpacing(QFont.SpacingType.PercentageSpacing, 106)
    label.setFont(font)
    layout.addWidget(label, 1)
    if add is not None:
        layout.addWidget(add)
    return row


def _add_button(tip: str, name: str) -> QPushButton:
    button = QPushButton("+", toolTip=tip, accessibleName=name)
    button.setProperty("add", True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return button


def _list(widget: QListView) -> QListView:
    widget.setFrameShape(QFrame.Shape.NoFrame)
    widget.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    widget.setTextElideMode(Qt.TextElideMode.ElideRight)
    widget.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    widget.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    return widget


class Sidebar(QFrame):
    joinChannelRequested = Signal()
    newDocumentRequested = Signal()
    mentionsRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="sidebar")
        theme.styled(self, STYLE)
        self.workspace_name = QLabel(objectName="workspaceName")
        self.workspace_name.setFont(theme.scaled(self.workspace_name.font(), NAME_SCALE,
                                                 bold=True))
        self.channel_list = _list(QListView(objectName="channelList"))
        self.document_list = _list(QListWidget(objectName="documentList"))
        self.workspace_list = _list(QListWidget(objectName="workspaceList"))
        join = _add_button("Join or create a channel", "Join or create a channel")
        join.setObjectName("joinChannel")
        join.clicked.connect(self.joinChannelRequested)
        new = _add_button("New document", "New document")
        new.setObjectName("newDocument")
        new.clicked.connect(self.newDocumentRequested)

        self.mentions = QPushButton("@  Mentions", objectName="mentionsButton", checkable=True,
                                    toolTip="Messages that mention you")
        self.mentions.clicked.connect(self.mentionsRequested)

        self.no_documents = QWidget(objectName="emptyState")
        empty = QVBoxLayout(self.no_documents)
        empty.setContentsMargins(8, 2, 8, 6)
        hint = QLabel("No documents yet. Write one together: everyone here sees it change "
                      "as you type.", wordWrap=True)
        hint.setForegroundRole(hint.foregroundRole())
        start = QPushButton("New document", objectName="emptyNewDocument")
        start.clicked.connect(self.newDocumentRequested)
        empty.addWidget(hint)
        empty.addWidget(start, 0, Qt.AlignmentFlag.AlignLeft)
        self.no_documents.hide()

        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 12, 8, 8)
        layout.setSpacing(0)
        layout.addWidget(self.workspace_name)
        layout.addWidget(self.mentions)
        layout.addWidget(_heading("Channels", join))
        layout.addWidget(self.channel_list, 3)
        layout.addWidget(_heading("Documents", new))
        layout.addWidget(self.document_list, 2)
        layout.addWidget(self.no_documents)
        layout.addWidget(_heading("Workspaces"))
        layout.addWidget(self.workspace_list)

    def set_workspace_name(self, name: str) -> None:
        self.workspace_name.setText(name)
        self.workspace_name.setToolTip(name)

    def show_documents_empty(self, empty: bool) -> None:
        self.no_documents.setVisible(empty)
        self.document_list.setVisible(not empty)
