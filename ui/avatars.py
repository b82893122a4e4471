"""Authors' avatars: an identicon (a 5x5 grid mirrored left to right, from the key's bits) in
white on a rounded tile of the author's colour, both derived from the key by ui/_rows.py.

Pixmaps are drawn once per (key, size, device pixel ratio) and kept, so painting a row only
looks one up; a pixmap holds size x ratio device pixels, so it is crisp on a ratio-2 screen.
"""

from __future__ import annotations

from collections import OrderedDict

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QColor, QPainter, QPixmap

from . import _rows

CACHE = 512  # pixmaps kept: every author of a busy channel, at a size or two
CELL_COLOR = QColor(255, 255, 255, 235)

_cache: OrderedDict[tuple[bytes, int, float], QPixmap] = OrderedDict()


def margin(size: int) -> float:
    """The tile's border around the grid (logical pixels): the author's colour only."""
    return size / 8


def cell_rect(size: int, x: int, y: int) -> QRectF:
    """Where grid cell (x, y) is drawn in a `size` avatar (logical pixels)."""
    inset = margin(size)
    cell = (size - 2 * inset) / _rows.GRID
    return QRectF(inset + x * cell, inset + y * cell, cell, cell)


def avatar(key: bytes, size: int, ratio: float = 1.0) -> QPixmap:
    """The avatar of `key`, `size` logical pixels square, for a device pixel ratio `ratio`."""
    cache_key = (key, size, ratio)
    pixmap = _cache.get(cache_key)
    if pixmap is not None:
        _cache.move_to_end(cache_key)
        return pixmap
    pixmap = _draw(key, size, ratio)
    _cache[cache_key] = pixmap
    if len(_cache) > CACHE:
        _cache.popitem(last=False)
    return pixmap


def _draw(key: bytes, size: int, ratio: float) -> QPixmap:
    pixels = max(1, round(size * ratio))
    pixmap = QPixmap(pixels, pixels)
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    painter.setPen(Qt.PenStyle.NoPen)
    painter.setBrush(QColor(*_rows.avatar_rgb(key)))
    radius = size / 5
    painter.drawRoundedRect(QRectF(0, 0, size, size), radius, radius)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)  # cells meet without seams
    painter.setBrush(CELL_COLOR)
    for y, row in enumerate(_rows.identicon(key)):
        for x, filled in enumerate(row):
            if filled:
                painter.drawRect(cell_rect(size, x, y))
    painter.end()
    return pixmap
