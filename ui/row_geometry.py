"""Where a message row's pieces go and how tall it is: the row's spacing, `RowParts` (where
each piece is drawn, what painting uses and tests read), and `RowHeights`, the measuring a
MessageDelegate owns: each row's text height cached by message (a one-line plain row measured
by its advance, not laid out) and the reaction chips' places by what they show."""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import QRect
from PySide6.QtGui import QFont, QTextLayout, QTextOption

from app.records import Message, Reaction

from . import _markdown, _rows
from .message_body import Body

if TYPE_CHECKING:
    from .message_delegate import MessageDelegate

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


class RowHeights:
    """Measures rows for its MessageDelegate (whose fonts and text layouts it uses)."""

    def __init__(self, delegate: MessageDelegate):
        self._delegate = delegate
        # Measured heights at one width, by message id (by (id, name) for "/me" rows, whose
        # text holds the name): height * 2 + 1 if the pending mark fits after the last line.
        # Small ints, so 100,000 rows cost a few MB.
        self._heights: dict[bytes | tuple[bytes, str], int] = {}
        # An edited message's text may change again: by (id, text, name for "/me" rows),
        # (height, last line's right edge).
        self._edited: dict[tuple[bytes, str, str | None], tuple[int, int]] = {}
        self._width = 0
        self._chips: OrderedDict[tuple, tuple[list[QRect], int]] = OrderedDict()

    def clear(self) -> None:
        self._heights.clear()
        self._edited.clear()
        self._chips.clear()

    def measure(self, message: Message, name: str, width: int,
                pending: bool) -> tuple[int, bool]:
        """(text height, whether the marks after the text, "(edited)" and "sending…" when
        `pending`, fit after its last line) of a row."""
        if width != self._width or len(self._heights) + len(self._edited) >= HEIGHT_CACHE:
            self._heights.clear()
            self._edited.clear()
            self._width = width
        emote = _rows.is_emote(message)
        marks = self._delegate.marks
        if message.edited:
            edited = (message.id, message.text, name if emote else None)
            measured = self._edited.get(edited)
            if measured is None:
                measured = self._edited[edited] = self._extent(message, name, width)
            height, right = measured
            return height, fits(right, marks.trail(message.edited, pending), width)
        key: bytes | tuple[bytes, str] = (message.id, name) if emote else message.id
        packed = self._heights.get(key)
        if packed is None:
            height, right = self._extent(message, name, width)
            packed = self._heights[key] = height * 2 + fits(right, marks.pending, width)
        return packed >> 1, not pending or bool(packed & 1)

    def _extent(self, message: Message, name: str, width: int) -> tuple[int, int]:
        """(text height, its last line's right edge) of a row. One line of plain printable
        ASCII, most chat lines, is measured by its advance (what its layout would give)
        rather than laid out: scrolling back through a long channel measures every row."""
        delegate = self._delegate
        text = _rows.body_text(message, name)
        emote = _rows.is_emote(message)
        if message.text and not _markdown.has_markup(message.text) \
                and not self._formatted(text, len(name) + 3 if emote else 0):
            if text.isascii() and text.isprintable():
                metrics = delegate.emote_metrics if emote else delegate.body_metrics
                advance = metrics.horizontalAdvance(text)
                if advance <= width - 1:
                    return delegate.one_line[emote], math.ceil(advance)
            return plain_extent(text, delegate.emote_font if emote else delegate.body_font,
                                width, delegate.line_height)
        # Scrolling back measures thousands of rows that are never painted: their layouts
        # are not kept.
        body = delegate.body(message, name, width, keep=False)
        return body.height, right_edge(body)

    def _formatted(self, text: str, skip: int) -> bool:
        """Whether a row's text (`skip`: its "* name " of a /me row) has links or mentions:
        their formats split how it is shaped (a kerning pair across a mention's end), so only
        its own layout measures it."""
        if _rows.links(text):
            return True
        finder = self._delegate.mention_finder()[0]
        return finder is not None and bool(finder.find(text, skip))

    def chip_rects(self, reactions: tuple[Reaction, ...], width: int) -> tuple[list[QRect], int]:
        """Where a row's reaction chips go, from the chips' top left, flowing onto more lines
        when they do not fit; the last one adds a reaction. Also the height they take."""
        # By what the chips show, not who reacted: few kinds of chip rows, many reactions.
        key = (tuple((r.emoji, len(r.by)) for r in reactions), width)
        cached = self._chips.get(key)
        if cached is not None:
            return cached
        metrics = self._delegate.small_metrics
        chip_height = metrics.height() + 2 * CHIP_PAD_Y
        rects: list[QRect] = []
        x = y = 0
        for label in [_rows.chip_label(r) for r in reactions] + [ADD_CHIP]:
            chip_width = metrics.horizontalAdvance(label) + 2 * CHIP_PAD_X
            if x and x + chip_width > width:
                x, y = 0, y + chip_height + CHIP_GAP
            rects.append(QRect(x, y, chip_width, chip_height))
            x += chip_width + CHIP_GAP
        cached = self._chips[key] = (rects, y + chip_height)
        if len(self._chips) > CHIP_CACHE:
            self._chips.popitem(last=False)
        return cached

    def below(self, message: Message, replies: bool, width: int) -> int:
        """What goes under the text: the reaction chips and the reply count."""
        height = 0
        if message.reactions:
            height += EXTRA_GAP + self.chip_rects(message.reactions, width)[1]
        if replies:
            height += EXTRA_GAP + self._delegate.replies_metrics.height()
        return height


@dataclass(frozen=True, slots=True)
class Marks:
    """How wide the marks after a row's text are, in the small font."""

    edited: int  # "(edited)"
    pending: int  # "sending…"

    def trail(self, edited: bool, pending: bool) -> int:
        """"(edited)", "sending…", or both, with the gap between them."""
        width = self.edited if edited else 0
        if pending:
            width += (MARK_GAP if width else 0) + self.pending
        return width


_WRAP = QTextOption()
_WRAP.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)


def plain_extent(text: str, font: QFont, width: int, line_height: int) -> tuple[int, int]:
    """The height and last line's right edge of ui/message_body.BodyLayouter.plain's layout of
    `text`, laid out alike but without its links' and mentions' formats (colours and
    underlines: no metric changes) or anything kept for painting."""
    layout = QTextLayout(text.replace("\n", "\u2028").replace("\r", "\u2028"), font)
    layout.setTextOption(_WRAP)
    layout.beginLayout()
    height, last = 0.0, None
    while True:
        line = layout.createLine()
        if not line.isValid():
            break
        line.setLineWidth(width)
        height += line.height()
        last = line
    layout.endLayout()
    right = 0 if last is None else math.ceil(last.naturalTextRect().right())
    return max(line_height, math.ceil(height)), right


def right_edge(body: Body) -> int:
    """Where a body's last line ends (NO_ROOM when it ends in a code block)."""
    return NO_ROOM if body.last_line is None else math.ceil(body.last_line.right())


def fits(right: int, trail: int, width: int) -> bool:
    """Whether marks `trail` wide fit after a last line ending at `right`."""
    return right + MARK_GAP + trail <= width
