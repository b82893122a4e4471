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
    for m in result(node.facade.read(CHANNEL)):
        if m.text.startswith(text_prefix):
            return m
    return None


@pytest.fixture
def cluster(tmp_path: Path):
    with Cluster(tmp_path) as running:
        yield running


def test_an_edit_a_reply_and_a_reaction_and_its_removal_reach_the_other_node(cluster):
    a, b = start_two_nodes(cluster, *cluster.members(2))
    question = result(a.facade.post(CHANNEL, "lunch at noon?"))
    wait_until(lambda: shown(b, "lunch") is not None, what="the post on b")

    result(a.facade.edit(question, "lunch at 12:30?"))
    result(b.facade.reply(question, "yes, see you there"))
    result(b.facade.react(question, ":thumbs_up:"))
    result(a.facade.react(question, "🎉"))

    def both_see_it(node) -> bool:
        m = shown(node, "lunch")
        return m is not None and (m.text, m.edited, m.replies) == ("lunch at 12:30?", True, 1) \
            and {r.emoji: r.by for r in m.reactions} == {"👍": (b.key,), "🎉": (a.key,)}
    wait_until(lambda: both_see_it(a) and both_see_it(b), what="edit, reply and reactions")
    thread = result(a.facade.thread(question))
    assert [(m.text, m.author, m.in_channel) for m in thread] == [
        ("lunch at 12:30?", a.key, True), ("yes, see you there", b.key, False)]
    assert [m.text for m in result(a.facade.read(CHANNEL))] == ["lunch at 12:30?"]

    result(b.facade.unreact(question, "👍"))
    wait_until(lambda: [r.emoji for r in shown(a, "lunch").reactions] == ["🎉"],
               what="the removal on a")
    assert [v.text for v in result(b.facade.versions(question))] == ["lunch at noon?",
                                                                      "lunch at 12:30?"]
    with pytest.raises(WorkspaceError, match="only edit your own"):
        result(b.facade.edit(question, "lunch at 1?"))


def test_changes_made_apart_converge_when_the_nodes_meet(cluster):
    pa, pb = cluster.members(2)
    a, b = start_two_nodes(cluster, pa, pb)
    question = result(a.facade.post(CHANNEL, "release on friday?"))
    wait_until(lambda: shown(b, "release") is not None, what="the post on b")
    b.stop()  # apart: each changes the same message
    a.stop()
    a = cluster.start(pa)
    b = cluster.start(pb)
    result(a.facade.edit(question, "release on thursday?"))
    result(a.facade.react(question, "👀"))
    result(b.facade.react(question, "👀"))
    result(b.facade.reply(question, "thursday works", broadcast=True))
    result(a.facade.reply(question, "or friday"))
    # b takes back the 👀 it saw; a's concurrent 👀 was never seen by b, so it stays.
    result(b.facade.unreact(question, "👀"))
    result(b.facade.react(question, "✅"))

    result(b.facade.add_peer(LOCAL, a.port))
    wait_converged([a, b])
    for node in (a, b):
        m = shown(node, "release")
        assert (m.text, m.edited, m.replies) == ("release on thursday?", True, 2)
        assert {r.emoji: r.by for r in m.reactions} == {"👀": (a.key,), "✅": (b.key,)}
        assert [x.text for x in result(node.facade.read(CHANNEL))] == [
            "release on thursday?", "thursday works"]
        assert sorted(x.text for x in result(node.facade.thread(question))[1:]) == [
            "or friday", "thursday works"]


def test_deleting_an_edited_message_takes_its_edits_with_it(cluster):
    a, b = start_two_nodes(cluster, *cluster.members(2))
    secret = result(a.facade.post(CHANNEL, "the door code is 1234"))
    edit = result(a.facade.edit(secret, "the door code is 4321"))
    wait_until(lambda: shown(b, "the door") is not None and shown(b, "the door").edited,
               what="the edit on b")
    result(a.facade.delete(secret))
    wait_until(lambda: shown(b, "the door") is None, what="the delete on b")
    for node in (a, b):
        replica = node.workspace.replica
        assert node_call(node, lambda r=replica: (r.is_deleted(secret), r.is_deleted(edit))) == \
            (True, True)
        assert node_call(node, lambda r=replica: r.search("door")) == []
