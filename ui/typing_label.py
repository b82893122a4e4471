"""The typing indicator below the composer: who else is typing in the open channel.

Typing is a live signal from connected peers, never stored (app.events.PeerTyping, which
ui/bridge.py re-emits on the GUI thread as `NodeBridge.typing(key, channel)`; in a private
channel app.events.PeerPrivateTyping, `NodeBridge.privateTyping(key, channel_id)`: the open
channel is a public one's name or a private one's 32-byte id). A person shows
for TYPING_TTL_S after their last signal (one single-shot QTimer each, restarted by the next),
and stops showing when they post in the channel (`posted`) or when the channel changes. My own
key never shows. The label keeps one line's height whether or not anyone is typing, so the
layout around it does not jump, and a long sentence is elided rather than widening the window.

`typing_text` words the sentence without Qt.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence

from PySide6.QtCore import QEvent, Qt, QTimer
from PySide6.QtGui import QPainter, QPalette
from PySide6.QtWidgets import QLabel, QSizePolicy, QWidget

from app.names import suffixed
from app.node import TYPING_TTL_S

from . import theme
from ._rows import ANONYMOUS

SEVERAL = "Several people are typing\N{HORIZONTAL ELLIPSIS}"


def typing_text(names: Sequence[str]) -> str:
    """"ada is typing…", "ada and bob are typing…", "ada, bob and cy are typing…", and for
    four or more "Several people are typing…"; "" for nobody."""
    dots = "\N{HORIZONTAL ELLIPSIS}"
    if not names:
        return ""
    if len(names) == 1:
        return f"{names[0]} is typing{dots}"
    if len(names) <= 3:
        return f"{', '.join(names[:-1])} and {names[-1]} are typing{dots}"
    return SEVERAL


def _channel_key(name: str | bytes) -> str | bytes:
    """How channel names compare (core.kinds.channel_key: NFC, then case-folded); a private
    channel's id as it is."""
    return name if isinstance(name, bytes) else unicodedata.normalize("NFC", name).casefold()


class TypingLabel(QLabel):
    """Who is typing in the open channel. Call `set_channel` when the channel changes,
    `set_nicknames` when names are known, `typed` for each typing event and `posted` for each
    new message (all on the GUI thread). `ttl_s` is for tests."""

    def __init__(self, own_key: bytes | None = None, parent: QWidget | None = None, *,
                 ttl_s: float = TYPING_TTL_S):
        super().__init__(parent, objectName="typingLabel")
        self.setTextFormat(Qt.TextFormat.PlainText)  # nicknames are peers' text, never markup
        self.setForegroundRole(QPalette.ColorRole.PlaceholderText)  # muted in light and dark
        self.setFont(theme.scaled(self.font(), 0.9))
        # Ignored: a long sentence never widens the window (it is elided when painted).
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Fixed)
        self._ttl_ms = max(1, round(ttl_s * 1000))
        self._own_key = own_key
        self._channel: str | bytes | None = None
        self._nicknames: dict[bytes, str] = {}
        self._typing: dict[bytes, QTimer] = {}  # who is typing, each with its expiry timer
        self._fit_height()

    # What the window tells it ---------------------------------------------------------------

    def set_own_key(self, key: bytes | None) -> None:
        self._own_key = key
        if key in self._typing:
            self._drop(key)

    def set_channel(self, name: str | bytes | None) -> None:
        """The open channel, a name or a private channel's id (None: none is open). Everyone
        shown so far is cleared."""
        if name is not None and self._channel is not None \
                and _channel_key(name) == _channel_key(self._channel):
            self._channel = name
            return
        self._channel = name
        for key in list(self._typing):
            self._drop(key, refresh=False)
        self._refresh()

    def set_nicknames(self, names: Mapping[bytes, str]) -> None:
        """How each key is named (as the member list names them)."""
        self._nicknames = dict(names)
        self._refresh()

    def typed(self, key: bytes, channel: str | bytes) -> None:
        """`key`'s person is typing in `channel`: show them for the next TYPING_TTL_S."""
        if key == self._own_key or not self._is_open(channel):
            return
        timer = self._typing.get(key)
        if timer is None:
            timer = QTimer(self, singleShot=True, interval=self._ttl_ms)
            timer.timeout.connect(lambda: self._drop(key))
            self._typing[key] = timer
        timer.start()  # restarted: the last signal counts
        self._refresh()

    def posted(self, key: bytes, channel: str | bytes) -> None:
        """`key` posted a message in `channel`: they have stopped typing it."""
        if key in self._typing and self._is_open(channel):
            self._drop(key)

    def typing_keys(self) -> set[bytes]:
        """The keys shown as typing now."""
        return set(self._typing)

    # Inside ---------------------------------------------------------------------------------

    def _is_open(self, channel: str | bytes) -> bool:
        return self._channel is not None and _channel_key(channel) == _channel_key(self._channel)

    def _drop(self, key: bytes, *, refresh: bool = True) -> None:
        timer = self._typing.pop(key, None)
        if timer is not None:
            timer.stop()
            timer.deleteLater()
        if refresh:
            self._refresh()

    def _name(self, key: bytes) -> str:
        return self._nicknames.get(key) or suffixed(ANONYMOUS, key)

    def _refresh(self) -> None:
        names = sorted((self._name(key) for key in self._typing), key=str.casefold)
        text = typing_text(names)
        self.setText(text)
        self.setToolTip(text)  # the whole sentence, when it is elided

    def _fit_height(self) -> None:
        margins = self.contentsMargins()
        self.setFixedHeight(self.fontMetrics().height() + 2 * self.margin()
                            + margins.top() + margins.bottom())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() == QEvent.Type.FontChange:
            self._fit_height()

    def paintEvent(self, event) -> None:
        rect = self.contentsRect().adjusted(self.margin(), self.margin(), -self.margin(),
                                            -self.margin())
        shown = self.fontMetrics().elidedText(self.text(), Qt.TextElideMode.ElideRight,
                                              rect.width())
        painter = QPainter(self)
        self.style().drawItemText(painter, rect, int(self.alignment()), self.palette(),
                                  self.isEnabled(), shown, self.foregroundRole())
