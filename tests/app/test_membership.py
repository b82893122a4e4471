"""Members and invites as a view of signed objects (app/membership.py): the same members and
invites whatever the order the objects arrive in; an admission counts only from a member and
while its invite admits (uses, expiry, revocation by its creator or an admin); and the
Workspace methods refuse what would count for nothing, saying why."""

from __future__ import annotations

import random

import pytest

from app.invite import Invite
from app.membership import MembershipView, invite_tag, join_key
from app.workspace import Workspace, WorkspaceError
from core.identity import Identity, IdentityError, seal_to
from core.membership import secret_check
from core.objects import Object, build
from tests.support import FakeClock, create_workspace, join_member

WS = bytes(32)  # the workspace stream of these hand-made objects
ROOT, BOB, CAROL, DAVE, MALLORY = (Identity.generate() for _ in range(5))


def _obj(who: Identity, kind: str, body: dict, ts: int) -> Object:
    return build(who, kind, stream=WS, body=body, ts=ts)


def _invite(who: Identity, seed: bytes, ts: int, *, uses: int = 0, expires: int = 0) -> Object:
    return _obj(who, "invite/create", {"tag": invite_tag(seed), "uses": uses,
                                       "expires": expires, "nonce": bytes(24),
                                       "box": b"x" * 48}, ts)


def _admit(who: Identity, key: bytes, invite: Object | None, ts: int) -> Object:
    return _obj(who, "member/admit", {"key": key, "invite": invite.id if invite else None}, ts)


def _view(objects: list[Object], admins: set[bytes] = frozenset()) -> MembershipView:
    return MembershipView.compute(objects, ROOT.public_key, 0, {ROOT.public_key, *admins})


def _members(view: MembershipView) -> set[bytes]:
    return set(view.members)


def test_the_view_is_the_same_whatever_the_order():
    once = _invite(ROOT, b"a" * 32, 10, uses=1)
    open_ = _invite(ROOT, b"b" * 32, 11)
    objects = [
        once, open_,
        _admit(ROOT, BOB.public_key, once, 20),
        _admit(ROOT, CAROL.public_key, once, 21),  # used up by bob's: does not count
        _admit(BOB, DAVE.public_key, open_, 30),  # bob is a member by then
        _obj(ROOT, "invite/revoke", {"invite": open_.id}, 40),
        _admit(ROOT, CAROL.public_key, open_, 50),  # revoked before: does not count
    ]
    expected = _view(objects)
    assert _members(expected) == {ROOT.public_key, BOB.public_key, DAVE.public_key}
    assert expected.members[DAVE.public_key].admitted_by == BOB.public_key
    assert expected.invites[once.id].state(0) == "used up"
    assert expected.invites[open_.id].state(0) == "revoked"
    rng = random.Random(7)
    for _ in range(50):
        shuffled = objects[:]
        rng.shuffle(shuffled)
        assert _view(shuffled) == expected


def test_only_members_admit_and_only_members_invites_count():
    stray = _invite(MALLORY, b"m" * 32, 5)
    objects = [stray,
               _admit(MALLORY, CAROL.public_key, None, 6),  # not a member: nothing
               _admit(ROOT, BOB.public_key, stray, 7)]  # an invite no member made: void
    view = _view(objects)
    assert _members(view) == {ROOT.public_key}
    assert view.invites[stray.id].state(0) == "void"
    # An admission dated before its author's own counts for nothing (taken in (ts, id) order).
    early = _admit(BOB, CAROL.public_key, None, 1)
    assert _members(_view([early, _admit(ROOT, BOB.public_key, None, 2)])) == {
        ROOT.public_key, BOB.public_key}


def test_expiry_uses_and_who_may_revoke():
    expiring = _invite(ROOT, b"e" * 32, 10, expires=100)
    assert _members(_view([expiring, _admit(ROOT, BOB.public_key, expiring, 100)])) >= {
        BOB.public_key}
    assert BOB.public_key not in _members(
        _view([expiring, _admit(ROOT, BOB.public_key, expiring, 101)]))
    twice = _invite(ROOT, b"t" * 32, 10, uses=2)
    view = _view([twice] + [_admit(ROOT, who.public_key, twice, 20 + n)
                            for n, who in enumerate((BOB, CAROL, DAVE))])
    assert _members(view) == {ROOT.public_key, BOB.public_key, CAROL.public_key}
    assert view.invites[twice.id].used == 2
    # A revocation counts from the invite's creator or an admin, not from another member.
    made = _invite(ROOT, b"r" * 32, 10)
    by_bob = _obj(BOB, "invite/revoke", {"invite": made.id}, 30)
    after = [made, _admit(ROOT, BOB.public_key, None, 20), by_bob,
             _admit(ROOT, CAROL.public_key, made, 40)]
    assert CAROL.public_key in _members(_view(after))
    assert CAROL.public_key not in _members(_view(after, admins={BOB.public_key}))


def test_the_join_key_and_tag_come_from_the_seed_alone():
    assert invite_tag(b"s" * 32) == invite_tag(b"s" * 32) != invite_tag(b"t" * 32)
    assert len(join_key(b"s" * 32)) == 32 and join_key(b"s" * 32) != invite_tag(b"s" * 32)


# The Workspace methods ----------------------------------------------------------------------

@pytest.fixture
def team(tmp_path):
    alice = create_workspace(tmp_path, "alice", "alice")
    bob = join_member(tmp_path, alice, "bob", "bob")
    return alice, bob


def test_admitting_with_an_invite_signs_the_admission_and_seals_the_secret(team):
    alice, _ = team
    newcomer = Identity.generate()
    clock = FakeClock(1_800_000_000.0)
    with Workspace.open(alice, clock=clock) as ws:
        code, invite_id = ws.members.invite(uses=1, expires_ms=1_800_000_060_000)
        tag = invite_tag(_seed_of(code))
        assert ws.members.join_key_for(tag) == join_key(_seed_of(code))
        assert ws.members.join_key_for(bytes(16)) is None
        assert ws.members.admit(newcomer.public_key, tag) is None
        assert ws.members.has(newcomer.public_key)
        sealed = ws.members.view().sealed[0, newcomer.public_key]
        assert newcomer.unseal(sealed) == alice.secret.read_bytes()
        with pytest.raises(IdentityError):
            Identity.generate().unseal(sealed)
        assert ws.members.admit(newcomer.public_key, tag) is None  # again: a member already
        assert ws.members.admit(Identity.generate().public_key, tag) == "this invite is used up"
        (record,) = [m for m in ws.members.all() if m.key == newcomer.public_key]
        assert (record.admitted_by, record.invite) == (ws.key, invite_id)
        soon, _ = ws.members.invite(expires_ms=1_800_000_001_000)
        clock.advance(2)
        assert ws.members.admit(Identity.generate().public_key,
                        invite_tag(_seed_of(soon))) == "this invite has expired"


def test_what_would_count_for_nothing_is_refused_with_the_reason(team):
    alice, bob = team
    with Workspace.open(alice) as ws:
        code, invite_id = ws.members.invite()
        raw = ws.replica.get(invite_id)
    with Workspace.open(bob) as ws:
        with pytest.raises(WorkspaceError, match="no invite here matches that code"):
            ws.members.revoke_invite(code)
        ws.replica.ingest([raw])  # as sync brings it
        with pytest.raises(WorkspaceError, match="only the invite's creator or an admin"):
            ws.members.revoke_invite(code)
        with pytest.raises(WorkspaceError, match="not an invite of this workspace"):
            ws.members.revoke_invite(Invite(bytes(32), bytes(32), seed=bytes(32)).encode())
        with pytest.raises(WorkspaceError, match="your own admission has not arrived"):
            ws.members.invite()  # bob's admission is on alice's computer until they sync
    with Workspace.open(alice) as ws:
        ws.members.revoke_invite(code)
        with pytest.raises(WorkspaceError, match="revoked already"):
            ws.members.revoke_invite(code)
        assert ws.members.admit(Identity.generate().public_key,
                        invite_tag(_seed_of(code))) == "this invite was revoked"
        with pytest.raises(WorkspaceError, match="cannot be negative"):
            ws.members.invite(uses=-1)


def _seed_of(code: str) -> bytes:
    return Invite.decode(code).seed


# Removals and epochs (core/membership.py) ----------------------------------------------------

def _seal(who: Identity, epoch: int, recipient: Identity, secret: bytes, ts: int) -> Object:
    return _obj(who, "workspace/key", {"epoch": epoch, "check": secret_check(secret),
                                       "recipient": recipient.public_key,
                                       "sealed": seal_to(recipient.public_key, secret)}, ts)


def test_a_seal_counts_only_with_its_epochs_winning_check():
    admitted = [_admit(ROOT, who.public_key, None, 1 + n) for n, who in enumerate((BOB, CAROL))]
    real, bogus = b"r" * 32, b"b" * 32
    rotation = [_seal(ROOT, 1, who, real, 10) for who in (ROOT, BOB)]
    forged = _seal(CAROL, 1, BOB, bogus, 5)  # a member, but not the rotation's author
    view = _view([*admitted, forged, *rotation])
    assert view.epoch == 1 and view.checks[1] == secret_check(real)
    assert BOB.unseal(view.sealed[1, BOB.public_key]) == real
    # Epoch 0's secret counts only from whoever admitted the recipient.
    stray = _seal(CAROL, 0, BOB, bogus, 20)
    assert (0, BOB.public_key) not in _view([*admitted, stray]).sealed


def test_two_admins_rotating_at_once_the_smaller_key_wins_and_crossed_removals_rotate_again():
    admins = sorted((ROOT, BOB), key=lambda who: who.public_key)
    admitted = [_admit(ROOT, who.public_key, None, 1 + n)
                for n, who in enumerate((BOB, CAROL, DAVE))]
    first, second = b"1" * 32, b"2" * 32
    # Each admin removed someone (carol, dave) and sealed epoch 1 to the others it knew of.
    removals = [_obj(ROOT, "member/remove", {"key": CAROL.public_key, "reason": ""}, 10),
                _obj(BOB, "member/remove", {"key": DAVE.public_key, "reason": ""}, 10)]
    by_small = [_seal(admins[0], 1, who, first, 11) for who in (ROOT, BOB, DAVE if
                admins[0] is ROOT else CAROL)]
    by_large = [_seal(admins[1], 1, who, second, 11) for who in (ROOT, BOB)]
    view = _view([*admitted, *removals, *by_large, *by_small], admins={BOB.public_key})
    assert view.checks[1] == secret_check(first)  # the smaller key's rotation
    assert view.removed.keys() == {CAROL.public_key, DAVE.public_key}
    assert view.stale()  # it went to someone removed: an admin rotates again
    again = [_seal(ROOT, 2, who, b"3" * 32, 20) for who in (ROOT, BOB)]
    assert not _view([*admitted, *removals, *by_large, *by_small, *again],
                     admins={BOB.public_key}).stale()
