"""The moderation view is a function of the set of objects held (and of this computer's blocks),
never of arrival order: the workspace scenario of test_order_independence.py, with moderator
roles given and taken away (by admins, by a key granted admin at some point, by members who
never are), hides and unhides of posts and members by moderators, admins and others, in their
channel, in another one and in the wrong stream, tied in time, and dated far ahead, ingested in
shuffled batches into replicas that may have blocked one member before anything arrived; and
what is hidden is what core.containers' registers say."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import kinds
from core.causal import HORIZON_MS
from core.containers import AuthorizedKeys, Grant, LWWRegister, Update
from core.objects import Object
from storage import Replica, Status
from tests.support import FakeClock

from .conftest import T0, assert_healthy, new_replica
from .test_order_independence import FINAL_MS, LATER, SOON, Scenario, _batches, _views


class ModerationScenario(Scenario):
    def __init__(self, seed: int):
        super().__init__(seed)
        self.targets: list[Object] = [o for o in self.pool if o.type in (
            "post/text", "post/reply", "post/topic", "post/join")]
        ops = [self.role] * 3 + [self.hide] * 6 + [self.hide_member] * 2 + [
            self.hide_elsewhere, self.hide_wrong_stream, self.hide_future, self.hide_tie,
            self.later_text]
        for _ in range(self.rng.randint(10, 25)):
            self.rng.choice(ops)()

    def role(self):
        who = self.rng.choice([self.root, self.root, self.admin, self.late, self.users[0]])
        body = {"channel": self.channel(), "key": self.rng.choice(self.everyone).public_key,
                "role": self.rng.choice(["moderator", "moderator", "none"]), "reason": "r"}
        self.add(self.world.publish(who, "mod/role", self.world.ws, body))

    def _hide(self, who, target: bytes, channel: str, **kw) -> None:
        body = {"channel": channel, "target": target,
                "hidden": self.rng.random() < 0.7, "reason": self.words()}
        stream = kw.pop("stream", None) or self.world.channel(channel)
        self.add(self.world.publish(who, "mod/hide", stream, body, **kw))

    def _post(self) -> Object | None:
        return self.rng.choice(self.targets) if self.targets else None

    def hide(self):
        post = self._post()
        if post is not None:
            self._hide(self.who(), post.id, post.body["channel"])

    def hide_member(self):
        post = self._post()
        if post is not None:
            self._hide(self.who(), post.author, post.body["channel"])

    def hide_elsewhere(self):
        """A hide naming a post of another channel."""
        post = self._post()
        if post is not None:
            self._hide(self.who(), post.id, self.channel())

    def hide_wrong_stream(self):
        post = self._post()
        if post is not None:
            self._hide(self.root, post.id, post.body["channel"], stream=self.world.ws)

    def hide_future(self):
        post = self._post()
        if post is not None:
            ts = self.rng.choice([SOON, LATER])
            self._hide(self.who(), post.id, post.body["channel"], ts=ts)

    def hide_tie(self):
        """Two actions on one post tied in time, linking nothing: the larger id wins."""
        post = self._post()
        if post is not None:
            for who in (self.root, self.who()):
                self._hide(who, post.id, post.body["channel"], ts=post.ts + 7, links=[],
                           track=False)

    def later_text(self):
        """A post after the hides: a hidden member's is hidden as it arrives."""
        self.text()
        self.targets.append(self.pool[-1])


def expected_hidden(scenario: ModerationScenario, blocked: bytes | None) -> set[tuple]:
    """What mod_hidden must hold, worked out again with core.containers: admins are an
    AuthorizedKeys (the root's grants), each (channel, key)'s role an LWW register the admins
    write, and each (channel, target) an LWW register of the actions that count."""
    world = scenario.world
    admins = AuthorizedKeys(scenario.root.public_key)
    held = [o for o in scenario.pool if o.author != blocked]
    for obj in held:
        if obj.type == "workspace/admin-grant" and obj.stream == world.ws:
            admins.add_grant(Grant(obj.id, obj.author, obj.body["key"]))
    roles: dict[tuple, LWWRegister] = {}
    for obj in held:
        if obj.type == "mod/role" and obj.stream == world.ws:
            where = (kinds.channel_key(obj.body["channel"]), obj.body["key"])
            roles.setdefault(where, LWWRegister(admins)).apply(
                Update(obj.id, obj.author, obj.ts, obj.body["role"]))
    hides: dict[tuple, LWWRegister] = {}
    for obj in held:
        if obj.type != "mod/hide" or obj.ts > FINAL_MS + HORIZON_MS \
                or obj.stream != world.channel(obj.body["channel"]):
            continue
        channel = kinds.channel_key(obj.body["channel"])
        role = roles.get((channel, obj.author))
        if admins.is_authorized(obj.author) or (role and role.value() == "moderator"):
            hides.setdefault((channel, obj.body["target"]), LWWRegister()).apply(
                Update(obj.id, obj.author, obj.ts, obj.body["hidden"]))
    return {pair for pair, register in hides.items() if register.value()}


def _moderation_views(replica: Replica, scenario: ModerationScenario, names: list[str]) -> tuple:
    out: list = [replica.moderation.log(limit=10_000), [b.key for b in replica.moderation.blocked()]]
    for name in names:
        out += [replica.messages(name, limit=1000, hidden=True), replica.moderation.log(name),
                replica.moderation.moderators(name),
                [replica.moderation.is_moderator(name, p.public_key) for p in scenario.everyone]]
    return tuple(out)


def _replay(replica: Replica, clock: FakeClock, batches: list[list[Object]], switch: int,
            blocked: bytes | None) -> None:
    for n, batch in enumerate(batches):
        if n == switch:
            clock.set_ms(FINAL_MS)
        for obj, result in zip(batch, replica.ingest(batch), strict=True):
            assert result.status is not Status.REJECTED, result
            if obj.author == blocked:  # refused, unless a delete of it is held (a tombstone)
                assert result.status in (Status.REFUSED, Status.DUPLICATE), result
            else:
                assert result.status is not Status.REFUSED, result
    clock.set_ms(FINAL_MS)


def check(seed: int, rng: random.Random, replicas: int, block: bool) -> None:
    scenario = ModerationScenario(seed)
    pool, world = scenario.pool, scenario.world
    names = scenario.channels + ["random", "general"]
    blocked = scenario.rng.choice(scenario.users).public_key if block else None
    with tempfile.TemporaryDirectory() as tmp:
        def fresh(name: str, clock: FakeClock) -> Replica:
            replica = new_replica(Path(tmp) / name, world, clock)
            if blocked is not None:
                replica.moderation.block(blocked)
            return replica

        clock = FakeClock(T0)
        clock.set_ms(FINAL_MS)
        reference = fresh("one-batch.sqlite", clock)
        reference.ingest(pool)
        expected = (_views(reference, names), _moderation_views(reference, scenario, names))
        assert set(reference.conn.execute("SELECT channel, target FROM mod_hidden")) == \
            expected_hidden(scenario, blocked)
        assert_healthy(reference)
        reference.close()
        for n in range(replicas):
            clock = FakeClock(T0)
            replica = fresh(f"r{n}.sqlite", clock)
            batches = _batches(rng, pool)
            _replay(replica, clock, batches, rng.randrange(len(batches) + 1), blocked)
            assert (_views(replica, names),
                    _moderation_views(replica, scenario, names)) == expected
            assert_healthy(replica)
            replica.close()


@settings(max_examples=30, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), rng=st.randoms(use_true_random=False),
       replicas=st.integers(2, 3), block=st.booleans())
def test_the_moderation_view_does_not_depend_on_arrival_order(seed, rng, replicas, block):
    check(seed, rng, replicas, block)


def test_scenarios_cover_what_they_claim():
    """Hides that count and hides that do not, of posts and of members, both kinds of role."""
    seen: set[str] = set()
    for seed in range(30):
        scenario = ModerationScenario(seed)
        with tempfile.TemporaryDirectory() as tmp:
            clock = FakeClock(T0)
            clock.set_ms(FINAL_MS)
            replica = new_replica(Path(tmp) / "r.sqlite", scenario.world, clock)
            replica.ingest(scenario.pool)
            rows = replica.conn.execute(
                "SELECT a.counts, a.target IN (SELECT author FROM objects), a.hidden "
                "FROM mod_actions a").fetchall()
            roles = replica.conn.execute("SELECT role FROM mod_roles").fetchall()
            hidden = replica.conn.execute(
                "SELECT COUNT(*) FROM messages WHERE hidden & 4").fetchone()[0]
            replica.close()
        seen.update(f"counts={c} member={m} future={bool(f)}" for c, m, f in rows)
        seen.update(role for (role,) in roles)
        if hidden:
            seen.add("hidden messages")
    assert {"counts=1 member=0 future=False", "counts=0 member=0 future=False",
            "counts=1 member=1 future=False", "counts=0 member=1 future=False",
            "moderator", "none", "hidden messages"} <= seen
