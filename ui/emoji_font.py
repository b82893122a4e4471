"""Colour emoji on any machine: the OpenMoji font shipped in ui/fonts/ becomes Qt's emoji
font for this process (QFontDatabase.addApplicationEmojiFontFamily), so reaction chips, the
emoji picker and messages draw colour emoji even where the system has no emoji font (they
drew empty boxes there)."""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtGui import QFontDatabase

log = logging.getLogger(__name__)

FONT = Path(__file__).with_name("fonts") / "OpenMoji-color-glyf_colr0.ttf"
_family: str | None = None


def install() -> str | None:
    """Load the font once (a QGuiApplication must exist); its family, None if it failed."""
    global _family
    if _family is None:
        font_id = QFontDatabase.addApplicationFont(str(FONT))
        families = QFontDatabase.applicationFontFamilies(font_id) if font_id >= 0 else []
        if not families:
            log.warning("the emoji font %s could not be loaded", FONT)
            return None
        _family = families[0]
        QFontDatabase.addApplicationEmojiFontFamily(_family)
    return _family
