"""Ctrl+K: jump to a channel or document by typing a few letters of its name.

The window hands the switcher its places (channels and documents, as `Place`s) and the places
it visited, most recent first (kept with `visited`). With nothing typed the list shows the
recent places first, then channels with unread messages, then the other channels, then the
documents, each alphabetically (`arrange`). Typing ranks every place by fuzzy match
(ui/_fuzzy.py), a recent place getting RECENT_BOOST so it wins between matches of equal
quality, and the matched characters are drawn bold. Up and Down in the filter move through the
list, Enter goes, Escape closes.

Filtering runs on each keystroke on the GUI thread: it touches no disk, only the names given.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import QFont, QFontMetrics, QKeyEvent, QPainter, QPalette
from PySide6.QtWidgets import (
    QApplication,
    QDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from app.records import UNREAD_CAP

from . import _fuzzy

CHANNEL, DOCUMENT = "channel", "document"
RECENT_LIMIT = 8  # places `visited` keeps
RECENT_BOOST = 4  # a quarter of one matched character: decides near-ties, never a worse shape
ROW_PAD = 8  # pixels added to a row's text height

# The list's item roles: what the delegate draws, and what tests read.
KeyRole = int(Qt.ItemDataRole.UserRole)  # (kind, value)
PositionsRole = KeyRole + 1  # tuple[int, ...]: indices into the label drawn bold (matched)
BadgeRole = KeyRole + 2  # str: drawn on the right ("3", "@ 12", "999+", "document" or "")
RecentRole = KeyRole + 3  # bool: among the places visited last


@dataclass(frozen=True)
class Place:
    """A channel or document the switcher can go to."""

    kind: str  # CHANNEL or DOCUMENT
    value: str  # the channel's name or the document's id: what `chosen` carries
    label: str  # what the row shows and the filter matches
    unread: int = 0  # messages by others since my read mark (channels)
    mention: bool = False  # one of them mentions me

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.value


def channel_place(name: str, unread: int = 0, mention: bool = False,
                  shown: str | None = None) -> Place:
    """A channel as the sidebar names it ("# general"); `shown` is the name with its lookalike
    suffix when it has one (ChannelListModel.label)."""
    return Place(CHANNEL, name, f"# {shown or name}", unread, mention)


def document_place(doc_id: str, title: str) -> Place:
    return Place(DOCUMENT, doc_id, title)


def visited(recent: Sequence[tuple[str, str]], kind: str, value: str,
            limit: int = RECENT_LIMIT) -> list[tuple[str, str]]:
    """`recent` (most recent first) after a visit to (kind, value)."""
    return [(kind, value), *(key for key in recent if key != (kind, value))][:limit]


def arrange(places: Iterable[Place], recent: Iterable[tuple[str, str]] = ()) -> list[Place]:
    """The order with nothing typed: the recent places in the order given, then channels with
    unread messages (mentions first), then the other channels, then documents, alphabetically."""
    by_key = {place.key: place for place in places}
    first = list(dict.fromkeys(tuple(key) for key in recent if tuple(key) in by_key))
    taken = set(first)
    rest = sorted((place for key, place in by_key.items() if key not in taken),
                  key=lambda p: (p.kind != CHANNEL, not p.unread, not p.mention,
                                 _fuzzy.fold(p.label), p.label, p.value))
    return [by_key[key] for key in first] + rest


def badge(place: Place) -> str:
    """What a row shows on its right: a channel's unread count, or that it is a document."""
    if place.kind == DOCUMENT:
        return "document"
    if not place.unread:
        return ""
    count = "999+" if place.unread >= UNREAD_CAP else str(place.unread)
    return f"@ {count}" if place.mention else count


def no_match_hint(text: str) -> str:
    return f"No channel or document matches '{text.strip()}'"


def _as_place(place: Place | tuple) -> Place:
    return place if isinstance(place, Place) else Place(*place)


class QuickSwitcher(QDialog):
    chosen = Signal(str, str)  # kind ("channel" or "document"), channel name or document id

    def __init__(self, places: Iterable[Place | tuple], recent: Iterable[tuple[str, str]] = (),
                 parent: QWidget | None = None):
        super().__init__(parent, objectName="quickSwitcher")
        places, recent = list(places), list(recent)
        self.setWindowTitle("Go to")
        self.filter = QLineEdit(objectName="switcherFilter",
                                placeholderText="Jump to a channel or document")
        self.list = QListWidget(objectName="switcherList")
        self.list.setItemDelegate(PlaceDelegate(self.list))
        self.list.setUniformItemSizes(True)
        self.hint = QLabel(objectName="switcherHint")
        self.hint.setTextFormat(Qt.TextFormat.PlainText)
        self.hint.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.hint.hide()
        self.places = arrange((_as_place(p) for p in places), recent)
        recent_keys = {tuple(key) for key in recent}
        self._recent = [place.key in recent_keys for place in self.places]
        self._boosts = [RECENT_BOOST if r else 0 for r in self._recent]
        self._candidates = [_fuzzy.prepare(place.label) for place in self.places]
        # One item per place, made once: each keystroke takes them out and puts the matches
        # back in order, which costs a third of making 2,000 new items.
        self._items = [self._item(place, self._recent[i]) for i, place in enumerate(self.places)]
        self._query = ""
        self._hits: list[int] | None = None  # indices that matched self._query (None: all)
        self.filter.textChanged.connect(self._narrow)
        self.filter.returnPressed.connect(self.accept_current)
        self.list.itemActivated.connect(lambda _: self.accept_current())
        self.filter.installEventFilter(self)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.hint)
        layout.addWidget(self.list)
        self.resize(420, 320)
        self._show(list(range(len(self.places))), {})

    def _narrow(self, text: str) -> None:
        query = _fuzzy.fold(text)
        if not query.strip():
            self._query, self._hits = "", None
            self._show(list(range(len(self.places))), {})
        else:
            # A longer query matches a subset of what the shorter one did.
            among = self._hits if self._hits is not None and query.startswith(self._query) \
                else None
            ranked = _fuzzy.rank(query, self._candidates, self._boosts, among)
            self._query, self._hits = query, sorted(i for i, _ in ranked)
            self._show([i for i, _ in ranked], {i: found.positions for i, found in ranked})
        self.hint.setText(no_match_hint(text))
        self.hint.setVisible(self.list.count() == 0 and bool(text.strip()))

    @staticmethod
    def _item(place: Place, recent: bool) -> QListWidgetItem:
        item = QListWidgetItem(place.label)
        item.setData(KeyRole, place.key)
        item.setData(PositionsRole, ())
        item.setData(BadgeRole, badge(place))
        item.setData(RecentRole, recent)
        return item

    def _show(self, order: list[int], positions: dict[int, tuple[int, ...]]) -> None:
        self.list.setUpdatesEnabled(False)
        while self.list.count():
            self.list.takeItem(self.list.count() - 1)
        for i in order:
            item = self._items[i]
            item.setData(PositionsRole, positions.get(i, ()))
            self.list.addItem(item)
        if order:
            self.list.setCurrentRow(0)
        self.list.setUpdatesEnabled(True)

    def eventFilter(self, watched, event) -> bool:
        # Up and Down in the filter move through the list, as in every quick switcher.
        if watched is self.filter and event.type() == QEvent.Type.KeyPress and \
                isinstance(event, QKeyEvent) and event.key() in (
                    Qt.Key.Key_Up, Qt.Key.Key_Down, Qt.Key.Key_PageUp, Qt.Key.Key_PageDown):
            QApplication.sendEvent(self.list, event)
            return True
        return super().eventFilter(watched, event)

    def accept_current(self) -> None:
        item = self.list.currentItem()
        if item is None:
            return
        kind, value = item.data(KeyRole)
        self.chosen.emit(kind, value)
        self.accept()


Index = QModelIndex | QPersistentModelIndex


class PlaceDelegate(QStyledItemDelegate):
    """Draws a row's label with its matched characters bold, and its badge on the right."""

    def sizeHint(self, option: QStyleOptionViewItem, index: Index) -> QSize:
        size = super().sizeHint(option, index)
        return QSize(size.width(), size.height() + ROW_PAD)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: Index) -> None:
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        label, opt.text = opt.text, ""
        style = opt.widget.style() if opt.widget else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, opt.widget)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, opt.widget)
        rect = rect.adjusted(4, 0, -4, 0)
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        text_role = QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text
        regular = QFont(opt.font)
        bold = QFont(opt.font)
        bold.setBold(True)
        painter.save()
        right = index.data(BadgeRole) or ""
        if right:
            is_count = right != "document"
            painter.setFont(bold if is_count else regular)
            painter.setPen(opt.palette.color(
                text_role if is_count or selected else QPalette.ColorRole.PlaceholderText))
            width = QFontMetrics(painter.font()).horizontalAdvance(right)
            painter.drawText(rect, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter,
                             right)
            rect = rect.adjusted(0, 0, -(width + 12), 0)
        painter.setPen(opt.palette.color(text_role))
        painter.setClipRect(rect)
        x = rect.left()
        for run, strong in runs(label, index.data(PositionsRole) or ()):
            font = bold if strong else regular
            painter.setFont(font)
            painter.drawText(QRect(x, rect.top(), rect.right() - x + 1, rect.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, run)
            x += QFontMetrics(font).horizontalAdvance(run)
        painter.restore()


def runs(text: str, positions: Iterable[int]) -> list[tuple[str, bool]]:
    """`text` cut into runs of (characters, matched)."""
    marked = set(positions)
    out: list[tuple[str, bool]] = []
    for i, ch in enumerate(text):
        strong = i in marked
        if out and out[-1][1] == strong:
            out[-1] = (out[-1][0] + ch, strong)
        else:
            out.append((ch, strong))
    return out
