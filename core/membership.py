"""Who is a member of a workspace, and which invite still admits: a view of the membership
objects held (core/kinds.py: invite/create, invite/revoke, member/admit, member/remove,
member/kept, workspace/key), the same on every computer that holds the same objects, whatever
their order (docs/ARCHITECTURE.md "Members and invites").

The objects are taken in (ts, id) order, which within the workspace stream follows causality
(core.causal: an object is dated after the heads it links to), and each counts only if its
author is a member by then (removals: an admin). The root admin is a member from the genesis.
An admission counts while its invite admits: made by a member who still is one, not revoked
before (by its creator or an admin), not expired at the admission's time, and among its first
`uses` admissions. A removal takes the key out (the root cannot be removed); a later admission
brings it back. What a removed member wrote counts only where the removal kept it: the ids its
author listed in `member/kept` objects, the removed member's objects the remover held (the
causal past of the removal); everything else of theirs counts for nothing.
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

    @property
    def epoch(self) -> int:
        """The newest epoch (0 until someone is removed)."""
        return max(self.checks, default=0)

    @classmethod
    def compute(cls, objects: Iterable[Object], root: bytes, root_since_ms: int,
                admins: set[bytes]) -> MembershipView:
        view = cls({root: MemberRecord(root, root_since_ms, admin=True)})
        kept: dict[tuple[bytes, bytes], set[bytes]] = {}  # (removal, author) -> ids
        keys: list[tuple[Object, bool]] = []  # workspace/key objects, with: author a member then
        for obj in sorted(objects, key=lambda o: (o.ts, o.id)):
            kind = obj.type
            if kind == "invite/create":
                view._invite(obj)
            elif kind == "invite/revoke":
                view._revoke(obj, admins)
            elif kind == "member/admit":
                view._admit(obj, admins)
            elif kind == "member/remove":
                view._remove(obj, admins, root)
            elif kind == "member/kept":
                kept.setdefault((obj.body["removal"], obj.author), set()).update(
                    obj.body["ids"])
            elif kind == "workspace/key":
                keys.append((obj, obj.author in view.members))
        for key, removal in view.removed.items():
            view.removed[key] = replace(removal, kept=frozenset(
                kept.get((removal.removal, removal.by), ())))
        view._epochs(keys, admins)
        return view

    def _invite(self, obj: Object) -> None:
        body = obj.body
        if body["tag"] in self.by_tag:  # a tag made twice: the first counts
            return
        self.invites[obj.id] = InviteRecord(obj.id, body["tag"], obj.author, obj.ts,
                                            body["uses"], body["expires"],
                                            counts=obj.author in self.members)
        self.by_tag[body["tag"]] = obj.id

    def _revoke(self, obj: Object, admins: set[bytes]) -> None:
        invite = self.invites.get(obj.body["invite"])
        if invite is None or invite.revoked_ms is not None:
            return
        if obj.author == invite.creator or obj.author in admins:
            self.invites[invite.id] = replace(invite, revoked_ms=obj.ts)

    def _admit(self, obj: Object, admins: set[bytes]) -> None:
        key, invite_id = obj.body["key"], obj.body["invite"]
        if obj.author not in self.members or key in self.members:
            return
        if invite_id is not None:
            invite = self.invites.get(invite_id)
            if invite is None or invite.refusal(obj.ts) is not None:
                return
            self.invites[invite_id] = replace(invite, used=invite.used + 1)
        self.members[key] = MemberRecord(key, obj.ts, obj.author, invite_id,
                                         admin=key in admins)
        if key in self.removed:  # admitted again
            del self.removed[key]
            for invite in self.invites.values():
                if invite.creator == key and invite.creator_removed:
                    self.invites[invite.id] = replace(invite, creator_removed=False)

    def _remove(self, obj: Object, admins: set[bytes], root: bytes) -> None:
        key = obj.body["key"]
        if (obj.author not in admins or obj.author not in self.members or key == root
                or key in self.removed):
            return
        # Also someone with no admission here: a member from before member records.
        self.members.pop(key, None)
        self.removed[key] = RemovalRecord(key, obj.id, obj.author, obj.ts, obj.body["reason"])
        for invite in self.invites.values():
            if invite.creator == key:
                self.invites[invite.id] = replace(invite, creator_removed=True)

    def _epochs(self, keys: list[tuple[Object, bool]], admins: set[bytes]) -> None:
        rotations: dict[int, dict[bytes, list[Object]]] = {}
        for obj, by_member in keys:
            epoch = obj.body["epoch"]
            if epoch >= 1 and by_member and obj.author in admins:
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
        return bool(recipients) and any(key in self.removed for key in recipients)
