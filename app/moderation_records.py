"""The records of moderation (app/moderation.py): the log as the window and `hearth mod log`
show it, and what a hide names."""

from __future__ import annotations

from dataclasses import dataclass, field

from storage.records import ModAction


@dataclass(frozen=True)
class ModerationLog:
    """The moderation log (oldest first) with the nicknames it names, read in one go."""

    actions: list[ModAction]
    names: dict[bytes, str] = field(default_factory=dict)  # nicknames of the workspace
    excerpts: dict[bytes, str] = field(default_factory=dict)  # a hidden post's id -> its text


@dataclass(frozen=True)
class Target:
    """What a hide names: a post (`post` True) or a member, by id or key."""

    id: bytes
    post: bool
