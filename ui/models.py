"""Qt item models over the replica's views. They never read on the GUI thread: every query is
a facade call that runs on the Node's thread, and rows arrive through the bridge."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
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
from PySide6.QtGui import QFont, QGuiApplication

from app.channel_list import channel_list
from app.records import UNREAD_CAP, ChannelInfo, ChannelList, ChannelName, Message

from . import _files, _rows
from .bridge import NodeBridge

PAGE = 100
# Older pages grow with what is loaded, up to this: scrolling through a long history takes
# dozens of reads and relayouts, not thousands.
MAX_PAGE = 3200
NOT_KEPT_TIP = "Not kept on this computer"


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
        # a private channel's or direct messages' id -> (count, mentions me); the sidebar's
        # lists under the channels show them (Sidebar.set_unread)
        self.private_unread: dict[bytes, tuple[int, bool]] = {}
        self.muted: frozenset[str | bytes] = frozenset()  # conversations muted here
        # name -> how it shows: two channels whose names look alike (a Cyrillic е in
        # "gеneral") each get a stream suffix and a warning
        self.names: dict[str, ChannelName] = {}
        # Whether a channel (by name) is kept on this computer; those not kept show dimmed
        # (the window sets it to ui/kept_channels.py's KeptChannels.is_kept, and calls
        # `restyle` when the set changes).
        self.kept: Callable[[str], bool] = lambda name: True

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self.channels)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid():
            return None
        channel = self.channels[index.row()]
        count, mention = self.unread.get(channel.name, (0, False))
        if role == Qt.ItemDataRole.DisplayRole:
            shown = "999+" if count >= UNREAD_CAP else str(count)
            badge = f"  ({'@ ' if mention else ''}{shown})" if count else "  (@)" if mention else ""
            return f"# {self.label(channel.name)}{badge}"
        if role == Qt.ItemDataRole.FontRole and (count or mention):
            return _font(bold=True)
        if role == Qt.ItemDataRole.ForegroundRole and (not self.kept(channel.name)
                                                       or channel.name in self.muted):
            return QGuiApplication.palette().placeholderText()  # dimmed in light and dark
        if role == Qt.ItemDataRole.ToolTipRole:
            name = self.names.get(channel.name)
            warning = f"#{name.label} {name.warning}" if name and name.warning else ""
            kept = "" if self.kept(channel.name) else NOT_KEPT_TIP
            muted = "Muted: no unread count, mentions still marked" \
                if channel.name in self.muted else ""
            return "\n".join(part for part in (warning, channel.topic or "", kept, muted)
                             if part)
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
        self.bridge.then(self.bridge.facade.run(channel_list), done=self._loaded)

    def restyle(self) -> None:
        """Which channels are kept changed: rows dim or brighten in place."""
        if self.channels:
            self.dataChanged.emit(self.index(0), self.index(len(self.channels) - 1),
                                  [Qt.ItemDataRole.ForegroundRole, Qt.ItemDataRole.ToolTipRole])

    def total_unread(self) -> int:
        """Every conversation's unread messages: channels, private channels, direct messages."""
        return (sum(count for count, _ in self.unread.values())
                + sum(count for count, _ in self.private_unread.values()))

    def _loaded(self, result: ChannelList) -> None:
        channels, unread, names = result.channels, result.unread, result.names
        if (channels != self.channels or unread != self.unread
                or result.private_unread != self.private_unread or result.muted != self.muted):
            self.beginResetModel()
            self.channels, self.unread, self.names = channels, unread, names
            self.private_unread, self.muted = result.private_unread, result.muted
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
EditedRole = MessageRole + 9  # bool: the text was edited ("(edited)" shows after it)
ReactionsRole = MessageRole + 10  # list[Chip]: the reaction chips under the text
RepliesRole = MessageRole + 11  # str: "3 replies" under a thread's first message, else None
ThreadRole = MessageRole + 12  # bytes: the thread a reply shown in the channel belongs to
MentionsRole = MessageRole + 13  # list[_rows.Mention] in BodyRole's text
MentionsMeRole = MessageRole + 14  # bool: someone else's message that mentions me
HiddenRole = MessageRole + 15  # bool: a moderator hid it (only a moderator's list has it)
# What changes in a row when its message is edited, reacted to, replied to, hidden or shown
# again (dataChanged).
CONTENT_ROLES = [MessageRole, BodyRole, LinksRole, EditedRole, ReactionsRole, RepliesRole,
                 ThreadRole, MentionsRole, MentionsMeRole, HiddenRole,
                 int(Qt.ItemDataRole.DisplayRole), int(Qt.ItemDataRole.AccessibleTextRole),
                 int(Qt.ItemDataRole.ToolTipRole)]


@dataclass(frozen=True, slots=True)
class Chip:
    """A reaction under a message, as its chip shows it."""

    emoji: str
    count: int
    mine: bool  # I am among those who reacted: the chip is highlighted
    label: str  # "👍 2"
    tooltip: str  # "You and ada reacted with :thumbs_up:"


class MessageListModel(QAbstractListModel):
    """A channel's messages, newest last; older pages load as the view scrolls up.

    Besides each Message it answers how a row shows: whether it starts a group (one header per
    burst of one author) or a local day (a separator labelled "Today", "Yesterday", a date),
    the author's name (told apart by a key suffix when two authors share a nickname), whether
    it is mine, and whether it is still pending (no peer has it yet; refreshed in place when
    the bridge says something was delivered). Day labels follow the clock: at local midnight
    (or when a test sets `today`) every row's labels are refreshed in place.

    A re-read that brings the same messages with new fields (an edit, a reaction, a reply, a
    hide) updates those rows in place (dataChanged with CONTENT_ROLES), never a reset, so the
    view keeps its place. Any list of Messages can be shown with `set_messages` (a thread's).

    A channel is read with the posts moderators hid (ws.read(hidden=True)): the Node
    answers with them, marked Message.hidden, only when I moderate the channel, so a
    moderator's list shows them (HiddenRole) and everyone else's does not. Whether I do is
    decided there at each read, so a role given or taken away counts at the next reload."""

    loadedChanged = Signal()  # the channel's first read came back (`loaded`), or a new one began
    mentionsChanged = Signal()  # the nicknames that mentions name changed: rows restyle
    rowsChanging = Signal(list)  # these rows get new fields now (dataChanged follows)

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
        self.nicknames: dict[bytes, str] = {}  # every known key's nickname (set_nicknames)
        self._authors: dict[bytes, str] = {}  # the loaded messages' authors' nicknames
        self.mentions = _rows.MentionFinder()
        self.mention_generation = 0  # grows with every change of `mentions`
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
            note = f"{_rows.HIDDEN_NOTE}\n" if message.hidden else ""
            if _rows.is_emote(message):
                return note + _rows.body_text(message, name)
            sending = "  sending…" if message.id in self._pending else ""
            return (f"{name}  {_rows.time_label(message.ts, self.today())}{sending}\n"
                    f"{note}{message.text}{self._extras(message)}")
        if role == HeaderRole:
            return self._starts[row]
        if role == NameRole:
            return self._names.name(message)
        if role == MineRole:
            return message.author == self.me and message.origin is None
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
        if role == EditedRole:
            return message.edited
        if role == ReactionsRole:
            return self.chips(message)
        if role == RepliesRole:
            return _rows.replies_label(message.replies) \
                if message.replies and message.reply_to is None else None
        if role == ThreadRole:
            return message.reply_to
        if role == MentionsRole:
            return self.mentions.find(_rows.body_text(message, self._names.name(message)),
                                      self.mention_skip(message))
        if role == MentionsMeRole:
            return self.mentions_me(message)
        if role == HiddenRole:
            return message.hidden
        if role == Qt.ItemDataRole.ToolTipRole:
            pending = "\nsending… (no peer has it yet)" if message.id in self._pending else ""
            hidden = f"\n{_rows.HIDDEN_TIP}" if message.hidden else ""
            return (f"{_rows.nick_of(message)} ({message.author.hex()[:12]})\n"
                    f"{_rows.full_time(message.ts)}{pending}{hidden}")
        return None

    def _extras(self, message: Message) -> str:
        """What a row shows besides its text, in words (read aloud): "(edited)", the reactions,
        the files, the reply count."""
        parts = []
        if message.edited:
            parts.append(" (edited)")
        if message.reactions:
            parts.append("\n" + ", ".join(_rows.chip_label(r) for r in message.reactions))
        if message.files:
            parts.append("\n" + ", ".join(_files.describe(f) for f in message.files))
        if message.replies and message.reply_to is None:
            parts.append("\n" + _rows.replies_label(message.replies))
        return "".join(parts)

    def chips(self, message: Message) -> list[Chip]:
        names = self.names_by_key()
        return [Chip(r.emoji, r.count, self.me in r.by, _rows.chip_label(r),
                     _rows.reaction_tooltip(r, names, self.me)) for r in message.reactions]

    def names_by_key(self) -> dict[bytes, str]:
        """How people are named in tooltips: every known nickname (set_nicknames) and the
        loaded authors', with a key suffix where two look alike."""
        known = {**self._authors, **self.nicknames}
        return _rows.member_names(known.items())

    def mention_skip(self, message: Message) -> int:
        """How much of BodyRole's text is the author's name ("* ada " of a /me row), which is
        never a mention."""
        return len(self._names.name(message)) + 3 if _rows.is_emote(message) else 0

    def mentions_me(self, message: Message) -> bool:
        """Someone else's message naming me (my own never does)."""
        if message.author == self.me:
            return False
        text = _rows.body_text(message, self._names.name(message))
        return any(m.me for m in self.mentions.find(text, self.mention_skip(message)))

    def my_nick(self) -> str | None:
        # Until the window says, how my loaded messages name me.
        return self.nicknames.get(self.me) or self._authors.get(self.me)

    def set_nicknames(self, nicknames: Mapping[bytes, str]) -> None:
        """Every known key's nickname (Workspace.nicknames): who mentions name, and how
        reactions' tooltips name people."""
        self.nicknames = dict(nicknames)
        self._update_mentions()

    def _update_mentions(self) -> None:
        finder = _rows.MentionFinder({*self.nicknames.values(), *self._authors.values()},
                                     self.my_nick())
        if finder == self.mentions:
            return
        self.mentions = finder
        self.mention_generation += 1
        if self.messages:
            self.dataChanged.emit(self.index(0), self.index(len(self.messages) - 1),
                                  [MentionsRole, MentionsMeRole])
        self.mentionsChanged.emit()

    def row(self, row: int) -> tuple[Message, bool, str, bool, bool]:
        """(message, shows header, display name, mine, pending): all a row draws, in one call."""
        message = self.messages[row]
        # an imported message is signed by its importer, but it is not "(you)" who wrote it
        return (message, self._starts[row], self._names.name(message),
                message.author == self.me and message.origin is None,
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
        self._authors = {m.author: m.nick for m in messages if m.nick}
        self._pending = self.bridge.facade.pending()

    def set_messages(self, messages: Iterable[Message], channel: str | None = None) -> None:
        """Show these messages (oldest first) instead of a channel's pages: a thread, say.
        The same messages again with new fields update their rows in place."""
        self._generation += 1  # a channel read still under way must not replace these
        self.channel, self._more = channel, False
        self._take(list(messages))
        if not self.loaded:
            self.loaded = True
            self.loadedChanged.emit()

    def _take(self, messages: list[Message]) -> None:
        """Show `messages`: in place when they are the rows shown, with new fields, and new
        messages after them inserted below; else by a reset. A nickname change resets too
        (same ids, new names), and so does a newcomer whose nickname looks like a shown one."""
        shown = len(self.messages)
        keys = [(m.id, m.nick) for m in messages]
        if not shown or keys[:shown] != [(m.id, m.nick) for m in self.messages]:
            self._reset(messages)
            return
        changed = [row for row, (old, new) in enumerate(zip(self.messages, messages[:shown],
                                                             strict=True)) if old != new]
        if changed:
            self.rowsChanging.emit(changed)
        for row in changed:
            self.messages[row] = messages[row]
        for first, last in _runs(changed):
            self.dataChanged.emit(self.index(first), self.index(last), CONTENT_ROLES)
        if len(messages) > shown:
            self._append(messages[shown:])
        self.refresh_pending()

    def _reset(self, messages: list[Message]) -> None:
        self.beginResetModel()
        self._set_messages(messages)
        self.endResetModel()
        self._update_mentions()

    def _append(self, added: list[Message]) -> None:
        """New messages below the shown ones: inserted, so nothing above is measured again."""
        if self._names.add(added):  # a lookalike nickname renames shown rows
            self._reset(self.messages + added)
            return
        last = self.messages[-1]
        self.beginInsertRows(QModelIndex(), len(self.messages), len(self.messages) + len(added) - 1)
        self._starts += _rows.group_starts(added, last)
        self._days += _rows.day_starts(added, last)
        self.messages += added
        for message in added:
            if message.nick:
                self._authors.setdefault(message.author, message.nick)
        self.endInsertRows()
        self._update_mentions()

    def reload(self) -> None:
        """Re-read the loaded window (plus new messages): sync may add older ones too."""
        if self.channel is None:
            return
        generation, channel = self._generation, self.channel
        limit = max(PAGE, len(self.messages) + PAGE // 2)
        self.bridge.then(self.bridge.facade.run(
            lambda ws: ws.read(channel, limit=limit, hidden=True)),
                         done=lambda messages: self._reloaded(generation, messages, limit))

    def _reloaded(self, generation: int, messages: list[Message], limit: int) -> None:
        if generation != self._generation:
            return
        self._more = len(messages) >= limit  # before the reset: the view may fetch on it
        self._take(messages)
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
        page = min(MAX_PAGE, max(PAGE, len(self.messages)))
        self.bridge.then(self.bridge.facade.run(
            lambda ws: ws.read(channel, limit=page, before=before, hidden=True)),
                         done=lambda older: self._fetched(generation, older, page),
                         failed=lambda message: self._fetch_failed(generation, message))

    def _fetch_failed(self, generation: int, message: str) -> None:
        self._loading = False
        if generation == self._generation:
            self.bridge.failed.emit(message)

    def _fetched(self, generation: int, older: list[Message], page: int = PAGE) -> None:
        self._loading = False
        if generation != self._generation:
            return
        self._more = len(older) >= page
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
            for message in older:
                if message.nick:
                    self._authors.setdefault(message.author, message.nick)
            self._pending = self.bridge.facade.pending()
            self.endInsertRows()
            self._update_mentions()

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
        for first, last in _runs(rows):
            self.dataChanged.emit(self.index(first), self.index(last), [PendingRole])


def _runs(rows: list[int]) -> list[tuple[int, int]]:
    """Ascending rows as (first, last) runs of adjacent ones."""
    runs: list[list[int]] = []
    for row in rows:
        if runs and runs[-1][1] == row - 1:
            runs[-1][1] = row
        else:
            runs.append([row, row])
    return [(first, last) for first, last in runs]
