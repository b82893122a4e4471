""""Your data" in Settings: import a Slack export, back up now, a daily backup to a chosen
folder, and an open archive (app/slack_import.py, app/backup.py, app/archive.py; the same
library calls as `hearth import-slack`, `backup` and `archive`, run on the Node's thread).

The daily backup's passphrase seals each backup whole and is never stored: it is kept
in memory while the window runs (DailyBackups, one per window), so after a restart the page
asks for it again before the next daily backup is written."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.archive import FORMATS, write_archive
from app.backup import (
    DAILY_KEEP,
    backup,
    backup_summary,
    daily_due,
    daily_setting,
    run_daily,
    set_daily,
)

from .bridge import NodeBridge
from .import_dialog import SlackImportDialog

CHECK_EVERY_MS = 3600 * 1000  # how often the window looks whether a daily backup is due


class DailyBackups(QObject):
    """The window's daily backup: looks every hour (and when started) whether a day has
    passed since the last one, and writes it on the Node's thread."""

    wrote = Signal(str)  # where the backup went, or why it failed (a line for the page)

    def __init__(self, bridge: NodeBridge, parent: QObject):
        super().__init__(parent, objectName="dailyBackups")
        self.bridge = bridge
        self.passphrase: str | None = None
        self.timer = QTimer(self, interval=CHECK_EVERY_MS)
        self.timer.timeout.connect(self.check)
        self.timer.start()

    @classmethod
    def of(cls, bridge: NodeBridge, window: QObject | None) -> DailyBackups:
        """The window's one DailyBackups (made the first time)."""
        found = window.findChild(DailyBackups, "dailyBackups") if window is not None else None
        return found if found is not None else cls(bridge, window)

    def start(self, passphrase: str) -> None:
        self.passphrase = passphrase
        self.check()

    def check(self) -> None:
        data = self.bridge.facade.info.data
        if self.passphrase is None or not daily_due(data, int(time.time() * 1000)):
            return
        passphrase = self.passphrase
        self.bridge.then(self.bridge.facade.off_loop(lambda paths: run_daily(paths, passphrase)),
                         done=lambda path: self.wrote.emit(f"daily backup written to {path}"),
                         failed=lambda message: self.wrote.emit(f"the daily backup failed: {message}"))


def _passphrase(parent: QWidget, twice: bool = True) -> str | None:
    first, ok = QInputDialog.getText(parent, "Passphrase", "Seal the backup with:",
                                     QLineEdit.EchoMode.Password)
    if not ok or not first:
        return None
    if twice:
        again, ok = QInputDialog.getText(parent, "Passphrase", "The passphrase again:",
                                         QLineEdit.EchoMode.Password)
        if not ok or again != first:
            return None
    return first


class DataPage(QWidget):
    """The "Your data" page of Settings."""

    done = Signal(str)  # what happened, for the page's status line and tests

    def __init__(self, bridge: NodeBridge, window: QObject | None = None):
        super().__init__(objectName="settingsData")
        self.bridge = bridge
        self.facade = bridge.facade
        self.daily = DailyBackups.of(bridge, window)
        self.daily.wrote.connect(self._report)
        self.status = QLabel(objectName="dataStatus", wordWrap=True)
        slack = QPushButton("Import from Slack…", objectName="importSlack")
        slack.clicked.connect(self._choose_export)
        now = QPushButton("Back up now…", objectName="backupNow")
        now.clicked.connect(self._backup_now)
        self.daily_label = QLabel(objectName="dailyBackupState", wordWrap=True)
        choose = QPushButton("Daily backup to…", objectName="dailyBackupFolder")
        choose.clicked.connect(self._choose_daily)
        self.daily_off = QPushButton("Turn off", objectName="dailyBackupOff")
        self.daily_off.clicked.connect(lambda: self.set_daily(None))
        self.format = QComboBox(objectName="archiveFormat")
        for fmt in FORMATS:
            self.format.addItem(fmt, fmt)
        self.private = QCheckBox("with private channels and direct messages",
                                 objectName="archivePrivate")
        archive = QPushButton("Save an archive…", objectName="saveArchive")
        archive.clicked.connect(self._archive)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("<b>Coming from Slack</b>: bring in a Slack workspace export "
                                "(the zip Slack's \"Export data\" gives)."))
        layout.addWidget(slack)
        layout.addWidget(QLabel("<b>Backups</b> hold this computer's replica, the files it "
                                "stores, your keys and your settings, all sealed under a "
                                "passphrase; <code>hearth restore</code> brings them back on a new computer. "
                                "Without the passphrase a backup cannot be read, by anyone: "
                                "nobody can recover a forgotten one.", wordWrap=True))
        layout.addLayout(_row(now, choose, self.daily_off))
        layout.addWidget(self.daily_label)
        layout.addWidget(QLabel("<b>Archive</b>: everything this computer can read, as SQLite, "
                                "Slack's layout (json) or web pages (html).", wordWrap=True))
        layout.addLayout(_row(self.format, self.private, archive))
        layout.addWidget(self.status)
        layout.addStretch(1)
        self._show_daily()

    def _report(self, message: str) -> None:
        self.status.setText(message)
        self._show_daily()
        self.done.emit(message)

    # Slack --------------------------------------------------------------------------------

    def _choose_export(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Slack export", "", "Zip files (*.zip)")
        if path:
            self.import_slack(Path(path))

    def import_slack(self, path: Path) -> SlackImportDialog:
        dialog = SlackImportDialog(self.bridge, path, self)
        dialog.finishedImport.connect(self._report)
        dialog.show()
        return dialog

    # Backups --------------------------------------------------------------------------------

    def _backup_now(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Back up to", "hearth.hearth-backup")
        passphrase = _passphrase(self) if path else None
        if path and passphrase:
            self.back_up(Path(path), passphrase)

    def back_up(self, path: Path, passphrase: str) -> None:
        self.status.setText(f"Backing up to {path}…")
        self.bridge.then(self.facade.off_loop(lambda paths: backup(paths, path, passphrase)),
                         done=lambda info: self._report(
                             f"backed up to {path} ({backup_summary(info)})"),
                         failed=self._report)

    def _choose_daily(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Daily backups into")
        passphrase = _passphrase(self) if folder else None
        if folder and passphrase:
            self.set_daily(Path(folder), passphrase)

    def set_daily(self, folder: Path | None, passphrase: str | None = None) -> None:
        set_daily(self.facade.info.data, folder)
        if folder is not None and passphrase:
            self.daily.start(passphrase)
        elif folder is None:
            self.daily.passphrase = None
        self._show_daily()

    def _show_daily(self) -> None:
        setting = daily_setting(self.facade.info.data)
        self.daily_off.setEnabled(setting.folder is not None)
        if setting.folder is None:
            text = "No daily backup."
        else:
            last = (time.strftime("%Y-%m-%d %H:%M", time.localtime(setting.last_ms / 1000))
                    if setting.last_ms else "none yet")
            waiting = "" if self.daily.passphrase else (
                " Paused until you give the passphrase again (it is never stored): choose "
                "the folder again.")
            text = (f"Daily backup into {setting.folder} (the newest {DAILY_KEEP} kept); "
                    f"the last: {last}.{waiting}")
        self.daily_label.setText(text)

    # Archive --------------------------------------------------------------------------------

    def _archive(self) -> None:
        fmt = self.format.currentData()
        path, _ = QFileDialog.getSaveFileName(self, "Save the archive as",
                                              {"sqlite": "hearth.db", "json": "hearth-slack.zip",
                                               "html": "hearth-site"}[fmt])
        if path:
            self.archive(Path(path), fmt, self.private.isChecked())

    def archive(self, path: Path, fmt: str, include_private: bool) -> None:
        def made(archive) -> None:
            count = sum(len(c.messages) for c in archive.channels)
            note = " (with private channels: keep it as private as they are)" \
                if include_private else ""
            self._report(f"archived {count} messages as {fmt} to {path}{note}")

        self.bridge.then(self.facade.run(lambda ws: write_archive(
            ws, path, fmt, include_private=include_private)), done=made, failed=self._report)


def _row(*widgets: QWidget) -> QHBoxLayout:
    row = QHBoxLayout()
    for widget in widgets:
        row.addWidget(widget)
    row.addStretch(1)
    return row
