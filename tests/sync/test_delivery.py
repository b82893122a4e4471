"""What "sending…" means: my objects that no peer has yet (Node.pending()), true on both ends of
a connection, whichever side dialled."""

from __future__ import annotations

from sync.session import PeerReconciled, ReconcileComplete
from sync.store import MemoryStore
from tests.support import node_post

from .conftest import Chat, build_pool
from .nodes import CHANNEL, wait_online, wait_until
from .session_support import connected


def test_the_responder_learns_that_the_initiators_round_is_over(secret):
    chat = Chat()
    pool = build_pool(chat, 30)
    a, b, wire, clock = connected(MemoryStore(pool[:10]), MemoryStore(pool[5:]), secret=secret)
    [done] = wire.events(a, ReconcileComplete)
    assert wire.events(b, PeerReconciled) == [PeerReconciled(done.round)]


def test_posts_made_alone_stop_pending_on_the_node_that_was_dialled(cluster):
    """The accepting node never finished a round itself, so its older posts stayed "sending…"
    forever when the peer that dialled it had nothing new (169 still pending after 40 s with a
    peer connected)."""
    pa, pb = cluster.members(2)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    wait_until(lambda: not a.pending() and not b.pending(), what="the first sync")
    b.stop()
    ids = [node_post(a, CHANNEL, f"written alone {n}") for n in range(5)]
    assert set(ids) <= a.pending()
    b = cluster.start(pb, peers=[a])  # dials a, and has nothing a lacks: a only answers
    wait_online(a, b)
    wait_until(lambda: not (set(ids) & a.pending()), what="a's posts to stop pending")
