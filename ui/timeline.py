"""A branch's history as a timeline that fits its pane: newest first, each entry its author, a
short time, what happened ("edited", "snapshot of main", "merged from draft") and its tags as
chips, wrapped or elided to the width it is given, never scrolled sideways. Authors show as in
the message list: their avatar (ui/avatars.py) and their name in their key's colour
(ui/_rows.name_rgb), readable on the list's background in light and dark palettes.

`timeline_entries` decides what each entry says without Qt (tests/ui/test_timeline.py checks it
without a display); `Timeline` lists the entries and `TimelineDelegate` paints them with palette
roles only, from one layout (`entry_layout`) that both painting and sizing use, so what is
measured is what is drawn. An entry's commit id is its item's UserRole, the whole entry its
ENTRY_ROLE; `Timeline.entries()` hands them back.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

from PySide6.QtCore import (
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QRectF,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QPainter,
    QPalette,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QWidget,
)

from app.names import suffixed
from app.records import BranchInfo, CommitInfo, DocumentView

from . import avatars
from ._rows import ANONYMOUS, full_time, member_names, name_rgb, time_label

ENTRY_ROLE = Qt.ItemDataRole.UserRole + 1  # the TimelineEntry an item shows

# What happened, by commit kind (core.documents: edit, snapshot, merge; "?" when unreadable).
EDITED, SNAPSHOT, MERGED = "edited", "snapshot", "merged"
UNREADABLE = "a change (cannot be read here)"
EMPTY = "No versions yet: each pause in typing makes one."
RESTORE = "Restore this version"


# What an entry says (no Qt) -------------------------------------------------------------------

@dataclass(frozen=True)
class TimelineEntry:
    commit: str  # id (hex)
    author: bytes
    name: str  # how the author is named (a key suffix when another nickname looks alike)
    ts: int
    when: str  # "14:03", "Yesterday 14:03", ... (ui._rows.time_label)
    what: str  # "edited", "snapshot of main", "merged from draft", ...
    tags: tuple[str, ...] = ()

    @property
    def summary(self) -> str:
        """One line of it all, for accessibility and keyboard search."""
        return " · ".join([self.name, self.when, self.what, *self.tags])

    @property
    def tooltip(self) -> str:
        tags = f"\ntags: {', '.join(self.tags)}" if self.tags else ""
        return f"{self.name}, {full_time(self.ts)}\n{self.what}{tags}\ncommit {self.commit[:12]}"


def what_happened(commit: CommitInfo, merged_from: Sequence[str] = (),
                  source: str | None = None) -> str:
    """What a commit did: "edited"; "snapshot of main" for a fork's first commits (`source`:
    the branch it was forked from); "merged from draft" (`merged_from`: the branches its
    merged heads are on); "a change (cannot be read here)" when the branch is unreadable."""
    if commit.kind == "merge":
        return f"{MERGED} from {', '.join(merged_from)}" if merged_from else MERGED
    if commit.kind == "snapshot":
        return f"{SNAPSHOT} of {source}" if source else SNAPSHOT
    if commit.kind == "?":
        return UNREADABLE
    return EDITED


def restore_refusal(row: int, count: int, editable: bool) -> str | None:
    """Why the version at `row` of a history of `count` entries (newest first) cannot be
    restored, or None when it can: editors only, and the newest is what the branch reads now."""
    if not editable:
        return "Only the document's editors can restore a version"
    if not 0 <= row < count:
        return "Pick a version in the history to restore it"
    if row == 0:
        return "This is the latest version: the branch reads like this now"
    return None


def author_names(names: Mapping[bytes, str], authors: Sequence[bytes]) -> dict[bytes, str]:
    """How each author is named: the nickname, told apart by a key suffix when another member's
    looks like it (ui._rows.member_names); "anonymous ·3f2a9c" without one."""
    shown = member_names(names.items())
    return {a: shown[a] if a in shown else suffixed(ANONYMOUS, a) for a in authors}


def _source_name(branches: Sequence[BranchInfo], branch_id: str) -> str | None:
    by_id = {b.id: b for b in branches}
    branch = by_id.get(branch_id)
    source = by_id.get(branch.source) if branch and branch.source else None
    return source.name if source else None


def timeline_entries(view: DocumentView, today: date | None = None) -> list[TimelineEntry]:
    """The entries of a branch's history, newest first."""
    tagged: dict[str, list[str]] = {}
    for name, commit in sorted(view.tags.items()):
        tagged.setdefault(commit, []).append(name)
    names = author_names(view.names, list(dict.fromkeys(c.author for c in view.history)))
    sources: dict[str, str | None] = {}
    out = []
    for commit in reversed(view.history):
        if commit.branch not in sources:
            sources[commit.branch] = _source_name(view.branches, commit.branch)
        what = what_happened(commit, view.merged_from.get(commit.id, ()),
                             sources[commit.branch])
        out.append(TimelineEntry(commit.id, commit.author, names[commit.author], commit.ts,
                                 time_label(commit.ts, today), what,
                                 tuple(tagged.get(commit.id, ()))))
    return out


# How an entry is laid out and painted ----------------------------------------------------------

PAD_X, PAD_Y = 8, 6  # inside an entry
LINE_GAP = 2  # between an entry's lines
TIME_GAP = 8  # between the author and the time
CHIP_PAD_X, CHIP_PAD_Y, CHIP_GAP = 6, 1, 4
MIN_AUTHOR_PX = 48  # narrower than this beside the time, and the time goes on a line of its own
AVATAR_GAP = 6  # between the avatar and the name
LAYOUTS = 2048  # entry layouts kept (by entry, width and font): painting one lays out nothing


@dataclass(frozen=True)
class Piece:
    """One thing an entry paints: its role ("avatar", "author", "time", "what", "tag"), the text
    as it shows (elided, or one wrapped line of it; "" for the avatar) and where, relative to
    the entry's top left."""

    role: str
    text: str
    rect: QRect


_FONTS: dict[str, tuple[dict[str, QFont], dict[str, QFontMetrics]]] = {}


def _fonts(base: QFont) -> tuple[dict[str, QFont], dict[str, QFontMetrics]]:
    """The fonts of an entry's parts, from the list's font, and their metrics (made once)."""
    found = _FONTS.get(base.key())
    if found is None:
        bold = QFont(base)
        bold.setBold(True)
        small = QFont(base)
        small.setPointSizeF(max(base.pointSizeF() * 0.9, 1.0))
        fonts = {"author": bold, "time": small, "what": QFont(base), "tag": small}
        found = _FONTS[base.key()] = (fonts, {r: QFontMetrics(f) for r, f in fonts.items()})
    return found


def _wrapped(text: str, font: QFont, metrics: QFontMetrics,
             width: int) -> list[tuple[str, int, int]]:
    """`text` broken into lines of at most `width` pixels, at word boundaries where it can and
    anywhere where it must (a long branch name): (line text, its width, its height)."""
    advance = metrics.horizontalAdvance(text)
    if advance <= width:  # the common case: one line, and no text layout to make
        return [(text, advance, metrics.height())]
    units = text.encode("utf-16-le")
    layout = QTextLayout(text, font)
    option = QTextOption()
    option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
    layout.setTextOption(option)
    lines = []
    layout.beginLayout()
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        start, length = line.textStart(), line.textLength()  # in UTF-16 units
        part = units[2 * start:2 * (start + length)].decode("utf-16-le", errors="ignore")
        lines.append((part.rstrip(), min(math.ceil(line.naturalTextWidth()), width),
                      metrics.height()))
    layout.endLayout()
    return lines


def entry_layout(entry: TimelineEntry, width: int, font: QFont) -> tuple[list[Piece], int]:
    """What an entry paints within `width` pixels, and the height it takes."""
    fonts, metrics = _fonts(font)
    inner = max(width - 2 * PAD_X, 1)
    pieces: list[Piece] = []
    y = PAD_Y

    time_w = metrics["time"].horizontalAdvance(entry.when)
    line_h = max(metrics["author"].height(), metrics["time"].height())
    size = metrics["author"].height()  # the avatar: as tall as the name
    pieces.append(Piece("avatar", "", QRect(PAD_X, y + (line_h - size) // 2, size, size)))
    name_x = PAD_X + size + AVATAR_GAP
    name_room = PAD_X + inner - name_x
    beside = name_room - time_w - TIME_GAP >= MIN_AUTHOR_PX
    author_w = max(name_room - time_w - TIME_GAP if beside else name_room, 1)
    author = metrics["author"].elidedText(entry.name, Qt.TextElideMode.ElideRight, author_w)
    pieces.append(Piece("author", author, QRect(
        name_x, y, min(metrics["author"].horizontalAdvance(author), author_w), line_h)))
    if beside:
        pieces.append(Piece("time", entry.when, QRect(PAD_X + inner - time_w, y, time_w,
                                                      line_h)))
    else:
        y += line_h + LINE_GAP
        when = metrics["time"].elidedText(entry.when, Qt.TextElideMode.ElideRight, inner)
        pieces.append(Piece("time", when, QRect(
            PAD_X, y, min(metrics["time"].horizontalAdvance(when), inner),
            metrics["time"].height())))
        line_h = metrics["time"].height()
    y += line_h

    for text, w, h in _wrapped(entry.what, fonts["what"], metrics["what"], inner):
        y += LINE_GAP
        pieces.append(Piece("what", text, QRect(PAD_X, y, w, h)))
        y += h

    if entry.tags:
        tag_metrics = metrics["tag"]
        chip_h = tag_metrics.height() + 2 * CHIP_PAD_Y
        x, y = PAD_X, y + LINE_GAP + 1
        for tag in entry.tags:
            text = tag_metrics.elidedText(tag, Qt.TextElideMode.ElideRight,
                                          inner - 2 * CHIP_PAD_X)
            chip_w = tag_metrics.horizontalAdvance(text) + 2 * CHIP_PAD_X
            if x > PAD_X and x + chip_w > PAD_X + inner:  # the next row of chips
                x, y = PAD_X, y + chip_h + CHIP_GAP
            pieces.append(Piece("tag", text, QRect(x, y, min(chip_w, inner), chip_h)))
            x += chip_w + CHIP_GAP
        y += chip_h
    return pieces, y + PAD_Y


class TimelineDelegate(QStyledItemDelegate):
    """Paints an entry (avatar, author, time, what happened, tag chips) as entry_layout places
    it, at the width of the list's viewport."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._layouts: OrderedDict[tuple, tuple[list[Piece], int]] = OrderedDict()
        # An entry's height depends on what it says but its name (that is elided), so entries
        # that read alike ("edited", at one time) are measured once.
        self._heights: dict[tuple, int] = {}
        self._name_colors: dict[tuple[bytes, int], QColor] = {}

    def layout(self, entry: TimelineEntry, width: int, font: QFont) -> tuple[list[Piece], int]:
        """entry_layout, kept for the next paint or sizing at that width."""
        key = (entry, width, font.key())
        found = self._layouts.get(key)
        if found is None:
            found = self._layouts[key] = entry_layout(entry, width, font)
            if len(self._layouts) > LAYOUTS:
                self._layouts.popitem(last=False)
        else:
            self._layouts.move_to_end(key)
        return found

    def name_color(self, author: bytes, base: QColor) -> QColor:
        """The author's name colour on `base`: their key's hue, readable (ui/_rows.name_rgb)."""
        key = (author, base.rgb())
        color = self._name_colors.get(key)
        if color is None:
            rgb = name_rgb(author, (base.red(), base.green(), base.blue()))
            color = self._name_colors[key] = QColor(*rgb)
        return color

    def _width(self, option: QStyleOptionViewItem) -> int:
        view = self.parent()
        if isinstance(view, QAbstractItemView):
            return view.viewport().width()
        return option.rect.width()

    def sizeHint(self, option: QStyleOptionViewItem,
                 index: QModelIndex | QPersistentModelIndex) -> QSize:
        entry = index.data(ENTRY_ROLE)
        if not isinstance(entry, TimelineEntry):
            return super().sizeHint(option, index)
        width = self._width(option)
        key = (entry.what, entry.tags, entry.when, width, option.font.key())
        height = self._heights.get(key)
        if height is None:
            if len(self._heights) > LAYOUTS:
                self._heights.clear()
            height = self._heights[key] = entry_layout(entry, width, option.font)[1]
        return QSize(width, height)

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex | QPersistentModelIndex) -> None:
        entry = index.data(ENTRY_ROLE)
        if not isinstance(entry, TimelineEntry):
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        opt.text = ""
        widget = opt.widget
        style = widget.style() if widget is not None else None
        if style is not None:
            style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, opt, painter, widget)
        palette = opt.palette
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)
        Role = QPalette.ColorRole
        fonts, _ = _fonts(opt.font)
        pieces, _ = self.layout(entry, opt.rect.width(), opt.font)
        ratio = widget.devicePixelRatioF() if widget is not None else 1.0
        painter.save()
        painter.setClipRect(opt.rect)
        painter.translate(opt.rect.topLeft())
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        for piece in pieces:
            if piece.role == "avatar":
                painter.drawPixmap(piece.rect.topLeft(),
                                   avatars.avatar(entry.author, piece.rect.width(), ratio))
                continue
            painter.setFont(fonts[piece.role])
            if piece.role == "tag":
                border = Role.HighlightedText if selected else Role.Mid
                painter.setPen(palette.color(border))
                if not selected:
                    painter.setBrush(palette.color(Role.AlternateBase))
                else:
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                radius = piece.rect.height() / 2
                painter.drawRoundedRect(QRectF(piece.rect).adjusted(0.5, 0.5, -0.5, -0.5),
                                        radius, radius)
                painter.setPen(palette.color(Role.HighlightedText if selected else Role.Text))
                painter.drawText(piece.rect, Qt.AlignmentFlag.AlignCenter, piece.text)
                continue
            if selected:
                painter.setPen(palette.color(Role.HighlightedText))
            elif piece.role == "author":
                painter.setPen(self.name_color(entry.author, palette.color(Role.Base)))
            elif piece.role == "time":
                painter.setPen(palette.color(Role.PlaceholderText))  # muted in light and dark
            else:
                painter.setPen(palette.color(Role.Text))
            painter.drawText(piece.rect, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             piece.text)
        if not selected:  # a hairline between entries
            painter.setPen(palette.color(Role.Midlight))
            bottom = opt.rect.height() - 1
            painter.drawLine(PAD_X, bottom, opt.rect.width() - PAD_X, bottom)
        painter.restore()


class Timeline(QListWidget):
    """A branch's history, newest first, that always fits its width (no sideways scrolling)."""

    restoreRequested = Signal(str)  # the commit to restore the branch to

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName("historyView")
        self.editable = False  # whether I may restore (an editor who reads the branch)
        self.setItemDelegate(TimelineDelegate(self))
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.setResizeMode(QListView.ResizeMode.Adjust)  # entries re-wrap as the width changes
        self.setUniformItemSizes(False)
        self.setWordWrap(True)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self._width = -1

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().paintEvent(event)
        if self.count() == 0:  # the empty state: say so, muted
            painter = QPainter(self.viewport())
            painter.setPen(self.palette().color(QPalette.ColorRole.PlaceholderText))
            painter.drawText(self.viewport().rect().adjusted(PAD_X, PAD_Y, -PAD_X, -PAD_Y),
                             Qt.AlignmentFlag.AlignHCenter | Qt.AlignmentFlag.AlignTop
                             | Qt.TextFlag.TextWordWrap, EMPTY)
            painter.end()

    def set_editable(self, editable: bool) -> None:
        self.editable = editable

    def restore_refusal(self, row: int) -> str | None:
        return restore_refusal(row, self.count(), self.editable)

    def context_menu(self, row: int) -> QMenu:
        """The menu of the entry at `row`: "Restore this version", enabled when it may be."""
        menu = QMenu(self)
        action = menu.addAction(RESTORE)
        why = self.restore_refusal(row)
        action.setEnabled(why is None)
        action.setToolTip(why or "Make the branch read as it did then (a new version)")
        menu.setToolTipsVisible(True)
        if why is None:
            commit = self.item(row).data(Qt.ItemDataRole.UserRole)
            action.triggered.connect(lambda: self.restoreRequested.emit(commit))
        return menu

    def contextMenuEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        row = self.indexAt(event.pos()).row()
        if row < 0:
            return
        self.setCurrentRow(row)
        self.itemClicked.emit(self.item(row))  # the version shows beside the menu
        self.context_menu(row).exec(event.globalPos())

    def set_entries(self, entries: list[TimelineEntry]) -> bool:
        """Show `entries` (newest first); False when they are shown already. Only what changed
        is redone: new commits come in at the top, so the entries below, and the selection and
        scroll position among them, stay."""
        shown = self.entries()
        if entries == shown:
            return False
        same = 0  # entries the old and new lists end with alike
        while (same < len(shown) and same < len(entries)
               and shown[len(shown) - 1 - same] == entries[len(entries) - 1 - same]):
            same += 1
        for _ in range(len(shown) - same):
            self.takeItem(0)
        for row, entry in enumerate(entries[:len(entries) - same]):
            item = QListWidgetItem(entry.summary)
            item.setData(Qt.ItemDataRole.UserRole, entry.commit)
            item.setData(ENTRY_ROLE, entry)
            item.setToolTip(entry.tooltip)
            self.insertItem(row, item)
        return True

    def entries(self) -> list[TimelineEntry]:
        return [self.item(i).data(ENTRY_ROLE) for i in range(self.count())]

    def commits(self) -> list[str]:
        return [self.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.count())]

    def entry_pieces(self, row: int) -> list[Piece]:
        """What the entry at `row` paints at the list's current width."""
        return entry_layout(self.item(row).data(ENTRY_ROLE), self.viewport().width(),
                            self.font())[0]

    def author_color(self, row: int) -> QColor:
        """The colour the entry at `row` names its author in (when not selected)."""
        delegate = self.itemDelegate()
        assert isinstance(delegate, TimelineDelegate)
        return delegate.name_color(self.item(row).data(ENTRY_ROLE).author,
                                   self.palette().color(QPalette.ColorRole.Base))

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        if self.viewport().width() != self._width:  # heights depend on the width: lay out again
            self._width = self.viewport().width()
            self.scheduleDelayedItemsLayout()
