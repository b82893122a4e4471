"""The window never tells a lie (issue #29): what it shows names the conversation shown, its
unread marks come from the facade's counts for every kind of conversation, and the header
offers a topic only where there is one. Over real Nodes, offscreen."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from ui.main_window import MainWindow  # noqa: E402

from .test_window import WAIT_MS, pair, result, window  # noqa: E402, F401


def on_screen(widget: QWidget) -> QImage:
    """What the window's backing store holds where `widget` is: what the screen shows."""
    QApplication.sendPostedEvents()
    QApplication.processEvents()
    top = widget.window()
    origin = widget.mapTo(top, QPoint(0, 0))
    shot = top.screen().grabWindow(top.winId(), origin.x(), origin.y(), widget.width(),
                                   widget.height())
    return shot.toImage().convertToFormat(QImage.Format.Format_RGB32)


def fresh_paint(widget: QWidget) -> QImage:
    """`widget` painted now from its current state (its properties as they are)."""
    return widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)


def shows_what_it_says(widget: QWidget) -> bool:
    return on_screen(widget) == fresh_paint(widget)


def test_the_composer_under_general_names_general_as_painted(qtbot, window, pair):  # noqa: F811
    node_a, node_b = pair
    dm = result(node_a.facade.create_private_channel("", [node_b.key], dm=True))
    launch = result(node_a.facade.create_private_channel("launch", [node_b.key]))
    window.private.open(dm)
    qtbot.waitUntil(lambda: window.private.channel_id == dm, timeout=WAIT_MS)
    assert shows_what_it_says(window.composer.viewport())
    window.private.open(launch)
    qtbot.waitUntil(lambda: window.private.channel_id == launch, timeout=WAIT_MS)
    assert shows_what_it_says(window.composer.viewport())
    window.show_channel("general")
    assert window.composer.placeholderText().startswith("Message #general")
    assert shows_what_it_says(window.composer.viewport())
