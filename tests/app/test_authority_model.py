"""A model-based test of who may do what (issue #28): four real replicas of one workspace
(alice, the root, and bob, carol and dave) under random admissions, invites with uses and
expiry and revocations, removals, admin grants and revocations, moderator roles, hides,
deletes, policies, posts, private channel changes, objects a member signs offline and dates
just after the heads it knows (a removed member's backdating), and bundles between any two
replicas in any order. After every step, the promises hold:

- order independence: replicas holding the same objects show the same members, admins,
  removals, roles, messages and channels (Replica.digest);
- nothing a removed key wrote outside its removal's kept set counts in any view: no message
  of theirs is shown, no hide, delete, policy, role or admission of theirs counts;
- a member is listed only by an admission that counts (no sockpuppet of a removed member);
- a private channel's name and messages are in no file of a replica whose person was never
  in it (the replica, its WAL).

A sync is modelled as a bundle (every object of one replica offered to another's one ingest
path), followed by what a Node does on its own thread when membership changes: an admin's
repair rotation, and new keys for private channels someone left."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from app.invite import Invite
from app.membership import invite_tag
from app.paths import Paths
from app.workspace import Workspace, WorkspaceError
from core import kinds
from core.errors import InvalidObject
from core.identity import Identity
from core.membership import MembershipView
from core.objects import build
from core.policy import Policy
from tests.support import create_workspace, join_member, share

PEOPLE = ("alice", "bob", "carol", "dave")
person = st.integers(0, len(PEOPLE) - 1)
FORGED = ("admit", "hide", "delete", "policy", "remove", "role", "revoke")

_template: Path | None = None


def _team_template() -> Path:
    """Four members in step, made once per test run and copied for every example."""
    global _template
    if _template is None:
        root = Path(tempfile.mkdtemp(prefix="hearth-authority-"))
        first = create_workspace(root, "alice", "alice")
        folders = [first] + [join_member(root, first, n, n) for n in PEOPLE[1:]]
        spaces = [Workspace.open(p) for p in folders]
        spaces[0].post("general", "welcome")
        for ws in spaces:
            share(ws, *[o for o in spaces if o is not ws])
        for ws in spaces:
            ws.close()
        _template = root
    return _template


class Authority(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="hearth-model-"))
        self.spaces: list[Workspace] = []
        self.posts: list[bytes] = []  # public posts made (ids)
        self.invites: list[tuple[int, bytes, str]] = []  # (maker, tag, code)
        self.private: list[tuple[bytes, str]] = []  # (channel id, its name)
        self.markers: dict[bytes, set[str]] = {}  # channel -> texts posted in it
        self.ever_in: dict[bytes, set[bytes]] = {}  # channel -> keys ever in it
        self.count = 0
        self.now = time.time()
        self.newcomers: set[bytes] = set()  # keys admitted (or forged in) along the way

    def _clock(self) -> float:
        """One clock for the four computers, a millisecond further at each reading, so that a
        failing example replays alike."""
        self.now += 0.001
        return self.now

    @initialize()
    def team(self) -> None:
        shutil.copytree(_team_template(), self.root, dirs_exist_ok=True)
        self.spaces = [Workspace.open(Paths.resolve(self.root / n, "default"), clock=self._clock)
                       for n in PEOPLE]
        self.posts = [m.id for m in self.spaces[0].read("general")]

    def teardown(self) -> None:
        for ws in self.spaces:
            ws.close()
        shutil.rmtree(self.root, ignore_errors=True)

    def _next(self, what: str) -> str:
        self.count += 1
        return f"{what}-{self.count}-{os.urandom(4).hex()}"

    def _node_repairs(self, ws: Workspace) -> None:
        """What a Node does when membership objects arrive (app.node._membership_changed)."""
        for step in (ws.members.rotate_if_stale, ws.private.after_removal):
            with contextlib.suppress(WorkspaceError):
                step()

    # Rules --------------------------------------------------------------------------------

    @rule(i=person)
    def post(self, i: int) -> None:
        with contextlib.suppress(WorkspaceError):
            self.posts.append(self.spaces[i].post("general", self._next("post")).id)

    @rule(i=person, j=person)
    def sync(self, i: int, j: int) -> None:
        if i != j:
            share(self.spaces[i], self.spaces[j])
            self._node_repairs(self.spaces[j])

    @rule(order=st.permutations(range(len(PEOPLE))))
    def everyone_syncs(self, order: list[int]) -> None:
        """Bundles all round, in this order, until nobody has anything new: all converge."""
        for _ in range(6):
            for i in order:
                for j in order:
                    if i != j:
                        share(self.spaces[i], self.spaces[j])
                        self._node_repairs(self.spaces[j])
            held = {frozenset(r[0] for r in ws.replica.conn.execute("SELECT id FROM objects"))
                    for ws in self.spaces}
            if len(held) == 1:
                break
        assert len(held) == 1, "bundles all round did not converge"
        assert len({ws.replica.digest() for ws in self.spaces}) == 1

    @rule(j=person, grant=st.booleans())
    def admin(self, j: int, grant: bool) -> None:
        root, key = self.spaces[0], self.spaces[j].key
        with contextlib.suppress(WorkspaceError):
            root.members.grant_admin(key) if grant else root.members.revoke_admin(key)

    @rule(i=person, j=person)
    def remove(self, i: int, j: int) -> None:
        with contextlib.suppress(WorkspaceError):
            self.spaces[i].members.remove(self.spaces[j].key, "model")

    @rule(i=person, j=person, moderator=st.booleans())
    def role(self, i: int, j: int, moderator: bool) -> None:
        with contextlib.suppress(WorkspaceError):
            self.spaces[i].moderation.set_role("general", self.spaces[j].key,
                                    "moderator" if moderator else "none")

    @rule(i=person, n=st.integers(0, 50), hidden=st.booleans())
    def hide(self, i: int, n: int, hidden: bool) -> None:
        with contextlib.suppress(WorkspaceError):
            self.spaces[i].moderation._hide("general", self.posts[n % len(self.posts)], "model", hidden)

    @rule(i=person, n=st.integers(0, 50))
    def delete(self, i: int, n: int) -> None:
        with contextlib.suppress(WorkspaceError):
            self.spaces[i].conversation.delete(self.posts[n % len(self.posts)])

    @rule(i=person, j=person)
    def policy(self, i: int, j: int) -> None:
        deny = Policy("deny", subjects=frozenset({self.spaces[j].key.hex()}))
        with contextlib.suppress(WorkspaceError):
            self.spaces[i].set_policies("general", [deny])

    @rule(i=person, uses=st.integers(0, 2), expired=st.booleans())
    def invite(self, i: int, uses: int, expired: bool) -> None:
        ws = self.spaces[i]
        try:
            code, _ = ws.members.invite(uses=uses, expires_ms=1 if expired else 0)
        except WorkspaceError:
            return
        self.invites.append((i, invite_tag(Invite.decode(code).seed), code))

    @rule(at=person, n=st.integers(0, 20))
    def use_invite(self, at: int, n: int) -> None:
        if self.invites:
            _, tag, _ = self.invites[n % len(self.invites)]
            key = Identity.generate().public_key
            self.newcomers.add(key)
            with contextlib.suppress(WorkspaceError):
                self.spaces[at].members.admit(key, tag)

    @rule(i=person, n=st.integers(0, 20))
    def revoke_invite(self, i: int, n: int) -> None:
        if self.invites:
            with contextlib.suppress(WorkspaceError):
                self.spaces[i].members.revoke_invite(self.invites[n % len(self.invites)][2])

    @rule(i=person, others=st.sets(person, max_size=2))
    def private_create(self, i: int, others: set[int]) -> None:
        name = self._next("secret")
        keys = [self.spaces[k].key for k in others]
        try:
            channel = self.spaces[i].private.create(name, keys)
        except WorkspaceError:
            return
        self.private.append((channel, name))
        self.ever_in[channel] = {self.spaces[i].key, *keys}
        self.markers[channel] = set()

    @rule(i=person, n=st.integers(0, 20))
    def private_post(self, i: int, n: int) -> None:
        if self.private:
            channel, _ = self.private[n % len(self.private)]
            text = self._next("marker")
            try:
                self.spaces[i].private.post(channel, text)
            except WorkspaceError:
                return
            self.markers[channel].add(text)

    @rule(i=person, j=person, n=st.integers(0, 20), add=st.booleans())
    def private_member(self, i: int, j: int, n: int, add: bool) -> None:
        if self.private:
            channel, _ = self.private[n % len(self.private)]
            ws, key = self.spaces[i], self.spaces[j].key
            try:
                if add:
                    ws.private.add_member(channel, key)
                    self.ever_in[channel].add(key)
                else:
                    ws.private.remove_member(channel, key)
            except WorkspaceError:
                pass

    @rule(i=person, what=st.sampled_from(FORGED), j=person, n=st.integers(0, 50))
    def forge(self, i: int, what: str, j: int, n: int) -> None:
        """Sign, offline and whatever this replica says of its author, an object dated one
        millisecond after the heads it knows: what a removed member's modified client does."""
        ws = self.spaces[i]
        target = self.posts[n % len(self.posts)]
        general = kinds.channel_stream(ws.id, "general")
        sock = Identity.generate().public_key
        self.newcomers.add(sock)
        stream, body = {
            "admit": (ws.id, ("member/admit", {"key": sock, "invite": None})),
            "hide": (general, ("mod/hide", {"channel": "general", "target": target,
                                            "hidden": True, "reason": "forged"})),
            "delete": (general, ("post/delete", {"targets": [target]})),
            "policy": (ws.id, ("channel/policy", {"channel": "general", "policies": [
                Policy("deny").to_dict()]})),
            "remove": (ws.id, ("member/remove", {"key": self.spaces[j].key, "reason": ""})),
            "role": (ws.id, ("mod/role", {"channel": "general", "key": self.spaces[j].key,
                                          "role": "moderator", "reason": ""})),
            "revoke": (ws.id, ("invite/revoke", {"invite": target})),
        }[what]
        kind, fields = body
        heads = ws.replica.heads(stream)
        try:
            obj = build(ws.identity, kind, stream=stream, body=fields,
                        ts=max((t for _, t in heads), default=0) + 1,
                        links=[h for h, _ in heads])
        except InvalidObject:
            return
        ws.replica.ingest([obj.raw])

    @rule(i=person, j=person, what=st.sampled_from(FORGED), k=person, n=st.integers(0, 50),
          first=st.booleans())
    def removed_strikes_back(self, i: int, j: int, what: str, k: int, n: int,
                             first: bool) -> None:
        """i removes j; j, not knowing, forges an object; k gets both, in either order."""
        self.remove(i, j)
        self.forge(j, what, k, n)
        for source in ((j, i) if first else (i, j)):
            self.sync(source, k)

    # Invariants ---------------------------------------------------------------------------

    @invariant()
    def same_objects_same_views(self) -> None:
        seen: dict[frozenset, tuple] = {}
        for ws in self.spaces:
            ids = frozenset(r[0] for r in ws.replica.conn.execute("SELECT id FROM objects"))
            view = ws.members.view()
            shown = (ws.replica.digest(), set(view.members), set(view.removed), view.admins)
            assert seen.setdefault(ids, shown) == shown, "same objects, different views"

    @invariant()
    def a_removed_keys_unkept_objects_count_nowhere(self) -> None:
        for ws in self.spaces:
            conn, view = ws.replica.conn, ws.members.view()
            for key, removal in view.removed.items():
                unkept = {r[0] for r in conn.execute(
                    "SELECT id FROM objects WHERE author = ?", (key,))} - removal.kept
                if not unkept:
                    continue
                shown = {m.id for m in ws.replica.messages("general", limit=10_000)}
                assert not shown & unkept
                marks = ",".join("?" * len(unkept))
                args = sorted(unkept)
                assert not conn.execute(
                    f"SELECT 1 FROM tombstones WHERE deleted_by IN ({marks})", args).fetchone()
                assert not conn.execute(
                    f"SELECT 1 FROM mod_actions WHERE counts = 1 AND id IN ({marks})",
                    args).fetchone()
                assert key not in view.admins and not ws.replica.is_admin(key)
                assert not ws.moderation.moderates("general", key)
                in_force = conn.execute(
                    "SELECT id FROM policies WHERE channel = 'general' AND (author IN "
                    "(SELECT key FROM admins) OR id IN (SELECT id FROM admin_kept)) "
                    "ORDER BY ts DESC, id DESC LIMIT 1").fetchone()
                assert in_force is None or in_force[0] not in unkept

    @invariant()
    def members_come_from_admissions_that_count(self) -> None:
        for ws in self.spaces:
            objects = ws.replica.membership.objects()
            view = MembershipView.compute(objects, ws.replica.workspace.root, 0)
            assert set(view.members) == set(ws.members.view().members)
            admits = {}
            for obj in objects:
                if obj.type == "member/admit" and view.counts(obj.author, obj.id):
                    admits.setdefault(obj.body["key"], []).append(obj)
            for key in view.members:
                assert key == ws.replica.workspace.root or key in admits, \
                    "a member no admission that counts listed"

    @invariant()
    def only_listed_keys_are_served(self) -> None:
        """The rule a Node applies at every session's hello (Membership.refusal)."""
        for ws in self.spaces:
            view = ws.members.view()
            for key in {*(o.key for o in self.spaces), *self.newcomers}:
                served = ws.members.refusal(key) is None
                assert served == (key in view.members or (
                    ws.key not in view.members and key not in view.removed)), \
                    "a session served to a key the view does not list, or refused to a member"
                assert ws.members.refusal(key, old_epoch=True) is None or key not in view.members

    @invariant()
    def private_plaintext_only_for_its_people(self) -> None:
        for n, ws in enumerate(self.spaces):
            files = [ws.paths.replica, Path(f"{ws.paths.replica}-wal")]
            data = b"".join(p.read_bytes() for p in files if p.exists())
            for channel, name in self.private:
                if ws.key in self.ever_in[channel]:
                    continue
                for secret in (name, *self.markers[channel]):
                    assert secret.encode() not in data, f"{PEOPLE[n]} holds {secret!r} in clear"


Authority.TestCase.settings = settings(
    max_examples=int(os.environ.get("HEARTH_MODEL_EXAMPLES", "20")),
    stateful_step_count=int(os.environ.get("HEARTH_MODEL_STEPS", "25")),
    deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
TestAuthority = pytest.mark.slow(Authority.TestCase)

