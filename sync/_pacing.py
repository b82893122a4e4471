"""When a session stops reading its peer: reconciliation work over budget, or replies the
peer does not read (the session's `pacing`: sync.session.Session owns it).

Sans-I/O like the rest: the host asks `read_wait(now)` before it reads the next message (None:
read now; a number: not before then, or until it reports bytes written), and reports with
`written(n)` the bytes the socket took. A responder charges the ranges of every `neg` it
answers to its own bucket and to its peer key's (sync._budget); in debt, it reads nothing until
the buckets refill, so the peer's frames wait in the socket (TCP holds them) instead of costing
this node. A responder whose unsent output grows past what objects and chunks may queue (so
replies pile up: the peer does not read them) stops reading as well, and ends the session once
the socket has taken nothing for REPLY_TIMEOUT_S: a peer that never reads is not served
reconciliation, nor anything else (one that reads slowly is only read more slowly).
Only the responder stops reading: an honest initiator always reads, so two sessions never
wait for each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._budget import SESSION_RANGES_BURST, SESSION_RANGES_PER_S, RangeBudget
from ._timeouts import REPLY_TIMEOUT_S

if TYPE_CHECKING:
    from .session import Session

# Bytes that may wait for the socket beyond the objects' own allowance (Outbox.limit)
# before the responder stops reading: chunks of files (sync._files queues about 2.5 MiB at
# most) and other frames (reconciliation replies, pongs).
UNREAD_REPLIES_BYTES = 4 << 20


class Pacing:
    """The session's reading pace."""

    def __init__(self, session: Session, now: float):
        self._session = session
        self.neg_budget = RangeBudget(SESSION_RANGES_PER_S, SESSION_RANGES_BURST, now)
        self.key_budget: RangeBudget | None = None  # shared by the peer key's sessions
        self._written = 0  # bytes the socket took (once the host reports them)
        self._tracks_writes = False
        self._stalled_since: float | None = None  # stopped reading for replies not read
        self._stall_mark = 0  # bytes written when the socket last took something, stalled

    def written(self, count: int) -> None:
        """The socket took `count` more bytes of what `data_to_send` returned."""
        self._tracks_writes = True
        self._written += count

    @property
    def unsent(self) -> int:
        """Bytes produced for the peer that the socket has not taken yet."""
        return self._session.stats.bytes_sent - self._written if self._tracks_writes else 0

    def read_wait(self, now: float) -> float | None:
        """None: read the next message now; else the time to ask again (`inf`: once more
        bytes are written)."""
        session = self._session
        if session.closed or session.initiator or session.state != "open":
            return None
        if self.unsent > session.outbox.limit + UNREAD_REPLIES_BYTES:
            if self._stalled_since is None:
                self._stalled_since, self._stall_mark = now, self._written
            return float("inf")
        self._stalled_since = None
        wait = self.neg_budget.wait(now)
        if self.key_budget is not None:
            wait = max(wait, self.key_budget.wait(now))
        return None if wait <= 0 else now + wait

    def charge(self, ranges: int, now: float) -> None:
        self.neg_budget.charge(ranges, now)
        if self.key_budget is not None:
            self.key_budget.charge(ranges, now)

    def deadlines(self) -> list[float]:
        return [] if self._stalled_since is None else [
            self._stalled_since + REPLY_TIMEOUT_S]

    def timer_expired(self, now: float) -> bool:
        """Whether the peer has left its replies unread too long: the socket took nothing
        for REPLY_TIMEOUT_S while they piled up (the session then ends)."""
        if self._stalled_since is None:
            return False
        if self.unsent <= self._session.outbox.limit + UNREAD_REPLIES_BYTES:
            self._stalled_since = None
            return False
        if self._written != self._stall_mark:  # it reads, slowly: time it from here
            self._stalled_since, self._stall_mark = now, self._written
            # Not reading it, this side cannot hear it; the socket taking bytes says it lives.
            self._session.last_received = max(self._session.last_received, now)
            return False
        return now >= self._stalled_since + REPLY_TIMEOUT_S
