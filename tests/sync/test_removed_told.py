"""A removed member's computer is told (issue #28, item 7), with real Nodes on 127.0.0.1:
carol's computer was offline when ada removed her; when it comes back, ada's node refuses it at
`hello` but first hands it the signed removal and its kept lists, which its replica ingests
through the one path. Carol's computer then knows from its own replica (who, when, why), stops
dialing, and still reads what it held. Before, it redialed about once a second forever."""

from __future__ import annotations

from app.events import PeerDisconnected, Removed, Synced
from app.membership import REMOVED
from tests.support import (
    Cluster,
    node_call,
    node_online,
    node_post,
    node_service,
    wait_converged,
    wait_until,
)

from .nodes import CHANNEL, texts

ROUNDS_WATCHED = 4  # bob's rounds with ada (every ROUND_S) while carol's dials are counted
ROUND_S = 0.5


def test_a_removed_computer_is_handed_its_removal_and_stops_dialing(cluster: Cluster):
    pa, pb, pc = cluster.members(3, names=["a", "b", "c"])
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a], reconcile_interval=ROUND_S)
    c = cluster.start(pc, peers=[a])
    node_post(c, CHANNEL, "carol before")
    wait_converged([a, b, c])
    carol = c.key
    c.stop()  # offline while she is removed: no live push tells her
    a.facade.remove_member(carol, "left the team").result(10)
    sessions: list[PeerDisconnected] = []  # how each of carol's sessions with ada ended
    a.subscribe(lambda e: isinstance(e, PeerDisconnected) and e.peer == carol
                and sessions.append(e))

    c = cluster.start(pc, peers=[a])
    told: list = []
    c.subscribe(lambda e: isinstance(e, Removed) and told.append(e))
    wait_until(lambda: c.removal() is not None, what="carol's computer to hold its removal")
    removal = c.removal()
    assert (removal.by, removal.reason) == (a.key, "left the team")
    assert sessions and sessions[0].reason == REMOVED
    assert told == [] or told[0].by == a.key  # subscribed after start: may have passed

    # It stops dialing: while bob and ada finish several rounds, ada sees no new session.
    seen = len(sessions)
    rounds: list = []
    b.subscribe(lambda e: isinstance(e, Synced) and rounds.append(e))
    wait_until(lambda: len(rounds) >= ROUNDS_WATCHED, what="bob's rounds with ada")
    assert len(sessions) == seen
    assert node_call(c, lambda: node_service(c).retired)
    assert not node_online(c)
    assert "carol before" in texts(c)  # the replica stays readable
