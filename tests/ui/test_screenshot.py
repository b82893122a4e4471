"""`hearth screenshot`: every main view of the demonstration workspace, rendered to PNG."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QImage  # noqa: E402

from ui.screenshot import render  # noqa: E402

VIEWS = {"channel.png", "documents.png", "settings.png", "peers.png", "welcome.png"}


def distinct_colours(image: QImage, step: int = 7) -> int:
    return len({image.pixel(x, y) for x in range(0, image.width(), step)
                for y in range(0, image.height(), step)})


def test_screenshot_renders_every_main_view(qapp, tmp_path):
    written = render(tmp_path / "shots")
    assert {p.name for p in written} == VIEWS
    for path in written:
        image = QImage(str(path))
        assert not image.isNull(), path
        assert image.width() >= 300 and image.height() >= 150, path
        assert distinct_colours(image) > 8, f"{path.name} looks blank"
