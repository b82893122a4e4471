"""Ctrl+K: jump to a channel or document by typing part of its name."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QDialog, QLineEdit, QListWidget, QListWidgetItem, QVBoxLayout


class QuickSwitcher(QDialog):
    chosen = Signal(str, str)  # kind ("channel" or "document"), channel name or document id

    def __init__(self, channels: list[str], documents: list[tuple[str, str]], parent=None):
        super().__init__(parent, objectName="quickSwitcher")
        self.setWindowTitle("Go to")
        self.filter = QLineEdit(objectName="switcherFilter",
                                placeholderText="Jump to a channel or document")
        self.list = QListWidget(objectName="switcherList")
        for name in channels:
            self._add(f"# {name}", "channel", name)
        for doc_id, title in documents:
            self._add(f"▤ {title}", "document", doc_id)
        self.filter.textChanged.connect(self._narrow)
        self.filter.returnPressed.connect(self.accept_current)
        self.list.itemActivated.connect(lambda _: self.accept_current())
        self.filter.installEventFilter(self)
        layout = QVBoxLayout(self)
        layout.addWidget(self.filter)
        layout.addWidget(self.list)
        self.resize(420, 320)
        self._narrow("")

    def _add(self, label: str, kind: str, value: str) -> None:
        item = QListWidgetItem(label)
        item.setData(Qt.ItemDataRole.UserRole, (kind, value))
        self.list.addItem(item)

    def _narrow(self, text: str) -> None:
        words = text.lower().split()
        first = None
        for row in range(self.list.count()):
            item = self.list.item(row)
            match = all(word in item.text().lower() for word in words)
            item.setHidden(not match)
            if match and first is None:
                first = item
        self.list.setCurrentItem(first)

    def eventFilter(self, watched, event) -> bool:
        # Up and Down in the filter move through the list, as in every quick switcher.
        if watched is self.filter and isinstance(event, QKeyEvent) and \
                event.type() == QKeyEvent.Type.KeyPress and \
                event.key() in (Qt.Key.Key_Up, Qt.Key.Key_Down):
            step = 1 if event.key() == Qt.Key.Key_Down else -1
            row = self.list.currentRow()
            while 0 <= row + step < self.list.count():
                row += step
                if not self.list.item(row).isHidden():
                    self.list.setCurrentRow(row)
                    break
            return True
        return super().eventFilter(watched, event)

    def accept_current(self) -> None:
        item = self.list.currentItem()
        if item is None or item.isHidden():
            return
        kind, value = item.data(Qt.ItemDataRole.UserRole)
        self.chosen.emit(kind, value)
        self.accept()
