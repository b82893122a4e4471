"""How one row of the message list is laid out and hit-tested (ui/message_view.py holds the
view; its owned RowPainter, ui/row_paint.py, paints it, and its RowHeights, ui/row_geometry.py,
measures it): the avatar and the author's name in their key's colour on a group's header, the clock time, a
day separator above the first row of each local day, the text, links and mentions, the inline
"(edited)" and "sending…" marks, reaction chips, the reply count or a "replied to a thread"
line, a continuation row's time in the avatar gutter on hover, on a post a moderator hid
(only a moderator's list has one) a "Hidden by a moderator" note above its dimmed text, and a
message's files under its text (ui/file_boxes.py: thumbnails and file cards). A message with
files and no text has no text line.

Text is laid out once per (message, text, width) and cached (a height needs no layout when the
text is one plain line); ui/message_body.py lays it out
(plain text on the fast path, Markdown through Qt's md4c, made safe). Code blocks are drawn on
a tinted box and never wrap: a wide one scrolls sideways (Shift+wheel, a sideways wheel or a
drag over it; a thin bar at its foot shows there is more). Block quotes get a bar at their
left. Palette roles only; sizes from font metrics; avatars are cached pixmaps (ui/avatars.py),
so nothing is laid out or made per paint.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QModelIndex,
    QPoint,
    QPointF,
    QRect,
    QSize,
    Qt,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontDatabase,
    QFontMetrics,
    QFontMetricsF,
    QGuiApplication,
    QPainter,
    QTextDocument,
    QTextLayout,
)
from PySide6.QtWidgets import (
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolTip,
)

from app.records import Message

from . import _markdown, _rows
from .file_boxes import FileBoxes, file_tip
from .message_body import Body, BodyLayouter, Code, Note
from .models import MessageListModel
from .row_geometry import (
    AVATAR_GAP,
    AVATAR_X,
    DAY_PAD,
    EDITED_MARK,
    EXTRA_GAP,
    GROUP_TOP,
    HEADER_GAP,
    LAYOUT_CACHE,
    MARK_GAP,
    NAME_GAP,
    PENDING_MARK,
    PILL_PAD,
    RIGHT_PAD,
    ROW_PAD,
    SMALL,
    THREAD_LINE,
    Marks,
    RowHeights,
    RowParts,
)
from .row_paint import RowPainter
from .theme import scaled

if TYPE_CHECKING:
    from .message_view import MessageView

class MessageDelegate(QStyledItemDelegate):
    """Draws one message row; sizes and layouts are cached per message, width and name."""

    def __init__(self, view: MessageView):
        super().__init__(view)
        self._view = view
        self._layouts: OrderedDict[tuple, Body] = OrderedDict()
        self.heights = RowHeights(self)
        self.painting = RowPainter(self)
        self._name_colors: dict[tuple[bytes, int], QColor] = {}
        # How far each code block is scrolled sideways: (message id, block) -> pixels.
        self.code_offsets: dict[tuple[bytes, int], float] = {}
        self.files = FileBoxes(view)
        self.reset()

    def reset(self) -> None:
        """Forget layouts and measures (the font, palette or style changed)."""
        self._layouts.clear()
        self.heights.clear()
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
        self.name_metrics = QFontMetrics(self.name_font)
        small = self.small_metrics = QFontMetrics(self.time_font)
        day = QFontMetrics(self.day_font)
        self.replies_metrics = QFontMetrics(self.replies_font)
        self.line_height = QFontMetrics(base).height()
        self.body_metrics = QFontMetricsF(base)
        self.emote_metrics = QFontMetricsF(self.emote_font)
        # A one-line plain body's height (BodyLayouter.plain), not emote and emote.
        self.one_line = tuple(max(self.line_height, math.ceil(m.ascent() + m.descent()))
                               for m in (self.body_metrics, self.emote_metrics))
        self._header_height = max(self.name_metrics.height(), small.height())
        self.avatar_size = self._header_height + HEADER_GAP + self.line_height
        # The gutter holds the avatar, or a continuation row's time on hover.
        gutter = max(self.avatar_size, small.horizontalAdvance("00:00"))
        self.text_x = AVATAR_X + gutter + AVATAR_GAP
        self.day_height = day.height() + 2 * DAY_PAD
        self.pill_height = day.height() + DAY_PAD
        self._day_metrics = day
        self.marks = Marks(small.horizontalAdvance(EDITED_MARK),
                           small.horizontalAdvance(PENDING_MARK))
        self.hidden_note = Note(_rows.HIDDEN_NOTE, self.time_font)
        palette = self._view.palette()
        self.bodies = BodyLayouter(palette, self.line_height, self.code_family)
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
        return top + (self.small_metrics.height() + HEADER_GAP if thread else 0)

    def lines(self, message: Message) -> tuple[bool, bool]:
        """(shows "replied to a thread" above the text, shows the reply count below it)."""
        if not getattr(self._view, "show_reply_counts", True):
            return False, False
        if message.reply_to is not None:
            return message.in_channel, False
        return False, message.replies > 0

    def mention_finder(self) -> tuple[_rows.MentionFinder | None, int, int]:
        model = self._view.model()
        finder = getattr(model, "mentions", None)
        return finder, getattr(model, "mention_generation", 0), id(model)

    def body(self, message: Message, name: str, width: int, keep: bool = True) -> Body:
        """The laid-out text of a row (cached unless `keep` is False, for a row only measured;
        the name only matters to `/me` rows)."""
        if not message.text and message.files:
            return self._no_text
        finder, generation, model = self.mention_finder()
        emote = _rows.is_emote(message)
        key = (message.id, message.text, width, name if emote else None, generation, model)
        body = self._layouts.get(key)
        if body is not None:
            self._layouts.move_to_end(key)
            return body
        text = _rows.body_text(message, name)
        skip = len(name) + 3 if emote else 0
        mine = message.author == getattr(self._view.model(), "me", None) and \
            message.origin is None
        font = self.emote_font if emote else self.body_font
        if _markdown.has_markup(message.text):
            action = message.text[len(_rows.EMOTE):] if emote else message.text
            source = _markdown.chat_source(action)
            if emote:
                source = f"\\* {_markdown.escape(name)} {source}"
            body = self.bodies.rich(source, font, width, finder, skip, mine)
        else:
            body = self.bodies.plain(text, font, width, finder, skip, mine)
        if not keep:
            return body
        self._layouts[key] = body
        if len(self._layouts) > LAYOUT_CACHE:
            self._layouts.popitem(last=False)
        return body

    # Heights -----------------------------------------------------------------------------------

    def mark_fits(self, index: QModelIndex) -> bool:
        """Whether row `index`'s marks ("(edited)", "sending…") go after its last line (else
        below it, on a line of their own)."""
        message, _, name, _, _ = index.model().row(index.row())
        return self.heights.measure(message, name, self.text_width(), True)[1]

    def pending_moves_rows(self, index: QModelIndex) -> bool:
        """Whether the pending mark coming or going changes row `index`'s height."""
        message, _, name, _, _ = index.model().row(index.row())
        width = self.text_width()
        with_mark = self.heights.measure(message, name, width, True)[1]
        return with_mark != (not message.edited or self.heights.measure(message, name, width,
                                                                 False)[1])

    def _mark_height(self) -> int:
        return self.small_metrics.height()


    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return super().sizeHint(option, index)
        row = index.row()
        message, header, name, _, pending = model.row(row)
        width = self.text_width()
        height, fits = self.heights.measure(message, name, width, pending)
        if not fits:
            height += self._mark_height()
        if message.files:
            height += self.files.height(message.files, width)
        thread = False
        if message.reactions or message.replies or message.reply_to is not None:
            thread, replies = self.lines(message)
            height += self.heights.below(message, replies, width)
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

    def place(self, rect: QRect, message: Message, name: str, mine: bool, header: bool,
               day: bool, pending: bool, body: Body) -> RowParts:
        left, top = rect.left(), rect.top()
        x = left + self.text_x
        width = self.text_width()
        thread, replies = self.lines(message)
        body_top = top + self.body_top(header, day, thread, message.hidden)
        small = self.small_metrics
        band = QRect(left, top, rect.width(), self.day_height) if day else None
        avatar = name_rect = time_rect = gutter = shown = None
        if header:
            head = top + (self.day_height if day else 0) + GROUP_TOP
            avatar = QRect(left + AVATAR_X, head, self.avatar_size, self.avatar_size)
            when = _rows.clock(message.ts)
            tail = NAME_GAP + small.horizontalAdvance(when)
            if mine:
                tail += NAME_GAP + small.horizontalAdvance("(you)")
            shown = self.name_metrics.elidedText(name, Qt.TextElideMode.ElideRight,
                                                  max(24, width - tail))
            name_width = self.name_metrics.horizontalAdvance(shown)
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
        height, fits = self.heights.measure(message, name, width, pending)
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
                edited = QRect(at, y, self.marks.edited, small.height())
                at += self.marks.edited + MARK_GAP
            if pending:
                mark = QRect(at, y, self.marks.pending, small.height())
        files: tuple[tuple[QRect, int], ...] = ()
        actions: tuple[tuple[QRect, int, str], ...] = ()
        if message.files:
            files, actions, below = self.files.layout(message.files, x, below, width)
        chips: tuple[tuple[QRect, str | None], ...] = ()
        if message.reactions:
            below += EXTRA_GAP
            rects, chips_height = self.heights.chip_rects(message.reactions, width)
            emoji = [r.emoji for r in message.reactions] + [None]
            chips = tuple((r.translated(x, below), e) for r, e in zip(rects, emoji,
                                                                        strict=True))
            below += chips_height
        replies_rect = None
        if replies:
            below += EXTRA_GAP
            label = _rows.replies_label(message.replies)
            replies_rect = QRect(x, below, self.replies_metrics.horizontalAdvance(label),
                                 self.replies_metrics.height())
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
        return self.place(rect, message, name, mine, header, model.starts_day(index.row()),
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
        self.painting.paint(painter, option, index)

    # Hit-testing -------------------------------------------------------------------------------

    def _placed(self, index: QModelIndex) -> tuple[Message, Body, QPoint] | None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return None
        message, header, name, _, _ = model.row(index.row())
        rect = self._view.visualRect(index)
        if not rect.isValid():
            return None
        thread = self.lines(message)[0]
        body = self.body(message, name, self.text_width())
        return message, body, QPoint(rect.left() + self.text_x,
                                     rect.top() + self.body_top(
                                         header, model.starts_day(index.row()), thread,
                                         message.hidden))

    def code_offset(self, message_id: bytes, block: int, code: Code) -> float:
        """How far a code block is scrolled, within what it can scroll now (an edit or a
        wider window may have made it narrower)."""
        return _markdown.clamp_scroll(self.code_offsets.get((message_id, block), 0.0),
                                      code.content, code.box.width())

    def _doc_point(self, message: Message, body: Body, x: float, y: float) -> QPointF:
        """A point in the body as a point in its document, through a scrolled code block."""
        for i, code in enumerate(body.codes):
            if code.box.contains(QPointF(x, y)):
                x += self.code_offset(message.id, i, code)
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

