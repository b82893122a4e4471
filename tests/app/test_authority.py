"""Authority follows signed objects, never an author's clock (core/membership.py "Authority"):
the red team's attacks by a removed member and a removed or revoked admin, with real replicas
whose objects travel as sync and bundles move them (raw objects, the one ingest path), in
every order of arrival.

The removed key signs its objects after the removal, offline, dated just after the last
workspace head it knew: before the removal by the clock, so an order by (ts, id) would take
them as older. What counts is what the removal kept, and who holds power by seniority."""

from __future__ import annotations

import itertools
import random

import pytest

from app.paths import Paths
from app.workspace import Workspace, WorkspaceError
from core import kinds
from core.identity import Identity
from core.membership import MembershipView
from core.objects import Object, build
from core.policy import Policy
from storage import Replica
from tests.support import create_workspace, join_member, members_in_step, share, share_all


def _raws(*spaces: Workspace) -> list[bytes]:
    held: set[bytes] = set()
    for ws in spaces:
        held.update(row[0] for row in ws.replica.conn.execute("SELECT raw FROM objects"))
    return sorted(held)


def _texts(replica: Replica, channel: str = "general") -> list[str]:
    return [m.text for m in replica.messages(channel, limit=500)]


def backdated(ws: Workspace, kind: str, stream: bytes, body: dict) -> Object:
    """What a removed member's modified client signs offline: linked to the heads it knows and
    dated one millisecond after them (before any removal it has not seen)."""
    heads = ws.replica.heads(stream)
    ts = max((t for _, t in heads), default=0) + 1
    obj = build(ws.identity, kind, stream=stream, body=body, ts=ts,
                links=[i for i, _ in heads])
    assert ws.replica.ingest([obj.raw])[0].status == "added"
    return obj


@pytest.fixture
def team(tmp_path):
    """alice (the root), bob and carol, in step; bob is an admin."""
    with members_in_step(tmp_path, ("alice", "bob", "carol")) as spaces:
        a, b, c = spaces
        a.members.grant_admin(b.key)
        a.post("general", "alice's plan")
        share_all(spaces)
        yield a, b, c


def _orders(raws: list[bytes], count: int, seed: int):
    rng = random.Random(seed)
    for _ in range(count):
        shuffled = list(raws)
        rng.shuffle(shuffled)
        yield shuffled


def _replay(tmp_path, a: Workspace, raws: list[bytes], *, orders: int = 5, seed: int = 1):
    """The same objects ingested in shuffled orders and batch sizes, then offered once more
    (sync's next round: a post a delete took before the delete stopped counting comes back);
    every replica's digest equal; yields each replica (open) to check."""
    digests = set()
    for n, order in enumerate(_orders(raws, orders, seed)):
        step = (n % 4) * 3 + 1
        with Replica.create(tmp_path / f"replay{n}.sqlite3", a.id,
                            a.replica.workspace.root) as replica:
            for start in range(0, len(order), step):
                replica.ingest(order[start:start + step])
            replica.ingest(order)
            digests.add(replica.digest())
            yield replica
    assert len(digests) == 1, "the same objects gave different views"


def test_a_removed_member_cannot_admit_a_sockpuppet_by_backdating(team, tmp_path):
    a, b, c = team
    a.members.remove(c.key, "left")
    sock = Identity.generate()
    # carol, removed and offline, admits a second identity and seals it the secret she holds.
    admit = backdated(c, "member/admit", c.id, {"key": sock.public_key, "invite": None})
    assert admit.ts < a.members.view().removed[c.key].at_ms  # "before" the removal by the clock
    share(c, b)  # a bundle from carol: bob has not seen the removal yet...
    assert sock.public_key in b.members.view().members  # (...so it counts, for now)
    share(a, b)  # ...then the removal arrives
    for ws in (a, b):
        share(c, ws)
        view = ws.members.view()
        assert sock.public_key not in view.members
        assert all(recipient != sock.public_key for _, recipient in view.sealed)
    for replica in _replay(tmp_path, a, _raws(a, b, c)):
        view = MembershipView.compute(replica.membership.objects(), a.key, 0)
        assert sock.public_key not in view.members and c.key in view.removed


def test_a_removed_admin_keeps_no_power(team, tmp_path):
    a, b, c = team
    plan = next(m for m in a.read("general") if m.text == "alice's plan")
    a.members.remove(b.key, "compromised laptop")
    general = kinds.channel_stream(a.id, "general")
    # bob, removed and offline, hides and deletes alice's post, denies everyone posting, names
    # a moderator and removes carol: each dated before the removal by the clock.
    backdated(b, "mod/hide", general, {"channel": "general", "target": plan.id,
                                       "hidden": True, "reason": "spam"})
    backdated(b, "post/delete", general, {"targets": [plan.id]})
    deny = Policy("deny", resources=frozenset({"post/text"}), actions=frozenset({"append"}))
    backdated(b, "channel/policy", b.id, {"channel": "general", "policies": [deny.to_dict()]})
    backdated(b, "member/remove", b.id, {"key": c.key, "reason": "mine now"})
    for first, second in ((a, b), (b, a)):  # carol hears of the removal before or after
        with Replica.create(tmp_path / f"c{id(first)}.sqlite3", a.id,
                            a.replica.workspace.root) as replica:
            replica.ingest(_raws(first))
            replica.ingest(_raws(second))
            assert "alice's plan" in _texts(replica)
            assert not replica.is_deleted(plan.id)
            assert replica.policies("general") == []
            assert not replica.is_admin(b.key)
    share(b, c)  # carol takes bob's bundle first: the post goes, then comes back
    share(a, c)
    share(a, c)  # (the next sync round: the post, deleted here when it was offered before)
    c.post("general", "carol still posts")
    assert "alice's plan" in [m.text for m in c.read("general")]
    assert c.members.has(c.key) and c.key not in c.members.view().removed
    assert "carol still posts" in [m.text for m in c.read("general")]
    for replica in _replay(tmp_path, a, _raws(a, b, c)):
        assert "alice's plan" in _texts(replica) and not replica.is_deleted(plan.id)


def test_a_delete_honoured_before_the_removal_arrived_is_lifted_and_the_post_comes_back(
        team, tmp_path):
    a, b, c = team
    plan = next(m for m in a.read("general") if m.text == "alice's plan")
    a.members.remove(b.key)
    general = kinds.channel_stream(a.id, "general")
    backdated(b, "post/delete", general, {"targets": [plan.id]})
    share(b, c)  # carol takes the delete first: the post is gone here
    assert c.replica.is_deleted(plan.id)
    share(a, c)  # the removal arrives: the delete counts no more, and alice still holds it
    assert not c.replica.is_deleted(plan.id)
    share(a, c)
    assert "alice's plan" in [m.text for m in c.read("general")]


def test_removal_ends_a_moderators_role(team):
    a, b, c = team
    a.moderation.set_role("general", c.key, "moderator")
    share(a, b, c)
    assert c.moderation.moderates("general")
    a.members.remove(c.key)
    plan = next(m for m in a.read("general") if m.text == "alice's plan")
    general = kinds.channel_stream(a.id, "general")
    backdated(c, "mod/hide", general, {"channel": "general", "target": plan.id,
                                       "hidden": True, "reason": "x"})
    share(a, b)
    share(c, b)
    assert not b.moderation.moderates("general", c.key)
    assert "alice's plan" in [m.text for m in b.read("general")]


def test_the_root_revokes_an_admin_what_they_did_before_stays(team, tmp_path):
    a, b, c = team
    b.post("general", "bob's spam")
    share(b, a, c)
    spam = next(m for m in b.read("general") if m.text == "bob's spam")
    c.post("general", "carol's noise")
    share(c, b)
    noise = next(m for m in b.read("general") if m.text == "carol's noise")
    b.conversation.delete(noise.id)  # as an admin, before the revocation
    share(b, a)
    with pytest.raises(WorkspaceError, match="only the workspace's creator"):
        b.members.revoke_admin(a.key)
    a.members.revoke_admin(b.key)
    with pytest.raises(WorkspaceError, match="not an admin"):
        a.members.revoke_admin(b.key)
    general = kinds.channel_stream(a.id, "general")
    plan = next(m for m in a.read("general") if m.text == "alice's plan")
    backdated(b, "post/delete", general, {"targets": [plan.id]})
    for replica in _replay(tmp_path, a, _raws(a, b, c)):
        assert not replica.is_admin(b.key)
        assert replica.is_deleted(noise.id)  # kept: done while an admin
        assert not replica.is_deleted(plan.id)  # after the revocation: counts nowhere
        assert "bob's spam" in _texts(replica) and spam.id  # a member still
    share(a, b)  # bob's own computer knows now
    with pytest.raises(WorkspaceError, match="only admins"):
        b.members.remove(c.key)


def test_two_admins_removing_each_other_the_senior_wins_whatever_the_dates(tmp_path):
    folders = [create_workspace(tmp_path, "alice", "alice")]
    folders += [join_member(tmp_path, folders[0], n, n) for n in ("bob", "carol", "dave")]
    a, b, c, d = spaces = [Workspace.open(p) for p in folders]
    try:
        a.members.grant_admin(b.key)  # bob is senior
        a.members.grant_admin(c.key)
        for ws in spaces:
            share(ws, *[o for o in spaces if o is not ws])
        c.members.remove(b.key, "rogue")  # carol, junior, first by the clock...
        b.members.remove(c.key, "no, you")  # ...bob concurrently, later by the clock
        for order in itertools.permutations((b, c)):
            with Replica.create(tmp_path / f"{order[0].identity.public_key.hex()[:6]}.sqlite3",
                                a.id, a.replica.workspace.root) as replica:
                replica.ingest(_raws(a))
                for ws in order:
                    replica.ingest(_raws(ws))
                assert replica.membership.removed() == {c.key}
                assert replica.is_admin(b.key) and not replica.is_admin(c.key)
    finally:
        for ws in spaces:
            ws.close()


def test_admin_revoke_from_the_command_line(hearth, tmp_path):
    alice, bob = tmp_path / "alice", tmp_path / "bob"
    hearth("init", "--nick", "alice", data=alice)
    key = hearth("identity", "show", data=bob).line
    hearth("join-workspace", hearth("invite", "--for", key, data=alice).line, "--nick", "bob",
           data=bob)
    hearth("admin", "grant", key, data=alice)
    revocation = hearth("admin", "revoke", key[:12], data=alice).line
    assert len(revocation) == 64 and int(revocation, 16) >= 0
    assert "not an admin" in hearth.fails("admin", "revoke", key, data=alice)
    root = hearth("identity", "show", data=alice).line
    assert "only the workspace's creator" in hearth.fails("admin", "revoke", root, data=bob)
    with Workspace.open(Paths.resolve(alice, "default")) as ws:
        assert not ws.replica.is_admin(bytes.fromhex(key))
