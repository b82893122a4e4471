"""Render Hearth's SVG icon to the PNG sizes of the hicolor icon theme, next to it.

The PNGs are kept in the repository; run this again after changing the SVG:
    .venv/bin/python packaging/linux/render_icons.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication, QImage, QPainter  # noqa: E402
from PySide6.QtSvg import QSvgRenderer  # noqa: E402

APP_ID = "io.github.hearth.Hearth"
ICONS = Path(__file__).resolve().parent / "icons" / "hicolor"
SIZES = (16, 24, 32, 48, 64, 128, 256, 512)


def render(svg: Path, size: int, out: Path) -> None:
    renderer = QSvgRenderer(str(svg))
    if not renderer.isValid():
        raise SystemExit(f"{svg} is not an SVG Qt can draw")
    image = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    image.fill(Qt.GlobalColor.transparent)
    painter = QPainter(image)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    renderer.render(painter)
    painter.end()
    out.parent.mkdir(parents=True, exist_ok=True)
    if not image.save(str(out), "PNG"):
        raise SystemExit(f"cannot write {out}")


def main() -> int:
    app = QGuiApplication(sys.argv[:1])  # noqa: F841  (QImage text and painting need one)
    svg = ICONS / "scalable" / "apps" / f"{APP_ID}.svg"
    for size in SIZES:
        out = ICONS / f"{size}x{size}" / "apps" / f"{APP_ID}.png"
        render(svg, size, out)
        print(out.relative_to(ICONS.parents[3]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
