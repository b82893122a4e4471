"""Who is a member of a workspace, who holds an admin's power, and which invite still admits:
a view of the membership objects held (core/kinds.py: invite/create, invite/revoke,
member/admit, member/remove, member/kept, workspace/key, and the root's workspace/admin-grant
and workspace/admin-revoke), the same on every computer that holds the same objects, whatever
their order (docs/ARCHITECTURE.md "Members and invites", "Authority").

Authority follows what signed objects prove, never an author's clock. Removals are decided
first (`Authority`): by seniority (the root's, then each admin's in the order the root made
them admins), each counting only while its author holds an admin's power for it. What a
removed member wrote counts only where the removal kept it: the ids its author listed in
`member/kept` objects, the removed member's objects the remover held (the causal past of the
removal). Everything else of theirs counts for nothing, of any kind: an admission, an invite,
a revocation or a seal they backdate before their removal counts nowhere.

The rest is taken in (ts, id) order, which within the workspace stream follows causality
(core.causal: an object is dated after the heads it links to), and each counts only if its
author is a member by then. The root admin is a member from the genesis. An admission counts
while its invite admits: made by a member who still is one, not revoked before (by its creator
or an admin), not expired at the admission's time, and among its first `uses` admissions. A
removal takes the key out (the root cannot be removed) and ends their admin grant; a later
admission brings them back (as a member: admin again only by a new grant).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from .objects import Object

SEED_SIZE = 32
JOIN_KEY_SIZE = 32
SECRET_SIZE = 32
CHECK_SIZE = 16

_TAG_PERSON = b"hearth-inv-tag"
_JOIN_PERSON = b"hearth-inv-join"
_CHECK_PERSON = b"hearth-epoch"


def invite_tag(seed: bytes) -> bytes:
    """What names an invite on the wire and in its signed half (reveals nothing of `seed`)."""
    return hashlib.blake2b(seed, digest_size=16, person=_TAG_PERSON).digest()


def join_key(seed: bytes) -> bytes:
    """The pre-shared key of the join session: the newcomer and an admitting node prove to
    each other that they hold the code and the workspace secret respectively."""
    return hashlib.blake2b(seed, digest_size=JOIN_KEY_SIZE, person=_JOIN_PERSON).digest()


def secret_check(secret: bytes) -> bytes:
    """What a workspace/key says of the secret it seals, so its recipient can tell the
    secret of an epoch from a bogus one (reveals nothing of the secret)."""
    return hashlib.blake2b(secret, digest_size=CHECK_SIZE, person=_CHECK_PERSON).digest()


@dataclass(frozen=True)
class MemberRecord:
    """A member: who admitted them and when (none for the root admin)."""

    key: bytes
    since_ms: int
    admitted_by: bytes | None = None
    invite: bytes | None = None  # the invite they came with; None: the root, or a personal code
    admin: bool = False
    nick: str | None = None


@dataclass(frozen=True)
class RemovalRecord:
    """A removed member: who removed them, when, why, and which of their objects still count."""

    key: bytes
    removal: bytes  # the member/remove's id
    by: bytes
    at_ms: int
    reason: str
    kept: frozenset[bytes] = frozenset()
    nick: str | None = None


@dataclass(frozen=True)
class InviteRecord:
    """An invite's signed half, and what became of it."""

    id: bytes
    tag: bytes
    creator: bytes
    created_ms: int
    uses: int  # 0: any number
    expires_ms: int  # 0: never
    used: int = 0
    revoked_ms: int | None = None
    counts: bool = True  # its creator was a member when they made it
    creator_removed: bool = False  # its creator was removed since

    def state(self, now_ms: int) -> str:
        """open, used up, expired, revoked, closed (its creator was removed) or void (its
        creator was no member)."""
        if not self.counts:
            return "void"
        if self.revoked_ms is not None:
            return "revoked"
        if self.creator_removed:
            return "closed"
        if self.expires_ms and now_ms > self.expires_ms:
            return "expired"
        if self.uses and self.used >= self.uses:
            return "used up"
        return "open"

    def refusal(self, now_ms: int) -> str | None:
        """Why this invite admits no one now, in words for the person holding the code."""
        return {"void": "this invite was not made by a member",
                "revoked": "this invite was revoked",
                "closed": "this invite's maker is no longer a member",
                "expired": "this invite has expired",
                "used up": "this invite is used up"}.get(self.state(now_ms))


@dataclass
class MembershipView:
    """Members, removals, invites and epochs from the membership objects held (see the
    module's docstring).

    Epochs: epoch 0's secret is the workspace's first; removing someone starts a new epoch
    whose secret its remover (an admin) seals to each member that remains (`workspace/key`).
    Two admins who rotate to the same epoch at once: the one with the smaller key wins. Every
    seal says the `check` of its secret, and a seal counts only from a member and only with
    the check of its epoch's winner (epoch 0, which no rotation made: only from the member who
    admitted the recipient), so a bogus secret sealed by someone else is never taken."""

    members: dict[bytes, MemberRecord] = field(default_factory=dict)
    removed: dict[bytes, RemovalRecord] = field(default_factory=dict)
    invites: dict[bytes, InviteRecord] = field(default_factory=dict)
    by_tag: dict[bytes, bytes] = field(default_factory=dict)  # tag -> invite id
    # epoch -> the check of its secret (the winner's)
    checks: dict[int, bytes] = field(default_factory=dict)
    # (epoch, recipient) -> the secret of that epoch sealed to them
    sealed: dict[tuple[int, bytes], bytes] = field(default_factory=dict)
    # epoch -> who the winning rotation sealed it to (epoch 0: everyone, so not listed)
    recipients: dict[int, frozenset[bytes]] = field(default_factory=dict)
    # epoch -> when its winning rotation was made (ms)
    since: dict[int, int] = field(default_factory=dict)
    admins: frozenset[bytes] = frozenset()  # the root, and those the root made admin now
    # ids of objects by former admins that the end of their grant kept: they count as an admin's
    admin_kept: frozenset[bytes] = frozenset()

    @property
    def epoch(self) -> int:
        """The newest epoch (0 until someone is removed)."""
        return max(self.checks, default=0)

    @classmethod
    def compute(cls, objects: Iterable[Object], root: bytes, root_since_ms: int,
                admins: Iterable[bytes] = ()) -> MembershipView:
        """The view of `objects` (membership objects and the root's admin grants and
        revocations); `admins`: keys taken as granted before any of them (tests)."""
        ordered = sorted(objects, key=lambda o: (o.ts, o.id))
        view = cls({root: MemberRecord(root, root_since_ms, admin=True)})
        authority = Authority.compute(ordered, root, admins)
        view.admins, view.admin_kept = authority.admins, authority.admin_kept
        gone = authority.removed  # what the removals decided, before anyone came back
        back: dict[bytes, tuple[int, bytes]] = {}  # a removed key admitted again: from when
        keys: list[tuple[Object, bool]] = []  # workspace/key objects, with: author a member then
        for obj in ordered:
            removal = gone.get(obj.author)
            if (removal is not None and obj.id not in removal.kept
                    and not (obj.author in back and (obj.ts, obj.id) > back[obj.author])):
                continue  # written outside what the removal kept: counts nowhere
            kind = obj.type
            if kind == "invite/create":
                view._invite(obj)
            elif kind == "invite/revoke":
                view._revoke(obj)
            elif kind == "member/admit":
                if view._admit(obj):
                    back[obj.body["key"]] = (obj.ts, obj.id)
            elif kind == "member/remove":
                decided = gone.get(obj.body["key"])
                if decided is not None and decided.removal == obj.id:
                    view._remove(decided)
            elif kind == "workspace/key":
                keys.append((obj, obj.author in view.members))
        view.admins = authority.admins - set(view.removed)
        for key, member in view.members.items():
            if member.admin != (key in view.admins):
                view.members[key] = replace(member, admin=key in view.admins)
        view._epochs(keys)
        return view

    def acts_as_admin(self, author: bytes, object_id: bytes) -> bool:
        """Whether an object counts with an admin's power: its author is an admin now, or was
        one and the end of their grant (a removal or the root's revocation) kept it."""
        return author in self.admins or object_id in self.admin_kept

    def _invite(self, obj: Object) -> None:
        body = obj.body
        if body["tag"] in self.by_tag:  # a tag made twice: the first counts
            return
        self.invites[obj.id] = InviteRecord(obj.id, body["tag"], obj.author, obj.ts,
                                            body["uses"], body["expires"],
                                            counts=obj.author in self.members)
        self.by_tag[body["tag"]] = obj.id

    def _revoke(self, obj: Object) -> None:
        invite = self.invites.get(obj.body["invite"])
        if invite is None or invite.revoked_ms is not None:
            return
        if obj.author == invite.creator or self.acts_as_admin(obj.author, obj.id):
            self.invites[invite.id] = replace(invite, revoked_ms=obj.ts)

    def _admit(self, obj: Object) -> bool:
        """Count an admission; whether it brought a removed member back."""
        key, invite_id = obj.body["key"], obj.body["invite"]
        if obj.author not in self.members or key in self.members:
            return False
        if invite_id is not None:
            invite = self.invites.get(invite_id)
            if invite is None or invite.refusal(obj.ts) is not None:
                return False
            self.invites[invite_id] = replace(invite, used=invite.used + 1)
        self.members[key] = MemberRecord(key, obj.ts, obj.author, invite_id)
        if key not in self.removed:
            return False
        del self.removed[key]  # admitted again
        for invite in self.invites.values():
            if invite.creator == key and invite.creator_removed:
                self.invites[invite.id] = replace(invite, creator_removed=False)
        return True

    def _remove(self, removal: RemovalRecord) -> None:
        # Also someone with no admission here: a member from before member records.
        self.members.pop(removal.key, None)
        self.removed[removal.key] = removal
        for invite in self.invites.values():
            if invite.creator == removal.key:
                self.invites[invite.id] = replace(invite, creator_removed=True)

    def _epochs(self, keys: list[tuple[Object, bool]]) -> None:
        rotations: dict[int, dict[bytes, list[Object]]] = {}
        for obj, by_member in keys:
            epoch = obj.body["epoch"]
            if epoch >= 1 and by_member and self.acts_as_admin(obj.author, obj.id):
                rotations.setdefault(epoch, {}).setdefault(obj.author, []).append(obj)
        for epoch, by_author in rotations.items():
            winner = min(by_author)
            checks = {o.body["check"] for o in by_author[winner]}
            if len(checks) == 1:  # one secret per rotation, or it is no rotation at all
                self.checks[epoch] = checks.pop()
                self.recipients[epoch] = frozenset(o.body["recipient"]
                                                   for o in by_author[winner])
                self.since[epoch] = min(o.ts for o in by_author[winner])
        for obj, by_member in keys:
            epoch, recipient = obj.body["epoch"], obj.body["recipient"]
            if not by_member or (epoch, recipient) in self.sealed:
                continue
            if epoch == 0:  # the first secret: as the member who admitted them sealed it
                member = self.members.get(recipient)
                if member is None or member.admitted_by != obj.author:
                    continue
            elif self.checks.get(epoch) != obj.body["check"]:
                continue
            self.sealed[epoch, recipient] = obj.body["sealed"]

    # Questions ----------------------------------------------------------------------------

    def counts(self, author: bytes, object_id: bytes) -> bool:
        """Whether an object by `author` counts: not by a removed member, or kept by the
        removal (the removed member's objects its remover held)."""
        removal = self.removed.get(author)
        return removal is None or object_id in removal.kept

    def stale(self) -> bool:
        """Whether the newest epoch's secret went to someone removed since (two removals at
        once, each rotation sealed to the other's removed member): an admin rotates again."""
        recipients = self.recipients.get(self.epoch)
        return recipients is not None and any(key in self.removed for key in recipients)


@dataclass(frozen=True)
class Authority:
    """Who holds an admin's power, and who was removed with which of their objects kept:
    what every view asks before an object that grants or uses power counts.

    Only the root grants admin (`workspace/admin-grant`) and takes it back
    (`workspace/admin-revoke`): per key, the root's latest of the two decides, in the root's
    own (ts, id) order. Removals are decided by seniority, never by their authors' clocks: the
    root's first, then each admin's in the order the root made them admins, so a removed admin
    cannot backdate a removal of whoever removed them. A removal counts when its author holds
    an admin's power for it (an admin now, or one whose grant's end kept it) and its target is
    neither the root nor removed already. A removal ends its target's grant; what the removal
    (or the root's revocation) kept of a former admin's objects still counts as an admin's."""

    admins: frozenset[bytes]
    admin_kept: frozenset[bytes]
    removed: dict[bytes, RemovalRecord]

    @classmethod
    def compute(cls, ordered: list[Object], root: bytes,
                admins: Iterable[bytes] = ()) -> Authority:
        grants: dict[bytes, Object | None] = dict.fromkeys(admins)  # key -> grant in force
        ended: dict[bytes, Object] = {}  # key -> the root's revocation of their grant
        kept: dict[tuple[bytes, bytes], set[bytes]] = {}  # (ending, its author) -> ids
        removals: list[Object] = []
        for obj in ordered:
            if obj.type in ("workspace/admin-grant", "workspace/admin-revoke"):
                if obj.author != root or obj.body["key"] == root:
                    continue
                key = obj.body["key"]
                if obj.type == "workspace/admin-grant":
                    grants[key] = obj
                    ended.pop(key, None)
                elif key in grants:
                    del grants[key]
                    ended[key] = obj
            elif obj.type == "member/remove":
                removals.append(obj)
            elif obj.type == "member/kept":
                kept.setdefault((obj.body["removal"], obj.author), set()).update(obj.body["ids"])

        def rank(obj: Object) -> tuple:
            if obj.author == root:
                return (0, 0, b"")
            if obj.author not in grants:
                ending = ended.get(obj.author)
                return (2, ending.ts, ending.id) if ending else (3, 0, b"")
            grant = grants[obj.author]
            return (1, grant.ts, grant.id) if grant else (1, -1, b"")

        # key -> what the end of their grant kept of their objects (a revocation's list)
        former = {key: set(kept.get((revocation.id, root), ()))
                  for key, revocation in ended.items()}
        removed: dict[bytes, RemovalRecord] = {}
        for obj in sorted(removals, key=lambda o: (rank(o), o.ts, o.id)):
            key, author = obj.body["key"], obj.author
            if key == root or key in removed:
                continue
            powered = author == root or author in grants or obj.id in former.get(author, ())
            if not powered or (author in removed and obj.id not in removed[author].kept):
                continue
            ids = frozenset(kept.get((obj.id, author), ()))
            removed[key] = RemovalRecord(key, obj.id, author, obj.ts, obj.body["reason"], ids)
            if key in grants and ((grant := grants[key]) is None
                                  or (grant.ts, grant.id) < (obj.ts, obj.id)):
                del grants[key]  # the removal ends their grant; what it kept still counts
                former[key] = set(ids)
            elif key in former:
                former[key] &= ids
        return cls(frozenset({root, *grants}), frozenset().union(*former.values()), removed)
