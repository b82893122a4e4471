"""Threads, reactions, edits, mentions and search in private channels and direct messages
(app/private_conversation.py, core/private_conversation.py, storage/_private_index.py) over
real Nodes syncing on 127.0.0.1: what members write reaches them through `ws.conversation`'s
usual calls, a member of the workspace outside the channel holds ciphertext only (a marker
absent from every file of its data folder, its local index too), a member taken out opens
nothing written after, search finds a private message for a member and nothing for anyone
else, and a mention in a direct message reaches the Mentions list."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.node import Node
from app.workspace import Workspace, WorkspaceError
from tests.support import CALL_TIMEOUT_S, Cluster, wait_converged, wait_until

REPLY = "REPLY-MARKER-9c1e"
EDIT = "EDIT-MARKER-4b7d"
AFTER = "AFTER-MARKER-0d22"
EMOJI = "🦩"  # a flamingo: in no other test's data


def _run(node: Node, fn):
    return node.run(fn).result(CALL_TIMEOUT_S)


def _read(node: Node, channel: bytes) -> list:
    """The private channel's messages at `node`, [] until it has arrived there."""
    def read(ws: Workspace) -> list:
        try:
            return ws.private.read(channel)
        except WorkspaceError:
            return []
    return _run(node, read)


def _files_hold(folder: Path, text: str) -> list[str]:
    needle = text.encode()
    return [str(p) for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]


def _checkpoint(node: Node) -> None:
    _run(node, lambda ws: ws.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)"))


@pytest.fixture
def trio(tmp_path):
    with Cluster(tmp_path) as cluster:
        paths = cluster.members(3, nicks=["ada", "bob", "cat"], names=["ada", "bob", "cat"])
        yield cluster.mesh(paths), paths


def _opens(ws: Workspace, channel: bytes, post_id: bytes) -> bool:
    """Whether any key of this channel held here opens the sealed post `post_id`."""
    view = ws.private.view(channel)
    post = ws.replica.object(post_id)
    return any(ws.private.open_box(key, post.body) is not None
               for key in ws.private._keys(view).values())


def test_reply_reaction_and_edit_reach_members_and_stay_sealed(trio):
    (ada, bob, cat), paths = trio
    channel = _run(ada, lambda ws: ws.private.create("launch", [bob.key]))
    first = _run(ada, lambda ws: ws.private.post(channel, "the plan").id)
    wait_until(lambda: [m.text for m in _read(bob, channel)] == ["the plan"],
               what="bob reads the private message")
    _run(bob, lambda ws: ws.conversation.reply(first, REPLY))
    _run(bob, lambda ws: ws.conversation.react(first, EMOJI))
    wait_until(lambda: [m.replies for m in _read(ada, channel)] == [1],
               what="the reply reaches ada")
    _run(ada, lambda ws: ws.conversation.edit(first, f"the plan, {EDIT}"))
    wait_converged([ada, bob, cat])

    def seen(ws: Workspace):
        (message,) = ws.private.read(channel)
        return (message.text, message.edited, [(r.emoji, r.by) for r in message.reactions],
                [m.text for m in ws.conversation.thread(first)],
                [v.text for v in ws.conversation.versions(first)])

    expected = (f"the plan, {EDIT}", True, [(EMOJI, (bob.key,))],
                [f"the plan, {EDIT}", REPLY], ["the plan", f"the plan, {EDIT}"])
    assert _run(ada, seen) == expected
    assert _run(bob, seen) == expected
    with pytest.raises(WorkspaceError):
        _run(cat, lambda ws: ws.conversation.thread(first))
    assert _run(cat, lambda ws: ws.private.conversation.channel_of(first)) == channel
    _checkpoint(cat)
    for marker in (REPLY, EDIT, EMOJI, "launch", "the plan"):
        assert _files_hold(paths[2].data, marker) == [], marker
    _checkpoint(bob)
    assert _files_hold(paths[1].data, REPLY)  # a member's own index holds what it opened


def test_a_member_taken_out_opens_nothing_made_after(trio):
    (ada, bob, cat), paths = trio
    channel = _run(ada, lambda ws: ws.private.create("core", [bob.key, cat.key]))
    first = _run(ada, lambda ws: ws.private.post(channel, "before the zephyr").id)
    wait_converged([ada, bob, cat])
    assert len(_run(bob, lambda ws: ws.search("zephyr").messages)) == 1  # indexed at bob's
    _run(cat, lambda ws: ws.conversation.react(first, "👍"))
    _run(ada, lambda ws: ws.private.remove_member(channel, bob.key))
    wait_converged([ada, bob, cat])  # cat holds the new key before writing again
    made = [
        _run(ada, lambda ws: ws.conversation.reply(first, AFTER).id),
        _run(cat, lambda ws: ws.conversation.react(first, EMOJI).id),
        _run(ada, lambda ws: ws.conversation.edit(first, f"before the zephyr, {AFTER}").id),
        _run(cat, lambda ws: ws.conversation.reply(first, f"also {AFTER}",
                                                  broadcast=True).id),
    ]
    wait_converged([ada, bob, cat])
    assert _run(cat, lambda ws: [m.text for m in ws.conversation.thread(first)]) == [
        f"before the zephyr, {AFTER}", AFTER, f"also {AFTER}"]
    assert _run(bob, lambda ws: [_opens(ws, channel, oid) for oid in made]) == [False] * 4
    assert _run(bob, lambda ws: ws.private.channels()) == []
    assert _run(bob, lambda ws: ws.search(AFTER).messages) == ()
    assert _run(bob, lambda ws: ws.search("zephyr").messages) == ()
    # Out of the channel, bob's computer forgets what it had indexed of it.
    assert _run(bob, lambda ws: ws.replica.private_index.channels()) == set()
    _checkpoint(bob)
    assert _files_hold(paths[1].data, AFTER) == []
    assert _files_hold(paths[1].data, EMOJI) == []


def test_search_finds_a_private_message_for_members_only(trio):
    (ada, bob, cat), _ = trio
    channel = _run(ada, lambda ws: ws.private.create("budget", [bob.key]))
    _run(ada, lambda ws: ws.private.post(channel, "the quarterly numbers are in"))
    _run(ada, lambda ws: ws.create_channel("general"))
    _run(ada, lambda ws: ws.post("general", "public quarterly note"))
    wait_converged([ada, bob, cat])

    def found(query: str):
        return lambda ws: sorted((m.channel, m.text) for m in ws.search(query).messages)

    assert _run(bob, found("quarterly")) == [("budget", "the quarterly numbers are in"),
                                             ("general", "public quarterly note")]
    assert _run(bob, found("quarter in:#budget")) == [("budget", "the quarterly numbers are in")]
    assert _run(cat, found("quarterly")) == [("general", "public quarterly note")]
    assert _run(cat, lambda ws: ws.private.conversation.search((("numbers", False),)).total) == 0
    # An edit moves what the index finds.
    message = _run(bob, lambda ws: ws.search("numbers").messages[0].id)
    _run(ada, lambda ws: ws.conversation.edit(message, "the quarterly figures are in"))
    wait_until(lambda: _run(bob, found("numbers")) == [], what="the edit reaches bob's index")
    assert _run(bob, found("figures")) == [("budget", "the quarterly figures are in")]


def test_a_mention_in_a_direct_message_reaches_the_mentions_list(trio):
    (ada, bob, cat), _ = trio
    _run(ada, lambda ws: ws.nick("ada"))
    wait_converged([ada, bob, cat])
    sent = _run(cat, lambda ws: ws.private.direct_message(ada.key, "@ada can you look?").id)
    wait_until(lambda: [m.id for m in _run(ada, lambda ws: ws.conversation.mentions())]
               == [sent], what="the mention reaches ada's Mentions list")
    (mention,) = _run(ada, lambda ws: ws.conversation.mentions())
    assert mention.private is not None and mention.channel == "cat"
    assert _run(bob, lambda ws: ws.conversation.mentions()) == []


def test_who_holds_a_removal_without_its_new_key_writes_nothing(tmp_path):
    """A sync cut short between a `channel/members` removal and the key sealed after it: a
    member's reply would go under the key the removed person holds, so it is refused until
    the new key arrives (the stateful model in test_private_conversation_model.py checks the
    promise under any order; this is the one order that tests the refusal)."""
    from tests.support import members_in_step, share

    with members_in_step(tmp_path, ("ada", "bob", "cat")) as (ada, bob, cat):
        channel = ada.private.create("plans", [bob.key, cat.key])
        first = ada.private.post(channel, "hello").id
        share(ada, bob, cat)
        ada.private.remove_member(channel, bob.key)
        rows = ada.replica.conn.execute("SELECT raw, type FROM objects ORDER BY oid")
        cat.replica.ingest([raw for raw, kind in rows if kind != "channel/key"])
        with pytest.raises(WorkspaceError, match="new key has not reached"):
            cat.conversation.reply(first, AFTER)
        share(ada, cat)
        reply = cat.conversation.reply(first, AFTER)
        share(cat, bob)
        assert not _opens(bob, channel, reply.id)
