"""How a message row is painted (ui/message_delegate.py measures and hit-tests it, and owns a
RowPainter): the day separator's pill, the mention and hover shades, my accent bar, the header
(avatar, name in the author's colour, time), the text (plain or Markdown, code blocks scrolled
sideways), the marks after it, files, reaction chips, the reply count and the hover time. Where
each piece goes is decided by MessageDelegate.place; palette roles only."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, QPoint, QPointF, QRect, QRectF, Qt
from PySide6.QtGui import QAbstractTextDocumentLayout, QColor, QFont, QPainter, QPalette, QRegion
from PySide6.QtWidgets import QStyle, QStyleOptionViewItem

from app.records import Message

from . import _rows, avatars
from .message_body import CODE_PAD, HIDDEN_OPACITY, Body, alpha
from .models import MessageListModel
from .row_geometry import (
    ADD_CHIP,
    AVATAR_X,
    BAR_WIDTH,
    BAR_X,
    EDITED_MARK,
    GROUP_TOP,
    MENTIONED_ROW_ALPHA,
    NAME_GAP,
    PENDING_MARK,
    PENDING_OPACITY,
    RIGHT_PAD,
    SCROLL_BAR,
    THREAD_LINE,
    RowParts,
)

if TYPE_CHECKING:
    from .message_delegate import MessageDelegate


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


class RowPainter:
    """Paints rows for its MessageDelegate, from the delegate's fonts, layouts and places."""

    def __init__(self, delegate: MessageDelegate):
        self._delegate = delegate

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        """Draw row `index` in `option.rect`."""
        d = self._delegate
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return
        row = index.row()
        message, header, name, mine, pending = model.row(row)
        day = model.starts_day(row)
        body = d.body(message, name, d.text_width())
        parts = d.place(option.rect, message, name, mine, header, day, pending, body)
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
            self._day(painter, parts.day, model.day_label(row), palette, group)
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
            self._header(painter, message, mine, parts,
                               palette.color(group, QPalette.ColorRole.Base), quiet)
        if parts.thread is not None:
            painter.setFont(d.time_font)
            painter.setPen(quiet)
            painter.drawText(parts.thread, Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop,
                             THREAD_LINE)
        if parts.hidden is not None:
            d.hidden_note.paint(painter, parts.hidden, palette, group)
        painter.setPen(text_color)
        if pending or message.hidden:
            painter.setOpacity(HIDDEN_OPACITY if message.hidden else PENDING_OPACITY)
        if body.layout is not None:
            body.layout.draw(painter, QPointF(parts.body.topLeft()))
        else:
            self._rich(painter, body, parts.body.topLeft(), palette, group, message.id)
        painter.setOpacity(1.0)
        if parts.files:
            d.files.paint(painter, message, parts.files, parts.file_actions, palette, group,
                             HIDDEN_OPACITY if message.hidden
                             else PENDING_OPACITY if pending else 1.0)
        painter.setFont(d.time_font)
        painter.setPen(quiet)
        flags = Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignTop
        if parts.edited is not None:
            painter.drawText(parts.edited, flags, EDITED_MARK)
        if parts.mark is not None:
            painter.drawText(parts.mark, flags, PENDING_MARK)
        if parts.chips:
            self._chips(painter, message, parts, model.me, palette, group)
        if parts.replies is not None:
            painter.setFont(d.replies_font)
            painter.setPen(palette.color(group, QPalette.ColorRole.Link))
            painter.drawText(parts.replies, flags, _rows.replies_label(message.replies))
        if parts.gutter is not None and hovered:
            painter.setFont(d.time_font)
            painter.setPen(quiet)
            painter.drawText(parts.gutter, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignTop,
                             _rows.clock(message.ts))
        painter.restore()

    def _rich(self, painter: QPainter, body: Body, origin: QPoint, palette: QPalette,
                    group: QPalette.ColorGroup, message_id: bytes) -> None:
        d = self._delegate
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
            offset = d.code_offset(message_id, i, code)
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

    def _chips(self, painter: QPainter, message: Message, parts: RowParts, me: bytes,
                     palette: QPalette, group: QPalette.ColorGroup) -> None:
        d = self._delegate
        highlight = palette.color(group, QPalette.ColorRole.Highlight)
        text = palette.color(group, QPalette.ColorRole.Text)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setFont(d.time_font)
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

    def _day(self, painter: QPainter, band: QRect, label: str, palette: QPalette,
                   group: QPalette.ColorGroup) -> None:
        d = self._delegate
        line = QColor(palette.color(group, QPalette.ColorRole.PlaceholderText))
        line.setAlpha(80)
        middle = band.top() + band.height() // 2
        painter.fillRect(QRect(band.left() + AVATAR_X, middle, band.width() - AVATAR_X
                               - RIGHT_PAD, 1), line)
        width = d.pill_width(label)
        pill = QRectF(band.left() + (band.width() - width) / 2,
                      middle - d.pill_height / 2, width, d.pill_height)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        paint_pill(painter, pill, label, d.day_font, palette)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)

    def _header(self, painter: QPainter, message: Message, mine: bool, parts: RowParts,
                      base: QColor, quiet: QColor) -> None:
        d = self._delegate
        ratio = painter.device().devicePixelRatioF() if painter.device() else 1.0
        painter.drawPixmap(parts.avatar.topLeft(),
                           avatars.avatar(message.shown_author, d.avatar_size, ratio))
        baseline = parts.name.top() + max(d.name_metrics.ascent(),
                                          d.small_metrics.ascent())
        painter.setFont(d.name_font)
        painter.setPen(d.name_color(message.shown_author, base))
        painter.drawText(QPointF(parts.name.left(), baseline), parts.shown_name)
        painter.setFont(d.time_font)
        painter.setPen(quiet)
        if mine:
            painter.drawText(QPointF(parts.name.right() + 1 + NAME_GAP, baseline), "(you)")
        painter.drawText(QPointF(parts.time.left(), baseline), _rows.clock(message.ts))
