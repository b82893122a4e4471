"""What a computer keeps of a private channel's conversation between starts (app/private_kept.py,
storage/_private_index.py): a start reads the newest page from it without opening a box; posts
that arrive after it are the only ones opened, taken over the kept messages they name, also
where a member's reactions beyond the cap arrive; a delete computes again; what is shown is
always what computing every box again gives; out of the channel, nothing is kept. Real
workspaces on real SQLite files; a start is a Workspace closed and opened again."""

from __future__ import annotations

import pytest

from app.private_conversation import PrivateConversation
from app.workspace import Workspace
from core.chat_kinds import MAX_EMOJI_PER_MEMBER
from core.private_conversation import ConversationState
from tests.support import create_workspace, join_member, share_all

EMOJI = [chr(0x1F600 + n) for n in range(MAX_EMOJI_PER_MEMBER + 1)]


def _shown(messages) -> list[tuple]:
    return [(m.id, m.text, m.edited, m.reply_to, m.replies,
             tuple((r.emoji, r.by) for r in m.reactions), m.in_channel) for m in messages]


def _recomputed(ws: Workspace, channel: bytes) -> list[tuple]:
    view = ws.private.view(channel)
    state = ConversationState.compute(PrivateConversation(ws.private)._parsed(view, view.posts))
    return [(m.id, m.text, m.edited, m.reply_to, len(m.replies),
             tuple((e, tuple(by)) for e, by in m.reactions.items()), m.in_channel)
            for m in map(state.messages.__getitem__, state.channel)]


@pytest.fixture
def ada(tmp_path):
    paths = create_workspace(tmp_path, "ada", "ada")
    with Workspace.open(paths) as ws:
        channel = ws.private.create("kept", [])
        first = ws.private.post(channel, "the first").id
        for n in range(30):
            ws.private.post(channel, f"message {n}")
        ws.conversation.reply(first, "a reply", broadcast=True)
        ws.conversation.react(first, "👍")
        ws.conversation.edit(first, "the first, edited")
        ws.private.read(channel)  # computed once here: kept
    return paths, channel, first


def test_a_start_reads_the_kept_page_opening_no_box(ada):
    paths, channel, _ = ada
    with Workspace.open(paths) as ws:
        shown = ws.private.read(channel, limit=10)
        conversation = ws.private.conversation
        assert not conversation._states and not conversation._opened  # no box opened
        assert _shown(shown) == _recomputed(ws, channel)[-10:]
        assert _shown(ws.private.read(channel, limit=0)) == _recomputed(ws, channel)
        assert conversation.search((("first", False),)).messages[0].text == "the first, edited"
        assert not conversation._opened


def test_posts_arriving_after_a_start_are_the_only_ones_opened(ada):
    paths, channel, first = ada
    with Workspace.open(paths) as ws:  # another computer of ada's would do the same
        seal = ws.private.conversation.seal  # written without reading (nothing computed)
        made = [ws.private.post(channel, "after the start").id,
                seal(channel, "post/reply", {"text": "in the thread", "parent": first,
                                             "broadcast": False}).id,
                # reactions past the cap, as a replica that had not seen the others writes
                *(seal(channel, "post/react", {"target": first, "emoji": e}).id
                  for e in EMOJI)]
    with Workspace.open(paths) as ws:
        shown = ws.private.read(channel, limit=0)
        conversation = ws.private.conversation
        assert not conversation._states and set(conversation._opened) == set(made)
        assert _shown(shown) == _recomputed(ws, channel)
        [top] = [m for m in shown if m.id == first]
        assert top.replies == 2 and len(top.reactions) == MAX_EMOJI_PER_MEMBER
    with Workspace.open(paths) as ws:  # and that is kept in turn
        assert _shown(ws.private.read(channel, limit=0)) == _recomputed(ws, channel)
        assert not ws.private.conversation._opened


def test_a_delete_arriving_after_a_start_computes_again(ada):
    paths, channel, first = ada
    with Workspace.open(paths) as ws:
        ws.conversation.delete(first)
    with Workspace.open(paths) as ws:
        shown = ws.private.read(channel, limit=0)
        assert ws.private.conversation._states  # computed from every box
        assert first not in {m.id for m in shown}
        assert _shown(shown) == _recomputed(ws, channel)


def test_taken_out_the_computer_keeps_nothing_of_the_channel(tmp_path):
    first = create_workspace(tmp_path, "ada", "ada")
    spaces = [Workspace.open(first), Workspace.open(join_member(tmp_path, first, "bob", "bob"))]
    try:
        ada, bob = spaces
        share_all(spaces)
        channel = ada.private.create("kept", [bob.key])
        ada.private.post(channel, "kept at bob's")
        share_all(spaces)
        assert [m.text for m in bob.private.read(channel)] == ["kept at bob's"]
        assert bob.replica.private_index.kept(channel) is not None
        ada.private.remove_member(channel, bob.key)
        share_all(spaces)
        bob.private.unread()  # the window's sidebar, at a start and at every change
        assert channel not in bob.replica.private_index.channels()
        assert bob.replica.private_index.kept(channel) is None
        assert not bob.replica.conn.execute(
            "SELECT 1 FROM private_opened WHERE text LIKE '%kept at%'").fetchall()
    finally:
        for ws in spaces:
            ws.close()


def test_an_imported_message_keeps_its_place_and_its_slack_author(ada):
    """An import's origin shows a message at its time in Slack; the channel stays in the
    order of the posts (core.private_conversation), kept or computed."""
    paths, channel, _ = ada
    with Workspace.open(paths) as ws:
        imported = ws.private.post(channel, "written in Slack").id
        ws.private.post(channel, "written here after")
        ws.private.conversation.seal(channel, "post/origin", {"items": [
            [imported, "U1", "Grace", "1577872800.000100", 0, "", [["tada", 2, ["U2"]]]]]})
    for _ in range(2):  # computed after the import arrives, then read from what was kept
        with Workspace.open(paths) as ws:
            shown = ws.private.read(channel, limit=3)
            # (the Slack reactions show beside the members': storage._origins.with_imported)
            assert [row[:5] for row in _shown(shown)] == [
                row[:5] for row in _recomputed(ws, channel)[-3:]]
            [grace] = [m for m in shown if m.id == imported]
            assert grace.ts == 1577872800000 and grace.origin == "U1"
            assert [(r.emoji, r.imported) for r in grace.reactions] == [("tada", 2)]
            assert shown[-1].text == "written here after"
    assert not ws.private.conversation._states  # the second start read what was kept
