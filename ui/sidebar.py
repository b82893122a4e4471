"""The sidebar: the workspace's name, its channels (the private ones I am in below the others,
each with a lock), direct messages by the other person's name, documents (the open one
highlighted), an empty state while there are no documents, and the data folder's other
workspaces. The channel lists are as tall as their rows (up to MAX_CHANNEL_ROWS, then they
scroll), so private channels sit right under the public ones."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt, Signal
from PySide6.QtGui import QFont, QGuiApplication, QIcon
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QListView,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.records import UNREAD_CAP, PrivateChannel

from . import theme
from .avatars import avatar
from .private_icons import lock_icon

NAME_SCALE = 1.2
MAX_CHANNEL_ROWS = 12  # a channel list taller than this scrolls
ICON = 16  # px: the lock of a private channel, the avatar of a direct message
PrivateRole = Qt.ItemDataRole.UserRole  # a private channel's id
NameRole = Qt.ItemDataRole.UserRole + 1  # its name, without the unread badge the text has
MutedRole = Qt.ItemDataRole.UserRole + 2  # shown dimmed: muted here
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


def _heading(text: str, *buttons: QPushButton) -> QWidget:
    row = QWidget()
    layout = QHBoxLayout(row)
    layout.setContentsMargins(6, 10, 0, 2)
    label = QLabel(text.upper(), objectName="sectionHeading")
    font = theme.scaled(label.font(), 0.85)
    font.setLetterSpacing(QFont.SpacingType.PercentageSpacing, 106)
    label.setFont(font)
    layout.addWidget(label, 1)
    for button in buttons:
        layout.addWidget(button)
    return row


def _add_button(tip: str, name: str) -> QPushButton:
    button = QPushButton("+", toolTip=tip, accessibleName=name)
    button.setProperty("add", True)
    button.setCursor(Qt.CursorShape.PointingHandCursor)
    button.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
    return button


def _fitted_height(view: QListView) -> int:
    """The height of a list's rows, at most MAX_CHANNEL_ROWS of them, and its frame."""
    model = view.model()
    rows = min(model.rowCount() if model is not None else 0, MAX_CHANNEL_ROWS)
    return sum(view.sizeHintForRow(row) for row in range(rows)) + 2 * view.frameWidth()


class FittedList(QListView):
    """A list as tall as its rows (at most MAX_CHANNEL_ROWS of them), whatever model it is
    given."""

    def setModel(self, model) -> None:  # noqa: N802 (Qt's name)
        super().setModel(model)
        for signal in (model.modelReset, model.rowsInserted, model.rowsRemoved,
                       model.layoutChanged):
            signal.connect(self.updateGeometry)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(super().sizeHint().width(), _fitted_height(self))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(0, min(_fitted_height(self), 3 * max(self.sizeHintForRow(0), 0)))


class FittedListWidget(QListWidget):
    """A QListWidget as tall as its rows (at most MAX_CHANNEL_ROWS of them)."""

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(super().sizeHint().width(), _fitted_height(self))

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return QSize(0, min(_fitted_height(self), 3 * max(self.sizeHintForRow(0), 0)))


def _fitted(widget: QListView) -> QListView:
    widget.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
    return _list(widget)


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
    newPrivateRequested = Signal()  # "New private channel…"
    directMessageRequested = Signal()  # "Message someone…"
    privateChosen = Signal(bytes)  # a private channel or direct messages clicked: its id

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="sidebar")
        self._unread: dict[bytes, tuple[int, bool]] = {}  # set_unread's, kept for new rows
        self._muted: frozenset[str | bytes] = frozenset()  # likewise
        theme.styled(self, STYLE)
        self.workspace_name = QLabel(objectName="workspaceName")
        self.workspace_name.setFont(theme.scaled(self.workspace_name.font(), NAME_SCALE,
                                                 bold=True))
        self.channel_list = _fitted(FittedList(objectName="channelList"))
        self.private_list = _fitted(FittedListWidget(objectName="privateList"))
        self.dm_list = _fitted(FittedListWidget(objectName="directMessages"))
        for rows in (self.private_list, self.dm_list):
            rows.setIconSize(QSize(ICON, ICON))
            rows.itemClicked.connect(lambda item: self.privateChosen.emit(item.data(PrivateRole)))
            rows.hide()  # until there is one
        self.document_list = _list(QListWidget(objectName="documentList"))
        self.workspace_list = _list(QListWidget(objectName="workspaceList"))
        join = _add_button("Join or create a channel", "Join or create a channel")
        join.setObjectName("joinChannel")
        join.clicked.connect(self.joinChannelRequested)
        private = _add_button("New private channel…", "New private channel")
        private.setText("")
        private.setObjectName("newPrivateChannel")
        self.new_private = private
        private.clicked.connect(self.newPrivateRequested)
        message = _add_button("Message someone…", "Message someone")
        message.setObjectName("newDirectMessage")
        message.clicked.connect(self.directMessageRequested)
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
        layout.addWidget(_heading("Channels", private, join))
        layout.addWidget(self.channel_list)
        layout.addWidget(self.private_list)
        layout.addWidget(_heading("Direct messages", message))
        layout.addWidget(self.dm_list)
        layout.addWidget(_heading("Documents", new))
        layout.addWidget(self.document_list, 1)
        layout.addWidget(self.no_documents)
        layout.addWidget(_heading("Workspaces"))
        layout.addWidget(self.workspace_list)
        self._recolor()

    def set_workspace_name(self, name: str) -> None:
        self.workspace_name.setText(name)
        self.workspace_name.setToolTip(name)

    def show_documents_empty(self, empty: bool) -> None:
        self.no_documents.setVisible(empty)
        self.document_list.setVisible(not empty)

    def show_private(self, channels: list[PrivateChannel], me: bytes) -> None:
        """My private channels (with a lock) under the public ones, and my direct messages
        under their heading, by the other person's name, oldest first."""
        ratio, lock = self.devicePixelRatioF(), self._lock()
        for rows, dm in ((self.private_list, False), (self.dm_list, True)):
            mine = [c for c in channels if c.dm == dm]
            shown = [(rows.item(i).data(PrivateRole), rows.item(i).data(NameRole))
                     for i in range(rows.count())]
            if shown == [(c.id, c.name) for c in mine]:
                continue
            selected = self.selected_private()
            rows.clear()
            for channel in mine:
                other = next((key for key in channel.members if key != me), me)
                icon = QIcon(avatar(other, ICON, ratio)) if dm else lock
                item = QListWidgetItem(icon, channel.name)
                item.setData(PrivateRole, channel.id)
                item.setData(NameRole, channel.name)
                item.setToolTip(f"Direct messages with {channel.name}: only the two of you "
                                "read them" if dm else
                                f"{channel.name}: a private channel, only its members read it")
                rows.addItem(item)
            rows.setVisible(bool(mine))
            rows.updateGeometry()
            self.select_private(selected)
        self.set_unread(self._unread)

    def set_unread(self, unread: dict[bytes, tuple[int, bool]],
                   muted: frozenset[str | bytes] | None = None) -> None:
        """Unread counts of the private channels and direct messages listed (the facade's, as
        the channels' are): "launch  (@ 2)" in bold while something is unread; a muted one
        dimmed, as a muted channel is."""
        self._unread = dict(unread)
        if muted is not None:
            self._muted = muted
        dimmed = QGuiApplication.palette().placeholderText()
        for rows in (self.private_list, self.dm_list):
            for i in range(rows.count()):
                item = rows.item(i)
                quiet = item.data(PrivateRole) in self._muted
                if (item.data(MutedRole) or False) != quiet:
                    item.setData(MutedRole, quiet)
                    item.setForeground(dimmed if quiet else rows.palette().text())
                count, mention = self._unread.get(item.data(PrivateRole), (0, False))
                text = item.data(NameRole) + (
                    f"  ({'@ ' if mention else ''}{'999+' if count >= UNREAD_CAP else count})"
                    if count else "  (@)" if mention else "")  # a muted one's mention
                if item.text() != text:
                    item.setText(text)
                    font = item.font()
                    font.setBold(bool(count or mention))
                    item.setFont(font)

    def unread_shown(self) -> dict[bytes, str]:
        """What each private channel's and direct messages' row shows (tests read it)."""
        return {rows.item(i).data(PrivateRole): rows.item(i).text()
                for rows in (self.private_list, self.dm_list) for i in range(rows.count())}

    def select_private(self, channel: bytes | None) -> None:
        """Highlight this private channel (None: none of them)."""
        for rows in (self.private_list, self.dm_list):
            for i in range(rows.count()):
                item = rows.item(i)
                item.setSelected(item.data(PrivateRole) == channel)

    def selected_private(self) -> bytes | None:
        for rows in (self.private_list, self.dm_list):
            for item in rows.selectedItems():
                return item.data(PrivateRole)
        return None

    def _lock(self) -> QIcon:
        palette = self.palette()
        return lock_icon(palette.text().color(), ICON, palette.highlightedText().color())

    def _recolor(self) -> None:
        """The locks in the palette's colours (again, when the appearance changes)."""
        self.new_private.setIcon(lock_icon(self.palette().placeholderText().color(), 14))
        lock = self._lock()
        for i in range(self.private_list.count()):
            self.private_list.item(i).setIcon(lock)

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.PaletteChange and hasattr(self, "new_private"):
            self._recolor()
        super().changeEvent(event)
