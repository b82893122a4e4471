"""Edits, replies and reactions between two real Nodes on 127.0.0.1: made on one, shown on the
other through sync, live and after the two were apart and changed the same message at once."""

from __future__ import annotations

from concurrent.futures import Future
from pathlib import Path

import pytest

from app.workspace import WorkspaceError
from tests.support import (
    LOCAL,
    TIMEOUT_S,
    Cluster,
    node_call,
    start_two_nodes,
    wait_converged,
    wait_until,
)

CHANNEL = "general"


def result(future: Future):
    return future.result(TIMEOUT_S)


def shown(node, text_prefix: str):
    """The channel message of `node` whose text starts with `text_prefix`, or None."""
    for m in result(node.facade.run(lambda ws: ws.read(CHANNEL))):
        if m.text.startswith(text_prefix):
            return m
    return None


@pytest.fixture
def cluster(tmp_path: Path):
    with Cluster(tmp_path) as running:
        yield running


def test_an_edit_a_reply_and_a_reaction_and_its_removal_reach_the_other_node(cluster):
    a, b = start_two_nodes(cluster, *cluster.members(2))
    question = result(a.facade.run(lambda ws: ws.post(CHANNEL, "lunch at noon?").id))
    wait_until(lambda: shown(b, "lunch") is not None, what="the post on b")

    result(a.facade.run(lambda ws: ws.conversation.edit(question, "lunch at 12:30?").id))
    result(b.facade.run(lambda ws: ws.conversation.reply(question, "yes, see you there").id))
    result(b.facade.run(lambda ws: ws.conversation.react(question, ":thumbs_up:").id))
    result(a.facade.run(lambda ws: ws.conversation.react(question, "🎉").id))

    def both_see_it(node) -> bool:
        m = shown(node, "lunch")
        return m is not None and (m.text, m.edited, m.replies) == ("lunch at 12:30?", True, 1) \
            and {r.emoji: r.by for r in m.reactions} == {"👍": (b.key,), "🎉": (a.key,)}
    wait_until(lambda: both_see_it(a) and both_see_it(b), what="edit, reply and reactions")
    thread = result(a.facade.run(lambda ws: ws.conversation.thread(question)))
    assert [(m.text, m.author, m.in_channel) for m in thread] == [
        ("lunch at 12:30?", a.key, True), ("yes, see you there", b.key, False)]
    assert [m.text for m in result(a.facade.run(lambda ws: ws.read(CHANNEL)))] == ["lunch at 12:30?"]

    result(b.facade.run(lambda ws: ws.conversation.unreact(question, "👍").id))
    wait_until(lambda: [r.emoji for r in shown(a, "lunch").reactions] == ["🎉"],
               what="the removal on a")
    assert [v.text for v in result(b.facade.run(lambda ws: ws.conversation.versions(question)))] == ["lunch at noon?",
                                                                      "lunch at 12:30?"]
    with pytest.raises(WorkspaceError, match="only edit your own"):
        result(b.facade.run(lambda ws: ws.conversation.edit(question, "lunch at 1?").id))


def test_changes_made_apart_converge_when_the_nodes_meet(cluster):
    pa, pb = cluster.members(2)
    a, b = start_two_nodes(cluster, pa, pb)
    question = result(a.facade.run(lambda ws: ws.post(CHANNEL, "release on friday?").id))
    wait_until(lambda: shown(b, "release") is not None, what="the post on b")
    b.stop()  # apart: each changes the same message
    a.stop()
    a = cluster.start(pa)
    b = cluster.start(pb)
    result(a.facade.run(lambda ws: ws.conversation.edit(question, "release on thursday?").id))
    result(a.facade.run(lambda ws: ws.conversation.react(question, "👀").id))
    result(b.facade.run(lambda ws: ws.conversation.react(question, "👀").id))
    result(b.facade.run(lambda ws: ws.conversation.reply(question, "thursday works", broadcast=True).id))
    result(a.facade.run(lambda ws: ws.conversation.reply(question, "or friday").id))
    # b takes back the 👀 it saw; a's concurrent 👀 was never seen by b, so it stays.
    result(b.facade.run(lambda ws: ws.conversation.unreact(question, "👀").id))
    result(b.facade.run(lambda ws: ws.conversation.react(question, "✅").id))

    result(b.facade.add_peer(LOCAL, a.port))
    wait_converged([a, b])
    for node in (a, b):
        m = shown(node, "release")
        assert (m.text, m.edited, m.replies) == ("release on thursday?", True, 2)
        assert {r.emoji: r.by for r in m.reactions} == {"👀": (a.key,), "✅": (b.key,)}
        assert [x.text for x in result(node.facade.run(lambda ws: ws.read(CHANNEL)))] == [
            "release on thursday?", "thursday works"]
        assert sorted(x.text for x in result(node.facade.run(lambda ws: ws.conversation.thread(question)))[1:]) == [
            "or friday", "thursday works"]


def test_deleting_an_edited_message_takes_its_edits_with_it(cluster):
    a, b = start_two_nodes(cluster, *cluster.members(2))
    secret = result(a.facade.run(lambda ws: ws.post(CHANNEL, "the door code is 1234").id))
    edit = result(a.facade.run(lambda ws: ws.conversation.edit(secret, "the door code is 4321").id))
    wait_until(lambda: shown(b, "the door") is not None and shown(b, "the door").edited,
               what="the edit on b")
    result(a.facade.run(lambda ws: ws.conversation.delete(secret).id))
    wait_until(lambda: shown(b, "the door") is None, what="the delete on b")
    for node in (a, b):
        replica = node.workspace.replica
        assert node_call(node, lambda r=replica: (r.is_deleted(secret), r.is_deleted(edit))) == \
            (True, True)
        assert node_call(node, lambda r=replica: r.search("door")) == []
