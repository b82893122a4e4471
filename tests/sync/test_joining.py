"""Joining by an invite code over a join session with a member's node (app/joining.py,
sync.service.Admission), with real Nodes on 127.0.0.1: the node admits while the invite does
and says why not otherwise, before a single object moves either way; any member's node may
admit, not only the inviter's; mDNS finds one when no address is given; and the newcomer then
syncs as a member."""

from __future__ import annotations

from pathlib import Path

import pytest

from app import sharing
from app.invite import Invite
from app.joining import _join_over
from app.paths import Paths
from app.workspace import Workspace, WorkspaceError
from core.objects import decode_trusted
from tests.support import (
    Cluster,
    create_workspace,
    node_post,
    node_read,
    wait_converged,
    wait_until,
)

LOCAL = "127.0.0.1"


def _paths(root: Path, name: str) -> Paths:
    return Paths.resolve(root / name, "default")


def _authors(paths: Paths) -> set[bytes]:
    with Workspace.open(paths) as ws:
        rows = ws.replica.conn.execute("SELECT raw FROM objects").fetchall()
    return {decode_trusted(raw).author for (raw,) in rows}


def test_a_newcomer_is_admitted_keeps_the_secret_and_syncs_as_a_member(cluster: Cluster):
    pa = create_workspace(cluster.root, "alice", "alice")
    a = cluster.start(pa)
    node_post(a, "general", "before bob")
    code = a.facade.run(lambda ws: ws.members.invite(uses=1)[0]).result(10)
    pb = _paths(cluster.root, "bob")
    sharing.join_workspace(pb, code, nick="bob", peers=[(LOCAL, a.port)], mdns=False)
    assert pb.secret.read_bytes() == pa.secret.read_bytes()
    assert pb.secret.stat().st_mode & 0o777 == 0o600
    b = cluster.start(pb, peers=[a])
    wait_converged([a, b])
    assert "before bob" in [m.text for m in node_read(b, "general")]
    members = a.facade.run(lambda ws: ws.members.all()).result(10)
    assert [(m.nick, m.admitted_by) for m in members] == [("alice", None), ("bob", a.key)]
    # bob, a member now, invites in turn.
    assert b.facade.run(lambda ws: ws.members.invite()[0]).result(10).startswith("hearth-")


def test_a_refused_newcomer_gets_nothing_and_gives_nothing(cluster: Cluster):
    pa = create_workspace(cluster.root, "alice", "alice")
    a = cluster.start(pa)
    node_post(a, "general", "members only")
    used = a.facade.run(lambda ws: ws.members.invite(uses=1)[0]).result(10)
    sharing.join_workspace(_paths(cluster.root, "bob"), used, nick="bob",
                           peers=[(LOCAL, a.port)], mdns=False)
    revoked = a.facade.run(lambda ws: ws.members.invite()[0]).result(10)
    a.facade.run(lambda ws: ws.members.revoke_invite(revoked)).result(10)
    with Workspace.open(pa) as ws:
        code, _ = ws.members.invite(expires_ms=ws.replica.now_ms() - 1)

    for made, reason in ((used, "is used up"), (revoked, "was revoked"),
                         (code, "has expired")):
        pc = _paths(cluster.root, f"carol-{reason.split()[-1]}")
        with pytest.raises(WorkspaceError, match=f"^this invite {reason}$"):
            sharing.join_workspace(pc, made, nick="carol", peers=[(LOCAL, a.port)],
                                   mdns=False)
        assert not pc.workspace_dir.exists()
        # Kept (not through join_workspace, which removes it): what the session moved.
        invitation = Invite.decode(made)
        ws = Workspace.create(pc, "carol", secret=None, workspace=invitation.workspace,
                              root=invitation.root)
        try:
            said = _join_over(ws, invitation.seed, LOCAL, a.port, 30)
            assert said is not None and said.endswith(f"not admitted: this invite {reason}")
            assert ws.replica.count() == 2  # carol's nickname and join: nothing of alice's
            assert ws.members.my_secret() is None
        finally:
            ws.close()
        assert ws.key not in _authors(pa)
    assert len(a.facade.run(lambda ws: ws.members.all()).result(10)) == 2


def test_any_member_admits_with_an_invite_while_its_maker_is_away(cluster: Cluster):
    pa = create_workspace(cluster.root, "alice", "alice")
    a = cluster.start(pa)
    code = a.facade.run(lambda ws: ws.members.invite()[0]).result(10)
    pb = _paths(cluster.root, "bob")
    sharing.join_workspace(pb, code, nick="bob", peers=[(LOCAL, a.port)], mdns=False)
    b = cluster.start(pb, peers=[a])
    wait_converged([a, b])
    a.stop()  # alice's laptop is closed
    pc = _paths(cluster.root, "carol")
    sharing.join_workspace(pc, code, nick="carol", peers=[(LOCAL, b.port)], mdns=False)
    members = b.facade.run(lambda ws: ws.members.all()).result(10)
    carol = next(m for m in members if m.nick == "carol")
    assert carol.admitted_by == b.key and carol.invite is not None


def test_a_code_no_node_knows_is_refused_in_one_line(cluster: Cluster):
    pa = create_workspace(cluster.root, "alice", "alice")
    a = cluster.start(pa)
    other = create_workspace(cluster.root, "zed", "zed")
    with Workspace.open(other) as ws:
        foreign, _ = ws.members.invite()
    with pytest.raises(WorkspaceError, match="knows no such invite"):
        sharing.join_workspace(_paths(cluster.root, "bob"), foreign, nick="bob",
                               peers=[(LOCAL, a.port)], mdns=False)
    with pytest.raises(WorkspaceError, match="found no member's computer"):
        sharing.join_workspace(_paths(cluster.root, "bob"), foreign, nick="bob",
                               mdns=False)


def test_mdns_finds_a_member_to_join_through(cluster: Cluster):
    pa = create_workspace(cluster.root, "alice", "alice")
    outsider = create_workspace(cluster.root, "zed", "zed")  # another workspace, advertising
    cluster.start(outsider, mdns=True)
    a = cluster.start(pa, mdns=True)
    code = a.facade.run(lambda ws: ws.members.invite()[0]).result(10)
    pb = _paths(cluster.root, "bob")
    sharing.join_workspace(pb, code, nick="bob", mdns=True, interfaces=[LOCAL])
    wait_until(lambda: len(a.facade.run(lambda ws: ws.members.all()).result(10)) == 2,
               what="bob's admission on alice's node")


def test_a_one_off_sync_with_objects_to_send_needs_no_timer_to_finish(
        cluster: Cluster, monkeypatch):
    """The next round a one-off sync starts from an event handler is sent at once (it once
    waited for the next ping, 15 s later)."""
    import sync.session

    monkeypatch.setattr(sync.session, "PING_INTERVAL_S", 3600.0)
    pa = create_workspace(cluster.root, "alice", "alice")
    a = cluster.start(pa)
    code = a.facade.run(lambda ws: ws.members.invite()[0]).result(10)
    pb = _paths(cluster.root, "bob")
    sharing.join_workspace(pb, code, nick="bob", peers=[(LOCAL, a.port)], mdns=False)
    with Workspace.open(pb) as ws:
        ws.post("general", "to send")
    result = sharing.sync_once(pb, LOCAL, a.port, timeout=20)
    assert result.objects_sent == 1 and result.rounds == 2
    wait_until(lambda: "to send" in [m.text for m in node_read(a, "general")],
               what="the post to arrive")
