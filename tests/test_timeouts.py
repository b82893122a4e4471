"""The named timeouts, and the relations between them that the code relies on: change one and
this says which other must move with it."""

from __future__ import annotations

from app import node
from sync import _guard, connection, discovery, service, session


def test_a_quiet_peer_is_pinged_twice_before_it_counts_as_silent():
    assert 2 * session.PING_INTERVAL_S < session.IDLE_TIMEOUT_S


def test_stopping_a_node_leaves_room_for_every_part_to_close():
    # The service waits for its tasks; each connection then gets its close, and discovery its
    # goodbye: the Node's join of its thread must outlast all of them, or it reports a hang.
    parts = service.STOP_TIMEOUT_S + connection.CLOSE_TIMEOUT_S + discovery.CLOSE_TIMEOUT_S
    assert parts <= node.STOP_TIMEOUT_S


def test_an_honest_dialler_is_never_cut_off_by_the_acceptors_guard():
    # The dialler gives up connecting (TCP and the WebSocket upgrade) before the acceptor's
    # guard closes a socket that has not upgraded yet.
    assert connection.CONNECT_TIMEOUT_S < _guard.UPGRADE_TIMEOUT_S
    # ...and the Noise handshake has its own, separate deadline once upgraded.
    assert session.HANDSHAKE_TIMEOUT_S <= session.REPLY_TIMEOUT_S


def test_a_reply_may_take_as_long_as_the_socket_may_to_take_a_frame():
    assert session.REPLY_TIMEOUT_S >= connection.SEND_TIMEOUT_S


def test_rounds_repeat_at_one_named_interval():
    import inspect

    from sync.service import SyncService

    default = inspect.signature(SyncService).parameters["reconcile_interval"].default
    assert default == session.RECONCILE_INTERVAL_S
    assert session.ROUND_RETRY_S < session.RECONCILE_INTERVAL_S
