"""Running the window: the QApplication, one Node at a time, and the window over it.

The Controller owns the Node. Switching, joining or leaving a workspace stops the Node and
starts one on the other workspace (one Node per data folder), then opens a window over it.
That work (app.workspaces: disk, a Node's stop and start) runs on a worker thread; the window
stays responsive, greyed out, until the new one opens.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from app import preferences, workspaces
from app.errors import WorkspaceError
from app.joining import parse_peer
from app.node import Node
from app.paths import DEFAULT_WORKSPACE, WELCOME_PENDING, Paths

from . import emoji_font, theme
from .bridge import Inbox
from .collector import GuiThreadCollector
from .main_window import MainWindow
from .single_instance import InstanceServer

NodeFactory = Callable[[Paths], Node]


class Controller(QObject):
    warned = Signal(str)  # something asked for could not be done; the message is for a person
    opened = Signal(str)  # a switch, join or leave finished: the folder of the open workspace

    def __init__(self, paths: Paths, make_node: NodeFactory, *, first_run: bool = False):
        super().__init__()
        self.paths = paths
        self._make_node = make_node
        self.node: Node | None = None
        self.window: MainWindow | None = None
        self.instance = InstanceServer(paths.data, self)
        self._first_run = first_run
        # One change at a time, in order, off the GUI thread.
        self._worker = ThreadPoolExecutor(1, thread_name_prefix="hearth-workspaces")
        self._inbox = Inbox(self)
        self._change_under_way: Future[workspaces.Opened] | None = None

    def start(self, node: Node) -> MainWindow:
        """Show the window over a started Node and answer a second `hearth` on this folder."""
        self.node = node
        self.instance.listen()
        self.instance.activated.connect(lambda: self.window and self.window.bring_forward())
        return self._open_window(first_run=self._first_run)

    def _open_window(self, *, first_run: bool = False) -> MainWindow:
        old = self.window
        self.window = MainWindow(self.node, first_run=first_run)
        if self.window.first_run is not None:
            self.window.first_run.nicknameSaved.connect(lambda _: self._welcomed())
            self.window.first_run.dismissed.connect(self._welcomed)
        self.window.switchRequested.connect(self.switch)
        self.window.leaveRequested.connect(self.leave)
        self.window.joinRequested.connect(self.join)
        self.window.restartRequested.connect(lambda: self.switch(self.paths.workspace))
        if old is not None:
            self.window.setGeometry(old.geometry())
            old.close()
            old.deleteLater()
        self.window.show()
        return self.window

    # Changing workspaces (each on the worker thread) -------------------------------------------

    def switch(self, workspace: str) -> None:
        """Open `workspace` of this data folder; on failure the current one opens again."""
        self._change(f"Opening {workspace}…", workspaces.switch,
                     self.node, self._make_node, Paths(self.paths.data, workspace))

    def join(self, code: str, nick: str, address: str = "") -> None:
        """Join the workspace an invite code names (a new replica here), and open it. An
        invite's code is proven to a member's computer: the one at `address` (HOST:PORT, as
        the person typed it; "" for none), one this computer syncs with, or one found on the
        network."""
        try:
            peers = [parse_peer(address)] if address.strip() else []
        except WorkspaceError as exc:
            self._warn(f"That member's address cannot be used: {exc}")
            return
        self._change("Joining…", workspaces.join, self.node, self._make_node, code, nick,
                     peers)

    def leave(self, workspace: str) -> None:
        """Remove this computer's replica of `workspace`, then open another one."""
        self._change(f"Leaving {workspace}…", workspaces.leave,
                     self.node, self._make_node, workspace)

    @property
    def busy(self) -> bool:
        """A switch, join or leave is under way."""
        return self._change_under_way is not None

    def _change(self, note: str, work: Callable[..., workspaces.Opened], *args) -> None:
        if self.busy:
            self._warn("Hearth is still changing workspaces; try again in a moment.")
            return
        if self.window is not None:
            self.window.setEnabled(False)
            self.window.statusBar().showMessage(note)
        self._change_under_way = self._worker.submit(work, *args)
        self._inbox.then(self._change_under_way, done=self._changed, failed=self._change_failed)

    def _welcomed(self) -> None:
        """The welcome was answered: later starts open the window as usual."""
        (self.paths.data / WELCOME_PENDING).unlink(missing_ok=True)

    def _changed(self, opened: workspaces.Opened) -> None:
        self._change_under_way = None
        pending = self.paths.data / WELCOME_PENDING
        if pending.exists() and opened.paths.workspace != DEFAULT_WORKSPACE:
            # Joined from the welcome: the default workspace made for it goes (nobody wrote
            # in it), and the welcome is answered.
            with contextlib.suppress(WorkspaceError):
                workspaces.leave_workspace(self.paths.data, DEFAULT_WORKSPACE)
            pending.unlink(missing_ok=True)
        if opened.node is not self.node:
            self.node, self.paths = opened.node, opened.paths
            self._open_window(first_run=opened.first_run)
        elif self.window is not None:
            self.window.setEnabled(True)
            self.window.statusBar().clearMessage()
        if opened.problem:
            self._warn(opened.problem)
        self.opened.emit(self.paths.workspace)

    def _change_failed(self, message: str) -> None:
        self._change_under_way = None
        if self.window is not None:
            self.window.setEnabled(True)
        self._warn(f"Hearth could not open a workspace: {message}")

    def _warn(self, message: str) -> None:
        """Tell the person in the window (status bar and, on first run, the welcome panel)."""
        self.warned.emit(message)
        if self.window is not None:
            self.window.statusBar().showMessage(message, 10_000)
            if self.window.first_run is not None:
                self.window.first_run.error.setText(message)

    def close(self) -> None:
        """At exit, after the event loop: let a change under way finish, then stop the Node."""
        self._inbox.close()
        self.instance.close()
        self._worker.shutdown(wait=True)
        change, self._change_under_way = self._change_under_way, None
        if change is not None and change.exception() is None:  # done: the window never knew
            change.result().node.stop()
        if self.node is not None:
            self.node.stop()


def application() -> QApplication:
    """The one QApplication (made before anything else at a start, so that a platform Qt
    cannot load stops the process before any file is written)."""
    app = QApplication.instance()
    if not isinstance(app, QApplication):
        app = QApplication(sys.argv[:1])
        app.setApplicationName("Hearth")
        app.setDesktopFileName("io.github.hearth.Hearth")  # packaging/linux's desktop entry
        emoji_font.install()
    return app


def set_up(app: QApplication, data: Path) -> GuiThreadCollector:
    """What runs before the first window: the theme of the preferences in `data` (so the
    window never flashes in the other palette; a small local file) and the collector that
    runs Python's garbage collection on the GUI thread (`stop()` it after the event loop).
    bench/ui_channel.py calls it too, so it measures the window as it runs here."""
    theme.apply(app, preferences.load(data).appearance)
    return GuiThreadCollector(app)


def run(node: Node, make_node: NodeFactory, *, first_run: bool = False) -> int:
    app = application()
    collector = set_up(app, node.paths.data)
    controller = Controller(node.paths, make_node, first_run=first_run)
    controller.start(node)
    try:
        return app.exec()
    finally:
        controller.close()
        collector.stop()
