"""Moderation, a workspace's `ws.moderation`: moderator roles, hiding posts and members, the moderation
log, and blocking people on this computer.

`hearth mod hide CHANNEL ID|NICK --reason TEXT` and the window both call `ws.moderation.hide`.
Roles and hides are signed objects (core/kinds.py: mod/role by admins, in the workspace stream;
mod/hide by moderators and admins, in the channel's stream) through the one path, and
storage._moderation turns the set held into what is shown: a hidden post is hidden for
everyone but the channel's moderators, who see it marked. A block is not an object: it is this
computer's own choice (Replica.moderation), and the one path refuses what a blocked key sends.
What is refused here is said to the person first; ingest would store such an object and let
it count for nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from core import kinds
from core.errors import InvalidObject
from core.objects import MIN_ID_PREFIX
from storage.records import BlockedKey

from .errors import WorkspaceError
from .moderation_records import ModerationLog, Target

if TYPE_CHECKING:
    from core.objects import Object
    from storage import Replica

    from .workspace import Workspace

MODERATOR = "moderator"
NONE = "none"
LOG_LIMIT = 100  # log entries read by default, the newest
__all__ = ["LOG_LIMIT", "MODERATOR", "NONE", "Moderation", "ModerationLog", "Target"]


class Moderation:
    """A workspace's moderation (`ws.moderation`): it publishes roles and hides through the
    workspace, and keeps this computer's blocks in the replica."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.replica: Replica = ws.replica

    # Who moderates ------------------------------------------------------------------------

    def moderates(self, channel: str, key: bytes | None = None) -> bool:
        """Whether `key` (default: me) moderates `channel` now: an admin (every channel), or
        a moderator an admin named for it."""
        channel, _ = self.ws.channel_stream(channel)
        return self.replica.moderation.is_moderator(channel, key or self.ws.key)

    def moderators(self, channel: str) -> list[bytes]:
        """The moderators admins named for `channel` (admins moderate every channel too)."""
        channel, _ = self.ws.channel_stream(channel)
        return self.replica.moderation.moderators(channel)

    def set_role(self, channel: str, key: bytes, role: str, reason: str = "") -> Object:
        """Make `key` a moderator of `channel` (role "moderator") or take that away
        ("none"); admins only."""
        channel, _ = self.ws.channel_stream(channel)
        if role not in kinds.MOD_ROLES:
            raise WorkspaceError(f"a role is one of {', '.join(kinds.MOD_ROLES)}, not {role!r}")
        if not self.replica.is_admin(self.ws.key):
            raise WorkspaceError("only admins can name or remove moderators")
        if self.replica.is_admin(key):
            raise WorkspaceError("admins moderate every channel already; their role cannot "
                                 "change per channel")
        now = key in self.replica.moderation.moderators(channel)
        if now == (role == MODERATOR):
            who = self._who(key)
            raise WorkspaceError(f"{who} is already a moderator of #{channel}" if now else
                                 f"{who} is not a moderator of #{channel}")
        return self.ws.publish("mod/role", self.ws.id, {"channel": channel, "key": key, "role": role,
                                                  "reason": _reason(reason, 0)})

    # Hiding -------------------------------------------------------------------------------

    def target(self, channel: str, ref: str) -> Target:
        """What `ref` names for a hide in `channel`: a post held here, by its id (whole or a
        unique prefix), else a member, by nickname or key (Workspace.resolve_person). When it
        is neither, the refusal is about the post for hex digits, else about the person."""
        text = ref.strip().lower()
        refused: WorkspaceError | None = None
        if len(text) >= MIN_ID_PREFIX and set(text) <= set("0123456789abcdef"):
            try:
                found = self.ws.resolve_id(text, "post")
            except WorkspaceError as exc:
                refused = exc
            else:
                if self.replica.has(found):
                    self._check_post(channel, found)
                    return Target(found, True)
        try:
            return Target(self.ws.resolve_person(ref), False)
        except WorkspaceError:
            if refused is not None:
                raise refused from None
            raise

    def _check_post(self, channel: str, target: bytes) -> None:
        channel, stream = self.ws.channel_stream(channel)
        post = self.replica.object(target)
        if post.type not in kinds.DELETABLE_KINDS or post.type == "post/info":
            raise WorkspaceError(f"{target.hex()[:12]} is not a post of a channel")
        if post.stream != stream:
            raise WorkspaceError(f"post {target.hex()[:12]} is not in #{channel}")

    def hide(self, channel: str, target: bytes, reason: str) -> Object:
        """Hide a post (its id) or a member (their key) in `channel` for everyone but its
        moderators; moderators of the channel and admins only."""
        return self._hide(channel, target, reason, True)

    def unhide(self, channel: str, target: bytes, reason: str) -> Object:
        """Show again what a hide hid."""
        return self._hide(channel, target, reason, False)

    def _hide(self, channel: str, target: bytes, reason: str, hidden: bool) -> Object:
        channel, stream = self.ws.channel_stream(channel)
        if not self.moderates(channel):
            raise WorkspaceError(f"only moderators of #{channel} and admins can hide or show "
                                 "posts and members there")
        if self.replica.has(target):
            self._check_post(channel, target)
        elif self.replica.is_deleted(target):
            raise WorkspaceError(f"post {target.hex()[:12]} was deleted")
        if self.replica.moderation.hidden(channel, target) == hidden:
            what = "post" if self.replica.has(target) else self._who(target)
            raise WorkspaceError(f"{what} is {'already' if hidden else 'not'} hidden in "
                                 f"#{channel}")
        return self.ws.publish("mod/hide", stream, {"channel": channel, "target": target,
                                                 "hidden": hidden,
                                                 "reason": _reason(reason, 1)})

    def log(self, channel: str | None = None, *, limit: int = LOG_LIMIT) -> ModerationLog:
        """The newest `limit` actions (of `channel`, or of every channel), oldest first: the
        roles admins gave and took, and the hides and unhides of admins and moderators, each
        with its reason and whether it counts now."""
        if channel is not None:
            channel, _ = self.ws.channel_stream(channel)
        actions = self.replica.moderation.log(channel, limit=limit)
        excerpts = {}
        for action in actions:
            if action.post and action.target not in excerpts and self.replica.has(action.target):
                body = self.replica.object(action.target).body
                excerpts[action.target] = body.get("text") or body.get("topic") or ""
        return ModerationLog(actions, self.replica.nicknames(), excerpts)

    # Blocking (this computer only) --------------------------------------------------------

    def block(self, key: bytes) -> None:
        """Never show `key`'s posts here, and stop storing what they send. Not an object:
        nobody else learns of it, and nobody else's view changes."""
        if key == self.ws.key:
            raise WorkspaceError("you cannot block yourself")
        if self.replica.is_admin(key):
            raise WorkspaceError("admins cannot be blocked: their grants, policies and "
                                 "moderators keep the workspace's rules on this computer")
        if not self.replica.moderation.block(key):
            raise WorkspaceError(f"{self._who(key)} is already blocked")

    def unblock(self, key: bytes) -> None:
        """Show what is still held of `key` again, and store what they send; what was refused
        meanwhile comes back with the next sync."""
        if not self.replica.moderation.unblock(key):
            raise WorkspaceError(f"{self._who(key)} is not blocked")

    def blocked(self) -> list[BlockedKey]:
        """The keys blocked on this computer, oldest block first."""
        return self.replica.moderation.blocked()

    def _who(self, key: bytes) -> str:
        nick = self.replica.nickname(key)
        short = key.hex()[:8]
        return f"{nick} ({short})" if nick else short


def _reason(reason: str, least: int) -> str:
    """A reason as given (trimmed), checked as ingest checks it."""
    reason = " ".join(reason.split())
    if least and not reason:
        raise WorkspaceError("say why: a hide needs a reason (--reason TEXT)")
    try:
        return kinds.check_reason(reason, least)
    except InvalidObject as exc:
        raise WorkspaceError(str(exc)) from None
