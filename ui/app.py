"""Running the window: a QApplication over a started Node."""

from __future__ import annotations

import sys

from PySide6.QtWidgets import QApplication

from app.node import Node

from .main_window import MainWindow


def run(node: Node) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Hearth")
    window = MainWindow(node)
    window.show()
    try:
        return app.exec()
    finally:
        node.stop()
