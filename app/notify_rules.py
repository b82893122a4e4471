"""What notifies, as rules with no I/O (issue #32): a conversation's level, keywords, do not
disturb, what a badge shows, and whether one arriving message raises a notification. The
settings are read and written by app/notify_settings.py; app/notify_watch.py applies these
rules to the messages a Node's events name, for the window and for `hearth serve --notify`
alike.

Levels: "all" (every message), "mentions" (mentions and keyword alerts; the default of public
and private channels) and "none" (muted: no badge count, no notification but for a mention of
me). Direct messages default to "all". A level set "until" a time is the default again after
it. Do not disturb holds every notification back (they are counted, and the count told once
it ends): now until turned off, until a time, or daily over a schedule ("22:00-08:00" runs
across midnight)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from core.streams import channel_key

from . import _text

LEVELS = ("all", "mentions", "none")
KINDS = ("channel", "private", "dm")
MINUTES_A_DAY = 24 * 60
PREVIEW_CHARS = 120  # the start of a message's text a notification shows
MAX_KEYWORDS = 50
MAX_KEYWORD_CHARS = 100


class NotifyError(ValueError):
    """A notification setting that cannot be: its message is one line for the person."""


@dataclass(frozen=True)
class Rule:
    """A conversation's own level, and until when (seconds since the epoch; None: for good)."""

    level: str
    until: float | None = None


@dataclass(frozen=True)
class Schedule:
    """Do not disturb every day from `start` to `end`, in minutes after local midnight; the
    end is not inside it, and a start later than the end runs across midnight."""

    start: int
    end: int

    def covers(self, minute: int) -> bool:
        if self.start < self.end:
            return self.start <= minute < self.end
        return minute >= self.start or minute < self.end

    def __str__(self) -> str:
        return f"{_clock(self.start)}-{_clock(self.end)}"


@dataclass(frozen=True)
class NotifySettings:
    """This computer's notification settings for one workspace (the keywords, do not disturb
    and whether text shows are this computer's, for every workspace)."""

    rules: Mapping[str, Rule] = field(default_factory=dict)  # conversation_key -> its rule
    keywords: tuple[str, ...] = ()
    show_text: bool = True  # a notification shows the start of the message
    paused: bool = False  # do not disturb now, until turned off
    paused_until: float | None = None  # do not disturb until then
    schedule: Schedule | None = None  # do not disturb every day


@dataclass(frozen=True)
class Incoming:
    """A message that arrived, as the rules see it."""

    conversation: str  # its conversation_key
    kind: str  # one of KINDS
    channel: str | bytes  # a public channel's name, or a private channel's id
    place: str  # how the conversation is named: "#general", "launch", "bob"
    message: bytes  # its id
    author: str  # how its author is named
    text: str
    ts: int  # ms
    thread: bytes | None = None  # the thread's first message, for a reply


@dataclass(frozen=True)
class Alert:
    """A notification to raise: what it says and the message a click opens."""

    title: str  # "ada in #general"
    body: str  # the start of the text, or what happened when text is hidden
    reason: str  # "mention", "keyword", "message", or "missed" (after do not disturb)
    channel: str | bytes | None = None  # where a click goes; None for "missed"
    message: bytes | None = None
    thread: bytes | None = None


def conversation_key(channel: str | bytes) -> str:
    """How settings name a conversation: "#" and a public channel's name as names compare
    (core.streams.channel_key), or "p:" and a private channel's or direct messages' id."""
    if isinstance(channel, bytes):
        return "p:" + channel.hex()
    return "#" + channel_key(channel)


def default_level(kind: str) -> str:
    return "all" if kind == "dm" else "mentions"


def level(settings: NotifySettings, conversation: str, kind: str, now: float) -> str:
    """A conversation's level now: its own while it lasts, else its kind's default."""
    rule = settings.rules.get(conversation)
    if rule is None or (rule.until is not None and now >= rule.until):
        return default_level(kind)
    return rule.level


def do_not_disturb(settings: NotifySettings, now: float, minute: int) -> bool:
    """Whether notifications are held back at `now`, whose local time is `minute` after
    midnight."""
    if settings.paused or (settings.paused_until is not None and now < settings.paused_until):
        return True
    return settings.schedule is not None and settings.schedule.covers(minute)


def contains_word(word: str, text: str) -> bool:
    """`word` as a word (or phrase) of its own in `text`, any case: "@ada" and "ada:" name
    ada, "adam" does not (as mentions count in storage and app.private)."""
    return re.search(r"(?<!\w)" + re.escape(word) + r"(?!\w)", text, re.IGNORECASE) is not None


def reason(settings: NotifySettings, incoming: Incoming, nick: str | None,
           now: float) -> str | None:
    """Why this message notifies ("mention", "keyword", "message"), or None. A mention
    notifies at every level, muted too; keywords at "mentions" and "all"."""
    if nick and contains_word(nick, incoming.text):
        return "mention"
    shown = level(settings, incoming.conversation, incoming.kind, now)
    if shown == "none":
        return None
    if any(contains_word(word, incoming.text) for word in settings.keywords):
        return "keyword"
    return "message" if shown == "all" else None


def alert(incoming: Incoming, why: str, show_text: bool) -> Alert:
    """The notification for a message: who wrote it where, and the start of its text (or,
    with text hidden, only why it notifies). What a peer chose (names, text) is one line with
    nothing that could reorder or fake it (app._text.line)."""
    where = ("(direct message)" if incoming.kind == "dm"
             else f"in {_text.line(incoming.place)}")
    author = _text.line(incoming.author)
    title = (f"{author} mentioned you {where}" if why == "mention" else f"{author} {where}")
    if show_text:
        text = _text.line(" ".join(incoming.text.split()))
        body = text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS - 1] + "…"
    else:
        body = {"mention": "You were mentioned", "keyword": "A message with one of your keywords"
                }.get(why, "New message")
    return Alert(title, body, why, incoming.channel, incoming.message, incoming.thread)


def missed_alert(count: int) -> Alert:
    return Alert("Do not disturb is over",
                 f"{count} notification{'s' if count != 1 else ''} held back while it was on",
                 "missed")


def badge(level_now: str, count: int, mention: bool) -> tuple[int, bool]:
    """What a conversation's badge counts: a muted one counts nothing, but still marks a
    mention of me."""
    return (0, mention) if level_now == "none" else (count, mention)


class Decider:
    """Decides message by message, and counts those do not disturb held back: `resumed`
    hands the count over once do not disturb is over (one "missed" notification)."""

    def __init__(self) -> None:
        self.missed = 0

    def decide(self, settings: NotifySettings, incoming: Incoming, nick: str | None,
               now: float, minute: int) -> Alert | None:
        why = reason(settings, incoming, nick, now)
        if why is None:
            return None
        if do_not_disturb(settings, now, minute):
            self.missed += 1
            return None
        return alert(incoming, why, settings.show_text)

    def resumed(self, settings: NotifySettings, now: float, minute: int) -> Alert | None:
        """The "missed" notification, once, when do not disturb has ended with some held."""
        if not self.missed or do_not_disturb(settings, now, minute):
            return None
        count, self.missed = self.missed, 0
        return missed_alert(count)


# Parsing what people type ------------------------------------------------------------------

_CLOCK = re.compile(r"([01]?\d|2[0-3]):([0-5]\d)")


def _clock(minute: int) -> str:
    return f"{minute // 60:02d}:{minute % 60:02d}"


def parse_clock(text: str) -> int:
    """"08:00" as minutes after midnight."""
    found = _CLOCK.fullmatch(text.strip())
    if found is None or not text.isascii():
        raise NotifyError(f"a time of day is HH:MM from 00:00 to 23:59, not {text[:40]!r}")
    return int(found.group(1)) * 60 + int(found.group(2))


def parse_schedule(text: str) -> Schedule:
    """"22:00-08:00": do not disturb every day from 22:00 to 08:00."""
    start, sep, end = text.strip().partition("-")
    if not sep:
        raise NotifyError(f"a schedule is START-END such as 22:00-08:00, not {text[:40]!r}")
    schedule = Schedule(parse_clock(start), parse_clock(end))
    if schedule.start == schedule.end:
        raise NotifyError("a schedule's start and end must differ")
    return schedule


def check_keywords(words: list[str]) -> tuple[str, ...]:
    """Keywords as stored: trimmed, the first of each in any case, none empty."""
    out: list[str] = []
    for word in words:
        word = " ".join(word.split())
        if not word:
            raise NotifyError("a keyword cannot be empty")
        if len(word) > MAX_KEYWORD_CHARS:
            raise NotifyError(f"a keyword is at most {MAX_KEYWORD_CHARS} characters")
        if word.casefold() not in {w.casefold() for w in out}:
            out.append(word)
    if len(out) > MAX_KEYWORDS:
        raise NotifyError(f"at most {MAX_KEYWORDS} keywords")
    return tuple(out)
