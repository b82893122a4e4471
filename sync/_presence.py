"""Typing and presence in documents: to the peers connected now and nowhere else, never stored,
never relayed. One that arrives becomes a PeerTyping, PeerPrivateTyping, PeerPresence or
PeerPresenceLeft event
(sync.session says how frames are rate-limited both ways); a session that ends takes its
peer's presence with it. Owned by SyncService (`service.presence_relay`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from .events import PeerPresence, PeerPresenceLeft, PeerPrivateTyping, PeerTyping
from .session import Presence, PresenceLeft, PrivateTyping, Typing

if TYPE_CHECKING:
    from .connection import Connection
    from .service import SyncService

# How long a typing indicator lasts after its last frame: two of the sender's intervals
# (sync.session.TYPING_SEND_INTERVAL_S), so one frame may be late or lost.
TYPING_TTL_S = 6.0
# How long a remote cursor stays after its last frame: two and a half of the window's refresh
# intervals (sync.session.PRESENCE_REFRESH_S), so one frame may be late or lost.
PRESENCE_TTL_S = 5.0


class PresenceRelay:
    def __init__(self, service: SyncService):
        self.service = service

    def heard(self, event: Typing | PrivateTyping | Presence | PresenceLeft) -> None:
        """A peer's frame arrived: told as an event, with when it stops counting."""
        on_event = self.service.on_event
        if isinstance(event, Typing):
            on_event(PeerTyping(event.key, event.channel, time.monotonic() + TYPING_TTL_S))
        elif isinstance(event, PrivateTyping):
            on_event(PeerPrivateTyping(event.key, event.channel,
                                       time.monotonic() + TYPING_TTL_S))
        elif isinstance(event, Presence):
            on_event(PeerPresence(event.key, event.doc, event.branch, tuple(event.heads),
                                  event.anchor, event.at, time.monotonic() + PRESENCE_TTL_S))
        else:
            on_event(PeerPresenceLeft(event.key, event.doc))

    def ended(self, connection: Connection) -> None:
        """A session ended: its peer's cursors go, unless another open session with the same
        peer still carries them (the one kept of two duplicate connections)."""
        key = connection.session.peer_key
        if key is None or any(other is not connection and other.session.connected
                              and other.session.peer_key == key
                              for other in self.service.connections.values()):
            return
        for doc in connection.session.signals.presence_docs:
            self.service.on_event(PeerPresenceLeft(key, doc))

    def typing(self, channel: str) -> None:
        """SyncService.typing."""
        now = time.monotonic()
        for connection in list(self.service.connections.values()):
            if connection.session.signals.send_typing(channel, now):
                connection.wake()

    def typing_private(self, channel: bytes, readers: frozenset[bytes]) -> None:
        """SyncService.typing_private."""
        now = time.monotonic()
        for connection in list(self.service.connections.values()):
            session = connection.session
            if session.peer_key in readers \
                    and session.signals.send_private_typing(channel, now):
                connection.wake()

    def presence(self, doc: bytes, branch: str, heads: list[bytes], anchor: int, at: int,
                 readers: frozenset[bytes] | None = None) -> None:
        """SyncService.presence."""
        now = time.monotonic()
        for connection in list(self.service.connections.values()):
            session = connection.session
            if readers is None or session.peer_key in readers:
                sent = session.signals.send_presence(doc, branch, heads, anchor, at, now)
            else:
                sent = session.signals.send_left(doc)
            if sent:
                connection.wake()

    def left(self, doc: bytes) -> None:
        """SyncService.presence_left."""
        for connection in list(self.service.connections.values()):
            if connection.session.signals.send_left(doc):
                connection.wake()
