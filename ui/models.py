"""Qt item models over the replica's views. They never read on the GUI thread: every query
runs on the Node's thread through the bridge, and rows arrive by signal."""

from __future__ import annotations

from datetime import datetime
from functools import cache

from PySide6.QtCore import QAbstractListModel, QModelIndex, QPersistentModelIndex, Qt
from PySide6.QtGui import QFont

from storage import ChannelInfo, Message

from .bridge import NodeBridge

PAGE = 100


@cache
def _font(*, bold: bool = False, italic: bool = False) -> QFont:
    """Fonts for rows, made once (data() runs for every row drawn)."""
    font = QFont()
    font.setBold(bold)
    font.setItalic(italic)
    return font
Index = QModelIndex | QPersistentModelIndex


class ChannelListModel(QAbstractListModel):
    def __init__(self, bridge: NodeBridge):
        super().__init__()
        self.bridge = bridge
        self.channels: list[ChannelInfo] = []
        self.unread: dict[str, tuple[int, bool]] = {}  # name -> (count, mentions me)

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.channels)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        channel = self.channels[index.row()]
        count, mention = self.unread.get(channel.name, (0, False))
        if role == Qt.ItemDataRole.DisplayRole:
            badge = f"  ({'@ ' if mention else ''}{count})" if count else ""
            return f"# {channel.name}{badge}"
        if role == Qt.ItemDataRole.FontRole and count:
            return _font(bold=True)
        if role == Qt.ItemDataRole.ToolTipRole:
            return channel.topic or ""
        if role == Qt.ItemDataRole.UserRole:
            return channel.name
        return None

    def refresh(self) -> None:
        ws = self.bridge.node.workspace
        self.bridge.run(lambda: (ws.channels(), ws.replica.unread(ws.key, ws.nickname())),
                        done=self._loaded)

    def total_unread(self) -> int:
        return sum(count for count, _ in self.unread.values())

    def _loaded(self, result) -> None:
        channels, unread = result
        if [(c.name, c.topic) for c in channels] != [(c.name, c.topic) for c in self.channels] \
                or unread != self.unread:
            self.beginResetModel()
            self.channels, self.unread = channels, unread
            self.endResetModel()


class MessageListModel(QAbstractListModel):
    """A channel's messages, newest last; older pages load as the view scrolls up."""

    def __init__(self, bridge: NodeBridge):
        super().__init__()
        self.bridge = bridge
        self.channel: str | None = None
        self.messages: list[Message] = []
        self.me: bytes = b""
        self._more = False
        self._loading = False
        self._generation = 0  # answers for a channel we left are dropped

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.messages)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        message = self.messages[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            when = datetime.fromtimestamp(message.ts / 1000).strftime("%H:%M")
            who = message.nick or "anonymous"
            if message.text.startswith("/me "):
                return f"{when}  * {who} {message.text[4:]}"
            return f"{who} ({message.author.hex()[:6]})  {when}\n{message.text}"
        if role == Qt.ItemDataRole.UserRole:
            return message
        if role == Qt.ItemDataRole.FontRole and message.author == self.me:
            return _font(italic=True)  # my own messages
        return None

    def show_channel(self, channel: str) -> None:
        self._generation += 1
        self.beginResetModel()
        self.channel, self.messages, self._more = channel, [], False
        self.endResetModel()
        self.reload()

    def reload(self) -> None:
        """Re-read the loaded window (plus new messages): sync may add older ones too."""
        if self.channel is None:
            return
        generation, channel = self._generation, self.channel
        limit = max(PAGE, len(self.messages) + PAGE // 2)
        ws = self.bridge.node.workspace
        self.bridge.run(lambda: (ws.read(channel, limit=limit), limit),
                        done=lambda result: self._reloaded(generation, *result))

    def _reloaded(self, generation: int, messages: list[Message], limit: int) -> None:
        if generation != self._generation:
            return
        if [m.id for m in messages] != [m.id for m in self.messages]:
            self.beginResetModel()
            self.messages = messages
            self.endResetModel()
        self._more = len(messages) >= limit

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return not parent.isValid() and self._more and not self._loading

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if not self.messages or self._loading:
            return
        self._loading = True
        generation, channel = self._generation, self.channel
        before = self.messages[0].cursor
        ws = self.bridge.node.workspace
        self.bridge.run(lambda: ws.read(channel, limit=PAGE, before=before),
                        done=lambda older: self._fetched(generation, older))

    def _fetched(self, generation: int, older: list[Message]) -> None:
        self._loading = False
        if generation != self._generation:
            return
        self._more = len(older) >= PAGE
        if older:
            self.beginInsertRows(QModelIndex(), 0, len(older) - 1)
            self.messages[:0] = older
            self.endInsertRows()
