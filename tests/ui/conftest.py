"""What every window test shares: Qt objects are freed on the GUI thread only.

A test's Nodes run threads that allocate a lot, so Python's cycle collector would often run on
one of them; freeing a window or dialog there destroys Qt widgets off the GUI thread, which can
deadlock the interpreter against Qt's locks (a whole CI run once hung this way). The app avoids
it with ui.collector.GuiThreadCollector; the tests do the same by hand: no automatic collection
during a test, and at its end the windows pytest-qt closed are deleted and cycles collected here.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from PySide6.QtCore import QCoreApplication, QEvent


@pytest.fixture(autouse=True, scope="session")
def emoji_font(qapp) -> None:
    """The app's colour emoji font, as ui.app.application loads it."""
    from ui import emoji_font

    emoji_font.install()


@pytest.fixture(autouse=True)
def collect_on_the_gui_thread() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
        if enabled:
            gc.enable()
