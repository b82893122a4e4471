"""A model-based test of members who meet only at a relay: three real replicas (ada, an admin;
bob; cal) and one real relay store, wired in memory (sync.relay_member against relay.peer, as
RelayLink and the server run them, without sockets). Random posts, rounds with the relay in
any order, a relay that drops part of what it hands out, and ada removing cal (a rotation)
at any point. The promises, after every step:

- nothing opens or is stored on cal's computer that was written after cal's removal, and the
  relay's file never holds a post's text;
- the relay never makes a member accept an object that is not a member's signed object;
- once every member still in has had a fair round with an honest relay (twice, in turn), they
  all hold the same posts: convergence in any order of rounds and rotations.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from app import relays
from app.workspace import Workspace
from core.relay_seal import EpochKeys, space_id
from relay.peer import RelayPeer, Snapshots
from relay.store import RelayStore
from sync.relay_client import HeldEnvelopes
from sync.relay_member import Authorized, Opened, Registration, RelayMember, exchange
from sync.relay_wire import relay_public_key
from tests.support import channels, members_in_step

RELAY_PRIVATE = bytes([7]) * 32
PEOPLE = ("ada", "bob", "cal")
person = st.integers(0, len(PEOPLE) - 1)
MARK = "tapir"


class RelayModel(RuleBasedStateMachine):
    @initialize()
    def team(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="hearth-relay-model-"))
        self._team = members_in_step(self.root, PEOPLE)
        self.spaces: list[Workspace] = self._team.__enter__()
        for ws in self.spaces:  # each knows #general, as after a sync all round
            channels(ws, "general")
        self.store = RelayStore(self.root / "relay.db", quota=1 << 30)
        self.snapshots = Snapshots(self.store)
        self.relay_key = relay_public_key(RELAY_PRIVATE)
        self.removed_at: int | None = None  # how many posts were written before cal's removal
        self.written: list[bytes] = []  # post ids, in the order written
        self.by_cal: set[bytes] = set()
        self.dropping = False

    def teardown(self) -> None:
        if hasattr(self, "_team"):
            try:  # every run ends with the fair rounds: convergence is checked each time
                self.everyone_in_has_a_fair_round_twice()
            finally:
                self._close()

    def _close(self) -> None:
        if hasattr(self, "_team"):
            self.store.close()
            self._team.__exit__(None, None, None)
            shutil.rmtree(self.root, ignore_errors=True)

    # Rules --------------------------------------------------------------------------------------

    @rule(who=person, n=st.integers(0, 99))
    def post(self, who: int, n: int) -> None:
        if who == 2 and self.removed_at is not None:
            return  # cal's computer knows it was removed only by what reaches it; it may not post
        ws = self.spaces[who]
        self.written.append(ws.post("general", f"{MARK} {PEOPLE[who]} {n}").id)
        if who == 2:
            self.by_cal.add(self.written[-1])

    @rule(who=person)
    def round_with_the_relay(self, who: int) -> None:
        self._round(who)

    @rule(drop=st.booleans())
    def relay_behaviour(self, drop: bool) -> None:
        self.dropping = drop

    @precondition(lambda self: self.removed_at is None)
    @rule()
    def ada_removes_cal(self) -> None:
        self.spaces[0].members.remove(self.spaces[2].key, "moved on")
        self.removed_at = len(self.written)

    @rule()
    def everyone_in_has_a_fair_round_twice(self) -> None:
        self.dropping = False
        inside = [0, 1] if self.removed_at is not None else [0, 1, 2]
        for _ in range(2):
            for who in inside:
                self._round(who)
        ids = [self._posts(self.spaces[who]) for who in inside]
        assert all(held == ids[0] for held in ids), "members in did not converge"
        # Everything the members in wrote reached them all (cal's posts only if cal's
        # computer had a round before the removal: a removed member's later upload is refused).
        assert set(self.written) - self.by_cal <= ids[0]

    # Invariants ---------------------------------------------------------------------------------

    @invariant()
    def cal_opens_nothing_written_after_the_removal(self) -> None:
        if getattr(self, "removed_at", None) is None:
            return
        after = set(self.written[self.removed_at:])
        assert not after & self._posts(self.spaces[2])

    @invariant()
    def the_relay_never_holds_a_posts_text(self) -> None:
        if hasattr(self, "root"):
            for path in self.root.glob("relay.db*"):
                assert MARK.encode() not in path.read_bytes()

    # The wiring ---------------------------------------------------------------------------------

    def _posts(self, ws: Workspace) -> set[bytes]:
        return {m.id for m in ws.replica.messages("general", limit=10_000)}

    def _round(self, who: int, *, again: bool = True) -> None:
        ws = self.spaces[who]
        epoch, secret = ws.members.newest_secret()
        keys = EpochKeys.derive(epoch, secret)
        held = HeldEnvelopes(ws.replica, keys)
        owners = relays.registration(ws.replica, ws.key)
        member = RelayMember(self.relay_key, keys, space_id(ws.id), held.seal,
                             registration=Registration(ws.identity, owners)
                             if owners is not None else None)
        peer = RelayPeer(self.store, self.snapshots, RELAY_PRIVATE, max_spaces=4)

        def handle(event: object) -> None:
            if isinstance(event, Authorized):
                for older, older_secret, raws in relays.handovers(ws):
                    past = EpochKeys.derive(older, older_secret)
                    member.hand_over(past, [past.seal(r, _ts(r)) for r in raws])
                member.reconcile(held.items(), held.deleted())
            elif isinstance(event, Opened):
                raws = list(event.raws)[::2] if self.dropping else list(event.raws)
                for result in ws.replica.ingest(raws):
                    assert result.status.value != "rejected", result
        exchange(member, peer, handle)
        if not member.authorized and again and ws.members.newest_secret()[0] != epoch:
            self._round(who, again=False)  # the handover brought a newer epoch


def _ts(raw: bytes) -> int:
    from core.objects import decode_trusted

    return decode_trusted(raw).ts


RelayModel.TestCase.settings = settings(
    max_examples=12, stateful_step_count=14, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
test_members_meeting_only_at_a_relay = RelayModel.TestCase
