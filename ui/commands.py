"""The composer's text goes to app.slash (run on the Node's thread: facade.run); the window
shows the outcome."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app import slash

if TYPE_CHECKING:
    from .main_window import MainWindow


def run_command(window: MainWindow, text: str) -> None:
    channel = window.channel

    def done(result: tuple[str, str | None]) -> None:
        target, note = result
        if note:
            window.statusBar().showMessage(note, 5000)
        if target != window.channel:
            window.show_channel(target)
        window._reload()

    window.bridge.then(window.facade.run(lambda ws: slash.apply(ws, channel, text)), done=done)
