"""History arriving from peers, as the window shows it (docs/ARCHITECTURE.md "Sync": progress).

A computer joining a big workspace gets each channel's newest messages first while the rest
streams in behind. app.events.HistoryProgressed (re-emitted by ui/bridge.py as
`NodeBridge.historyProgress`) says how far it has come, at most a few times a second and once
more when it is over: `HistoryBar` shows "Syncing history: 412,000 of 1,000,000" with a bar
while the last word is not done, and hides at done. `LoadingOlder` is the line at the top of a
channel's messages while that channel's history is still arriving ("Loading older messages…").

`history_text` words the bar without Qt.
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QProgressBar, QWidget

from app.records import HistoryProgress

from . import theme
from .kept_channels import channel_key

LOADING_OLDER = "Loading older messages\N{HORIZONTAL ELLIPSIS}"
STEPS = 1000  # the bar's range: counts may pass what a QProgressBar's int holds
STYLE = """
QFrame#historyBar { background: palette(alternate-base);
                    border-bottom: 1px solid palette(midlight); }
QProgressBar#historyProgress { border: none; border-radius: 3px;
                               background: palette(midlight); }
QProgressBar#historyProgress::chunk { border-radius: 3px; background: palette(highlight); }
"""


def history_text(progress: HistoryProgress) -> str:
    """ "Syncing history: 412,000 of 1,000,000"."""
    return f"Syncing history: {progress.here:,} of {progress.total:,}"


class HistoryBar(QFrame):
    """The bar over the reading area while history is arriving; hidden otherwise. Give it
    every HistoryProgress (`show_progress`), and at the start what facade.history() says."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="historyBar")
        theme.styled(self, STYLE)
        self.progress: HistoryProgress | None = None  # the last word, None once it is over
        self.label = QLabel(objectName="historyText")
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self.bar = QProgressBar(objectName="historyProgress", textVisible=False)
        self.bar.setRange(0, STEPS)
        self.bar.setFixedSize(220, 8)
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 5, 14, 5)
        row.setSpacing(12)
        row.addWidget(self.label)
        row.addWidget(self.bar)
        row.addStretch(1)
        self.hide()

    def show_progress(self, progress: HistoryProgress | None) -> None:
        """Show how far `progress` has come, or hide when it is done (or None: nothing is
        arriving)."""
        self.progress = None if progress is None or progress.done else progress
        if self.progress is None:
            self.hide()
            return
        here, total = self.progress.here, self.progress.total
        self.label.setText(history_text(self.progress))
        self.bar.setValue(STEPS if total <= 0 else min(STEPS, here * STEPS // total))
        self.show()

    def arriving(self, channel: str) -> bool:
        """`channel`'s history (by name, compared as channel keys) is still arriving."""
        return self.progress is not None and channel_key(channel) in self.progress.channels


class LoadingOlder(QLabel):
    """"Loading older messages…" at the top of a channel's messages whose history is still
    arriving: the newest are here, the rest comes in above them."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(LOADING_OLDER, parent, objectName="loadingOlder",
                         alignment=Qt.AlignmentFlag.AlignCenter)
        self.setForegroundRole(QPalette.ColorRole.PlaceholderText)  # muted in light and dark
        self.setBackgroundRole(QPalette.ColorRole.Base)  # one with the list below it
        self.setAutoFillBackground(True)
        self.setFont(theme.scaled(self.font(), 0.9))
        self.setContentsMargins(0, 6, 0, 4)
        self.setToolTip("The newest messages are here; older ones are still arriving from "
                        "the other computers.")
        self.hide()
