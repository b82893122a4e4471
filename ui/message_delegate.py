"""How one row of the message list is drawn and hit-tested (ui/message_view.py holds the view):
the avatar and the author's name in their key's colour on a group's header, the clock time, a
day separator above the first row of each local day, the text laid out once per (message, width)
with QTextLayout and cached, links, the inline "sending…" mark of a pending message, and a
continuation row's time in the avatar gutter on hover. Palette roles only; sizes from font
metrics; avatars are cached pixmaps (ui/avatars.py), so nothing is laid out or made per paint.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QModelIndex,
    QPoint,
    QPointF,
    QRect,
    QRectF,
    QSize,
    Qt,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QPainter,
    QPalette,
    QTextCharFormat,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import (
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
)

from app.records import Message

from . import _rows, avatars
from .models import MessageListModel
from .theme import scaled

if TYPE_CHECKING:
    from .message_view import MessageView

AVATAR_X = 16  # avatars (and continuation rows' hover times) start here
BAR_X, BAR_WIDTH = 5, 3  # my messages' accent bar, in the margin left of the avatars
AVATAR_GAP = 10  # between the avatar gutter and the text column
RIGHT_PAD = 16
GROUP_TOP = 10  # space above a row that starts a group
ROW_PAD = 3  # space above (inside a group) and below every row
HEADER_GAP = 2  # between the header line and the text
NAME_GAP = 8  # between the name, "(you)" and the time
DAY_PAD = 10  # above and below a day separator's label
PILL_PAD = 10  # left and right of a day label, inside its pill
SMALL = 0.88  # times and marks, of the body size (never below 85%)
PENDING_MARK = "sending…"
MARK_GAP = 8  # between a row's last word and its pending mark
PENDING_OPACITY = 0.55
LAYOUT_CACHE = 800  # laid-out rows kept for painting and hit-testing (a few screens' worth)
HEIGHT_CACHE = 250_000  # measured heights kept (cheap); cleared whole when it grows past this


@dataclass(slots=True)
class _Body:
    layout: QTextLayout
    height: int
    first_line: float  # the first line's ascent: where a hover time's baseline goes
    last_line: QRectF  # the last line's text, for the pending mark after it
    last_ascent: float
    links: list[tuple[int, int, str]]  # UTF-16 ranges into the layout's text, and the URL


@dataclass(frozen=True, slots=True)
class RowParts:
    """Where a row's pieces are drawn, in viewport coordinates: what painting uses and what
    tests read. None for the parts this row does not show."""

    row: QRect
    day: QRect | None  # the day separator band above the row
    avatar: QRect | None  # header rows
    name: QRect | None  # header rows: the author's name (elided to fit)
    shown_name: str | None  # the name as drawn there
    time: QRect | None  # header rows: the clock time
    body: QRect  # the text's box
    mark: QRect | None  # "sending…", while pending
    gutter: QRect | None  # where a continuation row's time shows on hover


def paint_pill(painter: QPainter, rect: QRectF, text: str, font: QFont,
                palette: QPalette) -> None:
    """A day label: a rounded pill in Base with a quiet border, the text in Text."""
    border = QColor(palette.color(QPalette.ColorRole.PlaceholderText))
    border.setAlpha(110)
    painter.setPen(border)
    painter.setBrush(palette.color(QPalette.ColorRole.Base))
    radius = rect.height() / 2
    painter.drawRoundedRect(rect.adjusted(0.5, 0.5, -0.5, -0.5), radius, radius)
    painter.setFont(font)
    painter.setPen(palette.color(QPalette.ColorRole.Text))
    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, text)


class MessageDelegate(QStyledItemDelegate):
    """Draws one message row; sizes and layouts are cached per message, width and name."""

    def __init__(self, view: MessageView):
        super().__init__(view)
        self._view = view
        self._layouts: OrderedDict[tuple, _Body] = OrderedDict()
        # Measured heights at one width, by message id (by (id, name) for "/me" rows, whose
        # text holds the name): height * 2 + 1 if the pending mark fits after the last line.
        # Small ints, so 100,000 rows cost a few MB.
        self._heights: dict[bytes | tuple[bytes, str], int] = {}
        self._heights_width = 0
        self._name_colors: dict[tuple[bytes, int], QColor] = {}
        self._option = QTextOption()
        self._option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.reset()

    def reset(self) -> None:
        """Forget layouts and measures (the font, palette or style changed)."""
        self._layouts.clear()
        self._heights.clear()
        self._name_colors.clear()
        base = QFont(self._view.font())
        default = QGuiApplication.font().pointSizeF()
        if 0 < base.pointSizeF() < default:  # body text at the application's size, or larger
            base.setPointSizeF(default)
        self.body_font = base
        self.emote_font = QFont(base)
        self.emote_font.setItalic(True)
        self.name_font = QFont(base)
        self.name_font.setBold(True)
        self.time_font = scaled(base, SMALL)
        self.day_font = QFont(self.time_font)
        self.day_font.setBold(True)
        self._name_metrics = QFontMetrics(self.name_font)
        small = self._small_metrics = QFontMetrics(self.time_font)
        day = QFontMetrics(self.day_font)
        self._line_height = QFontMetrics(base).height()
        self._header_height = max(self._name_metrics.height(), small.height())
        self.avatar_size = self._header_height + HEADER_GAP + self._line_height
        # The gutter holds the avatar, or a continuation row's time on hover.
        gutter = max(self.avatar_size, small.horizontalAdvance("00:00"))
        self.text_x = AVATAR_X + gutter + AVATAR_GAP
        self.day_height = day.height() + 2 * DAY_PAD
        self.pill_height = day.height() + DAY_PAD
        self._day_metrics = day
        self._mark_width = small.horizontalAdvance(PENDING_MARK)
        self._link_format = QTextCharFormat()
        self._link_format.setForeground(self._view.palette().color(QPalette.ColorRole.Link))
        self._link_format.setFontUnderline(True)

    # Measures ----------------------------------------------------------------------------------

    def text_width(self) -> int:
        return max(40, self._view.viewport().width() - self.text_x - RIGHT_PAD)

    def pill_width(self, label: str) -> int:
        return self._day_metrics.horizontalAdvance(label) + 2 * PILL_PAD

    def body_top(self, header: bool, day: bool) -> int:
        """Where the text starts below a row's top edge."""
        top = self.day_height if day else 0
        return top + (GROUP_TOP + self._header_height + HEADER_GAP if header else ROW_PAD)

    def body(self, message: Message, name: str, width: int) -> _Body:
        """The laid-out text of a row (cached; the name only matters to `/me` rows)."""
        key = (message.id, width, name if _rows.is_emote(message) else None)
        body = self._layouts.get(key)
        if body is not None:
            self._layouts.move_to_end(key)
            return body
        text = _rows.body_text(message, name)
        # QTextLayout breaks lines only at U+2028; both are one UTF-16 unit, so offsets hold.
        shown = text.replace("\n", "\u2028").replace("\r", "\u2028")
        layout = QTextLayout(shown, self.emote_font if _rows.is_emote(message)
                             else self.body_font)
        layout.setTextOption(self._option)
        links = [(*link.utf16(text), link.url) for link in _rows.links(text)]
        if links:
            formats = []
            for start, end, _ in links:
                span = QTextLayout.FormatRange()
                span.start, span.length, span.format = start, end - start, self._link_format
                formats.append(span)
            layout.setFormats(formats)
        layout.beginLayout()
        height = 0.0
        first = 0.0
        last = None
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            line.setPosition(QPointF(0, height))
            if not height:
                first = line.ascent()
            height += line.height()
            last = line
        layout.endLayout()
        if last is None:
            last_rect, last_ascent = QRectF(0, 0, 0, self._line_height), float(first)
        else:
            # The text's own extent (a right-to-left line ends at the right edge).
            text_rect = last.naturalTextRect()
            last_rect = QRectF(text_rect.left(), last.y(), text_rect.width(), last.height())
            last_ascent = last.ascent()
        body = _Body(layout, max(self._line_height, math.ceil(height)), first, last_rect,
                     last_ascent, links)
        self._layouts[key] = body
        if len(self._layouts) > LAYOUT_CACHE:
            self._layouts.popitem(last=False)
        return body

    def _mark_fits(self, body: _Body, width: int) -> bool:
        return body.last_line.right() + MARK_GAP + self._mark_width <= width

    def _measure(self, message: Message, name: str, width: int) -> tuple[int, bool]:
        """(text height, whether the pending mark fits after the last line) of a row."""
        if width != self._heights_width or len(self._heights) >= HEIGHT_CACHE:
            self._heights.clear()
            self._heights_width = width
        key = (message.id, name) if _rows.is_emote(message) else message.id
        packed = self._heights.get(key)
        if packed is None:
            body = self.body(message, name, width)
            packed = self._heights[key] = body.height * 2 + self._mark_fits(body, width)
        return packed >> 1, bool(packed & 1)

    def mark_fits(self, index: QModelIndex) -> bool:
        """Whether row `index`'s pending mark goes after its last line (else below it, and the
        row grows while it is pending)."""
        model = index.model()
        message, _, name, _, _ = model.row(index.row())
        return self._measure(message, name, self.text_width())[1]

    def _mark_height(self) -> int:
        return self._small_metrics.height()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return super().sizeHint(option, index)
        row = index.row()
        message, header, name, _, pending = model.row(row)
        height, fits = self._measure(message, name, self.text_width())
        if pending and not fits:
            height += self._mark_height()
        return QSize(AVATAR_X, self.body_top(header, model.starts_day(row)) + height + ROW_PAD)

    def name_color(self, author: bytes, base: QColor) -> QColor:
        """The author's name colour on `base`: their hue, readable (ui/_rows.name_rgb)."""
        key = (author, base.rgb())
        color = self._name_colors.get(key)
        if color is None:
            rgb = _rows.name_rgb(author, (base.red(), base.green(), base.blue()))
            color = self._name_colors[key] = QColor(*rgb)
        return color

    # Where things go ---------------------------------------------------------------------------

    def _parts(self, rect: QRect, message: Message, name: str, mine: bool, header: bool,
               day: bool, pending: bool, body: _Body) -> RowParts:
        left, top = rect.left(), rect.top()
        x = left + self.text_x
        width = self.text_width()
        body_top = top + self.body_top(header, day)
        small = self._small_metrics
        band = QRect(left, top, rect.width(), self.day_height) if day else None
        avatar = name_rect = time_rect = gutter = shown = None
        if header:
            head = top + (self.day_height if day else 0) + GROUP_TOP
            avatar = QRect(left + AVATAR_X, head, self.avatar_size, self.avatar_size)
            when = _rows.clock(message.ts)
            tail = NAME_GAP + small.horizontalAdvance(when)
            if mine:
                tail += NAME_GAP + small.horizontalAdvance("(you)")
            shown = self._name_metrics.elidedText(name, Qt.TextElideMode.ElideRight,
                                                  max(24, width - tail))
            name_width = self._name_metrics.horizontalAdvance(shown)
            name_rect = QRect(x, head, name_width, self._header_height)
            time_x = x + name_width + tail - small.horizontalAdvance(when)
            time_rect = QRect(time_x, head, small.horizontalAdvance(when), self._header_height)
        else:
            when = _rows.clock(message.ts)
            baseline = body_top + body.first_line
            time_width = small.horizontalAdvance(when)
            gutter = QRect(left + self.text_x - AVATAR_GAP - time_width,
                           round(baseline - small.ascent()), time_width, small.height())
        height, fits = self._measure(message, name, width)
        mark = None
        if pending:
            if fits:
                line = body.last_line
                baseline = body_top + line.top() + body.last_ascent
                mark = QRect(x + math.ceil(line.right()) + MARK_GAP,
                             round(baseline - small.ascent()), self._mark_width, small.height())
            else:
                mark = QRect(x, body_top + height, self._mark_width, small.height())
        return RowParts(rect, band, avatar, name_rect, shown, time_rect,
                        QRect(x, body_top, width, height), mark, gutter)

    def parts(self, index: QModelIndex) -> RowParts | None:
        """Where row `index`'s pieces are drawn now (viewport coordinates), if it is laid out."""
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return None
        rect = self._view.visualRect(index)
        if not rect.isValid():
            return None
        message, header, name, mine, pending = model.row(index.row())
        body = self.body(message, name, self.text_width())
        return self._parts(rect, message, name, mine, header, model.starts_day(index.row()),
                           pending, body)

    def line_rects(self, index: QModelIndex) -> list[QRect]:
        """The drawn extent of each of row `index`'s text lines (viewport coordinates)."""
        parts = self.parts(index)
        if parts is None:
            return []
        model = index.model()
        message, _, name, _, _ = model.row(index.row())
        layout = self.body(message, name, self.text_width()).layout
        rects = []
        for i in range(layout.lineCount()):
            line = layout.lineAt(i)
            text = line.naturalTextRect()
            rects.append(QRect(parts.body.left() + math.floor(text.left()),
                               parts.body.top() + math.floor(line.y()),
                               math.ceil(text.width()), math.ceil(line.height())))
        return rects

    # Painting ----------------------------------------------------------------------------------

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return
        row = index.row()
        message, header, name, mine, pending = model.row(row)
        day = model.starts_day(row)
        body = self.body(message, name, self.text_width())
        parts = self._parts(option.rect, message, name, mine, header, day, pending, body)
        palette = option.palette
        state = option.state
        group = (QPalette.ColorGroup.Disabled if not state & QStyle.StateFlag.State_Enabled
                 else QPalette.ColorGroup.Active if state & QStyle.StateFlag.State_Active
                 else QPalette.ColorGroup.Inactive)
        selected = bool(state & QStyle.StateFlag.State_Selected)
        hovered = bool(state & QStyle.StateFlag.State_MouseOver)
        rect = QRect(option.rect)
        painter.save()
        if parts.day is not None:
            self._paint_day(painter, parts.day, model.day_label(row), palette, group)
            rect.setTop(parts.day.bottom() + 1)
        if selected or hovered:
            shade = QColor(palette.color(group, QPalette.ColorRole.Highlight))
            shade.setAlpha(70 if selected else 24)
            painter.fillRect(rect, shade)
        text_color = palette.color(group, QPalette.ColorRole.Text)
        quiet = palette.color(group, QPalette.ColorRole.PlaceholderText)
        if mine:
            top = rect.top() + (GROUP_TOP // 2 if header else 0)
            painter.fillRect(QRect(rect.left() + BAR_X, top, BAR_WIDTH, rect.bottom() - top + 1),
                             palette.color(group, QPalette.ColorRole.Highlight))
        if header:
            self._paint_header(painter, message, mine, parts,
                               palette.color(group, QPalette.ColorRole.Base), quiet)
        painter.setPen(text_color)
        if pending:
            painter.setOpacity(PENDING_OPACITY)
        body.layout.draw(painter, QPointF(parts.body.topLeft()))
        painter.setOpacity(1.0)
        painter.setFont(self.time_font)
        painter.setPen(quiet)
        if parts.mark is not None:
            painter.drawText(parts.mark, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                             PENDING_MARK)
        if parts.gutter is not None and hovered:
            painter.drawText(parts.gutter, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop,
                             _rows.clock(message.ts))
        painter.restore()

    def _paint_day(self, painter: QPainter, band: QRect, label: str, palette: QPalette,
                   group: QPalette.ColorGroup) -> None:
        line = QColor(palette.color(group, QPalette.ColorRole.PlaceholderText))
        line.setAlpha(80)
        middle = band.top() + band.height() // 2
        painter.fillRect(QRect(band.left() + AVATAR_X, middle, band.width() - AVATAR_X
                               - RIGHT_PAD, 1), line)
        width = self.pill_width(label)
        pill = QRectF(band.left() + (band.width() - width) / 2,
                      middle - self.pill_height / 2, width, self.pill_height)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        paint_pill(painter, pill, label, self.day_font, palette)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)

    def _paint_header(self, painter: QPainter, message: Message, mine: bool, parts: RowParts,
                      base: QColor, quiet: QColor) -> None:
        ratio = painter.device().devicePixelRatioF() if painter.device() else 1.0
        painter.drawPixmap(parts.avatar.topLeft(),
                           avatars.avatar(message.author, self.avatar_size, ratio))
        baseline = parts.name.top() + max(self._name_metrics.ascent(),
                                          self._small_metrics.ascent())
        painter.setFont(self.name_font)
        painter.setPen(self.name_color(message.author, base))
        painter.drawText(QPointF(parts.name.left(), baseline), parts.shown_name)
        painter.setFont(self.time_font)
        painter.setPen(quiet)
        if mine:
            painter.drawText(QPointF(parts.name.right() + 1 + NAME_GAP, baseline), "(you)")
        painter.drawText(QPointF(parts.time.left(), baseline), _rows.clock(message.ts))

    # Hit-testing -------------------------------------------------------------------------------

    def _placed(self, index: QModelIndex) -> tuple[_Body, QPoint] | None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return None
        message, header, name, _, _ = model.row(index.row())
        rect = self._view.visualRect(index)
        if not rect.isValid():
            return None
        body = self.body(message, name, self.text_width())
        return body, QPoint(rect.left() + self.text_x,
                            rect.top() + self.body_top(header, model.starts_day(index.row())))
    def link_at(self, index: QModelIndex, pos: QPoint) -> str | None:
        """The URL of the link under `pos` (viewport coordinates) in row `index`, if any."""
        placed = self._placed(index)
        if placed is None or not placed[0].links:
            return None
        body, origin = placed
        x, y = pos.x() - origin.x(), pos.y() - origin.y()
        for i in range(body.layout.lineCount()):
            line = body.layout.lineAt(i)
            if line.y() <= y < line.y() + line.height():
                if not line.x() <= x <= line.x() + line.naturalTextWidth():
                    return None
                at = line.xToCursor(x, line.CursorPosition.CursorOnCharacter)
                for start, end, url in body.links:
                    if start <= at < end:
                        return url
                return None
        return None

    def link_rects(self, index: QModelIndex) -> list[tuple[QRect, str]]:
        """Where row `index`'s links are drawn (viewport coordinates), one rect per line."""
        placed = self._placed(index)
        if placed is None:
            return []
        body, origin = placed
        rects = []
        for start, end, url in body.links:
            for i in range(body.layout.lineCount()):
                line = body.layout.lineAt(i)
                first = max(start, line.textStart())
                last = min(end, line.textStart() + line.textLength())
                if first >= last:
                    continue
                left = line.cursorToX(first)[0]
                right = line.cursorToX(last)[0]
                rects.append((QRect(origin.x() + math.floor(left), origin.y() + int(line.y()),
                                    max(1, math.ceil(right - left)), math.ceil(line.height())),
                              url))
        return rects
