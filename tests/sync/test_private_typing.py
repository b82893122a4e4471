"""Typing in private channels (issue #32; sync/_signals.py `ptyping`, sync/_presence.py,
app/node.py `typing_private`).

A `ptyping` frame names a private channel by its id. It goes only to a peer that announced
the PTYPING capability and that is a current member of the channel (the sender's Node works
that out), never through a relay; the receiving Node passes it on only when its sender and its
own person are both current members. The session tests wire two sessions in memory with a
fake clock; the Node tests run real Nodes on 127.0.0.1.
"""

from __future__ import annotations

import pytest

from app.node import Node
from sync.session import (
    PTYPING,
    TYPING,
    TYPING_RECEIVE_LIMIT,
    TYPING_RECEIVE_WINDOW_S,
    TYPING_SEND_INTERVAL_S,
    Closed,
    PrivateTyping,
    Typing,
)
from sync.store import MemoryStore
from tests.support import FakeClock, node_call, node_service, wait_converged

from .nodes import Cluster, wait_until
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
from .test_typing import Heard, understood

ROOM = b"R" * 32
OTHER = b"O" * 32


def ptyping_frames(frames: list) -> list[dict]:
    return [f for f in frames if isinstance(f, dict) and f.get("t") == "ptyping"]


# The session, in memory -----------------------------------------------------------------------


def test_private_typing_flows_both_ways_with_the_authenticated_key(secret):
    a, b, wire, clock = connected(secret=secret)
    assert PTYPING in a.peer_caps and PTYPING in b.peer_caps

    assert a.signals.send_private_typing(ROOM, clock.now)
    wire.pump()
    assert wire.events(b, PrivateTyping) == [PrivateTyping(ALICE.public_key, ROOM)]
    assert b.signals.send_private_typing(OTHER, clock.now)
    wire.pump()
    assert wire.events(a, PrivateTyping) == [PrivateTyping(BOB.public_key, OTHER)]
    assert not wire.events(a, Typing) and not wire.events(b, Typing)
    assert not wire.events(a, Closed) and not wire.events(b, Closed)


def test_the_sender_sends_one_frame_per_channel_per_interval(secret):
    a, b, wire, clock = connected(secret=secret, reconcile_interval=None)
    seen_by_b = tap(b)
    start = clock.now
    assert a.signals.send_private_typing(ROOM, start)
    assert not a.signals.send_private_typing(ROOM, start + TYPING_SEND_INTERVAL_S - 0.01)
    assert a.signals.send_private_typing(OTHER, start + 1)
    assert a.signals.send_typing("general", start + 1)  # public typing counts apart
    assert a.signals.send_private_typing(ROOM, start + TYPING_SEND_INTERVAL_S)
    for bad in (b"short", b"x" * 33, "R" * 32):
        assert not a.signals.send_private_typing(bad, start + 100)  # type: ignore[arg-type]
    wire.pump()
    assert ptyping_frames(seen_by_b) == [{"t": "ptyping", "pc": ROOM},
                                         {"t": "ptyping", "pc": OTHER},
                                         {"t": "ptyping", "pc": ROOM}]


def test_a_peer_that_did_not_announce_ptyping_is_never_sent_any(secret):
    # A peer from before private typing: its ping names typing and presence only. It would
    # close the session on a frame it does not know.
    clock = FakeClock(T_START)
    a, old, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    rewrite(old, lambda f: {"t": "ping", "caps": ["typing", "presence"]}
            if f["t"] == "ping" else f)
    seen_by_old = tap(old)
    wire.pump()
    assert a.connected and old.connected
    assert a.peer_caps == {TYPING, "presence"}

    assert not a.signals.send_private_typing(ROOM, clock.now)
    assert a.signals.send_typing("general", clock.now)  # what it does understand still goes
    wire.pump()
    assert ptyping_frames(seen_by_old) == []
    assert wire.events(old, Typing) == [Typing(ALICE.public_key, "general")]
    assert a.connected and old.connected


def test_the_receiver_drops_a_flood_and_the_session_survives(secret):
    a, evil, wire, clock = connected(secret=secret, reconcile_interval=None)
    start = clock.now
    rooms = [bytes([n]) * 32 for n in range(200)]
    inject(evil, a, [frame({"t": "ptyping", "pc": room}) for room in rooms], start)
    wire.drain(a)
    assert [e.channel for e in wire.events(a, PrivateTyping)] == rooms[:TYPING_RECEIVE_LIMIT]
    assert a.connected and not wire.events(a, Closed)

    # Public typing has its own bound: the private flood did not use it up.
    inject(evil, a, [frame({"t": "typing", "ch": "general"})], start)
    wire.drain(a)
    assert wire.events(a, Typing) == [Typing(evil.identity.public_key, "general")]

    inject(evil, a, [frame({"t": "ptyping", "pc": ROOM})], start + TYPING_RECEIVE_WINDOW_S - 0.01)
    wire.drain(a)
    assert len(wire.events(a, PrivateTyping)) == TYPING_RECEIVE_LIMIT
    inject(evil, a, [frame({"t": "ptyping", "pc": ROOM})], start + TYPING_RECEIVE_WINDOW_S)
    wire.drain(a)
    assert wire.events(a, PrivateTyping)[-1] == PrivateTyping(evil.identity.public_key, ROOM)
    assert a.connected and evil.connected


BAD_PTYPING = {
    "extra field": ({"t": "ptyping", "pc": ROOM, "x": 1}, "ptyping fields"),
    "no channel": ({"t": "ptyping"}, "ptyping fields"),
    "a name, not an id": ({"t": "ptyping", "ch": "general"}, "ptyping fields"),
    "channel as text": ({"t": "ptyping", "pc": "R" * 32}, "ptyping channel"),
    "channel too short": ({"t": "ptyping", "pc": b"R" * 31}, "ptyping channel"),
    "channel too long": ({"t": "ptyping", "pc": b"R" * 33}, "ptyping channel"),
    "channel a number": ({"t": "ptyping", "pc": 7}, "ptyping channel"),
}


@pytest.mark.parametrize("case", list(BAD_PTYPING))
def test_a_malformed_ptyping_frame_closes_like_any_malformed_frame(secret, case):
    bad, expected = BAD_PTYPING[case]
    a, evil, wire, clock = connected(secret=secret)
    inject(evil, a, [frame(bad)], clock.now)
    wire.drain(a)
    verdict = closed(wire, a)
    assert verdict == Closed(f"malformed frame: {expected}", True, fault=True), verdict
    assert not wire.events(a, PrivateTyping)


# Real Nodes -----------------------------------------------------------------------------------


def tapped(node: Node, peer: Node) -> list:
    """Every frame `node`'s session with `peer` reads from now on (sync level: before the
    Node's own check of membership)."""
    def spy() -> list:
        [session] = [c.session for c in node_service(node).connections.values()
                     if c.session.peer_key == peer.key and c.session.connected]
        return tap(session)

    return node_call(node, spy)


def forge(sender: Node, to: Node, channel: bytes) -> None:
    """`sender` sends `to` a ptyping frame for `channel` straight on their session, whoever
    the channel's members are (a hostile but keyed peer)."""
    def send() -> None:
        for connection in node_service(sender).connections.values():
            if connection.session.peer_key == to.key:
                connection.session.send_frame({"t": "ptyping", "pc": channel})
                connection.wake()

    node_call(sender, send)


def test_private_typing_reaches_members_only_and_forged_frames_show_nothing(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    c = cluster.start(pc, peers=[a, b])
    for x, y in ((a, b), (a, c), (b, c)):
        understood(x, y, PTYPING)
    room = node_call(a, lambda: a.workspace.private.create("plans", [b.key]))
    wait_converged([a, b, c])
    heard_a, heard_b, heard_c = Heard(a), Heard(b), Heard(c)
    frames_b, frames_c = tapped(b, a), tapped(c, a)

    a.typing_private(room)
    a.typing("general")  # after it on the same ordered sessions: c hears this one only
    wait_until(lambda: len(heard_b.pairs()) == 2 and heard_c.pairs(),
               what="bob to hear both, carol the public one")
    assert heard_b.pairs() == [(a.key, room), (a.key, "general")]
    assert heard_c.pairs() == [(a.key, "general")]
    assert ptyping_frames(frames_b) == [{"t": "ptyping", "pc": room}]
    assert ptyping_frames(frames_c) == []  # never sent to a non-member

    # carol, not a member, forges one to alice; alice forges one to carol: neither shows.
    forge(c, a, room)
    c.typing("random")
    forge(a, c, room)
    a.typing("design")
    wait_until(lambda: heard_a.pairs() and len(heard_c.pairs()) == 2,
               what="the public typing sent after the forged frames")
    assert heard_a.pairs() == [(c.key, "random")]
    assert heard_c.pairs() == [(a.key, "general"), (a.key, "design")]

    # bob taken out: his typing there shows no more, and alice's no longer goes to him.
    node_call(a, lambda: a.workspace.private.remove_member(room, b.key))
    wait_converged([a, b, c])
    forge(b, a, room)
    b.typing("after")
    a.typing_private(room)
    a.typing("later")
    wait_until(lambda: (b.key, "after") in heard_a.pairs()
               and (a.key, "later") in heard_b.pairs(),
               what="the public typing sent after the private")
    assert heard_a.pairs() == [(c.key, "random"), (b.key, "after")]
    assert [channel for _, channel in heard_b.pairs()].count(room) == 1  # the first one only
    assert ptyping_frames(frames_b) == [{"t": "ptyping", "pc": room}]  # none after removal
    assert ptyping_frames(frames_c) == [{"t": "ptyping", "pc": room}]  # the forged one


def test_private_typing_is_never_relayed(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    c = cluster.start(pc, peers=[b])  # c hears a only through b
    understood(a, b, PTYPING)
    understood(b, c, PTYPING)
    room = node_call(a, lambda: a.workspace.private.create("plans", [b.key, c.key]))
    wait_converged([a, b, c])
    heard_b, heard_c = Heard(b), Heard(c)

    a.typing_private(room)
    wait_until(lambda: heard_b.pairs(), what="b to hear a typing")
    b.typing("random")  # b would have passed a's frame on to c before its own
    wait_until(lambda: heard_c.pairs(), what="c to hear b typing")
    assert heard_c.pairs() == [(b.key, "random")]


def test_private_typing_on_a_node_that_is_not_running_does_nothing(cluster: Cluster):
    (pa,) = cluster.members(1)
    node = Node(pa, interfaces=["127.0.0.1"], mdns=False)
    node.typing_private(ROOM)
    node.start()
    node.typing_private(ROOM)  # a channel not held here: nothing sent, nothing raised
    node.stop()
    node.typing_private(ROOM)
