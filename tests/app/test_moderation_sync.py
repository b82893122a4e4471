"""Moderation between three real Nodes on 127.0.0.1: a hidden post is hidden for everyone but
the moderators, and a blocked member's new posts are neither shown nor stored (issue #18)."""

from __future__ import annotations

from concurrent.futures import Future

from app.events import Synced
from core import kinds
from tests.support import TIMEOUT_S, Cluster, node_call, node_online, wait_converged, wait_until

CHANNEL = "general"


def result(future: Future):
    return future.result(TIMEOUT_S)


def shown(node, *, hidden: bool = False) -> list[tuple[str, bool]]:
    """(text, marked hidden) of what `node`'s person sees in #general."""
    return [(m.text, m.hidden) for m in result(node.facade.run(lambda ws: ws.read(CHANNEL, hidden=hidden)))]


def holds(node, object_id: bytes) -> bool:
    replica = node.workspace.replica
    return node_call(node, lambda: replica.has(object_id))


def test_a_hidden_post_is_hidden_for_everyone_but_the_moderators(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a, b, c = cluster.mesh([pa, pb, pc])
    wait_until(lambda: len(node_online(a)) == 2 and len(node_online(c)) == 2, what="a mesh")
    result(a.facade.run(lambda ws: ws.moderation.set_role(CHANNEL, b.key, "moderator", "keeps #general tidy").id))
    spam = result(c.facade.run(lambda ws: ws.post(CHANNEL, "cheap watches, click here").id))
    result(c.facade.run(lambda ws: ws.post(CHANNEL, "good morning").id))
    wait_converged([a, b, c])
    assert result(b.facade.run(lambda ws: ws.moderation.moderates(CHANNEL))) and not result(c.facade.run(lambda ws: ws.moderation.moderates(CHANNEL)))

    result(b.facade.run(lambda ws: ws.moderation.hide(CHANNEL, spam, "advertising").id))
    wait_converged([a, b, c])
    for node in (a, b, c):
        assert shown(node) == [("good morning", False)]
    marked = [("cheap watches, click here", True), ("good morning", False)]
    assert shown(b, hidden=True) == marked  # the moderator
    assert shown(a, hidden=True) == marked  # an admin moderates every channel
    assert shown(c, hidden=True) == [("good morning", False)]  # not a moderator
    log = result(c.facade.run(lambda ws: ws.moderation.log(CHANNEL)))
    assert [(e.action, e.author, e.reason, e.counts) for e in log.actions] == [
        ("moderator", a.key, "keeps #general tidy", True), ("hide", b.key, "advertising", True)]
    assert log.excerpts[spam] == "cheap watches, click here"

    # A non-moderator's hide (made past the app's refusal) is stored and relayed, and counts
    # for nothing anywhere.
    ws = c.workspace
    morning = result(a.facade.run(lambda ws: ws.read(CHANNEL)))[0].id
    body = {"channel": CHANNEL, "target": morning, "hidden": True, "reason": "mine"}
    forged = node_call(c, lambda: ws.publish("mod/hide", kinds.channel_stream(ws.id, CHANNEL),
                                       body).id)
    wait_until(lambda: holds(a, forged) and holds(b, forged), what="the forged hide to spread")
    for node in (a, b, c):
        assert shown(node) == [("good morning", False)]


def test_a_blocked_members_new_posts_are_neither_shown_nor_stored(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a, b, c = cluster.mesh([pa, pb, pc], reconcile_interval=0.5)
    wait_until(lambda: len(node_online(a)) == 2 and len(node_online(c)) == 2, what="a mesh")
    before = result(c.facade.run(lambda ws: ws.post(CHANNEL, "before the block").id))
    wait_until(lambda: holds(b, before), what="c's post on b")
    result(b.facade.run(lambda ws: ws.moderation.block(c.key)))
    assert shown(b) == []
    assert [k.key for k in result(b.facade.run(lambda ws: ws.moderation.blocked()))] == [c.key]

    after = result(c.facade.run(lambda ws: ws.post(CHANNEL, "after the block").id))
    wait_until(lambda: holds(a, after), what="c's new post on a")
    # a relays it to b (and c sends it itself); a's next post reaches b after it.
    marker = result(a.facade.run(lambda ws: ws.post(CHANNEL, "marker").id))
    wait_until(lambda: holds(b, marker), what="a's marker on b")
    assert not holds(b, after)
    assert shown(b) == [("marker", False)]
    assert [t for t, _ in shown(a)] == ["before the block", "after the block", "marker"]
    # Refusing is not a fault: b keeps its sessions with both.
    assert node_online(b) == {a.key, c.key}
    # And the refused post is not offered again and again: b's rounds find nothing to move.
    rounds: list[Synced] = []
    b.subscribe(lambda e: isinstance(e, Synced) and rounds.append(e))
    wait_until(lambda: any(r.have == 0 and r.need == 0 for r in rounds),
               what="a round of b's with nothing to move")

    result(b.facade.run(lambda ws: ws.moderation.unblock(c.key)))
    assert [t for t, _ in shown(b)] == ["before the block", "marker"]
    wait_until(lambda: holds(b, after), what="the refused post to arrive once unblocked")
    wait_converged([a, b, c])
