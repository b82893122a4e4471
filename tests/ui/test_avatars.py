"""Avatars (ui/avatars.py), offscreen: the tile is the key's colour, the cells its identicon,
drawn once per (key, size, device pixel ratio) and sharp at ratio 2."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtGui import QColor, QImage  # noqa: E402

from ui import _rows, avatars  # noqa: E402

ADA, BOB = b"\xad" * 32, b"\xb0" * 32


def rgb(color: QColor) -> tuple[int, int, int]:
    return color.red(), color.green(), color.blue()


def near(a: tuple[int, int, int], b: tuple[int, int, int], tolerance: int = 6) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=True))


def sample(image: QImage, ratio: float, x: float, y: float) -> tuple[int, int, int]:
    """The pixel at logical (x, y) of an avatar drawn at `ratio`."""
    return rgb(image.pixelColor(int(x * ratio), int(y * ratio)))


def test_an_avatar_is_its_keys_colour_and_identicon(qapp):
    size = 40
    for key in (ADA, BOB):
        image = avatars.avatar(key, size).toImage()
        tile = _rows.avatar_rgb(key)
        inset = avatars.margin(size) / 2
        assert sample(image, 1, inset, size / 2) == tile  # the border: the key's colour
        for y, row in enumerate(_rows.identicon(key)):
            for x, filled in enumerate(row):
                centre = avatars.cell_rect(size, x, y).center()
                shown = sample(image, 1, centre.x(), centre.y())
                assert near(shown, rgb(avatars.CELL_COLOR), 24) if filled else shown == tile
    assert avatars.avatar(ADA, size).toImage() != avatars.avatar(BOB, size).toImage()


def test_avatars_are_made_once_per_key_size_and_ratio(qapp):
    first = avatars.avatar(ADA, 36, 1.0)
    assert avatars.avatar(ADA, 36, 1.0).cacheKey() == first.cacheKey()
    assert avatars.avatar(ADA, 36, 2.0).cacheKey() != first.cacheKey()
    assert avatars.avatar(ADA, 30, 1.0).cacheKey() != first.cacheKey()
    assert avatars.avatar(BOB, 36, 1.0).cacheKey() != first.cacheKey()


def test_an_avatar_for_ratio_2_has_twice_the_pixels(qapp):
    size = 36
    sharp = avatars.avatar(BOB, size, 2.0)
    assert (sharp.width(), sharp.height()) == (2 * size, 2 * size)
    assert sharp.devicePixelRatio() == 2.0
    assert sharp.deviceIndependentSize().toSize().width() == size
    # Cells have edges on device pixels, not smeared across two logical-pixel steps.
    image = sharp.toImage()
    tile = _rows.avatar_rgb(BOB)
    grid = _rows.identicon(BOB)
    for y, row in enumerate(grid):
        for x, filled in enumerate(row):
            cell = avatars.cell_rect(size, x, y)
            inner = cell.adjusted(0.5, 0.5, -0.5, -0.5)  # half a logical pixel in: all cell
            for corner in (inner.topLeft(), inner.bottomRight()):
                shown = sample(image, 2.0, corner.x(), corner.y())
                assert near(shown, rgb(avatars.CELL_COLOR), 24) if filled \
                    else near(shown, tile, 2)
