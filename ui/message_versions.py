"""A small dialog listing a message's versions, oldest first, each with its time and text, the
current one marked: what "(edited)" and "Show earlier versions" open (MessageView's
versionsRequested, with ws.conversation.versions' MessageVersion records)."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QLabel,
    QScrollArea,
    QVBoxLayout,
    QWidget,
)

from app.records import MessageVersion

from . import _rows

CURRENT = "current"
WIDTH, HEIGHT = 460, 360


class MessageVersionsDialog(QDialog):
    """Each version's time and text, oldest first; the newest is the current text."""

    def __init__(self, versions: Sequence[MessageVersion], parent: QWidget | None = None):
        super().__init__(parent, objectName="messageVersions")
        self.setWindowTitle("Earlier versions")
        self.versions = sorted(versions, key=lambda version: version.ts)
        column = QVBoxLayout()
        column.setContentsMargins(12, 12, 12, 12)
        column.setSpacing(10)
        for i, version in enumerate(self.versions):
            column.addWidget(self._entry(version, current=i == len(self.versions) - 1))
        column.addStretch(1)
        holder = QWidget(objectName="versionList")
        holder.setLayout(column)
        scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        scroll.setWidget(holder)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(scroll, 1)
        layout.addWidget(buttons)
        self.resize(WIDTH, HEIGHT)

    def _entry(self, version: MessageVersion, current: bool) -> QFrame:
        entry = QFrame(objectName="currentVersion" if current else "version")
        entry.setFrameShape(QFrame.Shape.StyledPanel)
        when = QLabel(_rows.full_time(version.ts) + (f"  ·  {CURRENT}" if current else ""),
                      objectName="versionTime")
        when.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        font = when.font()
        font.setBold(current)
        when.setFont(font)
        text = QLabel(version.text, objectName="versionText", wordWrap=True)
        text.setTextFormat(Qt.TextFormat.PlainText)  # the raw text, as typed: no markup
        text.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        column = QVBoxLayout(entry)
        column.addWidget(when)
        column.addWidget(text)
        return entry

    def entries(self) -> list[tuple[str, str, bool]]:
        """(time shown, text shown, is the current one) for each version, as listed."""
        rows = []
        for frame in self.findChildren(QFrame):
            if frame.objectName() in ("version", "currentVersion"):
                rows.append((frame.findChild(QLabel, "versionTime").text(),
                             frame.findChild(QLabel, "versionText").text(),
                             frame.objectName() == "currentVersion"))
        return rows

