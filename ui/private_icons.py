"""The lock that marks a private channel (issue #18), drawn with QPainter in a palette colour:
this machine's fonts may have no emoji, and Qt's standard icons have no lock."""

from __future__ import annotations

from functools import lru_cache

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPainterPath, QPen, QPixmap


def lock_pixmap(size: int, color: QColor, ratio: float = 1.0) -> QPixmap:
    """A closed padlock `size` logical pixels square: a shackle over a rounded body with a
    keyhole. Drawn once per size, colour and ratio (the sidebar asks again at every palette
    change, several times while the window is built)."""
    return _lock_pixmap(size, color.rgba(), ratio)


@lru_cache(maxsize=64)
def _lock_pixmap(size: int, rgba: int, ratio: float) -> QPixmap:
    color = QColor.fromRgba(rgba)
    pixmap = QPixmap(round(size * ratio), round(size * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    stroke = max(1.2, size / 9)
    body = QRectF(size * 0.18, size * 0.44, size * 0.64, size * 0.48)
    shackle = QRectF(size * 0.31, size * 0.1, size * 0.38, size * 0.62)
    painter.setPen(QPen(color, stroke, Qt.PenStyle.SolidLine, Qt.PenCapStyle.FlatCap))
    painter.setBrush(Qt.BrushStyle.NoBrush)
    path = QPainterPath()
    path.moveTo(shackle.left(), body.top())
    path.lineTo(shackle.left(), shackle.top() + shackle.width() / 2)
    path.arcTo(QRectF(shackle.left(), shackle.top(), shackle.width(), shackle.width()), 180, -180)
    path.lineTo(shackle.right(), body.top())
    painter.drawPath(path)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(color)
    hole = QPainterPath()
    hole.addRoundedRect(body, size * 0.08, size * 0.08)
    keyhole = QPainterPath()
    keyhole.addEllipse(body.center(), size * 0.07, size * 0.07)
    painter.drawPath(hole.subtracted(keyhole))
    painter.end()
    return pixmap


def lock_icon(color: QColor, size: int = 16, selected: QColor | None = None) -> QIcon:
    """The lock as an icon, crisp at ratios 1 and 2; in `selected` on a selected row."""
    icon = QIcon()
    for ratio in (1.0, 2.0):
        icon.addPixmap(lock_pixmap(size, color, ratio))
        if selected is not None:
            icon.addPixmap(lock_pixmap(size, selected, ratio), QIcon.Mode.Selected)
    return icon
