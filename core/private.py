"""Private channels and direct messages: who is in one, which key each epoch has, its name and
its messages, as a view of its signed objects (core/kinds.py: channel/private, channel/members,
channel/key, channel/name, post/sealed), the same on every computer whatever their order
(docs/ARCHITECTURE.md "Private channels and direct messages").

Everything but the channel's creation is in the channel's own stream, and everything that
says something is encrypted: the name and every message are in SecretBoxes under the channel's
key, which is sealed to each member's identity. A member of the workspace who is not in the
channel holds the objects (they sync like all others) and reads neither the name nor a word.

Objects are taken in (ts, id) order, as membership's are. The creator is a member from the
creation; `channel/members` changes count from the creator or a workspace admin. Someone
removed from the workspace is out of every private channel at once (`current`), whatever the
channel's own objects say; their messages count as their other objects do (storage leaves out
those the removal did not keep). A message counts when its author was a member by then. Keys: the creator
seals epoch 0 to the first members; whenever someone leaves (the channel or the workspace),
any member still in it may seal a new epoch to those who remain, and a later message uses the
newest epoch its author holds. Two members sealing the same epoch at once: the smaller key
wins, and a seal counts only with its epoch's winning `check`, so no one can hand the others a
key of their own making.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from .objects import Object, Stored

if TYPE_CHECKING:
    from .membership import MembershipView

KINDS = frozenset({"channel/members", "channel/key", "channel/name", "post/sealed"})


@dataclass
class PrivateView:
    """One private channel (see the module's docstring)."""

    id: bytes
    creator: bytes
    dm: bool
    created_ms: int
    members: set[bytes] = field(default_factory=set)  # by the channel's own objects
    current: set[bytes] = field(default_factory=set)  # ...but those removed from the workspace
    checks: dict[int, bytes] = field(default_factory=dict)  # epoch -> the winning check
    recipients: dict[int, frozenset[bytes]] = field(default_factory=dict)
    sealed: dict[tuple[int, bytes], bytes] = field(default_factory=dict)
    name: Object | None = None  # the creator's latest channel/name
    posts: list[Object] = field(default_factory=list)  # messages that count, oldest first
    last: tuple[int, bytes] = (0, b"")  # the greatest (ts, id) among the objects taken

    @property
    def epoch(self) -> int:
        return max(self.checks, default=0)

    @classmethod
    def compute(cls, creation: Object, objects: Iterable[Object],
                authority: MembershipView) -> PrivateView:
        """The channel `creation` made, from its objects; `authority` (the workspace's
        membership view) says who holds an admin's power and what a removal kept: an object
        its author's removal did not keep counts for nothing here either."""
        view = cls(creation.id, creation.author, bool(creation.body["dm"]), creation.ts,
                   {creation.author})
        seals: list[tuple[Object, bool]] = []
        for obj in sorted(objects, key=lambda o: (o.ts, o.id)):
            view.last = (obj.ts, obj.id)
            if obj.stream != creation.id or not (
                    type(obj) is Stored or obj.body.get("channel") == creation.id):
                # (The replica lists a post in its channel's stream only when its body names
                # that channel, storage._private.record: a Stored one's body is not decoded.)
                continue
            if not authority.counts(obj.author, obj.id):
                continue
            member = obj.author in view.members
            if obj.type == "channel/members":
                if obj.author == view.creator or authority.acts_as_admin(obj.author, obj.id):
                    view.members |= set(obj.body["add"])
                    view.members -= set(obj.body["remove"]) - {view.creator}
            elif obj.type == "channel/key":
                seals.append((obj, member))
            elif obj.type == "channel/name":
                if obj.author == view.creator:
                    view.name = obj
            elif obj.type == "post/sealed" and member:
                view.posts.append(obj)
        view.current = view.members - set(authority.removed)
        view._keys(seals)
        return view

    def extended(self, objects: Iterable[Object], authority: MembershipView) -> PrivateView | None:
        """This view with `objects` (arrived since) taken too, without going over the others
        again, when that gives what `compute` would: every one a `post/sealed` after all taken
        so far in (ts, id) order, under the same membership view. None otherwise (a member or
        key change, or an object dated among the others: compute again)."""
        posts, last = list(self.posts), self.last
        for obj in sorted(objects, key=lambda o: (o.ts, o.id)):
            if obj.type != "post/sealed" or (obj.ts, obj.id) <= last:
                return None
            last = (obj.ts, obj.id)
            if (obj.body.get("channel") == self.id and obj.stream == self.id
                    and authority.counts(obj.author, obj.id) and obj.author in self.members):
                posts.append(obj)
        return replace(self, posts=posts, last=last)

    def _keys(self, seals: list[tuple[Object, bool]]) -> None:
        by_epoch: dict[int, dict[bytes, list[Object]]] = {}
        for obj, member in seals:
            if member:
                by_epoch.setdefault(obj.body["epoch"], {}).setdefault(obj.author, []).append(obj)
        for epoch, by_author in by_epoch.items():
            # Epoch 0 is the creator's; a later one, the smallest key's among its sealers.
            winner = self.creator if epoch == 0 and self.creator in by_author else min(by_author)
            checks = {o.body["check"] for o in by_author[winner]}
            if len(checks) == 1:
                self.checks[epoch] = checks.pop()
                self.recipients[epoch] = frozenset(o.body["recipient"] for o in by_author[winner])
        for obj, member in seals:
            epoch, recipient = obj.body["epoch"], obj.body["recipient"]
            if (member and self.checks.get(epoch) == obj.body["check"]
                    and (epoch, recipient) not in self.sealed):
                self.sealed[epoch, recipient] = obj.body["sealed"]

    def stale(self) -> bool:
        """Whether someone who had the newest key is no longer in the channel: a member still
        in it seals a new epoch to those who remain."""
        recipients = self.recipients.get(self.epoch)
        return recipients is not None and not recipients <= self.current
