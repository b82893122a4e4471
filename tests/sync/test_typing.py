"""Typing indicators over live sessions (issue #17; sync/session.py, sync/service.py, app/node.py).

Typing is not an object: a small `typing` frame on an open session, rate-limited by the sender
(one per channel per TYPING_SEND_INTERVAL_S) and by the receiver (at most
TYPING_RECEIVE_LIMIT per TYPING_RECEIVE_WINDOW_S, the rest dropped without ending the session),
never stored and never relayed. The session tests wire two sessions in memory with a fake
clock (tests/sync/test_session.py's wire); the Node tests run real Nodes on 127.0.0.1.
"""

from __future__ import annotations

import threading
import time

import pytest

from app.events import NodeEvent, PeerPrivateTyping, PeerTyping
from app.node import Node
from sync.service import TYPING_TTL_S
from sync.session import (
    TYPING,
    TYPING_RECEIVE_LIMIT,
    TYPING_RECEIVE_WINDOW_S,
    TYPING_SEND_INTERVAL_S,
    Closed,
    ObjectsReceived,
    Typing,
)
from sync.store import MemoryStore
from tests.support import FakeClock, node_call, node_service, wait_converged

from .nodes import Cluster, wait_online, wait_until
from .session_support import (
    ALICE,
    BOB,
    T_START,
    closed,
    connected,
    frame,
    inject,
    rewrite,
    sessions,
    tap,
)


def typing_frames(frames: list) -> list[dict]:
    return [f for f in frames if isinstance(f, dict) and f.get("t") == "typing"]


# The session, in memory -----------------------------------------------------------------------


def test_typing_frames_flow_both_ways_with_the_authenticated_key(secret):
    a, b, wire, clock = connected(secret=secret)
    assert TYPING in a.peer_caps and TYPING in b.peer_caps  # both said so after hello

    assert a.signals.send_typing("general", clock.now)
    wire.pump()
    assert wire.events(b, Typing) == [Typing(ALICE.public_key, "general")]
    assert b.signals.send_typing("Café ☕", clock.now)
    wire.pump()
    assert wire.events(a, Typing) == [Typing(BOB.public_key, "Café ☕")]
    assert not wire.events(a, Closed) and not wire.events(b, Closed)
    assert not wire.events(a, ObjectsReceived) and not wire.events(b, ObjectsReceived)


def test_the_sender_sends_one_frame_per_channel_per_interval(secret):
    a, b, wire, clock = connected(secret=secret, reconcile_interval=None)
    seen_by_b = tap(b)
    start = clock.now

    assert a.signals.send_typing("general", start)
    assert not a.signals.send_typing("general", start + TYPING_SEND_INTERVAL_S - 0.01)
    assert not a.signals.send_typing("GENERAL", start + 1)  # the same channel, as names compare
    assert a.signals.send_typing("random", start + 1)  # another channel has its own interval
    assert a.signals.send_typing("general", start + TYPING_SEND_INTERVAL_S)
    assert not a.signals.send_typing("general", start + TYPING_SEND_INTERVAL_S + 1)
    wire.pump()

    assert typing_frames(seen_by_b) == [{"t": "typing", "ch": "general"},
                                        {"t": "typing", "ch": "random"},
                                        {"t": "typing", "ch": "general"}]
    assert [e.channel for e in wire.events(b, Typing)] == ["general", "random", "general"]


def test_nothing_is_sent_before_the_session_is_open_or_for_a_bad_name(secret):
    clock = FakeClock(T_START)
    a, b, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    assert not a.signals.send_typing("general", clock.now)  # still in the handshake
    wire.pump()
    seen_by_b = tap(b)
    for bad in ("", " general", "x" * 65, "gen\u202eeral"):
        assert not a.signals.send_typing(bad, clock.now)
    wire.pump()
    assert typing_frames(seen_by_b) == []
    a.close()
    wire.pump()
    assert not a.signals.send_typing("general", clock.now + 10)


def test_a_peer_that_did_not_say_it_understands_typing_is_never_sent_any(secret):
    # A version 2 peer from before typing: it answers the caps ping with a plain pong and
    # sends plain pings. It would close the session on a frame it does not know.
    clock = FakeClock(T_START)
    a, old, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    rewrite(old, lambda f: {"t": "ping"} if f["t"] == "ping" else f)
    seen_by_old = tap(old)
    wire.pump()
    assert a.connected and old.connected
    assert a.peer_caps == frozenset()

    assert not a.signals.send_typing("general", clock.now)
    wire.pump()
    assert typing_frames(seen_by_old) == []
    assert a.connected and old.connected


def test_the_receiver_drops_a_flood_and_the_session_survives(secret, chat):
    a, evil, wire, clock = connected(secret=secret, reconcile_interval=None)
    start = clock.now
    inject(evil, a, [frame({"t": "typing", "ch": f"c{n}"}) for n in range(200)], start)
    wire.drain(a)
    taken = wire.events(a, Typing)
    assert [e.channel for e in taken] == [f"c{n}" for n in range(TYPING_RECEIVE_LIMIT)]
    assert a.connected and not wire.events(a, Closed)

    # Still within the window: still dropped. Once the window has passed, taken again.
    inject(evil, a, [frame({"t": "typing", "ch": "late"})],
           start + TYPING_RECEIVE_WINDOW_S - 0.01)
    wire.drain(a)
    assert len(wire.events(a, Typing)) == TYPING_RECEIVE_LIMIT
    inject(evil, a, [frame({"t": "typing", "ch": "later"})], start + TYPING_RECEIVE_WINDOW_S)
    wire.drain(a)
    assert wire.events(a, Typing)[-1] == Typing(evil.identity.public_key, "later")

    # The flood cost nothing else: objects still flow both ways on the same session.
    post = chat.post("alice", "general", "after the flood")
    evil.outbox.push([post.raw], [post.id])
    wire.pump()
    assert post.id in a.store.objects
    assert a.connected and evil.connected


BAD_TYPING = {
    "extra field": ({"t": "typing", "ch": "general", "x": 1}, "typing fields"),
    "no channel": ({"t": "typing"}, "typing fields"),
    "channel not text": ({"t": "typing", "ch": 7}, "typing channel"),
    "empty channel": ({"t": "typing", "ch": ""}, "typing channel"),
    "surrounding space": ({"t": "typing", "ch": " general"}, "typing channel"),
    "control character": ({"t": "typing", "ch": "gen\u202eeral"}, "typing channel"),
    "too long": ({"t": "typing", "ch": "x" * 65}, "typing channel"),
    "not NFC": ({"t": "typing", "ch": "cafe\u0301"}, "typing channel"),
    "caps not a list": ({"t": "ping", "caps": "typing"}, "ping caps"),
    "caps not text": ({"t": "ping", "caps": [1]}, "ping caps"),
    "too many caps": ({"t": "ping", "caps": [f"c{n}" for n in range(17)]}, "ping caps"),
}


@pytest.mark.parametrize("case", list(BAD_TYPING))
def test_a_malformed_typing_frame_closes_like_any_malformed_frame(secret, case):
    bad, expected = BAD_TYPING[case]
    a, evil, wire, clock = connected(secret=secret)
    inject(evil, a, [frame(bad)], clock.now)
    wire.drain(a)
    verdict = closed(wire, a)
    assert verdict == Closed(f"malformed frame: {expected}", True, fault=True), verdict
    assert not wire.events(a, Typing)


def test_a_ping_with_fields_of_a_later_version_is_still_answered(secret):
    a, b, wire, clock = connected(secret=secret, reconcile_interval=None)
    seen_by_b = tap(b)
    inject(b, a, [frame({"t": "ping", "caps": [TYPING, "cursors"], "later": {"x": 1}})],
           clock.now)
    wire.pump()
    assert {"t": "pong"} in seen_by_b
    assert a.connected and a.peer_caps == {TYPING, "cursors"}


# Real Nodes -----------------------------------------------------------------------------------


class Heard:
    """The typing events a Node emits, public and private (a private channel by its id), as
    (key, channel, expires) in order, collected on its thread."""

    def __init__(self, node: Node):
        self.events: list[tuple[bytes, str | bytes, float]] = []
        self._lock = threading.Lock()
        node.subscribe(self._on_event)

    def _on_event(self, event: NodeEvent) -> None:
        if isinstance(event, PeerTyping | PeerPrivateTyping):
            with self._lock:
                self.events.append((event.key, event.channel, event.expires))

    def pairs(self) -> list[tuple[bytes, str | bytes]]:
        with self._lock:
            return [(key, channel) for key, channel, _ in self.events]


def understood(a: Node, b: Node, cap: str) -> None:
    """Wait until a and b are connected, hold the same objects (the first round is over, so
    what a test stores next is its own doing) and each knows the other understands `cap`."""
    wait_online(a, b)
    wait_converged([a, b])

    def ready(node: Node, other: Node) -> bool:
        return node_call(node, lambda: any(
            c.session.peer_key == other.key and cap in c.session.peer_caps
            for c in node_service(node).connections.values()))

    wait_until(lambda: ready(a, b) and ready(b, a), what=f"{cap} to be understood both ways")


def typing_ready(a: Node, b: Node) -> None:
    understood(a, b, TYPING)


def stored(node: Node) -> tuple[int, int, str]:
    """What a replica holds: objects, the newest storage sequence, every view's digest."""
    def read():
        replica = node.workspace.replica
        return replica.count(), replica.outbox.last_sequence(), replica.digest()

    return node_call(node, read)


def test_a_nodes_typing_reaches_its_peer_with_its_key_and_nothing_is_stored(two_nodes):
    a, b = two_nodes
    typing_ready(a, b)
    heard_a, heard_b = Heard(a), Heard(b)
    before = stored(a), stored(b)

    sent_at = time.monotonic()
    a.typing("general")
    wait_until(lambda: heard_b.pairs(), what="bob's node to hear alice typing")
    received_at = time.monotonic()
    [(key, channel, expires)] = heard_b.events
    assert (key, channel) == (a.key, "general")
    assert sent_at + TYPING_TTL_S <= expires <= received_at + TYPING_TTL_S

    b.typing("general")
    wait_until(lambda: heard_a.pairs(), what="alice's node to hear bob typing")
    assert heard_a.pairs() == [(b.key, "general")]
    assert heard_b.pairs() == [(a.key, "general")]  # nothing echoed back
    assert (stored(a), stored(b)) == before  # neither replica holds anything new


def test_typing_is_neither_relayed_nor_kept_for_peers_that_connect_later(cluster: Cluster):
    pa, pb, pc, pd = cluster.members(4)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    c = cluster.start(pc, peers=[b])  # c hears a only through b
    typing_ready(a, b)
    typing_ready(b, c)
    heard_b, heard_c = Heard(b), Heard(c)

    a.typing("general")
    wait_until(lambda: heard_b.pairs(), what="b to hear a typing")
    # b would have relayed a's frame to c before its own, on the same ordered session.
    b.typing("random")
    wait_until(lambda: heard_c.pairs(), what="c to hear b typing")
    assert heard_c.pairs() == [(b.key, "random")]

    d = cluster.start(pd, peers=[a])  # was not there when a typed in general
    typing_ready(a, d)
    heard_d = Heard(d)
    a.typing("design")
    wait_until(lambda: heard_d.pairs(), what="d to hear a typing")
    assert heard_d.pairs() == [(a.key, "design")]


def test_typing_on_a_node_that_is_not_running_does_nothing(cluster: Cluster):
    (pa,) = cluster.members(1)
    node = Node(pa, interfaces=["127.0.0.1"], mdns=False)
    node.typing("general")  # not started: nothing to do, nothing raised
    node.start()
    node.stop()
    node.typing("general")
