"""Attacks by a member through the objects it signs, on the library API every command and the
window use (app.workspace over a real replica; issue #12, docs/SECURITY.md)."""

from __future__ import annotations

import pytest

from app.paths import Paths
from app.workspace import Workspace
from core import kinds
from core.causal import HORIZON_MS
from core.identity import Identity
from core.objects import MAX_TS, build
from core.policy import Policy

NOW_S = 1_900_000_000.0
DAY_MS = 24 * 3600 * 1000


@pytest.fixture
def ws(tmp_path):
    workspace = Workspace.init(Paths(tmp_path, "default"), "root", clock=lambda: NOW_S)
    yield workspace
    workspace.close()


def from_mallory(ws: Workspace, mallory: Identity, kind: str, stream: bytes, body: dict,
                 ts: int) -> None:
    """An object Mallory signed, arriving as from a peer (the one ingest path)."""
    [result] = ws.replica.ingest([build(mallory, kind, stream=stream, body=body, ts=ts,
                                        links=[h for h, _ in ws.replica.heads(stream)])])
    assert result.status.value == "added", result


def test_a_post_dated_a_month_ahead_does_not_hide_later_posts(ws):
    """One hidden post dated +30 days made every later post in the channel (by anyone) be
    dated after it, and so hidden too, even to its author."""
    mallory = Identity.generate()
    stream = kinds.channel_stream(ws.id, "general")
    from_mallory(ws, mallory, "post/text", stream, {"channel": "general", "text": "from May"},
                 int(NOW_S * 1000) + 30 * DAY_MS)
    mine = ws.post("general", "still here")
    assert mine.ts <= int(NOW_S * 1000) + HORIZON_MS
    assert [m.text for m in ws.read("general")] == ["still here"]


def test_an_object_at_the_end_of_time_leaves_channel_and_workspace_writable(ws):
    """An object dated 2^63-1 made the channel and the workspace stream unwritable: every
    later object would have had to be dated after it."""
    mallory = Identity.generate()
    end = MAX_TS
    from_mallory(ws, mallory, "post/text", kinds.channel_stream(ws.id, "general"),
                 {"channel": "general", "text": "the last word"}, end)
    from_mallory(ws, mallory, "channel/policy", ws.id,
                 {"channel": "general", "policies": []}, end)
    post = ws.post("general", "the admin speaks")
    deny = Policy("deny", frozenset({mallory.public_key.hex()}), frozenset({"post/text"}),
                  frozenset({"append"}))
    ws.set_policies("general", [deny])
    ws.conversation.delete(post.id)
    ws.topic("general", "rules")
    assert ws.state("general").topic == "rules"
    assert ws.replica.is_deleted(post.id)
    assert ws.policies("general") == [deny]


# 14. Private files ------------------------------------------------------------------------------


def test_a_secret_file_others_can_read_is_refused(tmp_path):
    import os

    from app.node import Node, NodeError
    from app.workspace import WorkspaceError, read_secret

    paths = Paths(tmp_path, "default")
    Workspace.init(paths, "root").close()
    assert len(read_secret(paths)) == 32
    os.chmod(paths.secret, 0o644)
    with pytest.raises(WorkspaceError, match="readable by others.*chmod 600"):
        read_secret(paths)
    node = Node(paths, port=0, interfaces=["127.0.0.1"], mdns=False)
    with pytest.raises((NodeError, WorkspaceError), match="readable by others"):
        node.start()
    node.stop()


def test_the_peer_list_is_private_even_where_an_older_version_left_it_open(tmp_path):
    import os
    import stat

    from sync.peers import PeerBook

    path = tmp_path / "peers.json"
    path.write_text("[]")
    os.chmod(path, 0o644)
    book = PeerBook(path)
    book.add("192.0.2.7", 7654, "manual").succeeded(NOW_S)
    book.save()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert PeerBook(path).peers["192.0.2.7:7654"].last_seen == NOW_S
