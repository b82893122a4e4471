"""Running the window: the QApplication, one Node at a time, and the window over it.

The Controller owns the Node. Switching, joining or leaving a workspace stops the Node and
starts one on the other workspace (one Node per data folder), then opens a window over it.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QApplication

from app import sharing
from app.invite import Invite
from app.node import Node, NodeError
from app.paths import Paths, workspaces
from app.workspace import Workspace, WorkspaceError, default_nick

from .main_window import MainWindow
from .single_instance import InstanceServer

NodeFactory = Callable[[Paths], Node]


class Controller(QObject):
    warned = Signal(str)  # something asked for could not be done; the message is for a person

    def __init__(self, paths: Paths, make_node: NodeFactory, *, first_run: bool = False):
        super().__init__()
        self.paths = paths
        self._make_node = make_node
        self.node: Node | None = None
        self.window: MainWindow | None = None
        self.instance = InstanceServer(paths.data, self)
        self._first_run = first_run

    def start(self, node: Node) -> MainWindow:
        """Show the window over a started Node and answer a second `hearth` on this folder."""
        self.node = node
        self.instance.listen()
        self.instance.activated.connect(lambda: self.window and self.window.bring_forward())
        return self._open_window(first_run=self._first_run)

    def _open_window(self, *, first_run: bool = False) -> MainWindow:
        old = self.window
        self.window = MainWindow(self.node, first_run=first_run)
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

    def switch(self, workspace: str) -> bool:
        """Open `workspace` of this data folder; on failure the current one stays open."""
        target = Paths(self.paths.data, workspace)
        if self.node is not None:
            self.node.stop()
        try:
            node = self._make_node(target).start()
        except NodeError as exc:
            self._warn(f"Cannot open {workspace}: {exc}")
            node = self._make_node(self.paths).start()
            target = self.paths
        self.node, self.paths = node, target
        self._open_window()
        return target.workspace == workspace

    def join(self, code: str, nick: str) -> None:
        """Join the workspace an invite code names (a new replica here), and open it."""
        try:
            workspace_id = Invite.decode(code).workspace
        except ValueError as exc:
            self._warn(f"That invite code cannot be used: {exc}")
            return
        name = f"ws-{workspace_id.hex()[:8]}"
        target = Paths(self.paths.data, name)
        if not target.replica.exists():
            try:
                sharing.join_workspace(target, code, nick=nick or None)
            except (WorkspaceError, ValueError) as exc:
                self._warn(str(exc))
                return
        self.switch(name)

    def leave(self, workspace: str) -> None:
        """Remove this computer's replica of `workspace`, then open another one."""
        others = [name for name in workspaces(self.paths.data) if name != workspace]
        if self.node is not None:
            self.node.stop()
            self.node = None
        shutil.rmtree(Paths(self.paths.data, workspace).workspace_dir, ignore_errors=True)
        first_run = not others
        if first_run:  # nothing left: start afresh, as on a first run
            Workspace.init(self.paths, default_nick()).close()
            others = [self.paths.workspace]
        self.paths = Paths(self.paths.data, others[0])
        self.node = self._make_node(self.paths).start()
        self._open_window(first_run=first_run)

    def _warn(self, message: str) -> None:
        """Tell the person in the window (status bar and, on first run, the welcome panel)."""
        self.warned.emit(message)
        if self.window is not None:
            self.window.statusBar().showMessage(message, 10_000)
            if self.window.first_run is not None:
                self.window.first_run.error.setText(message)

    def close(self) -> None:
        self.instance.close()
        if self.node is not None:
            self.node.stop()


def run(node: Node, make_node: NodeFactory, *, first_run: bool = False) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Hearth")
    app.setDesktopFileName("io.github.hearth.Hearth")  # packaging/linux's desktop entry
    controller = Controller(node.paths, make_node, first_run=first_run)
    controller.start(node)
    try:
        return app.exec()
    finally:
        controller.close()
