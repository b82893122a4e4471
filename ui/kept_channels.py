"""Which channels this computer keeps, as the window shows it (app/keeping.py;
docs/ARCHITECTURE.md "Sync": interests).

A member may keep only some channels on a computer (default: all); nothing new of the others
is fetched here. `KeptChannels` holds the set as stored (app.keeping.kept, read at the start and
again after each change) and changes it (facade.keep). The sidebar dims the channels not kept
(ui/models.py, ChannelListModel.kept), a channel's menu has "Keep on this computer" (checkable),
and a channel not kept shows `NotKeptNotice` above its messages, with "Keep it".
"""

from __future__ import annotations

import unicodedata

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from app import keeping
from app.records import Kept

from . import theme
from .bridge import NodeBridge

KEEP_ACTION = "Keep on this computer"
NOT_KEPT = "Not kept on this computer: its new messages are not fetched here."
STYLE = ("QFrame#notKeptNotice { background: palette(alternate-base); "
         "border-bottom: 1px solid palette(midlight); }")


def channel_key(name: str) -> str:
    """How channel names compare (core.kinds.channel_key: NFC, then case-folded): what Kept
    and HistoryProgress name channels by."""
    return unicodedata.normalize("NFC", name).casefold()


class KeptChannels(QObject):
    """The channels this computer keeps, as stored; `changed` once a read comes back."""

    changed = Signal()

    def __init__(self, bridge: NodeBridge, parent: QObject | None = None):
        super().__init__(parent)
        self.bridge = bridge
        self.kept: Kept | None = None  # None until the first read comes back

    def load(self) -> None:
        self.bridge.then(self.bridge.facade.run(keeping.kept), done=self._loaded)

    def is_kept(self, channel: str) -> bool:
        """Whether `channel` (by name) is kept here; all are until the set is read."""
        kept = self.kept
        return kept is None or kept.all or channel_key(channel) in kept.channels

    def keep(self, channel: str, keep: bool = True) -> None:
        """Keep `channel` on this computer (its history is fetched), or with `keep` False stop
        keeping it; the set is read again after."""
        self.bridge.then(self.bridge.facade.keep([channel], drop=not keep),
                         done=lambda _: self.load(), failed=self._failed)

    def _failed(self, message: str) -> None:
        self.bridge.failed.emit(message)
        self.load()  # what the sidebar and the notice show go back to what is stored

    def _loaded(self, kept: Kept) -> None:
        if kept != self.kept:  # read again after every burst of arrivals: mostly unchanged
            self.kept = kept
            self.changed.emit()


class NotKeptNotice(QFrame):
    """What a channel not kept here says above its messages (the ones held still show),
    with "Keep it"."""

    keepRequested = Signal()

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="notKeptNotice")
        theme.styled(self, STYLE)
        self.label = QLabel(NOT_KEPT, wordWrap=True)
        self.label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.keep_button = QPushButton("Keep it", objectName="keepChannel")
        self.keep_button.clicked.connect(self.keepRequested)
        row = QHBoxLayout(self)
        row.setContentsMargins(14, 6, 14, 6)
        row.setSpacing(12)
        row.addWidget(self.label, 1)
        row.addWidget(self.keep_button, 0, Qt.AlignmentFlag.AlignVCenter)
        self.hide()

    def show_channel(self, channel: str) -> None:
        self.keep_button.setToolTip(f"Keep #{channel} on this computer: its history and new "
                                    "messages are fetched here")
