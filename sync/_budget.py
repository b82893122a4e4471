"""How much reconciliation work a peer may make this node do: token buckets of negentropy
ranges (pure bookkeeping: counts and `now` in, waits out).

A responder processes a `neg` frame, then charges its ranges to the session's bucket and to the
bucket its peer's key shares across sessions. A bucket in debt makes the session stop reading
(sync._pacing `read_wait`): the peer's next frames stay in the socket, so TCP holds them and the
node spends nothing on them until the bucket has refilled. An honest round charges little (a
joiner's messages hold a range or two; two replicas in sync settle in their summaries), so
only a flood waits.
"""

from __future__ import annotations

# Ranges a peer's key may have processed per second across its sessions, and in a burst: one
# message of the most ranges a message may hold (sync.session.NEG_MAX_RANGES) per second, about
# 60 ms of one core's time in a second.
KEY_RANGES_PER_S = 2048.0
KEY_RANGES_BURST = 2048.0
# One session alone: the same, so one session may use its key's whole budget.
SESSION_RANGES_PER_S = KEY_RANGES_PER_S
SESSION_RANGES_BURST = KEY_RANGES_BURST


class RangeBudget:
    """A token bucket: `rate` tokens a second up to `burst`; a charge may take it below zero
    (the work is done before its size is known), and it is in debt until it refills."""

    def __init__(self, rate: float, burst: float, now: float):
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self._at = now

    def _refill(self, now: float) -> None:
        if now > self._at:
            self.tokens = min(self.burst, self.tokens + (now - self._at) * self.rate)
            self._at = now

    def charge(self, amount: float, now: float) -> None:
        self._refill(now)
        self.tokens -= amount

    def wait(self, now: float) -> float:
        """Seconds until the bucket is out of debt (0: not in debt)."""
        self._refill(now)
        return 0.0 if self.tokens >= 0 else -self.tokens / self.rate
