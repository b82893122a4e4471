"""The library of notification settings (issue #32): what `hearth notify` and the window's
settings page and conversation menus call, on a Workspace. The rules are app/notify_rules.py's,
the file app/notify_settings.py's; this names conversations as people write them ("#general",
"launch", "@bob"), refuses one that does not exist (a typo never becomes a setting), and
counts each change in usage analytics when they are on (levels only: never a keyword, a name
or a text; app/activity.py)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from . import notify_settings
from .activity import record_usage
from .errors import WorkspaceError
from .notify_rules import (
    LEVELS,
    NotifyError,
    NotifySettings,
    Schedule,
    conversation_key,
    level,
    parse_clock,
    parse_schedule,
)

if TYPE_CHECKING:
    from .workspace import Workspace

LEVEL_NAMES = {"all": "all messages", "mentions": "mentions only", "none": "nothing (muted)"}
_DURATION = re.compile(r"(\d{1,6})([mhd])")
_UNITS = {"m": 60, "h": 3600, "d": 86400}
MAX_UNTIL_S = 366 * 86400


@dataclass(frozen=True)
class Conversation:
    """A conversation notification settings can name."""

    key: str  # app.notify_rules.conversation_key
    kind: str  # "channel", "private" or "dm"
    channel: str | bytes  # a public channel's name, or a private one's id
    label: str  # "#general", "#launch (private)", "@bob"


@dataclass(frozen=True)
class ConversationLevel:
    conversation: Conversation
    level: str  # its level now
    own: bool  # set for it (else its kind's default)
    until: float | None  # when its own level ends


def _recorded(ws: Workspace, event: str, **fields: object) -> None:
    """A settings change, in usage analytics when they are on (analytics/events.py, version 7:
    never which conversation, the times or the words)."""
    record_usage(ws.paths.data, event, clock=ws.clock, **fields)


def conversations(ws: Workspace) -> list[Conversation]:
    """Every conversation of mine: the public channels, my private channels and direct
    messages."""
    out = [Conversation(conversation_key(c.name), "channel", c.name, f"#{c.name}")
           for c in ws.channels()]
    for private in ws.private.channels():
        out.append(Conversation(conversation_key(private.id), "dm" if private.dm else "private",
                                private.id, f"@{private.name}" if private.dm
                                else f"#{private.name} (private)"))
    return out


def resolve(ws: Workspace, ref: str | bytes) -> Conversation:
    """The conversation `ref` names: a public channel ("general", "#general"), a private
    channel of mine by name, a direct message ("@bob"), or a private channel's id (bytes)."""
    if isinstance(ref, bytes):
        found = next((c for c in conversations(ws) if c.channel == ref), None)
        if found is None:
            raise WorkspaceError("you are not in that private channel")
        return found
    text = ref.strip()
    if not text.startswith("@"):
        name = ws.known_channel(text.removeprefix("#"))
        if name is not None:
            return Conversation(conversation_key(name), "channel", name, f"#{name}")
    private = ws.private.resolve(text)
    if private is None:
        raise WorkspaceError(f"no channel, private channel or direct messages named {text!r} "
                             "here (`hearth channels` lists them)")
    return resolve(ws, private.id)


def settings(ws: Workspace) -> NotifySettings:
    return notify_settings.load(ws.paths.data, ws.id)


def levels(ws: Workspace) -> list[ConversationLevel]:
    """Every conversation's level now, those with one of their own first."""
    now, held = ws.clock(), settings(ws)
    out = []
    for c in conversations(ws):
        rule = held.rules.get(c.key)
        own = rule is not None and (rule.until is None or now < rule.until)
        out.append(ConversationLevel(c, level(held, c.key, c.kind, now), own,
                                     rule.until if own and rule else None))
    return sorted(out, key=lambda c: not c.own)


def level_of(ws: Workspace, ref: str | bytes) -> ConversationLevel:
    found = resolve(ws, ref)
    return next(c for c in levels(ws) if c.conversation.key == found.key)


def set_level(ws: Workspace, ref: str | bytes, chosen: str | None,
              until: float | None = None) -> ConversationLevel:
    """Give a conversation a level of its own (None: its kind's default again), until a time
    (seconds since the epoch) or for good."""
    if chosen is not None and chosen not in LEVELS:
        raise NotifyError(f"a level is one of {', '.join(LEVELS)}, not {chosen!r}")
    found = resolve(ws, ref)
    if until is not None and until <= ws.clock():
        raise NotifyError("--until must be a time to come")
    if chosen is None and until is not None:
        raise NotifyError("--until goes with a level (--all, --mentions or --none)")
    notify_settings.set_level(ws.paths.data, ws.id, found.key, chosen, until)
    _recorded(ws, "notify_level_set", level=chosen or "default", kind=found.kind,
              timed=until is not None)
    return level_of(ws, found.channel)


def set_keywords(ws: Workspace, words: list[str]) -> NotifySettings:
    """The words that notify wherever they are written (but in muted conversations)."""
    changed = notify_settings.save(ws.paths.data, ws.id, keywords=words)
    _recorded(ws, "notify_option_set", option="keywords", on=bool(changed.keywords))
    return changed


def set_show_text(ws: Workspace, shown: bool) -> NotifySettings:
    changed = notify_settings.save(ws.paths.data, ws.id, show_text=shown)
    _recorded(ws, "notify_option_set", option="show_text", on=changed.show_text)
    return changed


def pause(ws: Workspace, *, on: bool = False, until: float | None = None) -> NotifySettings:
    """Do not disturb now (`on`: until turned off), until a time, or (neither) not now; a
    daily schedule stays as it is."""
    changed = notify_settings.save(ws.paths.data, ws.id, paused=on, paused_until=until)
    _recorded(ws, "notify_dnd_set", paused=on or until is not None,
              scheduled=changed.schedule is not None)
    return changed


def set_schedule(ws: Workspace, schedule: Schedule | None) -> NotifySettings:
    """Do not disturb every day over `schedule` (None: no schedule)."""
    changed = notify_settings.save(ws.paths.data, ws.id, schedule=schedule)
    now = ws.clock()
    _recorded(ws, "notify_dnd_set", scheduled=schedule is not None,
              paused=changed.paused or (changed.paused_until or 0) > now)
    return changed


def do_not_disturb(ws: Workspace, text: str) -> NotifySettings:
    """`hearth notify --dnd TEXT`: "on", "off" (no pause and no schedule), a duration ("2h",
    "30m", "1d"), a time it ends ("08:00") or a daily schedule ("22:00-08:00")."""
    word = text.strip().lower()
    if word == "on":
        return pause(ws, on=True)
    if word == "off":
        pause(ws)
        return set_schedule(ws, None)
    if "-" in word:
        return set_schedule(ws, parse_schedule(word))
    return pause(ws, until=parse_until(word, ws.clock()))


def parse_until(text: str, now: float) -> float:
    """When "2h", "30m", "1d" from `now` is, or the next "18:00" (local time) after it."""
    word = text.strip().lower()
    found = _DURATION.fullmatch(word)
    if found is not None:
        seconds = int(found.group(1)) * _UNITS[found.group(2)]
        if not 0 < seconds <= MAX_UNTIL_S:
            raise NotifyError("a duration is from 1m to 366d")
        return now + seconds
    try:
        minute = parse_clock(word)
    except NotifyError:
        raise NotifyError(f"a time is a duration such as 30m, 2h or 1d, or a time of day such "
                          f"as 18:00, not {text[:40]!r}") from None
    today = datetime.fromtimestamp(now).replace(hour=minute // 60, minute=minute % 60,
                                                second=0, microsecond=0)
    at = today if today.timestamp() > now else today + timedelta(days=1)
    return at.timestamp()


def when(at: float | None) -> str:
    """"until 18:00" today, else "until 2026-11-30 18:00" (local time)."""
    if at is None:
        return ""
    moment = datetime.fromtimestamp(at)
    same_day = moment.date() == datetime.fromtimestamp(time.time()).date()
    return f"until {moment.strftime('%H:%M' if same_day else '%Y-%m-%d %H:%M')}"


