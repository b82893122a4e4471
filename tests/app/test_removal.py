"""Removing a member (app/membership.py, core/membership.py, storage/_membership.py), with real
replicas whose objects travel the way sync and bundles move them (raw objects, the one ingest
path): what the removed member wrote before counts, what they write after counts nowhere,
whatever the order the objects arrive in; the new epoch's secret reaches everyone but them;
invites they made stop admitting; and only admins remove, never the workspace's creator."""

from __future__ import annotations

import random

import pytest

from app.documents import Documents
from app.invite import Invite
from app.membership import MembershipView, invite_tag
from app.workspace import Workspace, WorkspaceError
from core.identity import Identity
from storage import Replica
from tests.support import create_workspace, join_member, share


def _raws(ws: Workspace) -> list[bytes]:
    return [row[0] for row in ws.replica.conn.execute("SELECT raw FROM objects ORDER BY oid")]


def _texts(ws: Workspace, channel: str = "general") -> list[str]:
    return [m.text for m in ws.read(channel, limit=200)]


@pytest.fixture
def team(tmp_path):
    alice = create_workspace(tmp_path, "alice", "alice")
    bob = join_member(tmp_path, alice, "bob", "bob")
    carol = join_member(tmp_path, alice, "carol", "carol")
    spaces = [Workspace.open(p) for p in (alice, bob, carol)]
    a, b, c = spaces
    for ws in spaces:  # everyone in step, as after a sync
        share(ws, *[other for other in spaces if other is not ws])
    yield a, b, c
    for ws in spaces:
        ws.close()


def test_what_a_removed_member_writes_after_counts_nowhere(team):
    a, b, c = team
    c.post("general", "carol before")
    c_invite, _ = c.members.invite()
    share(c, a, b)
    removal = a.members.remove(c.key, "left the team")
    c.post("general", "carol after")  # carol has not heard of it
    c.topic("general", "carol's topic after")
    share(a, b)
    share(c, b)  # carol hands bob a bundle of all she has
    assert "carol before" in _texts(b) and "carol after" not in _texts(b)
    assert b.state("general").topic != "carol's topic after"
    assert not b.members.has(c.key) and c.key in b.members.view().removed
    assert b.members.view().removed[c.key].removal == removal.id
    # Her invite admits no one any more.
    tag = invite_tag(Invite.decode(c_invite).seed)
    assert b.members.admit(Identity.generate().public_key, tag) == (
        "this invite's maker is no longer a member")
    # The new epoch: alice and bob hold its secret, carol never got it.
    assert b.members.view().epoch == 1
    assert b.members.secrets()[1] == a.members.secrets()[1] != a.members.secrets()[0]
    share(a, c)
    assert 1 not in c.members.secrets()


def test_the_views_are_the_same_whatever_the_order(team, tmp_path):
    a, b, c = team
    c.post("general", "carol's last words")
    share(c, a)
    b.post("general", "bob, meanwhile")
    # bob invites and admits dave while the removal happens (they have not heard of it)...
    bob_code, _ = b.members.invite()
    dave, erin = Identity.generate(), Identity.generate()
    assert b.members.admit(dave.public_key, invite_tag(Invite.decode(bob_code).seed)) is None
    a.members.remove(c.key)
    # ... and carol, removed without knowing it yet, posts and admits erin.
    c.post("general", "carol, too late")
    carol_code, _ = c.members.invite()
    assert c.members.admit(erin.public_key, invite_tag(Invite.decode(carol_code).seed)) is None
    everything = sorted(set(_raws(a)) | set(_raws(b)) | set(_raws(c)))
    shown = None
    rng = random.Random(3)
    for n in range(6):
        rng.shuffle(everything)
        path = tmp_path / f"r{n}.sqlite3"
        with Replica.create(path, a.id, a.replica.workspace.root) as replica:
            for start in range(0, len(everything), 7):  # in small batches, in any order
                replica.ingest(everything[start:start + 7])
            view = MembershipView.compute(replica.membership.objects(), a.key, 0, {a.key})
            now = ([m.text for m in replica.messages("general", limit=200)],
                   replica.membership.removed(), replica.digest(), set(view.members))
        shown = shown or now
        assert now == shown
    assert "carol's last words" in shown[0] and "carol, too late" not in shown[0]
    assert "bob, meanwhile" in shown[0] and shown[1] == {c.key}
    assert shown[3] == {a.key, b.key, dave.public_key}  # dave counts, erin does not


def test_only_admins_remove_and_never_the_creator(team):
    a, b, c = team
    with pytest.raises(WorkspaceError, match="only admins"):
        b.members.remove(c.key)
    a.members.grant_admin(b.key)
    share(a, b)
    with pytest.raises(WorkspaceError, match="creator cannot be removed"):
        b.members.remove(a.key)
    with pytest.raises(WorkspaceError, match="cannot remove yourself"):
        b.members.remove(b.key)
    a.members.remove(c.key)
    with pytest.raises(WorkspaceError, match="removed already"):
        a.members.remove(c.key)
    with pytest.raises(WorkspaceError, match="not a member"):
        a.members.remove(Identity.generate().public_key)


def test_a_removal_by_someone_not_an_admin_counts_for_nothing(team, tmp_path):
    a, b, c = team
    forged = b.publish("member/remove", b.id, {"key": c.key, "reason": "not my call"})
    share(b, a)
    assert a.members.has(c.key) and forged.id in {o.id for o in a.replica.membership.objects()}


def test_removed_then_admitted_again_counts_again(team, tmp_path):
    a, b, c = team
    a.members.remove(c.key)
    code = a.members.invite_for(c.key)
    assert code.startswith("hearth-")
    assert a.members.has(c.key) and c.key not in a.members.view().removed
    c.post("general", "back again")
    share(c, a)
    assert "back again" in _texts(a)


def test_a_removed_member_reads_nothing_written_after_in_a_workspace_document(team):
    a, b, c = team
    doc = Documents(a).new("Plans")
    Documents(a).write(Documents(a).open(doc.root.id), "before the removal")
    share(a, b, c)
    assert _read(c, doc.root.id) == "before the removal"
    a.members.remove(c.key)
    Documents(a).write(Documents(a).open(doc.root.id), "after the removal: secret plans")
    share(a, b, c)  # even if carol gets every object (a bundle someone handed her)
    assert _read(b, doc.root.id) == "after the removal: secret plans"
    assert _read(c, doc.root.id) is None  # the branch's newest key was never hers


def _read(ws: Workspace, doc: bytes) -> str | None:
    """The text of a document's main branch, or None when this member cannot read it."""
    docs = Documents(ws)
    document = docs.open(doc)
    if docs.unreadable(document) is not None:
        return None
    return document.text(document.heads("main"))
