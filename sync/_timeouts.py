"""How long a session waits, for what (sync.session re-exports them).

How they relate (tests/test_timeouts.py checks it): a quiet peer is pinged twice before it
counts as silent (PING_INTERVAL_S * 2 < IDLE_TIMEOUT_S), a reply may take as long as the socket
may take to accept a frame (sync.connection.SEND_TIMEOUT_S), and an honest dialler completes
its handshake well within what the acceptor allows (HANDSHAKE_TIMEOUT_S).
"""

from __future__ import annotations

HANDSHAKE_TIMEOUT_S = 10.0
REPLY_TIMEOUT_S = 30.0
PING_INTERVAL_S = 15.0
IDLE_TIMEOUT_S = 45.0
RECONCILE_INTERVAL_S = 30.0
ROUND_RETRY_S = 1.0  # a round put off while the last one's objects are still being sent
