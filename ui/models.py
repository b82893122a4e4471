"""Qt item models over the replica's views. They never read on the GUI thread: every query is
a facade call that runs on the Node's thread, and rows arrive through the bridge."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, datetime
from functools import cache

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QPersistentModelIndex,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QFont

from app.records import UNREAD_CAP, ChannelInfo, ChannelList, ChannelName, Message

from . import _rows
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
        # name -> how it shows: two channels whose names look alike (a Cyrillic е in
        # "gеneral") each get a stream suffix and a warning
        self.names: dict[str, ChannelName] = {}

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.channels)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        channel = self.channels[index.row()]
        count, mention = self.unread.get(channel.name, (0, False))
        if role == Qt.ItemDataRole.DisplayRole:
            shown = "999+" if count >= UNREAD_CAP else str(count)
            badge = f"  ({'@ ' if mention else ''}{shown})" if count else ""
            return f"# {self.label(channel.name)}{badge}"
        if role == Qt.ItemDataRole.FontRole and count:
            return _font(bold=True)
        if role == Qt.ItemDataRole.ToolTipRole:
            name = self.names.get(channel.name)
            warning = f"#{name.label} {name.warning}" if name and name.warning else ""
            return "\n".join(part for part in (warning, channel.topic or "") if part)
        if role == Qt.ItemDataRole.UserRole:
            return channel.name
        return None

    def label(self, name: str) -> str:
        """A channel's name as the list shows it: with " ·" and a stream suffix, and a ⚠, when
        another channel's name looks like it."""
        shown = self.names.get(name)
        if shown is None or not shown.lookalikes:
            return name
        return f"{shown.label} \N{WARNING SIGN}"

    def refresh(self) -> None:
        self.bridge.then(self.bridge.facade.channels(), done=self._loaded)

    def total_unread(self) -> int:
        return sum(count for count, _ in self.unread.values())

    def _loaded(self, result: ChannelList) -> None:
        channels, unread, names = result.channels, result.unread, result.names
        if channels != self.channels or unread != self.unread:
            self.beginResetModel()
            self.channels, self.unread, self.names = channels, unread, names
            self.endResetModel()


# MessageListModel's roles: what the delegate draws, and what tests read.
MessageRole = int(Qt.ItemDataRole.UserRole)  # the Message (app.records)
HeaderRole = MessageRole + 1  # bool: first of a burst, shows avatar, nickname and time
NameRole = MessageRole + 2  # str: the nickname, with a key suffix if two authors share it
MineRole = MessageRole + 3  # bool: written with this computer's identity
PendingRole = MessageRole + 4  # bool: no peer has received it yet
BodyRole = MessageRole + 5  # str: the text shown ("* ada waves" for "/me waves")
LinksRole = MessageRole + 6  # list[_rows.Link] of BodyRole's text
TimeRole = MessageRole + 7  # str: the clock time a header shows, "14:03"
DayRole = MessageRole + 8  # str for a row that starts a local day ("Today", ...), else None


class MessageListModel(QAbstractListModel):
    """A channel's messages, newest last; older pages load as the view scrolls up.

    Besides each Message it answers how a row shows: whether it starts a group (one header per
    burst of one author) or a local day (a separator labelled "Today", "Yesterday", a date),
    the author's name (told apart by a key suffix when two authors share a nickname), whether
    it is mine, and whether it is still pending (no peer has it yet; refreshed in place when
    the bridge says something was delivered). Day labels follow the clock: at local midnight
    (or when a test sets `today`) every row's labels are refreshed in place."""

    loadedChanged = Signal()  # the channel's first read came back (`loaded`), or a new one began

    def __init__(self, bridge: NodeBridge):
        super().__init__()
        self.bridge = bridge
        self.channel: str | None = None
        self.messages: list[Message] = []
        self.me: bytes = bridge.facade.key
        self.loaded = False  # the channel's first read has come back (an empty one too)
        # The view may veto fetches it did not ask for (Qt fetches when the *last* row shows,
        # but a chat's older messages are above the first).
        self.fetch_gate: Callable[[], bool] | None = None
        self._starts: list[bool] = []  # per row: shows the header
        self._days: list[bool] = []  # per row: the first of its local day
        self._names = _rows.NickIndex()
        self._pending: frozenset[bytes] = frozenset()
        self._more = False
        self._loading = False
        self._generation = 0  # answers for a channel we left are dropped
        self._today: date | None = None  # None: the clock's
        # Fires at the next local midnight. Precise: a coarse timer may fire 5% early, which
        # is an hour on a 20-hour wait.
        self.midnight = QTimer(self, singleShot=True, timerType=Qt.TimerType.PreciseTimer)
        self.midnight.timeout.connect(self._new_day)
        self._arm_midnight()
        bridge.delivered.connect(self.refresh_pending)

    # Reading rows ------------------------------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.messages)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or index.row() >= len(self.messages):
            return None
        row = index.row()
        message = self.messages[row]
        role = int(role)
        if role == MessageRole:
            return message
        if role == Qt.ItemDataRole.DisplayRole or role == Qt.ItemDataRole.AccessibleTextRole:
            name = self._names.name(message)
            if _rows.is_emote(message):
                return _rows.body_text(message, name)
            sending = "  sending…" if message.id in self._pending else ""
            return (f"{name}  {_rows.time_label(message.ts, self.today())}{sending}\n"
                    f"{message.text}")
        if role == HeaderRole:
            return self._starts[row]
        if role == NameRole:
            return self._names.name(message)
        if role == MineRole:
            return message.author == self.me
        if role == PendingRole:
            return message.id in self._pending
        if role == BodyRole:
            return _rows.body_text(message, self._names.name(message))
        if role == LinksRole:
            return _rows.links(_rows.body_text(message, self._names.name(message)))
        if role == TimeRole:
            return _rows.clock(message.ts)
        if role == DayRole:
            return _rows.day_label(message.ts, self.today()) if self._days[row] else None
        if role == Qt.ItemDataRole.ToolTipRole:
            pending = "\nsending… (no peer has it yet)" if message.id in self._pending else ""
            return (f"{_rows.nick_of(message)} ({message.author.hex()[:12]})\n"
                    f"{_rows.full_time(message.ts)}{pending}")
        return None

    def row(self, row: int) -> tuple[Message, bool, str, bool, bool]:
        """(message, shows header, display name, mine, pending): all a row draws, in one call."""
        message = self.messages[row]
        return (message, self._starts[row], self._names.name(message), message.author == self.me,
                message.id in self._pending)

    def starts_day(self, row: int) -> bool:
        """Whether row `row` is the first of its local day (a separator shows above it)."""
        return self._days[row]

    def day_label(self, row: int) -> str:
        """The label of row `row`'s day ("Today", "Yesterday", "Tue 5 Mar", "24 Dec 2023")."""
        return _rows.day_label(self.messages[row].ts, self.today())

    # The day -----------------------------------------------------------------------------------

    def today(self) -> date:
        return self._today or date.today()

    def set_today(self, today: date | None) -> None:
        """Label days as seen on `today` (tests); None follows the clock again."""
        self._today = today
        self._relabel()

    def _new_day(self) -> None:
        self._relabel()
        self._arm_midnight()

    def _arm_midnight(self) -> None:
        # Re-armed every night: a timer for tomorrow would drift across DST and suspends.
        self.midnight.start(_rows.ms_until_next_day(datetime.now()) + 500)

    def _relabel(self) -> None:
        if self.messages:  # labels only: row heights do not change
            self.dataChanged.emit(self.index(0), self.index(len(self.messages) - 1),
                                  [DayRole, Qt.ItemDataRole.DisplayRole,
                                   Qt.ItemDataRole.AccessibleTextRole])

    def is_pending(self, row: int) -> bool:
        return self.messages[row].id in self._pending

    def shows_header(self, row: int) -> bool:
        return self._starts[row]

    def display_name(self, row: int) -> str:
        return self._names.name(self.messages[row])

    def is_mine(self, row: int) -> bool:
        return self.messages[row].author == self.me

    def row_of(self, message_id: bytes) -> int | None:
        """The row showing `message_id` (searched from the newest end), or None."""
        for row in range(len(self.messages) - 1, -1, -1):
            if self.messages[row].id == message_id:
                return row
        return None

    # Loading -----------------------------------------------------------------------------------

    def show_channel(self, channel: str) -> None:
        self._generation += 1
        self.beginResetModel()
        self.channel, self._more, self.loaded = channel, False, False
        self._set_messages([])
        self.endResetModel()
        self.loadedChanged.emit()
        self.reload()

    def _set_messages(self, messages: list[Message]) -> None:
        self.messages = messages
        self._starts = _rows.group_starts(messages)
        self._days = _rows.day_starts(messages)
        self._names = _rows.NickIndex(messages)
        self._pending = self.bridge.facade.pending()

    def reload(self) -> None:
        """Re-read the loaded window (plus new messages): sync may add older ones too."""
        if self.channel is None:
            return
        generation, channel = self._generation, self.channel
        limit = max(PAGE, len(self.messages) + PAGE // 2)
        self.bridge.then(self.bridge.facade.read(channel, limit=limit),
                         done=lambda messages: self._reloaded(generation, messages, limit))

    def _reloaded(self, generation: int, messages: list[Message], limit: int) -> None:
        if generation != self._generation:
            return
        self._more = len(messages) >= limit  # before the reset: the view may fetch on it
        # A nickname change shows too (same ids, new names), not only new and deleted posts.
        if [(m.id, m.nick) for m in messages] != [(m.id, m.nick) for m in self.messages]:
            self.beginResetModel()
            self._set_messages(messages)
            self.endResetModel()
        else:
            self.refresh_pending()
        if not self.loaded:
            self.loaded = True
            self.loadedChanged.emit()

    def canFetchMore(self, parent: Index = QModelIndex()) -> bool:  # noqa: B008
        return (not parent.isValid() and self._more and not self._loading
                and (self.fetch_gate is None or self.fetch_gate()))

    def fetchMore(self, parent: Index = QModelIndex()) -> None:  # noqa: B008
        if not self.messages or self._loading:
            return
        self._loading = True
        generation, channel = self._generation, self.channel
        before = self.messages[0].cursor
        self.bridge.then(self.bridge.facade.read(channel, limit=PAGE, before=before),
                         done=lambda older: self._fetched(generation, older),
                         failed=lambda message: self._fetch_failed(generation, message))

    def _fetch_failed(self, generation: int, message: str) -> None:
        self._loading = False
        if generation == self._generation:
            self.bridge.failed.emit(message)

    def _fetched(self, generation: int, older: list[Message]) -> None:
        self._loading = False
        if generation != self._generation:
            return
        self._more = len(older) >= PAGE
        if older:
            self.beginInsertRows(QModelIndex(), 0, len(older) - 1)
            starts = _rows.group_starts(older)
            days = _rows.day_starts(older)
            if self.messages:  # the old first row may now continue the last older one
                self._starts[0] = _rows.starts_group(older[-1], self.messages[0])
                self._days[0] = _rows.starts_day(older[-1], self.messages[0])
            self.messages[:0] = older
            self._starts[:0] = starts
            self._days[:0] = days
            self._names.add(older)  # a clash found in history renames rows below too
            self._pending = self.bridge.facade.pending()
            self.endInsertRows()

    # Pending marks -----------------------------------------------------------------------------

    def refresh_pending(self) -> None:
        """Re-read facade.pending() and repaint the rows whose mark changed (no reset)."""
        pending = self.bridge.facade.pending()
        changed = pending ^ self._pending
        self._pending = pending
        if not changed or not self.messages:
            return
        rows = [row for row, message in enumerate(self.messages) if message.id in changed]
        # One dataChanged per run of adjacent rows (a burst of sends is delivered together).
        runs: list[list[int]] = []
        for row in rows:
            if runs and runs[-1][1] == row - 1:
                runs[-1][1] = row
            else:
                runs.append([row, row])
        for first, last in runs:
            self.dataChanged.emit(self.index(first), self.index(last), [PendingRole])
