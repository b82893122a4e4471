"""How one row of the message list is drawn and hit-tested (ui/message_view.py holds the view):
the avatar and the author's name in their key's colour on a group's header, the clock time, a
day separator above the first row of each local day, the text, links and mentions, the inline
"(edited)" and "sending…" marks, reaction chips, the reply count or a "replied to a thread"
line, a continuation row's time in the avatar gutter on hover, on a post a moderator hid
(only a moderator's list has one) a "Hidden by a moderator" note above its dimmed text, and a
message's files under its text (ui/file_boxes.py: thumbnails and file cards). A message with
files and no text has no text line.

Text is laid out once per (message, text, width) and cached; ui/message_body.py lays it out
(plain text on the fast path, Markdown through Qt's md4c, made safe). Code blocks are drawn on
a tinted box and never wrap: a wide one scrolls sideways (Shift+wheel, a sideways wheel or a
drag over it; a thin bar at its foot shows there is more). Block quotes get a bar at their
left. Palette roles only; sizes from font metrics; avatars are cached pixmaps (ui/avatars.py),
so nothing is laid out or made per paint.
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
    QAbstractTextDocumentLayout,
    QColor,
    QFont,
    QFontDatabase,
    QFontMetrics,
    QFontMetricsF,
    QGuiApplication,
    QPainter,
    QPalette,
    QRegion,
    QTextDocument,
    QTextLayout,
)
from PySide6.QtWidgets import (
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
)

from app.records import Message, Reaction

from . import _markdown, _rows, avatars
from .file_boxes import FileBoxes, file_tip
from .message_body import CODE_PAD, HIDDEN_OPACITY, Body, BodyLayouter, Code, Note, alpha
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
EDITED_MARK = "(edited)"
THREAD_LINE = "replied to a thread"
MARK_GAP = 8  # between a row's last word and its marks, and between the marks
PENDING_OPACITY = 0.55
EXTRA_GAP = 5  # above the reaction chips and above the reply count
CHIP_PAD_X, CHIP_PAD_Y, CHIP_GAP = 7, 2, 5  # inside a reaction chip, and between chips
ADD_CHIP = "+"  # the chip after the reactions that adds one
SCROLL_BAR = 3  # the thin bar under a code block that is wider than the row
MENTIONED_ROW_ALPHA = 30
LAYOUT_CACHE = 800  # laid-out rows kept for painting and hit-testing (a few screens' worth)
HEIGHT_CACHE = 250_000  # measured heights kept (cheap); cleared whole when it grows past this
CHIP_CACHE = 2_000
NO_ROOM = 1 << 30  # the "right edge" of text that ends in a code block: marks go below


@dataclass(frozen=True, slots=True)
class RowParts:
    """Where a row's pieces are drawn, in viewport coordinates: what painting uses and what
    tests read. None (or empty) for the parts this row does not show."""

    row: QRect
    day: QRect | None  # the day separator band above the row
    avatar: QRect | None  # header rows
    name: QRect | None  # header rows: the author's name (elided to fit)
    shown_name: str | None  # the name as drawn there
    time: QRect | None  # header rows: the clock time
    body: QRect  # the text's box
    mark: QRect | None  # "sending…", while pending
    gutter: QRect | None  # where a continuation row's time shows on hover
    edited: QRect | None = None  # "(edited)"
    chips: tuple[tuple[QRect, str | None], ...] = ()  # reaction chips (emoji; None: add one)
    replies: QRect | None = None  # "3 replies"
    thread: QRect | None = None  # "replied to a thread", above the text
    hidden: QRect | None = None  # "Hidden by a moderator", just above the text
    files: tuple[tuple[QRect, int], ...] = ()  # each file's thumbnail or card, and its index
    # What a click on a file acts on: (where, the file's index, "view", "download", "open" or
    # "save").
    file_actions: tuple[tuple[QRect, int, str], ...] = ()


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
        self._layouts: OrderedDict[tuple, Body] = OrderedDict()
        # Measured heights at one width, by message id (by (id, name) for "/me" rows, whose
        # text holds the name): height * 2 + 1 if the pending mark fits after the last line.
        # Small ints, so 100,000 rows cost a few MB. An edited message's text may change
        # again: its key holds the text, and its value is (height, last line's right edge).
        self._heights: dict[bytes | tuple, int | tuple[int, int]] = {}
        self._heights_width = 0
        self._chips: OrderedDict[tuple, tuple[list[QRect], int]] = OrderedDict()
        self._name_colors: dict[tuple[bytes, int], QColor] = {}
        # How far each code block is scrolled sideways: (message id, block) -> pixels.
        self.code_offsets: dict[tuple[bytes, int], float] = {}
        self.files = FileBoxes(view)
        self.reset()

    def reset(self) -> None:
        """Forget layouts and measures (the font, palette or style changed)."""
        self._layouts.clear()
        self._heights.clear()
        self._chips.clear()
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
        self.replies_font = QFont(self.time_font)
        self.replies_font.setBold(True)
        self.code_family = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
        self._name_metrics = QFontMetrics(self.name_font)
        small = self._small_metrics = QFontMetrics(self.time_font)
        day = QFontMetrics(self.day_font)
        self._replies_metrics = QFontMetrics(self.replies_font)
        self._line_height = QFontMetrics(base).height()
        self._body_metrics = QFontMetricsF(base)
        self._emote_metrics = QFontMetricsF(self.emote_font)
        # A one-line plain body's height (BodyLayouter.plain), not emote and emote.
        self._one_line = tuple(max(self._line_height, math.ceil(m.ascent() + m.descent()))
                               for m in (self._body_metrics, self._emote_metrics))
        self._header_height = max(self._name_metrics.height(), small.height())
        self.avatar_size = self._header_height + HEADER_GAP + self._line_height
        # The gutter holds the avatar, or a continuation row's time on hover.
        gutter = max(self.avatar_size, small.horizontalAdvance("00:00"))
        self.text_x = AVATAR_X + gutter + AVATAR_GAP
        self.day_height = day.height() + 2 * DAY_PAD
        self.pill_height = day.height() + DAY_PAD
        self._day_metrics = day
        self._mark_width = small.horizontalAdvance(PENDING_MARK)
        self._edited_width = small.horizontalAdvance(EDITED_MARK)
        self._chip_height = small.height() + 2 * CHIP_PAD_Y
        self.hidden_note = Note(_rows.HIDDEN_NOTE, self.time_font)
        palette = self._view.palette()
        self.bodies = BodyLayouter(palette, self._line_height, self.code_family)
        self.files.reset(self.name_font, self.time_font, self.replies_font)
        # The text of a message that has only files: no line at all.
        self._no_text = Body(QTextLayout(""), None, 0.0, 0, float(small.ascent()), None, 0.0,
                             [], False, [], [])

    # Measures ----------------------------------------------------------------------------------

    def text_width(self) -> int:
        return max(40, self._view.viewport().width() - self.text_x - RIGHT_PAD)

    def pill_width(self, label: str) -> int:
        return self._day_metrics.horizontalAdvance(label) + 2 * PILL_PAD

    def body_top(self, header: bool, day: bool, thread: bool = False,
                 hidden: bool = False) -> int:
        """Where the text starts below a row's top edge (below a "replied to a thread" line
        when `thread`, and the hidden note when `hidden`)."""
        top = self.day_height if day else 0
        top += GROUP_TOP + self._header_height + HEADER_GAP if header else ROW_PAD
        top += self.hidden_note.size.height() + HEADER_GAP if hidden else 0
        return top + (self._small_metrics.height() + HEADER_GAP if thread else 0)

    def _lines(self, message: Message) -> tuple[bool, bool]:
        """(shows "replied to a thread" above the text, shows the reply count below it)."""
        if not getattr(self._view, "show_reply_counts", True):
            return False, False
        if message.reply_to is not None:
            return message.in_channel, False
        return False, message.replies > 0

    def _mention_finder(self) -> tuple[_rows.MentionFinder | None, int, int]:
        model = self._view.model()
        finder = getattr(model, "mentions", None)
        return finder, getattr(model, "mention_generation", 0), id(model)

    def body(self, message: Message, name: str, width: int) -> Body:
        """The laid-out text of a row (cached; the name only matters to `/me` rows)."""
        if not message.text and message.files:
            return self._no_text
        finder, generation, model = self._mention_finder()
        emote = _rows.is_emote(message)
        key = (message.id, message.text, width, name if emote else None, generation, model)
        body = self._layouts.get(key)
        if body is not None:
            self._layouts.move_to_end(key)
            return body
        text = _rows.body_text(message, name)
        skip = len(name) + 3 if emote else 0
        mine = message.author == getattr(self._view.model(), "me", None)
        font = self.emote_font if emote else self.body_font
        if _markdown.has_markup(message.text):
            action = message.text[len(_rows.EMOTE):] if emote else message.text
            source = _markdown.chat_source(action)
            if emote:
                source = f"\\* {_markdown.escape(name)} {source}"
            body = self.bodies.rich(source, font, width, finder, skip, mine)
        else:
            body = self.bodies.plain(text, font, width, finder, skip, mine)
        self._layouts[key] = body
        if len(self._layouts) > LAYOUT_CACHE:
            self._layouts.popitem(last=False)
        return body

    # Heights -----------------------------------------------------------------------------------

    def _measure(self, message: Message, name: str, width: int,
                 pending: bool) -> tuple[int, bool]:
        """(text height, whether the marks after the text, "(edited)" and "sending…" when
        `pending`, fit after its last line) of a row."""
        if width != self._heights_width or len(self._heights) >= HEIGHT_CACHE:
            self._heights.clear()
            self._heights_width = width
        emote = _rows.is_emote(message)
        if message.edited:
            key = (message.id, message.text, name if emote else None)
            measured = self._heights.get(key)
            if measured is None:
                measured = self._heights[key] = self._extent(message, name, width)
            height, right = measured
            return height, self._fits(right, self._trail(message, pending), width)
        key = (message.id, name) if emote else message.id
        packed = self._heights.get(key)
        if packed is None:
            height, right = self._extent(message, name, width)
            packed = self._heights[key] = height * 2 + self._fits(right, self._mark_width,
                                                                  width)
        return packed >> 1, not pending or bool(packed & 1)

    def _extent(self, message: Message, name: str, width: int) -> tuple[int, int]:
        """(text height, its last line's right edge) of a row. One line of plain printable
        ASCII, most chat lines, is measured by its advance (what its layout would give)
        rather than laid out: scrolling back through a long channel measures every row."""
        if message.text and not _markdown.has_markup(message.text):
            text = _rows.body_text(message, name)
            if text.isascii() and text.isprintable():
                emote = _rows.is_emote(message)
                advance = (self._emote_metrics if emote else self._body_metrics
                           ).horizontalAdvance(text)
                if advance <= width - 1:
                    return self._one_line[emote], math.ceil(advance)
        body = self.body(message, name, width)
        return body.height, self._right(body)

    @staticmethod
    def _right(body: Body) -> int:
        return NO_ROOM if body.last_line is None else math.ceil(body.last_line.right())

    def _trail(self, message: Message, pending: bool) -> int:
        """How wide the marks after the text are: "(edited)", "sending…", or both."""
        width = self._edited_width if message.edited else 0
        if pending:
            width += (MARK_GAP if width else 0) + self._mark_width
        return width

    @staticmethod
    def _fits(right: int, trail: int, width: int) -> bool:
        return right + MARK_GAP + trail <= width

    def mark_fits(self, index: QModelIndex) -> bool:
        """Whether row `index`'s marks ("(edited)", "sending…") go after its last line (else
        below it, on a line of their own)."""
        message, _, name, _, _ = index.model().row(index.row())
        return self._measure(message, name, self.text_width(), True)[1]

    def pending_moves_rows(self, index: QModelIndex) -> bool:
        """Whether the pending mark coming or going changes row `index`'s height."""
        message, _, name, _, _ = index.model().row(index.row())
        width = self.text_width()
        with_mark = self._measure(message, name, width, True)[1]
        return with_mark != (not message.edited or self._measure(message, name, width,
                                                                 False)[1])

    def _mark_height(self) -> int:
        return self._small_metrics.height()

    def chip_rects(self, reactions: tuple[Reaction, ...], width: int) -> tuple[list[QRect], int]:
        """Where a row's reaction chips go, from the chips' top left, flowing onto more lines
        when they do not fit; the last one adds a reaction. Also the height they take."""
        # By what the chips show, not who reacted: few kinds of chip rows, many reactions.
        key = (tuple((r.emoji, len(r.by)) for r in reactions), width)
        cached = self._chips.get(key)
        if cached is not None:
            return cached
        metrics = self._small_metrics
        rects: list[QRect] = []
        x = y = 0
        for label in [_rows.chip_label(r) for r in reactions] + [ADD_CHIP]:
            chip_width = metrics.horizontalAdvance(label) + 2 * CHIP_PAD_X
            if x and x + chip_width > width:
                x, y = 0, y + self._chip_height + CHIP_GAP
            rects.append(QRect(x, y, chip_width, self._chip_height))
            x += chip_width + CHIP_GAP
        cached = self._chips[key] = (rects, y + self._chip_height)
        if len(self._chips) > CHIP_CACHE:
            self._chips.popitem(last=False)
        return cached

    def _below_height(self, message: Message, replies: bool, width: int) -> int:
        """What goes under the text: the reaction chips and the reply count."""
        height = 0
        if message.reactions:
            height += EXTRA_GAP + self.chip_rects(message.reactions, width)[1]
        if replies:
            height += EXTRA_GAP + self._replies_metrics.height()
        return height

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return super().sizeHint(option, index)
        row = index.row()
        message, header, name, _, pending = model.row(row)
        width = self.text_width()
        height, fits = self._measure(message, name, width, pending)
        if not fits:
            height += self._mark_height()
        if message.files:
            height += self.files.height(message.files, width)
        thread = False
        if message.reactions or message.replies or message.reply_to is not None:
            thread, replies = self._lines(message)
            height += self._below_height(message, replies, width)
        return QSize(AVATAR_X, self.body_top(header, model.starts_day(row), thread,
                                             message.hidden) + height + ROW_PAD)

    def name_color(self, author: bytes, base: QColor) -> QColor:
        """The author's name colour on `base`: their hue, readable (ui/_rows.name_rgb)."""
        key = (author, base.rgb())
        color = self._name_colors.get(key)
        if color is None:
            rgb = _rows.name_rgb(author, (base.red(), base.green(), base.blue()))
            color = self._name_colors[key] = QColor(*rgb)
        return color

    def file_at(self, index: QModelIndex, pos: QPoint) -> tuple[int, str] | None:
        """The file and what a click at `pos` does to it, in row `index` (see RowParts)."""
        parts = self.parts(index)
        if parts is None:
            return None
        for rect, i, action in parts.file_actions:
            if rect.contains(pos):
                return i, action
        return None

    # Where things go ---------------------------------------------------------------------------

    def _parts(self, rect: QRect, message: Message, name: str, mine: bool, header: bool,
               day: bool, pending: bool, body: Body) -> RowParts:
        left, top = rect.left(), rect.top()
        x = left + self.text_x
        width = self.text_width()
        thread, replies = self._lines(message)
        body_top = top + self.body_top(header, day, thread, message.hidden)
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
        above, thread_rect, hidden_rect = body_top, None, None
        if message.hidden:
            above -= self.hidden_note.size.height() + HEADER_GAP
            hidden_rect = QRect(QPoint(x, above), self.hidden_note.size)
        if thread:
            thread_rect = QRect(x, above - small.height() - HEADER_GAP,
                                small.horizontalAdvance(THREAD_LINE), small.height())
        height, fits = self._measure(message, name, width, pending)
        mark = edited = None
        below = body_top + height
        if message.edited or pending:
            if fits:
                line = body.last_line
                at = x + math.ceil(line.right()) + MARK_GAP
                y = round(body_top + line.top() + body.last_ascent - small.ascent())
            else:
                at, y = x, below
                below += small.height()
            if message.edited:
                edited = QRect(at, y, self._edited_width, small.height())
                at += self._edited_width + MARK_GAP
            if pending:
                mark = QRect(at, y, self._mark_width, small.height())
        files: tuple[tuple[QRect, int], ...] = ()
        actions: tuple[tuple[QRect, int, str], ...] = ()
        if message.files:
            files, actions, below = self.files.layout(message.files, x, below, width)
        chips: tuple[tuple[QRect, str | None], ...] = ()
        if message.reactions:
            below += EXTRA_GAP
            rects, chips_height = self.chip_rects(message.reactions, width)
            emoji = [r.emoji for r in message.reactions] + [None]
            chips = tuple((r.translated(x, below), e) for r, e in zip(rects, emoji,
                                                                        strict=True))
            below += chips_height
        replies_rect = None
        if replies:
            below += EXTRA_GAP
            label = _rows.replies_label(message.replies)
            replies_rect = QRect(x, below, self._replies_metrics.horizontalAdvance(label),
                                 self._replies_metrics.height())
        return RowParts(rect, band, avatar, name_rect, shown, time_rect,
                        QRect(x, body_top, width, height), mark, gutter, edited, chips,
                        replies_rect, thread_rect, hidden_rect, files, actions)

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

    def _row_body(self, index: QModelIndex) -> tuple[Message, Body] | None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return None
        message, _, name, _, _ = model.row(index.row())
        return message, self.body(message, name, self.text_width())

    def document(self, index: QModelIndex) -> QTextDocument | None:
        """Row `index`'s rendered Markdown, or None for a row laid out as plain text."""
        found = self._row_body(index)
        return found[1].doc if found else None

    def shown_text(self, index: QModelIndex) -> str:
        """The text row `index` shows (Markdown's syntax gone), lines joined by newlines."""
        found = self._row_body(index)
        if found is None:
            return ""
        body = found[1]
        text = body.doc.toPlainText() if body.doc is not None else body.layout.text()
        return text.replace("\u2028", "\n")

    def line_rects(self, index: QModelIndex) -> list[QRect]:
        """The drawn extent of each of row `index`'s text lines (viewport coordinates; a code
        block's lines as far as they show)."""
        parts = self.parts(index)
        found = self._row_body(index)
        if parts is None or found is None:
            return []
        body = found[1]
        rects = []
        for top, line_x, line in self._all_lines(body):
            text = line.naturalTextRect()
            left = parts.body.left() + math.floor(line_x + text.left())
            right = min(parts.body.right() + 1,
                        parts.body.left() + math.ceil(line_x + text.right()))
            rects.append(QRect(left, parts.body.top() + math.floor(top + line.y()),
                               max(0, right - left), math.ceil(line.height())))
        return rects

    @staticmethod
    def _all_lines(body: Body):
        """(block top, block left, QTextLine) of every line, in the body's coordinates."""
        if body.layout is not None:
            for i in range(body.layout.lineCount()):
                yield 0.0, 0.0, body.layout.lineAt(i)
            return
        layout = body.doc.documentLayout()
        block = body.doc.begin()
        while block.isValid():
            lines = block.layout()
            top = layout.blockBoundingRect(block).top() + body.shift
            for i in range(lines.lineCount()):
                yield top, lines.position().x(), lines.lineAt(i)
            block = block.next()

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
        if body.mentions_me:
            painter.fillRect(rect, alpha(palette.color(group, QPalette.ColorRole.Link),
                                          MENTIONED_ROW_ALPHA))
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
        if parts.thread is not None:
            painter.setFont(self.time_font)
            painter.setPen(quiet)
            painter.drawText(parts.thread, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                             THREAD_LINE)
        if parts.hidden is not None:
            self.hidden_note.paint(painter, parts.hidden, palette, group)
        painter.setPen(text_color)
        if pending or message.hidden:
            painter.setOpacity(HIDDEN_OPACITY if message.hidden else PENDING_OPACITY)
        if body.layout is not None:
            body.layout.draw(painter, QPointF(parts.body.topLeft()))
        else:
            self._paint_rich(painter, body, parts.body.topLeft(), palette, group, message.id)
        painter.setOpacity(1.0)
        if parts.files:
            self.files.paint(painter, message, parts.files, parts.file_actions, palette, group,
                             HIDDEN_OPACITY if message.hidden
                             else PENDING_OPACITY if pending else 1.0)
        painter.setFont(self.time_font)
        painter.setPen(quiet)
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        if parts.edited is not None:
            painter.drawText(parts.edited, flags, EDITED_MARK)
        if parts.mark is not None:
            painter.drawText(parts.mark, flags, PENDING_MARK)
        if parts.chips:
            self._paint_chips(painter, message, parts, model.me, palette, group)
        if parts.replies is not None:
            painter.setFont(self.replies_font)
            painter.setPen(palette.color(group, QPalette.ColorRole.Link))
            painter.drawText(parts.replies, flags, _rows.replies_label(message.replies))
        if parts.gutter is not None and hovered:
            painter.setFont(self.time_font)
            painter.setPen(quiet)
            painter.drawText(parts.gutter, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop,
                             _rows.clock(message.ts))
        painter.restore()

    def _paint_rich(self, painter: QPainter, body: Body, origin: QPoint, palette: QPalette,
                    group: QPalette.ColorGroup, message_id: bytes) -> None:
        doc = body.doc
        context = QAbstractTextDocumentLayout.PaintContext()
        colours = QPalette(palette)
        colours.setColor(QPalette.ColorRole.Text, palette.color(group, QPalette.ColorRole.Text))
        context.palette = colours
        width = doc.textWidth()
        painter.save()
        painter.translate(origin)
        bar = alpha(palette.color(group, QPalette.ColorRole.PlaceholderText), 150)
        for quote in body.quotes:
            painter.fillRect(quote, bar)
        whole = QRectF(0, 0, width, body.height)
        if body.codes:
            region = QRegion(whole.toAlignedRect())
            for code in body.codes:
                region -= QRegion(code.box.toAlignedRect())
            painter.setClipRegion(region, Qt.ClipOperation.IntersectClip)
        painter.translate(0, body.shift)
        context.clip = whole.translated(0, -body.shift)
        doc.documentLayout().draw(painter, context)
        painter.restore()
        if not body.codes:
            return
        tint = palette.color(group, QPalette.ColorRole.AlternateBase)
        border = alpha(palette.color(group, QPalette.ColorRole.Mid), 160)
        for i, code in enumerate(body.codes):
            box = code.box.translated(QPointF(origin))
            painter.save()
            painter.setRenderHint(QPainter.RenderHint.Antialiasing)
            painter.setPen(border)
            painter.setBrush(tint)
            painter.drawRoundedRect(box.adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
            painter.restore()
            offset = self._offset(message_id, i, code)
            painter.save()
            painter.setClipRect(box.adjusted(CODE_PAD, 0, -CODE_PAD, 0),
                                Qt.ClipOperation.IntersectClip)
            painter.translate(QPointF(origin) + QPointF(-offset, body.shift))
            context.clip = code.box.translated(offset, -body.shift)
            doc.documentLayout().draw(painter, context)
            painter.restore()
            if code.content > code.box.width():
                track = box.width() - 2 * CODE_PAD
                thumb = max(12.0, track * code.box.width() / code.content)
                travel = (offset / (code.content - code.box.width())) * (track - thumb)
                painter.fillRect(QRectF(box.left() + CODE_PAD + travel,
                                        box.bottom() - SCROLL_BAR - 1, thumb, SCROLL_BAR),
                                 alpha(palette.color(group, QPalette.ColorRole.PlaceholderText),
                                        170))

    def _paint_chips(self, painter: QPainter, message: Message, parts: RowParts, me: bytes,
                     palette: QPalette, group: QPalette.ColorGroup) -> None:
        highlight = palette.color(group, QPalette.ColorRole.Highlight)
        text = palette.color(group, QPalette.ColorRole.Text)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(self.time_font)
        labels = [(_rows.chip_label(r), me in r.by) for r in message.reactions]
        labels.append((ADD_CHIP, False))
        for (rect, _), (label, mine) in zip(parts.chips, labels, strict=True):
            box = QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5)
            if mine:
                painter.setPen(highlight)
                painter.setBrush(alpha(highlight, 50))
            else:
                painter.setPen(alpha(palette.color(group, QPalette.ColorRole.Mid), 200))
                painter.setBrush(palette.color(group, QPalette.ColorRole.AlternateBase))
            radius = box.height() / 2
            painter.drawRoundedRect(box, radius, radius)
            painter.setPen(text if label != ADD_CHIP
                           else palette.color(group, QPalette.ColorRole.PlaceholderText))
            painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, label)
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

    def _placed(self, index: QModelIndex) -> tuple[Message, Body, QPoint] | None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return None
        message, header, name, _, _ = model.row(index.row())
        rect = self._view.visualRect(index)
        if not rect.isValid():
            return None
        thread = self._lines(message)[0]
        body = self.body(message, name, self.text_width())
        return message, body, QPoint(rect.left() + self.text_x,
                                     rect.top() + self.body_top(
                                         header, model.starts_day(index.row()), thread,
                                         message.hidden))

    def _offset(self, message_id: bytes, block: int, code: Code) -> float:
        """How far a code block is scrolled, within what it can scroll now (an edit or a
        wider window may have made it narrower)."""
        return _markdown.clamp_scroll(self.code_offsets.get((message_id, block), 0.0),
                                      code.content, code.box.width())

    def _doc_point(self, message: Message, body: Body, x: float, y: float) -> QPointF:
        """A point in the body as a point in its document, through a scrolled code block."""
        for i, code in enumerate(body.codes):
            if code.box.contains(QPointF(x, y)):
                x += self._offset(message.id, i, code)
                break
        return QPointF(x, y - body.shift)

    def link_at(self, index: QModelIndex, pos: QPoint) -> str | None:
        """The URL of the link under `pos` (viewport coordinates) in row `index`, if any."""
        placed = self._placed(index)
        if placed is None:
            return None
        message, body, origin = placed
        x, y = pos.x() - origin.x(), pos.y() - origin.y()
        if body.doc is not None:
            if not (0 <= x <= self.text_width() and 0 <= y < body.height):
                return None
            href = body.doc.documentLayout().anchorAt(self._doc_point(message, body, x, y))
            return href if href and _markdown.safe_url(href) else None
        if not body.links:
            return None
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
        _, body, origin = placed
        spans: list[tuple[float, float, object, int, int, str]] = []
        if body.layout is not None:
            spans = [(0.0, 0.0, body.layout, start, end, url) for start, end, url in body.links]
        else:
            layout = body.doc.documentLayout()
            block = body.doc.begin()
            while block.isValid():
                fragments = block.begin()
                top = layout.blockBoundingRect(block).top() + body.shift
                while not fragments.atEnd():
                    fragment = fragments.fragment()
                    href = fragment.charFormat().anchorHref()
                    if href:
                        start = fragment.position() - block.position()
                        spans.append((top, block.layout().position().x(), block.layout(),
                                      start, start + fragment.length(), href))
                    fragments += 1
                block = block.next()
        rects = []
        for top, left_x, lines, start, end, url in spans:
            for i in range(lines.lineCount()):
                line = lines.lineAt(i)
                first = max(start, line.textStart())
                last = min(end, line.textStart() + line.textLength())
                if first >= last:
                    continue
                left = left_x + line.cursorToX(first)[0]
                right = left_x + line.cursorToX(last)[0]
                rects.append((QRect(origin.x() + math.floor(left),
                                    origin.y() + int(top + line.y()),
                                    max(1, math.ceil(right - left)), math.ceil(line.height())),
                              url))
        return rects

    def code_at(self, index: QModelIndex, pos: QPoint) -> tuple[tuple[bytes, int], QRect,
                                                                  float] | None:
        """The code block under `pos` in row `index` that is wider than the row: its key in
        `code_offsets`, its box (viewport coordinates) and how far it can scroll."""
        placed = self._placed(index)
        if placed is None:
            return None
        message, body, origin = placed
        point = QPointF(pos - origin)
        for i, code in enumerate(body.codes):
            if code.box.contains(point) and code.content > code.box.width():
                return ((message.id, i), code.box.translated(QPointF(origin)).toAlignedRect(),
                        code.content - code.box.width())
        return None

    def scroll_code(self, key: tuple[bytes, int], by: float, most: float) -> bool:
        """Scroll a code block sideways by `by` pixels; False if it was already at that end."""
        before = _markdown.clamp_scroll(self.code_offsets.get(key, 0.0), most, 0.0)
        after = _markdown.clamp_scroll(before + by, most, 0.0)
        self.code_offsets[key] = after
        return after != before

    def target_at(self, index: QModelIndex, pos: QPoint) -> tuple[str, object] | None:
        """What a click at `pos` in row `index` acts on: ("link", url), ("reaction", emoji),
        ("add", chip rect), ("edited", None), ("replies", None), ("thread", thread id) or
        ("file", (index, action)). On a post a moderator hid only its links
        (_rows.converses: nothing else acts on it)."""
        parts = self.parts(index)
        if parts is None:
            return None
        if parts.hidden is not None:
            link = self.link_at(index, pos)
            return ("link", link) if link else None
        for rect, i, action in parts.file_actions:
            if rect.contains(pos):
                return "file", (i, action)
        for rect, emoji in parts.chips:
            if rect.contains(pos):
                return ("reaction", emoji) if emoji is not None else ("add", rect)
        if parts.edited is not None and parts.edited.contains(pos):
            return "edited", None
        if parts.replies is not None and parts.replies.contains(pos):
            return "replies", None
        if parts.thread is not None and parts.thread.contains(pos):
            return "thread", index.model().messages[index.row()].reply_to
        link = self.link_at(index, pos)
        return ("link", link) if link else None

    def helpEvent(self, event, view, option, index) -> bool:  # noqa: N802 (Qt's name)
        """Tooltips: who reacted with a chip's emoji, where a link goes, what "(edited)" does;
        else the row's own (author, key, full time)."""
        model = index.model()
        if isinstance(model, MessageListModel) and index.row() < len(model.messages):
            tip = self._tip(index, event.pos())
            if tip:
                QToolTip.showText(event.globalPos(), tip, view)
                return True
        return super().helpEvent(event, view, option, index)

    def _tip(self, index: QModelIndex, pos: QPoint) -> str | None:
        target = self.target_at(index, pos)
        if target is None:
            return None
        model = index.model()
        message = model.messages[index.row()]
        kind, value = target
        if kind == "reaction":
            reaction = next(r for r in message.reactions if r.emoji == value)
            return _rows.reaction_tooltip(reaction, model.names_by_key(), model.me)
        if kind == "add":
            return "Add a reaction"
        if kind == "edited":
            return "Edited: click to see earlier versions"
        if kind == "link":
            return value
        if kind in ("replies", "thread"):
            return "Open the thread"
        if kind == "file":
            i, action = value
            return file_tip(message.files[i], action)
        return None

