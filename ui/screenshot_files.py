"""The files `hearth screenshot`'s demonstration attaches in #design (ui/screenshot.py): ada's
bar chart of a week's sign-ups (a PNG, shown inline) and bob's one-page release plan (a PDF, a
file card), drawn with Qt so the pictures need no file from outside the repository."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QImage,
    QLinearGradient,
    QPageSize,
    QPainter,
    QPdfWriter,
    QPen,
)

SIGNUPS = [("Mon", 12), ("Tue", 19), ("Wed", 31), ("Thu", 28), ("Fri", 44), ("Sat", 23),
           ("Sun", 17)]
PLAN = ["Release plan", "", "Friday 10:00  tag v0.2 and build the packages",
        "Friday 14:00  announcement on the blog", "Monday        first feedback round",
        "", "Owner of each step: see #design."]


def signups_chart(path: Path) -> Path:
    """A bar chart of a week's sign-ups, as a PNG: the image ada attaches."""
    image = QImage(640, 400, QImage.Format.Format_RGB32)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    sky = QLinearGradient(0, 0, 0, 400)
    sky.setColorAt(0, QColor("#f4f8ff"))
    sky.setColorAt(1, QColor("#dfe9f7"))
    painter.fillRect(image.rect(), sky)
    title = QFont()
    title.setPixelSize(26)
    title.setBold(True)
    painter.setFont(title)
    painter.setPen(QColor("#1d2b44"))
    painter.drawText(QRectF(30, 18, 580, 40), "Sign-ups this week")
    label = QFont()
    label.setPixelSize(16)
    painter.setFont(label)
    base, top, left, step = 350, 80, 60, 78
    painter.setPen(QPen(QColor("#9aa7bd"), 1))
    for y in range(base, top - 1, -54):
        painter.drawLine(QPointF(40, y), QPointF(610, y))
    most = max(count for _, count in SIGNUPS)
    for i, (day, count) in enumerate(SIGNUPS):
        height = (base - top) * count / most
        bar = QRectF(left + i * step, base - height, 46, height)
        shade = QLinearGradient(bar.topLeft(), bar.bottomLeft())
        shade.setColorAt(0, QColor("#4f8df5") if day != "Fri" else QColor("#f08a3c"))
        shade.setColorAt(1, QColor("#2f5fb3") if day != "Fri" else QColor("#c8612a"))
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(shade)
        painter.drawRoundedRect(bar, 5, 5)
        painter.setPen(QColor("#1d2b44"))
        painter.drawText(QRectF(bar.left() - 10, base + 8, 66, 24),
                         Qt.AlignmentFlag.AlignCenter, day)
        painter.drawText(QRectF(bar.left() - 10, bar.top() - 26, 66, 24),
                         Qt.AlignmentFlag.AlignCenter, str(count))
    painter.end()
    image.save(str(path), "PNG")
    return path


def release_plan(path: Path) -> Path:
    """A one-page PDF: the release plan bob attaches."""
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A5))
    writer.setTitle("Release plan")
    painter = QPainter(writer)
    font = QFont()
    font.setPointSize(12)
    painter.setFont(font)
    line = painter.fontMetrics().height() * 1.4
    for i, text in enumerate(PLAN):
        painter.drawText(QPointF(0, line * (i + 1)), text)
    painter.end()
    return path
