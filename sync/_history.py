"""How far fetching history has come, from the progress of the rounds with each peer: told as
HistoryFetch events at most every HISTORY_INTERVAL_S, and always once the last round fetching
history is over. Owned by SyncService (`service.history_watch`)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ._rounds import SyncProgress
from .events import HistoryFetch

if TYPE_CHECKING:
    from .connection import Connection
    from .service import SyncService

HISTORY_INTERVAL_S = 0.25  # HistoryFetch events at most this often


class HistoryWatch:
    def __init__(self, service: SyncService):
        self.service = service
        self.rounds: dict[int, SyncProgress] = {}  # id(connection) -> its round's progress
        self._told = 0.0  # time.monotonic() of the last event

    def now(self) -> HistoryFetch | None:
        """SyncService.history."""
        if not self.rounds:
            return None
        here = self.kept_count()
        rounds = list(self.rounds.values())
        total = max([here, *(p.held + p.expected for p in rounds)])
        return HistoryFetch(here, total, frozenset().union(*(p.pending for p in rounds)), False)

    def moved(self, connection: Connection, progress: SyncProgress | None) -> None:
        """A round's progress (None: its session ended)."""
        if progress is None and id(connection) not in self.rounds:
            return
        if progress is None or progress.done or progress.expected == 0:
            over = self.rounds.pop(id(connection), None) is not None and not self.rounds
        else:
            self.rounds[id(connection)] = progress
            over = False
        now = time.monotonic()
        if not over and (not self.rounds or now - self._told < HISTORY_INTERVAL_S):
            return
        self._told = now
        if over:
            here = self.kept_count()
            self.service.on_event(HistoryFetch(here, here, frozenset(), True))
        else:
            fetching = self.now()
            assert fetching is not None
            self.service.on_event(fetching)

    def kept_count(self) -> int:
        """Objects held in the streams this computer keeps."""
        service = self.service
        return sum(info.count for stream, info in service.store.streams().items()
                   if service.interest.covers(stream, info.klass))
