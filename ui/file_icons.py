"""The attach button's paperclip and a file card's page glyph (issue #19), drawn with QPainter in
palette colours: this machine's fonts may have no emoji, and Qt's standard icons look different
on every platform."""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFont, QIcon, QPainter, QPainterPath, QPen, QPixmap


def paperclip_pixmap(size: int, color: QColor, ratio: float = 1.0) -> QPixmap:
    """A paperclip `size` logical pixels square, leaning right: three nested loops of one
    wire."""
    pixmap = QPixmap(round(size * ratio), round(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.translate(size / 2, size / 2)
    painter.rotate(40)
    painter.translate(-size / 2, -size / 2)
    stroke = max(1.3, size / 12)
    painter.setPen(QPen(color, stroke, Qt.PenStyle.SolidLine, Qt.PenCapStyle.RoundCap,
                        Qt.PenJoinStyle.RoundJoin))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    s = size
    outer, middle, inner = s * 0.36, s * 0.25, s * 0.14  # loop widths, all centred
    cx = s / 2
    path = QPainterPath()
    # The inner wire's free end, up the middle, round the top, down the left side, round the
    # bottom, up the right side, round the top of the middle loop and down its left.
    path.moveTo(cx + inner / 2, s * 0.36)
    path.lineTo(cx + inner / 2, s * 0.70)
    path.arcTo(QRectF(cx - inner / 2, s * 0.70 - inner / 2, inner, inner), 0, -180)
    path.lineTo(cx - inner / 2, s * 0.22)
    path.arcTo(QRectF(cx - inner / 2 - (middle - inner) / 2, s * 0.12, middle, middle),
               180, -180)
    path.lineTo(cx + middle / 2 - (middle - inner) / 2, s * 0.80)
    path.arcTo(QRectF(cx - outer / 2, s * 0.80 - outer / 2, outer, outer), 0, -180)
    path.lineTo(cx - outer / 2, s * 0.30)
    painter.drawPath(path)
    painter.end()
    return pixmap


def paperclip_icon(color: QColor, size: int = 18) -> QIcon:
    """The paperclip as an icon, crisp at ratios 1 and 2."""
    icon = QIcon()
    for ratio in (1.0, 2.0):
        icon.addPixmap(paperclip_pixmap(size, color, ratio))
    return icon


def paint_file_glyph(painter: QPainter, rect: QRectF, color: QColor, fill: QColor,
                     label: str, font: QFont) -> None:
    """A page with a folded corner filling `rect` (taller than wide), outlined in `color` on
    `fill`, with a short `label` ("PDF") across its lower part."""
    painter.save()
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    width = min(rect.width(), rect.height() * 0.78)
    page = QRectF(rect.center().x() - width / 2, rect.top(), width, rect.height())
    fold = width * 0.32
    path = QPainterPath()
    path.moveTo(page.topLeft())
    path.lineTo(page.right() - fold, page.top())
    path.lineTo(page.right(), page.top() + fold)
    path.lineTo(page.bottomRight())
    path.lineTo(page.bottomLeft())
    path.closeSubpath()
    painter.setPen(QPen(color, 1.3))
    painter.setBrush(fill)
    painter.drawPath(path)
    corner = QPainterPath()
    corner.moveTo(page.right() - fold, page.top())
    corner.lineTo(page.right() - fold, page.top() + fold)
    corner.lineTo(page.right(), page.top() + fold)
    painter.setBrush(Qt.BrushStyle.NoBrush)
    painter.drawPath(corner)
    if label:
        small = QFont(font)
        small.setBold(True)
        small.setPixelSize(max(6, round(width * 0.26)))
        painter.setFont(small)
        band = QRectF(page.left(), page.top() + page.height() * 0.5, page.width(),
                      page.height() * 0.36)
        painter.setPen(color)
        painter.drawText(band, Qt.AlignmentFlag.AlignCenter, label[:4])
    else:
        pen = QPen(color, 1.0)
        painter.setPen(pen)
        for i in range(3):
            y = page.top() + page.height() * (0.5 + 0.13 * i)
            painter.drawLine(QPointF(page.left() + width * 0.2, y),
                             QPointF(page.right() - width * 0.2, y))
    painter.restore()
