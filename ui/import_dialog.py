""""Import from Slack…": choose a Slack export (a zip), see it come in with progress, and
what was imported at the end. The import runs on a thread of its own with its own connection to
the replica, as `hearth import-slack` does beside a running node (app/slack_import.py), so the
Node's thread goes on syncing and answering the window meanwhile; the Node notices what it
writes as it notices any other process's writes, and pushes it to peers. Progress crosses to
this window as a queued signal."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel, QProgressBar, QVBoxLayout

from app.paths import Paths
from app.slack_import import ImportSummary, import_slack
from app.workspace import Workspace

from .bridge import NodeBridge


class _Progress(QObject):
    """Lives on the GUI thread: emitted from the Node's thread, delivered here queued."""

    moved = Signal(int, int)


class SlackImportDialog(QDialog):
    finishedImport = Signal(str)  # the summary line, or the refusal

    def __init__(self, bridge: NodeBridge, export: Path, parent=None):
        super().__init__(parent, objectName="slackImportDialog")
        self.setWindowTitle("Import from Slack")
        self.bridge = bridge
        self.summary: ImportSummary | None = None
        self.label = QLabel(f"Reading {export.name}…", objectName="importStatus", wordWrap=True)
        self.bar = QProgressBar(objectName="importProgress")
        self.bar.setRange(0, 0)  # busy until the export's size is known
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        self.buttons.rejected.connect(self.close)
        self.buttons.setEnabled(False)  # the import cannot be stopped half-way
        layout = QVBoxLayout(self)
        layout.addWidget(self.label)
        layout.addWidget(self.bar)
        layout.addWidget(self.buttons)
        self.progress = _Progress(self)
        self.progress.moved.connect(self._moved)
        emit = self.progress.moved.emit
        paths = Paths.resolve(bridge.facade.info.data, bridge.facade.info.folder)

        def run() -> ImportSummary:
            with Workspace.open(paths) as ws:
                return import_slack(ws, export, progress=emit)

        self._pool = ThreadPoolExecutor(1, thread_name_prefix="slack-import")
        bridge.then(self._pool.submit(run), done=self._done, failed=self._failed)
        self._pool.shutdown(wait=False)

    def _moved(self, done: int, total: int) -> None:
        if self.summary is not None:  # a count delivered after the summary: it stays
            return
        self.bar.setRange(0, max(total, 1))
        self.bar.setValue(done)
        self.label.setText(f"Imported {done} of {total} messages…")

    def _done(self, summary: ImportSummary) -> None:
        self.summary = summary
        self.bar.setRange(0, 1)
        self.bar.setValue(1)
        self.label.setText(summary.line().capitalize())
        self.buttons.setEnabled(True)
        self.finishedImport.emit(summary.line())

    def _failed(self, message: str) -> None:
        self.bar.setRange(0, 1)
        self.bar.setValue(0)
        self.label.setText(message)
        self.buttons.setEnabled(True)
        self.finishedImport.emit(message)
