"""The main window's workspaces: those of the data folder in the sidebar, by their creators'
names (the folder's until a joined one's genesis arrives), the one open in bold; choosing
another, and leaving this one. Owned by the window (`window.workspaces`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QListWidgetItem, QMessageBox

from app.records import WorkspaceEntry
from app.workspaces import folder_entries

if TYPE_CHECKING:
    from .main_window import MainWindow


def _bold() -> QFont:
    font = QFont()
    font.setBold(True)
    return font


class WindowWorkspaces:
    def __init__(self, window: MainWindow):
        self.window = window
        self.unnamed = False  # the one open has no name yet (joined: its genesis is not here)
        listed = window.workspace_list
        listed.itemActivated.connect(self._chosen)
        listed.itemClicked.connect(self._chosen)
        self._show([WorkspaceEntry(window.facade.info.folder, None, True,
                                   window._workspace_name)])

    def load(self) -> None:
        self.window.bridge.then(self.window.facade.run(folder_entries), done=self._show)

    def _show(self, entries: list[WorkspaceEntry]) -> None:
        w = self.window
        listed = w.workspace_list
        listed.clear()
        for entry in entries:
            item = QListWidgetItem(entry.label)
            item.setData(Qt.ItemDataRole.UserRole, entry.folder)
            if entry.current:
                item.setFont(_bold())
                if entry.name and entry.name != w._workspace_name:
                    w._workspace_name = entry.name
                    w.sidebar.set_workspace_name(entry.name)
                    w._title_badge()
            listed.addItem(item)
        self.unnamed = any(entry.current and entry.name is None for entry in entries)
        listed.setMaximumHeight(listed.sizeHintForRow(0) * min(4, listed.count()) + 6)

    def _chosen(self, item: QListWidgetItem) -> None:
        folder = item.data(Qt.ItemDataRole.UserRole)
        if folder != self.window.facade.info.folder:
            self.window.switchRequested.emit(folder)

    def confirm_leave(self) -> None:
        w = self.window
        answer = QMessageBox.question(
            w, "Leave workspace",
            f"Leave the workspace “{w._workspace_name}”? Its messages and documents are "
            "removed from this computer (the other members keep theirs).")
        if answer == QMessageBox.StandardButton.Yes:
            w.leaveRequested.emit(w.facade.info.folder)
