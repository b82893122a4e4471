"""A message's text, laid out for the message list (ui/message_delegate.py draws it).

Plain text, which is most chat lines, takes the fast path: one QTextLayout. Text with Markdown
syntax (ui/_markdown.py decides) is rendered by Qt's Markdown engine (md4c) into a
QTextDocument, then made safe: no raw HTML (shown as typed), no images (an image shows as its
alt text, a link where its address may open), links only to web and mail addresses, headings
at the body size. Code is monospace; code blocks never wrap and get room for their box; block
quotes indent for their bar. Mentions are highlighted outside code and links.

`Note` draws a row's small note, as a quiet tag: "Hidden by a moderator" on a post only a
moderator's list shows, whose text is drawn at HIDDEN_OPACITY.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from PySide6.QtCore import QPointF, QRect, QRectF, QSize, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QPainter,
    QPalette,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
    QTextLayout,
    QTextOption,
)

from . import _markdown, _rows

CODE_PAD = 6  # inside a code block's box
QUOTE_INDENT = 14  # per block-quote level
QUOTE_BAR = 3
LIST_GAP = 2  # above and below a list item
MENTION_ALPHA, MENTION_ME_ALPHA = 40, 100
NOTE_PAD_X, NOTE_PAD_Y = 6, 1  # inside a row's note
NOTE_BORDER_ALPHA = 150
HIDDEN_OPACITY = 0.5  # the text of a post a moderator hid: there, but dimmed
# GitHub's dialect (strikethrough, autolinks, task lists) with raw HTML shown as typed, and
# with _x_ as emphasis, as CommonMark has it (the dialect would underline it).
_MD_UNDERLINE = 0x4000
FEATURES = QTextDocument.MarkdownFeature(
    (QTextDocument.MarkdownFeature.MarkdownDialectGitHub.value
     | QTextDocument.MarkdownFeature.MarkdownNoHTML.value) & ~_MD_UNDERLINE)

@dataclass(frozen=True, slots=True)
class Code:
    box: QRectF  # the tinted box, in the body's coordinates
    content: float  # the widest line's extent from the box's left edge, padding included


@dataclass(slots=True)
class Body:
    layout: QTextLayout | None  # plain text
    doc: QTextDocument | None  # Markdown, drawn `shift` below the body's top
    shift: float
    height: int
    first_line: float  # the first line's baseline: where a hover time's baseline goes
    last_line: QRectF | None  # the last line's text, for the marks after it (None: below)
    last_ascent: float
    links: list[tuple[int, int, str]]  # plain text: UTF-16 ranges and the URL
    mentions_me: bool
    codes: list[Code]
    quotes: list[QRectF]  # block quotes' bars


def alpha(color: QColor, alpha: int) -> QColor:
    color = QColor(color)
    color.setAlpha(alpha)
    return color


class Note:
    """A row's small note ("Hidden by a moderator"): italic, in PlaceholderText, on an
    AlternateBase tag with a quiet border, so it reads in light and dark palettes alike."""

    def __init__(self, text: str, font: QFont):
        self.text = text
        self.font = QFont(font)
        self.font.setItalic(True)
        metrics = QFontMetrics(self.font)
        self.size = QSize(metrics.horizontalAdvance(text) + 2 * NOTE_PAD_X,
                          metrics.height() + 2 * NOTE_PAD_Y)

    def paint(self, painter: QPainter, rect: QRect, palette: QPalette,
              group: QPalette.ColorGroup) -> None:
        quiet = palette.color(group, QPalette.ColorRole.PlaceholderText)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setPen(alpha(quiet, NOTE_BORDER_ALPHA))
        painter.setBrush(palette.color(group, QPalette.ColorRole.AlternateBase))
        painter.drawRoundedRect(QRectF(rect).adjusted(0.5, 0.5, -0.5, -0.5), 4, 4)
        painter.setFont(self.font)
        painter.setPen(quiet)
        painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, self.text)
        painter.restore()


class _Document(QTextDocument):
    """A message's rendered Markdown. It loads nothing: no image, file or data: URL."""

    def loadResource(self, kind: int, name) -> None:  # noqa: N802 (Qt's name)
        return None


def is_code_block(block_format: QTextBlockFormat) -> bool:
    return block_format.hasProperty(QTextFormat.Property.BlockCodeFence) or \
        block_format.hasProperty(QTextFormat.Property.BlockCodeLanguage)


def _is_monospace(char_format: QTextCharFormat) -> bool:
    return char_format.fontFixedPitch() or "monospace" in (char_format.fontFamilies() or ())


class BodyLayouter:
    """Lays out message text in one palette's formats, at one line height."""

    def __init__(self, palette: QPalette, line_height: int, code_family: str):
        self._line_height = line_height
        self._option = QTextOption()
        self._option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        link = palette.color(QPalette.ColorRole.Link)
        self._link_format = QTextCharFormat()
        self._link_format.setForeground(link)
        self._link_format.setFontUnderline(True)
        self._mention_format = QTextCharFormat()
        self._mention_format.setForeground(link)
        self._mention_format.setBackground(alpha(link, MENTION_ALPHA))
        self._mention_me_format = QTextCharFormat()
        self._mention_me_format.setBackground(
            alpha(palette.color(QPalette.ColorRole.Highlight), MENTION_ME_ALPHA))
        self._code_format = QTextCharFormat()
        self._code_format.setFontFamilies([code_family])
        self._code_format.setFontFixedPitch(True)
        self._inline_code_format = QTextCharFormat(self._code_format)
        self._inline_code_format.setBackground(palette.color(QPalette.ColorRole.AlternateBase))

    def plain(self, text: str, font: QFont, width: int, finder: _rows.MentionFinder | None,
               skip: int, mine: bool) -> Body:
        # QTextLayout breaks lines only at U+2028; both are one UTF-16 unit, so offsets hold.
        shown = text.replace("\n", "\u2028").replace("\r", "\u2028")
        layout = QTextLayout(shown, font)
        layout.setTextOption(self._option)
        links = [(*link.utf16(text), link.url) for link in _rows.links(text)]
        mentions = finder.find(text, skip) if finder is not None else []
        mentions = [m for m in mentions if not any(
            start < m.utf16(text)[1] and m.utf16(text)[0] < end for start, end, _ in links)]
        if links or mentions:
            formats = []
            for start, end, _ in links:
                formats.append(self._span(start, end, self._link_format))
            for mention in mentions:
                start, end = mention.utf16(text)
                formats.append(self._span(start, end, self._mention_me_format if mention.me
                                          else self._mention_format))
            layout.setFormats(sorted(formats, key=lambda span: span.start))
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
        return Body(layout, None, 0.0, max(self._line_height, math.ceil(height)), first,
                     last_rect, last_ascent, links,
                     not mine and any(m.me for m in mentions), [], [])

    @staticmethod
    def _span(start: int, end: int, char_format: QTextCharFormat) -> QTextLayout.FormatRange:
        span = QTextLayout.FormatRange()
        span.start, span.length, span.format = start, end - start, char_format
        return span

    def rich(self, source: str, font: QFont, width: int, finder: _rows.MentionFinder | None,
              skip: int, mine: bool) -> Body:
        doc = _Document()
        doc.setDocumentMargin(0)
        doc.setDefaultFont(font)
        doc.setIndentWidth(round(self._line_height * 1.5))
        doc.setMarkdown(source, FEATURES)
        self._tidy(doc)
        mentions_me = self._mark_mentions(doc, finder, skip) and not mine
        doc.setTextWidth(width)
        layout = doc.documentLayout()
        first_block, last_block = doc.begin(), doc.lastBlock()
        shift = CODE_PAD if is_code_block(first_block.blockFormat()) else 0.0
        bottom = CODE_PAD if is_code_block(last_block.blockFormat()) else 0.0
        codes: list[Code] = []
        quotes: list[QRectF] = []
        run: list[tuple[QRectF, float, float]] = []  # a code run's lines: rect, left, right

        def close_run() -> None:
            if run:
                left = min(x for _, x, _ in run) - CODE_PAD
                box = QRectF(left, run[0][0].top() - CODE_PAD, width - left,
                             run[-1][0].bottom() - run[0][0].top() + 2 * CODE_PAD)
                content = max(right for _, _, right in run) + CODE_PAD - left
                codes.append(Code(box, content))
                run.clear()

        block = first_block
        while block.isValid():
            rect = layout.blockBoundingRect(block).translated(0, shift)
            block_format = block.blockFormat()
            lines = block.layout()
            origin = lines.position()
            if is_code_block(block_format):
                for i in range(lines.lineCount()):
                    line = lines.lineAt(i)
                    run.append((QRectF(rect.left(), rect.top() + line.y(), rect.width(),
                                       line.height()), origin.x() + line.x(),
                                origin.x() + line.x() + line.naturalTextWidth()))
            else:
                close_run()
            level = block_format.intProperty(QTextFormat.Property.BlockQuoteLevel)
            for n in range(level):
                quotes.append(QRectF(n * QUOTE_INDENT + 1, rect.top(), QUOTE_BAR,
                                     rect.height()))
            block = block.next()
        close_run()
        height = shift + doc.size().height() + bottom
        first_line = shift
        lines = first_block.layout()
        if lines.lineCount():
            first_line += layout.blockBoundingRect(first_block).top() + lines.lineAt(0).ascent()
        last_rect, last_ascent = None, 0.0
        lines = last_block.layout()
        if not is_code_block(last_block.blockFormat()) and lines.lineCount():
            line = lines.lineAt(lines.lineCount() - 1)
            rect = layout.blockBoundingRect(last_block).translated(0, shift)
            text_rect = line.naturalTextRect()
            last_rect = QRectF(lines.position().x() + text_rect.left(), rect.top() + line.y(),
                               text_rect.width(), line.height())
            last_ascent = line.ascent()
        return Body(None, doc, shift, max(self._line_height, math.ceil(height)), first_line,
                     last_rect, last_ascent, [], mentions_me, codes, quotes)

    def _tidy(self, doc: QTextDocument) -> None:
        """Make an imported document safe and chat-sized: images become their alt text (a link
        when their address may open), links that may not open become text, code is monospace
        (blocks unwrapped with room for their box), quotes indent by QUOTE_INDENT, headings
        keep the body's size, and chat_source's line ends become line breaks."""
        cursor = QTextCursor(doc)
        edits: list[tuple[int, int, str, object]] = []  # position, length, what, detail
        blocks = []
        block = doc.begin()
        while block.isValid():
            blocks.append(block)
            block = block.next()
        for i, block in enumerate(blocks):
            block_format = QTextBlockFormat(block.blockFormat())
            code = is_code_block(block_format)
            heading = block_format.headingLevel() > 0
            level = block_format.intProperty(QTextFormat.Property.BlockQuoteLevel)
            if heading:
                block_format.setHeadingLevel(0)
            if level:
                block_format.setLeftMargin(level * QUOTE_INDENT)
                block_format.setRightMargin(0)
            if block.textList() is not None:  # items close together, like lines
                block_format.setTopMargin(LIST_GAP)
                block_format.setBottomMargin(LIST_GAP)
            if code:
                before = i > 0 and is_code_block(blocks[i - 1].blockFormat())
                after = i + 1 < len(blocks) and is_code_block(blocks[i + 1].blockFormat())
                block_format.setNonBreakableLines(True)
                block_format.setLeftMargin(level * QUOTE_INDENT + CODE_PAD)
                block_format.setRightMargin(CODE_PAD)
                # Twice the padding between a box and the text around it: one is the box's.
                block_format.setTopMargin(0 if before else 2 * CODE_PAD)
                block_format.setBottomMargin(0 if after else 2 * CODE_PAD)
            cursor.setPosition(block.position())
            cursor.setBlockFormat(block_format)
            fragments = block.begin()
            while not fragments.atEnd():
                fragment = fragments.fragment()
                char_format = fragment.charFormat()
                where = (fragment.position(), fragment.length())
                if char_format.isImageFormat():
                    edits.append((*where, "image", char_format.toImageFormat()))
                elif char_format.isAnchor() or char_format.anchorHref():
                    edits.append((*where, "link", QTextCharFormat(char_format)))
                elif code:
                    edits.append((*where, "block code", None))
                elif _is_monospace(char_format):
                    edits.append((*where, "code", None))
                if heading:
                    edits.append((*where, "heading", None))
                fragments += 1
            text = block.text()
            if _markdown.BREAK in text:
                at = text.find(_markdown.BREAK)
                while at >= 0:
                    size = 2 if text[at + 1:at + 2] == " " else 1
                    edits.append((block.position() + _rows.to_utf16(text, at), size, "break",
                                  None))
                    at = text.find(_markdown.BREAK, at + 1)
        for position, length, what, detail in sorted(edits, key=lambda e: -e[0]):
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            if what == "image":
                alt = detail.stringProperty(QTextFormat.Property.ImageAltText)
                source = detail.name()
                if _markdown.safe_url(source):
                    link = QTextCharFormat(self._link_format)
                    link.setAnchor(True)
                    link.setAnchorHref(source)
                    cursor.insertText(alt or source, link)
                else:
                    cursor.insertText(alt or source, QTextCharFormat())
            elif what == "link":
                href = detail.anchorHref()
                if _markdown.safe_url(href):
                    cursor.mergeCharFormat(self._link_format)
                else:
                    plain = QTextCharFormat(detail)
                    plain.setAnchor(False)
                    plain.setAnchorHref("")
                    plain.clearForeground()
                    plain.setFontUnderline(False)
                    cursor.setCharFormat(plain)
            elif what == "block code":
                cursor.mergeCharFormat(self._code_format)
            elif what == "code":
                cursor.mergeCharFormat(self._inline_code_format)
            elif what == "heading":
                size = QTextCharFormat()
                size.setProperty(QTextFormat.Property.FontSizeAdjustment, 0)
                cursor.mergeCharFormat(size)
            elif what == "break":
                # The line's end, as a line break inside the block (U+2028), or nothing at the
                # end of a block.
                cursor.insertText("\u2028" if length == 2 else "")

    def _mark_mentions(self, doc: QTextDocument, finder: _rows.MentionFinder | None,
                       skip: int) -> bool:
        """Highlight the mentions outside code; True if one names me."""
        if finder is None:
            return False
        me = False
        cursor = QTextCursor(doc)
        block = doc.begin()
        first = True
        while block.isValid():
            text = block.text()
            if not is_code_block(block.blockFormat()):
                for mention in finder.find(text, skip if first else 0):
                    start, end = mention.utf16(text)
                    cursor.setPosition(block.position() + start)
                    if _is_monospace(cursor.charFormat()) or cursor.charFormat().isAnchor():
                        continue
                    cursor.setPosition(block.position() + end, QTextCursor.MoveMode.KeepAnchor)
                    cursor.mergeCharFormat(self._mention_me_format if mention.me
                                           else self._mention_format)
                    me = me or mention.me
            first = False
            block = block.next()
        return me
