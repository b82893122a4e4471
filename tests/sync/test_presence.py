"""Presence in documents over live sessions (issue #16; sync/session.py, sync/service.py,
app/node.py).

Presence is not an object: small `presence` and `left` frames on an open session, sent only to
a peer whose ping announced the capability, the newest position sent at most once per
document per PRESENCE_SEND_INTERVAL_S (what comes sooner waits, and only the newest goes),
taken by the receiver at most PRESENCE_RECEIVE_LIMIT times per PRESENCE_RECEIVE_WINDOW_S,
checked field by field, never stored and never relayed. The session tests wire two sessions
in memory with a fake clock (tests/sync/test_session.py's wire); the Node tests run real Nodes
on 127.0.0.1.
"""

from __future__ import annotations

import threading
import time
from dataclasses import asdict

import pytest

from app.events import NodeEvent, PeerPresence, PeerPresenceLeft
from app.node import Node
from sync.service import PRESENCE_TTL_S
from sync.session import (
    MAX_PRESENCE_DOCS,
    MAX_PRESENCE_HEADS,
    PRESENCE,
    PRESENCE_RECEIVE_LIMIT,
    PRESENCE_RECEIVE_WINDOW_S,
    PRESENCE_REFRESH_S,
    PRESENCE_SEND_INTERVAL_S,
    TYPING,
    Closed,
    ObjectsReceived,
    Presence,
    PresenceLeft,
)
from sync.store import MemoryStore
from tests.support import FakeClock, node_call, node_service

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
from .test_typing import stored, understood

DOC = bytes(range(32))
OTHER_DOC = bytes(range(1, 33))
HEAD = b"\x07" * 32
HEAD2 = b"\x08" * 32


def presence_frames(frames: list) -> list[dict]:
    return [f for f in frames if isinstance(f, dict) and f.get("t") in ("presence", "left")]


def here(doc: bytes = DOC, branch: str = "main", heads=(HEAD,), anchor: int = 3,
         at: int = 3) -> dict:
    return {"t": "presence", "doc": doc, "br": branch, "heads": list(heads), "anchor": anchor,
            "at": at}


# How the numbers relate -----------------------------------------------------------------------


def test_a_cursor_outlives_a_lost_refresh_but_not_a_silent_peer_for_long():
    assert 2 * PRESENCE_REFRESH_S < PRESENCE_TTL_S <= 10.0
    assert PRESENCE_SEND_INTERVAL_S < PRESENCE_REFRESH_S
    # An honest sender (a presence per interval, as many lefts) stays within the limit.
    honest = 2 * PRESENCE_RECEIVE_WINDOW_S / PRESENCE_SEND_INTERVAL_S
    assert honest <= PRESENCE_RECEIVE_LIMIT


# The session, in memory -----------------------------------------------------------------------


def test_presence_flows_both_ways_with_the_authenticated_key(secret):
    a, b, wire, clock = connected(secret=secret)
    assert PRESENCE in a.peer_caps and PRESENCE in b.peer_caps and TYPING in a.peer_caps

    assert a.signals.send_presence(DOC, "main", [HEAD2, HEAD], 2, 9, clock.now)
    wire.pump()
    assert wire.events(b, Presence) == [
        Presence(ALICE.public_key, DOC, "main", (HEAD, HEAD2), 2, 9)]  # heads sorted
    assert b.signals.send_presence(DOC, "brouillon d’été", [], 0, 0, clock.now)
    wire.pump()
    assert wire.events(a, Presence) == [Presence(BOB.public_key, DOC, "brouillon d’été", (),
                                                 0, 0)]
    assert b.signals.presence_docs == [DOC] and a.signals.presence_docs == [DOC]
    assert not wire.events(a, Closed) and not wire.events(b, Closed)
    assert not wire.events(a, ObjectsReceived) and not wire.events(b, ObjectsReceived)


def test_within_the_interval_the_newest_position_waits_and_goes_alone(secret):
    a, b, wire, clock = connected(secret=secret, reconcile_interval=None)
    seen_by_b = tap(b)
    start = clock.now

    assert a.signals.send_presence(DOC, "main", [HEAD], 0, 1, start)
    assert a.signals.send_presence(DOC, "main", [HEAD], 0, 2, start + 0.01)  # waits
    assert a.signals.send_presence(DOC, "main", [HEAD], 0, 3, start + 0.02)  # replaces it
    assert a.signals.send_presence(OTHER_DOC, "main", [], 0, 0, start + 0.02)  # its own interval
    wire.pump()
    assert [(f["doc"], f["at"]) for f in presence_frames(seen_by_b)] == [(DOC, 1),
                                                                         (OTHER_DOC, 0)]
    assert a.get_timer() <= start + PRESENCE_SEND_INTERVAL_S

    wire.run_until(start + PRESENCE_SEND_INTERVAL_S)
    assert [(f["doc"], f["at"]) for f in presence_frames(seen_by_b)] == [
        (DOC, 1), (OTHER_DOC, 0), (DOC, 3)]
    assert [e.at for e in wire.events(b, Presence) if e.doc == DOC] == [1, 3]
    wire.run_until(start + 10 * PRESENCE_SEND_INTERVAL_S)
    assert len(presence_frames(seen_by_b)) == 3  # nothing else was waiting

    # After a quiet interval the next one goes at once.
    later = start + 10 * PRESENCE_SEND_INTERVAL_S
    assert a.signals.send_presence(DOC, "main", [HEAD], 5, 5, later)
    wire.pump()
    assert presence_frames(seen_by_b)[-1]["at"] == 5


def test_left_goes_at_once_only_where_presence_went_and_drops_what_waits(secret):
    a, b, wire, clock = connected(secret=secret, reconcile_interval=None)
    seen_by_b = tap(b)
    start = clock.now

    assert not a.signals.send_left(DOC)  # b never had my presence there
    assert a.signals.send_presence(DOC, "main", [HEAD], 0, 1, start)
    assert a.signals.send_presence(DOC, "main", [HEAD], 0, 2, start + 0.01)  # waits
    assert a.signals.send_left(DOC)
    assert not a.signals.send_left(DOC)  # once
    wire.run_until(start + 1)
    assert presence_frames(seen_by_b) == [here(at=1, anchor=0), {"t": "left", "doc": DOC}]
    assert wire.events(b, PresenceLeft) == [PresenceLeft(ALICE.public_key, DOC)]
    assert b.signals.presence_docs == []


def test_nothing_is_sent_before_the_session_is_open_or_for_bad_fields(secret):
    clock = FakeClock(T_START)
    a, b, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    assert not a.signals.send_presence(DOC, "main", [HEAD], 0, 0, clock.now)  # still in the handshake
    wire.pump()
    seen_by_b = tap(b)
    for bad in [(DOC[:31], "main", [HEAD], 0, 0), (DOC, "", [HEAD], 0, 0),
                (DOC, " main", [HEAD], 0, 0), (DOC, "x" * 65, [HEAD], 0, 0),
                (DOC, "main", [HEAD, HEAD], 0, 0), (DOC, "main", [HEAD[:31]], 0, 0),
                (DOC, "main", [bytes([n]) * 32 for n in range(MAX_PRESENCE_HEADS + 1)], 0, 0),
                (DOC, "main", [HEAD], -1, 0), (DOC, "main", [HEAD], 0, 1 << 31),
                (DOC, "main", [HEAD], True, 0)]:
        assert not a.signals.send_presence(*bad, clock.now), bad
    wire.pump()
    assert presence_frames(seen_by_b) == []
    a.close()
    wire.pump()
    assert not a.signals.send_presence(DOC, "main", [HEAD], 0, 0, clock.now + 10)
    assert not a.signals.send_left(DOC)


def test_a_peer_that_did_not_announce_presence_is_never_sent_any(secret):
    # A version 2 peer that knows typing but not presence: it would close on a frame it does
    # not know.
    clock = FakeClock(T_START)
    a, old, wire = sessions(MemoryStore(), MemoryStore(), clock, secret=secret)
    rewrite(old, lambda f: {"t": "ping", "caps": [TYPING]} if f["t"] == "ping" else f)
    seen_by_old = tap(old)
    wire.pump()
    assert a.connected and old.connected and a.peer_caps == {TYPING}
    assert not a.signals.send_presence(DOC, "main", [HEAD], 0, 0, clock.now)
    assert not a.signals.send_left(DOC)
    wire.pump()
    assert presence_frames(seen_by_old) == []
    assert a.connected and old.connected


def test_the_receiver_drops_a_flood_and_the_session_survives(secret, chat):
    a, evil, wire, clock = connected(secret=secret, reconcile_interval=None)
    start = clock.now
    floods = [frame(here(at=n)) if n % 2 else frame({"t": "left", "doc": DOC})
              for n in range(3 * PRESENCE_RECEIVE_LIMIT)]
    inject(evil, a, floods, start)
    wire.drain(a)
    taken = wire.events(a, Presence) + wire.events(a, PresenceLeft)
    assert len(taken) == PRESENCE_RECEIVE_LIMIT
    assert a.connected and not wire.events(a, Closed)

    inject(evil, a, [frame(here(at=7777))], start + PRESENCE_RECEIVE_WINDOW_S - 0.01)
    wire.drain(a)
    assert all(e.at != 7777 for e in wire.events(a, Presence))
    inject(evil, a, [frame(here(at=8888))], start + PRESENCE_RECEIVE_WINDOW_S)
    wire.drain(a)
    assert wire.events(a, Presence)[-1].at == 8888

    post = chat.post("alice", "general", "after the flood")
    evil.outbox.push([post.raw], [post.id])
    wire.pump()
    assert post.id in a.store.objects
    assert a.connected and evil.connected


def test_the_documents_a_peer_is_present_in_are_bounded(secret):
    a, b, wire, clock = connected(secret=secret, reconcile_interval=None)
    docs = [bytes([n]) * 32 for n in range(MAX_PRESENCE_DOCS + 5)]
    for n, doc in enumerate(docs):
        assert a.signals.send_presence(doc, "main", [], 0, 0, clock.now + n)
        wire.pump()
    assert b.signals.presence_docs == docs[-MAX_PRESENCE_DOCS:]  # the newest
    a.signals.send_left(docs[-1])
    wire.pump()
    assert docs[-1] not in b.signals.presence_docs


BAD_PRESENCE = {
    "extra field": ({**here(), "x": 1}, "presence fields"),
    "no heads": ({k: v for k, v in here().items() if k != "heads"}, "presence fields"),
    "short document": (here(doc=DOC[:31]), "presence document"),
    "document not bytes": ({**here(), "doc": DOC.hex()}, "presence document"),
    "branch not text": ({**here(), "br": 7}, "presence branch"),
    "empty branch": (here(branch=""), "presence branch"),
    "branch control character": (here(branch="ma\u202ein"), "presence branch"),
    "branch too long": (here(branch="b" * 65), "presence branch"),
    "branch not NFC": (here(branch="cafe\u0301"), "presence branch"),
    "heads not a list": ({**here(), "heads": HEAD}, "presence heads"),
    "short head": (here(heads=[HEAD[:31]]), "presence heads"),
    "repeated head": (here(heads=[HEAD, HEAD]), "presence heads"),
    "too many heads": (here(heads=[bytes([n]) * 32 for n in range(MAX_PRESENCE_HEADS + 1)]),
                       "presence heads"),
    "negative position": (here(at=-1), "presence position"),
    "huge position": (here(anchor=1 << 31), "presence position"),
    "position not a number": ({**here(), "at": "3"}, "presence position"),
    "position a boolean": ({**here(), "at": True}, "presence position"),
    "left extra field": ({"t": "left", "doc": DOC, "br": "main"}, "left fields"),
    "left short document": ({"t": "left", "doc": b"x"}, "left document"),
}


@pytest.mark.parametrize("case", list(BAD_PRESENCE))
def test_a_malformed_presence_frame_closes_like_any_malformed_frame(secret, case):
    bad, expected = BAD_PRESENCE[case]
    a, evil, wire, clock = connected(secret=secret)
    inject(evil, a, [frame(bad)], clock.now)
    wire.drain(a)
    verdict = closed(wire, a)
    assert verdict == Closed(f"malformed frame: {expected}", True, fault=True), verdict
    assert not wire.events(a, Presence) and not wire.events(a, PresenceLeft)


# Real Nodes -----------------------------------------------------------------------------------


class Heard:
    """The presence events a Node emits, collected on its thread."""

    def __init__(self, node: Node):
        self.events: list[tuple[str, dict]] = []
        self._lock = threading.Lock()
        node.subscribe(self._on_event)

    def _on_event(self, event: NodeEvent) -> None:
        if isinstance(event, PeerPresence):
            with self._lock:
                self.events.append(("presence", asdict(event) | {"heads": list(event.heads)}))
        elif isinstance(event, PeerPresenceLeft):
            with self._lock:
                self.events.append(("presence-left", asdict(event)))

    def kinds(self) -> list[str]:
        with self._lock:
            return [kind for kind, _ in self.events]

    def last(self) -> tuple[str, dict]:
        with self._lock:
            return self.events[-1]


def presence_ready(a: Node, b: Node) -> None:
    understood(a, b, PRESENCE)


def test_a_nodes_presence_reaches_its_peer_and_nothing_is_stored(two_nodes):
    a, b = two_nodes
    presence_ready(a, b)
    heard_a, heard_b = Heard(a), Heard(b)
    before = stored(a), stored(b)

    sent_at = time.monotonic()
    a.presence(DOC, "main", [HEAD.hex()], 4, 11)
    wait_until(lambda: heard_b.kinds(), what="bob's node to hear alice's cursor")
    received_at = time.monotonic()
    kind, detail = heard_b.last()
    assert kind == "presence"
    assert {k: v for k, v in detail.items() if k != "expires"} == {
        "key": a.key, "doc": DOC, "branch": "main", "heads": [HEAD], "anchor": 4, "at": 11}
    assert sent_at + PRESENCE_TTL_S <= detail["expires"] <= received_at + PRESENCE_TTL_S

    a.presence_left(DOC)
    wait_until(lambda: len(heard_b.kinds()) == 2, what="bob's node to hear alice leave")
    assert heard_b.last() == ("presence-left", {"key": a.key, "doc": DOC})
    assert heard_a.kinds() == []  # nothing echoed back
    assert (stored(a), stored(b)) == before  # neither replica holds anything new


def test_presence_goes_only_to_readers_and_a_reader_no_more_is_told_left(two_nodes):
    a, b = two_nodes
    presence_ready(a, b)
    heard_b = Heard(b)
    a.presence(DOC, "main", [], 0, 0, readers={a.key})  # a private document bob cannot read
    a.presence(OTHER_DOC, "main", [], 1, 1, readers={b.key})
    wait_until(lambda: heard_b.kinds(), what="bob's node to hear the document he reads")
    assert heard_b.last()[1]["doc"] == OTHER_DOC and len(heard_b.kinds()) == 1

    a.presence(OTHER_DOC, "main", [], 2, 2, readers={a.key})  # bob is no reader any more
    wait_until(lambda: heard_b.kinds()[-1:] == ["presence-left"], what="bob to be told left")
    assert heard_b.last()[1] == {"key": a.key, "doc": OTHER_DOC}
    assert [d["doc"] for _, d in heard_b.events] == [OTHER_DOC, OTHER_DOC]


def test_a_session_that_ends_takes_its_peers_presence_with_it(two_nodes):
    a, b = two_nodes
    presence_ready(a, b)
    heard_b = Heard(b)
    a.presence(DOC, "main", [], 0, 0)
    wait_until(lambda: heard_b.kinds(), what="bob's node to hear alice's cursor")
    node_call(b, lambda: node_service(b).block({a.key}))  # the session with alice ends
    wait_until(lambda: heard_b.kinds()[-1:] == ["presence-left"],
               what="alice's cursor to go with her session")
    assert heard_b.last()[1] == {"key": a.key, "doc": DOC}


def test_presence_is_neither_relayed_nor_kept_for_peers_that_connect_later(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    presence_ready(a, b)
    heard_b = Heard(b)
    a.presence(DOC, "main", [], 0, 5)
    wait_until(lambda: heard_b.kinds(), what="b to hear a")

    c = cluster.start(pc, peers=[b])  # hears a only through b, and came later
    presence_ready(b, c)
    heard_c = Heard(c)
    b.presence(OTHER_DOC, "main", [], 0, 1)
    wait_until(lambda: heard_c.kinds(), what="c to hear b")
    assert [d["key"] for _, d in heard_c.events] == [b.key]


def test_presence_on_a_node_that_is_not_running_does_nothing(cluster: Cluster):
    (pa,) = cluster.members(1)
    node = Node(pa, interfaces=["127.0.0.1"], mdns=False)
    node.presence(DOC, "main", [], 0, 0)  # not started: nothing to do, nothing raised
    node.start()
    node.presence(DOC, "main", ["not hex"], 0, 0)  # nothing sent, nothing raised
    node.stop()
    node.presence(DOC, "main", [], 0, 0)
    node.presence_left(DOC)
