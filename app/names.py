"""Telling apart names that look alike, for the command line and the window.

core/names.py decides which names look alike (Unicode TS #39 skeletons). Here: which keys'
nicknames and which channels collide, and how each is shown so a person can tell them apart
(a short key or stream suffix, and the disguised characters spelled out). Nothing here
changes what a name is: channel keys and streams stay `kinds.channel_key`/`channel_stream`.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from core import kinds
from core.names import is_disguised, lookalike_keys, looks_alike

from ._text import line

__all__ = ["KEY_SUFFIX", "ChannelName", "NickBook", "channel_names", "collisions",
           "lookalike_channel", "lookalike_keys", "looks_alike", "spelled", "suffixed"]

KEY_SUFFIX = 6  # hex digits of a key or stream id that tell two lookalike names apart
K = TypeVar("K", bound=Hashable)


def suffixed(name: str, ident: bytes) -> str:
    """`name` told apart from lookalikes: " ·" and the first hex digits of its key or stream."""
    return f"{name} ·{ident.hex()[:KEY_SUFFIX]}"


def collisions(names: Mapping[K, str]) -> dict[K, set[K]]:
    """For each id, the other ids whose name looks like its name (empty sets left out)."""
    by_key: dict[str, set[K]] = {}
    for ident, name in names.items():
        for key in lookalike_keys(name):
            by_key.setdefault(key, set()).add(ident)
    out: dict[K, set[K]] = {}
    for ident, name in names.items():
        others = set().union(*(by_key[key] for key in lookalike_keys(name))) - {ident}
        if others:
            out[ident] = others
    return out


def spelled(name: str) -> str:
    """`name` for a terminal, with its invisible and non-ASCII lookalike characters spelled
    out ("g\\u0435neral" for a "general" with a Cyrillic е); "" when it has none."""
    if not any(is_disguised(ch) for ch in name):
        return ""
    return "".join(f"\\u{ord(ch):04x}" if is_disguised(ch) and ord(ch) <= 0xFFFF
                   else f"\\U{ord(ch):08x}" if is_disguised(ch) else line(ch) for ch in name)


# Nicknames --------------------------------------------------------------------------------------

class NickBook:
    """The current nickname of every key, and which keys' nicknames look like another
    key's: those are shown with their key and a warning."""

    def __init__(self, nicks: Mapping[bytes, str]):
        self.nicks = dict(nicks)
        self.lookalike = set(collisions(self.nicks))

    def nick(self, key: bytes, nick: str | None = None) -> str:
        """The nickname to print (terminal-safe); `nick` if given (a message's), else the
        key's current one; "anonymous" if none."""
        return line(nick if nick is not None else self.nicks.get(key)) or "anonymous"

    def warning(self, key: bytes, nick: str | None = None) -> str:
        """"" or, for a key whose nickname looks like another key's, what to add after it."""
        name = nick if nick is not None else self.nicks.get(key)
        if key not in self.lookalike or name is None:
            return ""
        spelling = spelled(name)
        return "name looks like another member's" + (f": {spelling}" if spelling else "")

    def short(self, key: bytes, nick: str | None = None) -> str:
        """A name for lists that show no key: the nickname, with " ·3f2a9c" (a key suffix)
        and the warning when another key's nickname looks like it."""
        shown = self.nick(key, nick)
        warning = self.warning(key, nick)
        if not warning:
            return shown
        return f"{suffixed(shown, key)} ({warning})"


# Channels ---------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ChannelName:
    name: str  # as the replica names it: what `read`, `post` and the window take
    stream: bytes
    lookalikes: tuple[str, ...] = ()  # labels of other channels whose names look like it

    @property
    def label(self) -> str:
        """The name (terminal-safe), with " ·" and a stream suffix when another channel's
        name looks like it."""
        if not self.lookalikes:
            return line(self.name)
        return suffixed(line(self.name), self.stream)

    @property
    def warning(self) -> str:
        """"" or what to tell about a lookalike: "looks like #general ·1a2b3c" (and the
        disguised characters spelled out)."""
        if not self.lookalikes:
            return ""
        spelling = spelled(self.name)
        return ("looks like " + ", ".join(f"#{other}" for other in self.lookalikes)
                + (f"; spelled {spelling}" if spelling else ""))


def channel_names(workspace: bytes, names: Iterable[str]) -> dict[str, ChannelName]:
    """Each channel name (as the replica lists them), keyed by that name, with its stream
    and the channels (different streams) whose names look like it."""
    by_key = {kinds.channel_key(name): name for name in names}
    streams = {key: kinds.channel_stream(workspace, name) for key, name in by_key.items()}
    clashes = collisions(by_key)

    def label(key: str) -> str:
        return suffixed(line(by_key[key]), streams[key])

    return {name: ChannelName(name, streams[key],
                              tuple(sorted(label(other) for other in clashes.get(key, ()))))
            for key, name in by_key.items()}


def lookalike_channel(names: Iterable[str], name: str) -> str | None:
    """The existing channel that `name` is probably a disguise of, or None: another channel
    (another stream) whose name looks like `name`, when `name` would open a new channel or
    is itself spelled with disguised characters (a Cyrillic е, a zero-width joiner). Typing
    "gеneral" almost never means a channel beside #general; typing plain "general" still
    reaches #general after someone opened a "gеneral" beside it."""
    names = list(names)
    key = kinds.channel_key(name)
    exists = any(kinds.channel_key(existing) == key for existing in names)
    if exists and not spelled(name):
        return None
    for existing in sorted(names):
        if kinds.channel_key(existing) != key and looks_alike(existing, name):
            return existing
    return None
