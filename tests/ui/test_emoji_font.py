"""Reactions and the emoji picker draw colour emoji on any machine (issue #29): the OpenMoji
font shipped in ui/fonts/ is Qt's emoji font, whatever fonts the system has."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QColor, QFont, QImage, QPainter  # noqa: E402

from ui import emoji_font  # noqa: E402


def _coloured_pixels(text: str, family: str | None = None) -> int:
    image = QImage(160, 60, QImage.Format.Format_ARGB32)
    image.fill(QColor("white"))
    painter = QPainter(image)
    font = QFont(family) if family else QFont()
    font.setPixelSize(40)
    painter.setFont(font)
    painter.drawText(4, 48, text)
    painter.end()
    count = 0
    for y in range(image.height()):
        for x in range(image.width()):
            c = image.pixelColor(x, y)
            if max(c.red(), c.green(), c.blue()) - min(c.red(), c.green(), c.blue()) > 80:
                count += 1
    return count


def test_emoji_are_drawn_in_colour_and_letters_are_not():
    assert emoji_font.install() == "OpenMoji Color"
    assert emoji_font.install() == "OpenMoji Color"  # once
    assert _coloured_pixels("👍🎉") > 200
    assert _coloured_pixels("\u2764\ufe0f") > 100  # a red heart, not a black outline
    assert _coloured_pixels("Hearth") == 0  # text keeps its own font
