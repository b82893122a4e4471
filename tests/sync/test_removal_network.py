"""Removing a member with real Nodes on 127.0.0.1 (issue #18): A removes C; A and B keep
syncing, under the new epoch's secret; C's session ends and C's attempts to connect again are
refused; a post C makes afterwards, handed to B in a bundle, is not shown; and a member who was
offline during the removal catches up at their next session (under the older secret, which a
responder still takes from members) and moves to the new epoch."""

from __future__ import annotations

from app import sharing
from app.events import PeerDisconnected
from app.workspace import Workspace
from core import kinds
from core.objects import authored
from tests.support import (
    Cluster,
    node_call,
    node_online,
    node_post,
    node_read,
    node_service,
    wait_converged,
    wait_until,
)

MARKER = "MARKER-9e2b-after-the-removal"


def _files_hold(folder, text: str) -> bool:
    return any(text.encode() in p.read_bytes() for p in folder.rglob("*") if p.is_file())


def _texts(node) -> list[str]:
    return [m.text for m in node_read(node, "general", limit=200)]


def _epoch(node) -> int:
    return node_call(node, lambda: node.workspace.members.view().epoch)


def _session_secret(node) -> bytes:
    return node_call(node, lambda: node_service(node).secret)


def test_a_removed_member_is_refused_and_what_they_write_after_counts_nowhere(
        cluster: Cluster, tmp_path):
    pa, pb, pc, pd = cluster.members(4, names=["a", "b", "c", "d"])
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    c = cluster.start(pc, peers=[a, b])
    node_post(c, "general", "carol before")
    team = a.facade.run(lambda ws: ws.private.create("core-team", [b.key, c.key])).result(10)
    a.facade.run(lambda ws: ws.private.post(team, "private before").id).result(10)
    wait_converged([a, b, c])
    assert [m.text for m in c.facade.run(lambda ws: ws.private.read(team)).result(10)] == ["private before"]
    old = _session_secret(a)
    ended: list[str] = []
    c.subscribe(lambda e: isinstance(e, PeerDisconnected) and ended.append(str(e.reason)))

    a.facade.remove_member(c.key, "left the team").result(10)
    wait_until(lambda: c.key not in node_online(a) and c.key not in node_online(b),
               what="carol's sessions to end")
    wait_until(lambda: _epoch(b) == 1 and _session_secret(b) == _session_secret(a) != old,
               what="bob to move to the new epoch")
    node_post(b, "general", "bob after")
    wait_until(lambda: "bob after" in _texts(a), what="a and b to keep syncing")
    a.facade.run(lambda ws: ws.private.post(team, MARKER).id).result(10)  # under a key carol never gets
    wait_until(lambda: MARKER in [m.text for m in b.facade.run(lambda ws: ws.private.read(team)).result(10)],
               what="bob to read the private channel after the removal")
    # carol's computer is handed the signed removal, learns of it, and stops trying.
    wait_until(lambda: c.removal() is not None, what="carol's computer to hold the removal")
    assert (c.removal().by, c.removal().reason) == (a.key, "left the team")
    assert ended  # its sessions ended (by a and b, or by itself once it knew)
    assert c.key not in node_online(a) and not node_online(c)

    c.stop()
    # carol's own Hearth refuses to write now; a modified one signs the post anyway.
    with Workspace.open(pc) as ws:
        stream = kinds.channel_stream(ws.id, "general")
        after = authored(ws.identity, "post/text", stream=stream,
                         body={"channel": "general", "text": "carol after"},
                         now_ms=ws.replica.now_ms(), heads=ws.replica.heads(stream))
        ws.replica.ingest([after.raw])
    bundle = tmp_path / "carol.hearth"
    sharing.export_bundle(pc, bundle)
    b.stop()
    sharing.import_bundle(pb, bundle)  # bob imports what carol hands him
    with Workspace.open(pb) as ws:
        shown = [m.text for m in ws.read("general", limit=200)]
    assert "carol before" in shown and "carol after" not in shown
    assert "bob after" in shown
    # Nothing of the private channel written after the removal is in any file of carol's,
    # and dave (in the workspace, not the channel) holds neither its name nor a word of it.
    assert not _files_hold(tmp_path / "c", MARKER)

    # dave was offline throughout: he dials a under epoch 0's secret, and catches up.
    d = cluster.start(pd, peers=[a])
    wait_until(lambda: _epoch(d) == 1 and _session_secret(d) == _session_secret(a),
               what="dave to move to the new epoch")
    wait_until(lambda: "bob after" in _texts(d), what="dave to catch up on #general")
    wait_until(lambda: node_call(d, lambda: bool(
        d.workspace.replica.private.objects(team))), what="dave to hold the channel")
    d.stop()
    for text in (MARKER, "private before", "core-team"):
        assert not _files_hold(tmp_path / "d", text)
