"""What the message list shows, decided without Qt: which rows start a group or a day, how
authors are named and coloured (hue, identicon grid, a name colour that reads on the view's
background), where the links and mentions are, how times and days read, how reactions and
reply counts read, how a post a moderator hid is marked, and how nicknames complete.

Plain functions over Messages (app.records), so tests/ui/test_rows.py checks them without a display.
Positions are Python string indices (codepoints); Qt counts UTF-16 units, so `to_utf16` and
`from_utf16` convert explicitly (an emoji before a link shifts it by one unit per emoji).
"""

from __future__ import annotations

import colorsys
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta

from app.names import lookalike_keys, suffixed
from app.records import Message, Reaction

GROUP_GAP_MS = 5 * 60 * 1000  # one author's messages closer than this share one header
ANONYMOUS = "anonymous"
EMOTE = "/me "


# Grouping --------------------------------------------------------------------------------------

def is_emote(message: Message) -> bool:
    return message.text.startswith(EMOTE)


def _day(ts: int) -> date:
    return datetime.fromtimestamp(ts / 1000).date()


def starts_group(previous: Message | None, message: Message) -> bool:
    """Whether `message` shows the nickname/time header: the first of a burst by one author
    (within GROUP_GAP_MS of the previous one, on the same local day). A `/me` row names its
    author inline ("* ada waves"), so it never shows a header, and the row after it does."""
    if is_emote(message):
        return False
    if previous is None or is_emote(previous) or previous.author != message.author \
            or previous.origin != message.origin:  # imported: one signer, many Slack authors
        return True
    if abs(message.ts - previous.ts) > GROUP_GAP_MS:
        return True
    return _day(previous.ts) != _day(message.ts)


def group_starts(messages: Sequence[Message], previous: Message | None = None) -> list[bool]:
    """starts_group for each row of `messages` (oldest first); `previous` is the row shown just
    above the first one, if any. (starts_group's rule, inlined: a page of 3,200 rows is
    grouped at once.)"""
    starts = []
    after_emote = previous is not None and previous.text.startswith(EMOTE)
    for message in messages:
        emote = message.text.startswith(EMOTE)
        if emote:
            starts.append(False)
        elif previous is None or after_emote or previous.author != message.author \
                or previous.origin != message.origin \
                or abs(message.ts - previous.ts) > GROUP_GAP_MS:
            starts.append(True)
        else:
            starts.append(_day(previous.ts) != _day(message.ts))
        previous, after_emote = message, emote
    return starts


def starts_day(previous: Message | None, message: Message) -> bool:
    """Whether `message` is the first row of its local day: a day separator shows above it."""
    return previous is None or _day(previous.ts) != _day(message.ts)


def day_starts(messages: Sequence[Message], previous: Message | None = None) -> list[bool]:
    """starts_day for each row of `messages` (oldest first), like group_starts. Rows are in
    time order, so each is checked against its day's span (local midnight to midnight) rather
    than converted to a date."""
    starts = []
    span = _day_span(previous.ts) if previous is not None else (0.0, 0.0)
    for message in messages:
        if span[0] <= message.ts < span[1]:
            starts.append(False)
            continue
        new = _day_span(message.ts)
        starts.append(new != span)
        span = new
    return starts


def _day_span(ts: int) -> tuple[float, float]:
    """The local day of `ts` (ms) as [its midnight, the next midnight), in ms."""
    day = _day(ts)
    return (datetime.combine(day, time.min).timestamp() * 1000,
            datetime.combine(day + timedelta(days=1), time.min).timestamp() * 1000)


# Names -----------------------------------------------------------------------------------------

def nick_of(message: Message) -> str:
    return message.nick or ANONYMOUS


def nick_keys(nick: str | None) -> frozenset[str]:
    """The lookalike keys of a nickname (app.names, Unicode TS #39 skeletons): two nicknames
    look alike when they share one, whatever the case, width, invisible characters or
    letters from another script ("Ada", "ＡＤＡ", "аda" with a Cyrillic а, "a\u200dda")."""
    return lookalike_keys(nick or ANONYMOUS)


class NickIndex:
    """Which nicknames more than one author uses, or look like another author's, among the
    loaded messages; grows as older pages load, so a clash that only shows in history is
    still told apart."""

    def __init__(self, messages: Iterable[Message] = ()):
        self._authors: dict[str, set[bytes]] = {}
        self.shared: set[str] = set()
        # (author, nickname) -> how it shows; a few dozen pairs name 100,000 rows, and rows
        # are named on every size hint and paint.
        self._names: dict[tuple[bytes, str | None], str] = {}
        self._seen: set[tuple[bytes, str | None]] = set()
        self.add(messages)

    def add(self, messages: Iterable[Message]) -> bool:
        """Take in more messages; True if the set of shared nicknames changed."""
        return self.add_names({(message.author, message.nick): None for message in messages})

    def add_names(self, names: Iterable[tuple[bytes, str | None]]) -> bool:
        """Take in (author key, nickname) pairs; True if the shared nicknames changed."""
        before = len(self.shared)
        for author, nick in names:
            if (author, nick) in self._seen:
                continue
            self._seen.add((author, nick))
            for key in nick_keys(nick):
                authors = self._authors.setdefault(key, set())
                if author not in authors:
                    authors.add(author)
                    if len(authors) > 1:
                        self.shared.add(key)
        changed = len(self.shared) != before
        if changed:
            self._names.clear()
        return changed

    def name(self, message: Message) -> str:
        pair = (message.author, message.nick)
        name = self._names.get(pair)
        if name is None:
            name = self._names[pair] = display_name(message, self.shared)
        return name


def shared_nicks(messages: Iterable[Message]) -> set[str]:
    """Nickname keys (see nick_keys) that two or more different authors use."""
    return NickIndex(messages).shared


def display_name(message: Message, shared: set[str]) -> str:
    """The author's nickname, with a short key suffix ("ada ·3f2a9c") when another author
    among the loaded messages goes by the same (or a look-alike) nickname."""
    return _named(message.author, message.nick, shared)


def _named(author: bytes, nick: str | None, shared: set[str]) -> str:
    if not nick_keys(nick).isdisjoint(shared):
        return suffixed(nick or ANONYMOUS, author)
    return nick or ANONYMOUS


def member_names(members: Iterable[tuple[bytes, str | None]]) -> dict[bytes, str]:
    """How the member list and nickname completion name each (key, nickname): the nickname,
    or with a key suffix ("ada ·3f2a9c") when another member's looks like it, so Tab never
    offers two names that read the same."""
    members = list(members)
    index = NickIndex()
    index.add_names(members)
    return {key: _named(key, nick, index.shared) for key, nick in members}


def body_text(message: Message, name: str) -> str:
    """The text a row shows: `/me waves` reads "* ada waves"."""
    if is_emote(message):
        return f"* {name} {message.text[len(EMOTE):]}"
    return message.text


# Links -----------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Link:
    start: int  # codepoint index into the text, inclusive
    end: int  # exclusive
    url: str  # what opens: www.x.org opens http://www.x.org

    def utf16(self, text: str) -> tuple[int, int]:
        return to_utf16(text, self.start), to_utf16(text, self.end)


_LINK = re.compile(r"(?<![\w.@/:-])(?:https?://|www\.)[^\s<>\"]+", re.IGNORECASE)
_TRAILING = ".,;:!?'\"*_~"
_CLOSERS = {")": "(", "]": "[", "}": "{"}


def links(text: str) -> list[Link]:
    """Links in `text`: http://, https:// and www. up to whitespace, without trailing
    punctuation ("see https://x.org." links https://x.org) and without a closing bracket
    that opened before the link ("(www.x.org)"), but keeping balanced ones
    ("https://en.wikipedia.org/wiki/Rust_(language)")."""
    found = []
    if "http" not in text.lower() and "www." not in text.lower():  # the common case, quickly
        return found
    for match in _LINK.finditer(text):
        url = match.group()
        while url:
            last = url[-1]
            if last in _TRAILING or (last in _CLOSERS
                                     and url.count(_CLOSERS[last]) < url.count(last)):
                url = url[:-1]
            else:
                break
        lower = url.lower()
        prefix = "www." if lower.startswith("www.") else lower.split("//", 1)[0] + "//"
        host = url[len(prefix):]
        if not host or host.startswith((".", "/")) or (prefix == "www." and "." not in host
                                                       and len(host) < 2):
            continue
        start = match.start()
        found.append(Link(start, start + len(url),
                          url if prefix != "www." else "http://" + url))
    return found


def to_utf16(text: str, index: int) -> int:
    """A codepoint index into `text` as a UTF-16 position (what Qt counts)."""
    if text.isascii():
        return index
    return len(text[:index].encode("utf-16-le")) // 2


def from_utf16(text: str, position: int) -> int:
    """A UTF-16 position (from Qt) as a codepoint index into `text`."""
    if text.isascii():
        return position
    return len(text.encode("utf-16-le")[:2 * position].decode("utf-16-le", errors="ignore"))


# Mentions --------------------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class Mention:
    start: int  # codepoint index into the text, inclusive (the "@" when there is one)
    end: int  # exclusive
    me: bool  # names me

    def utf16(self, text: str) -> tuple[int, int]:
        return to_utf16(text, self.start), to_utf16(text, self.end)


def _wordish(char: str) -> bool:
    return char.isalnum() or char == "_"


class MentionFinder:
    """Finds mentions in message texts: "@nick" where nick is one of `nicks` (the longest that
    fits, ignoring case, ending at a word's end: "@ada lovelace" before "@ada"), and my own
    nickname `me` as a whole word, with or without the "@" ("ada: look", as nickname
    completion writes it)."""

    def __init__(self, nicks: Iterable[str] = (), me: str | None = None):
        names = {n.strip() for n in nicks if n and n.strip()}
        if me:
            names.add(me)
        # Longest first, so "@ada lovelace" is not taken for "@ada".
        self._names = sorted(((n.casefold(), len(n)) for n in names), key=lambda x: -x[1])
        self._me = me.casefold() if me else None
        self._mine = (re.compile(rf"(?<![\w@]){re.escape(me)}(?!\w)", re.IGNORECASE)
                      if me else None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, MentionFinder) and (self._names, self._me) == (
            other._names, other._me)

    __hash__ = None  # type: ignore[assignment]

    def find(self, text: str, skip: int = 0) -> list[Mention]:
        """The mentions in `text`, in order, leaving out its first `skip` codepoints (the name
        that starts a "/me" row)."""
        found: list[Mention] = []
        if "@" in text and self._names:
            at = text.find("@", skip)
            while at >= 0:
                if at == 0 or not _wordish(text[at - 1]):
                    rest = text[at + 1:]
                    for folded, size in self._names:
                        if rest[:size].casefold() == folded and (
                                size == len(rest) or not _wordish(rest[size])):
                            found.append(Mention(at, at + 1 + size, folded == self._me))
                            break
                at = text.find("@", at + 1)
        if self._mine is not None:
            for match in self._mine.finditer(text, skip):
                if not any(m.start <= match.start() < m.end for m in found):
                    found.append(Mention(match.start(), match.end(), True))
            found.sort(key=lambda m: m.start)
        return found


# Reactions and replies -------------------------------------------------------------------------

def chip_label(reaction: Reaction) -> str:
    """What a reaction chip shows: the emoji and how many reacted with it."""
    return f"{reaction.emoji} {reaction.count}"


def join_names(names: Sequence[str], shown: int = 3) -> str:
    """"ada", "ada and bob", "ada, bob and cy", "ada, bob and 3 others"."""
    if len(names) > shown:
        rest = len(names) - (shown - 1)
        return f"{', '.join(names[:shown - 1])} and {rest} other{'s' if rest > 1 else ''}"
    if len(names) <= 1:
        return "".join(names)
    return f"{', '.join(names[:-1])} and {names[-1]}"


def reaction_tooltip(reaction: Reaction, names: Mapping[bytes, str], me: bytes) -> str:
    """Who reacted, by nickname, me first as "You": "You, ada and 3 others reacted with
    :thumbs_up:". The emoji is named by its shortcode: it reads where no font draws it."""
    from app.emojis import shortcode  # the emoji package loads only when a tooltip asks

    who = [key for key in reaction.by if key == me] + [key for key in reaction.by if key != me]
    shown = ["You" if key == me else names.get(key) or suffixed(ANONYMOUS, key) for key in who]
    return f"{join_names(shown)} reacted with {shortcode(reaction.emoji) or reaction.emoji}"


def replies_label(count: int) -> str:
    return "1 reply" if count == 1 else f"{count} replies"


# Moderation ------------------------------------------------------------------------------------

HIDDEN_NOTE = "Hidden by a moderator"  # on the rows only a moderator's list has
HIDDEN_TIP = ("Hidden by a moderator: only the channel's moderators see it. "
              "Right-click it to show it again to everyone.")


def converses(message: Message) -> bool:
    """Whether a row offers replies, reactions, edits and earlier versions: not on a post a
    moderator hid (its moderators see it to review it; the Node treats it as not visible)."""
    return not message.hidden


# Times -----------------------------------------------------------------------------------------

def time_label(ts: int, today: date | None = None) -> str:
    """"14:03" today, "Yesterday 14:03", "Mon 3 Mar 14:03" this year, else "3 Mar 2023 14:03"."""
    when = datetime.fromtimestamp(ts / 1000)
    today = today or date.today()
    clock = when.strftime("%H:%M")
    day = when.date()
    if day == today:
        return clock
    if (today - day).days == 1:
        return f"Yesterday {clock}"
    if day.year == today.year:
        return f"{when.strftime('%a')} {day.day} {when.strftime('%b')} {clock}"
    return f"{day.day} {when.strftime('%b')} {day.year} {clock}"


def clock(ts: int) -> str:
    """"20:25": what a header shows (the day is on the separator above)."""
    return datetime.fromtimestamp(ts / 1000).strftime("%H:%M")


def day_label(ts: int, today: date | None = None) -> str:
    """A day separator's label: "Today", "Yesterday", "Tue 5 Mar" this year, else
    "24 Dec 2023"."""
    when = datetime.fromtimestamp(ts / 1000)
    today = today or date.today()
    day = when.date()
    if day == today:
        return "Today"
    if (today - day).days == 1:
        return "Yesterday"
    if day.year == today.year:
        return f"{when.strftime('%a')} {day.day} {when.strftime('%b')}"
    return f"{day.day} {when.strftime('%b')} {day.year}"


def ms_until_next_day(now: datetime) -> int:
    """Milliseconds from `now` (local, naive) to the next local midnight, when day labels
    change ("Today" becomes "Yesterday"); DST days are 23 or 25 hours long."""
    midnight = datetime.combine(now.date() + timedelta(days=1), time())
    return max(1, round((midnight.timestamp() - now.timestamp()) * 1000))


def full_time(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1000).strftime("%Y-%m-%d %H:%M:%S")


# Author colours and identicons ------------------------------------------------------------------
# Derived from the author's key, never the nickname: two "bob"s with different keys look
# different, and a key looks the same on every computer.

RGB = tuple[int, int, int]
AVATAR_LIGHTNESS, AVATAR_SATURATION = 0.42, 0.55  # white cells read on every hue
NAME_SATURATION = 0.7
MIN_CONTRAST = 4.5  # WCAG AA for normal text
GRID = 5  # identicon cells per side; columns mirror left-right


def _digest(key: bytes) -> bytes:
    return hashlib.blake2b(key, digest_size=8, person=b"hearth-avatar").digest()


def author_hue(key: bytes) -> float:
    """The author's hue in [0, 1): the same for their avatar and their name."""
    return int.from_bytes(_digest(key)[:2], "big") / 65536


def identicon(key: bytes) -> tuple[tuple[bool, ...], ...]:
    """A 5x5 grid of filled cells, mirrored left to right (rows of columns), from the key's
    bits; never empty."""
    bits = int.from_bytes(_digest(key)[2:4], "big")
    half = (GRID + 1) // 2
    rows = []
    for y in range(GRID):
        left = [bool(bits >> (y * half + x) & 1) for x in range(half)]
        rows.append(tuple(left + left[:GRID - half][::-1]))
    if not any(any(row) for row in rows):  # 1 key in 32,768: fill the middle column
        rows = [row[:GRID // 2] + (True,) + row[GRID // 2 + 1:] for row in rows]
    return tuple(rows)


def _hls_rgb(hue: float, lightness: float, saturation: float) -> RGB:
    r, g, b = colorsys.hls_to_rgb(hue, lightness, saturation)
    return round(r * 255), round(g * 255), round(b * 255)


def avatar_rgb(key: bytes) -> RGB:
    """The avatar tile's colour: the author's hue at a middle lightness."""
    return _hls_rgb(author_hue(key), AVATAR_LIGHTNESS, AVATAR_SATURATION)


def luminance(rgb: RGB) -> float:
    """WCAG relative luminance of an sRGB colour."""
    def linear(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (linear(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: RGB, b: RGB) -> float:
    """WCAG contrast ratio of two colours, 1 to 21."""
    la, lb = sorted((luminance(a), luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def name_rgb(key: bytes, base: RGB) -> RGB:
    """The author's name colour on a background `base`: their hue, as close to a middle
    lightness as keeps a contrast of at least MIN_CONTRAST (darker on a light background,
    lighter on a dark one; one of them always gets there)."""
    hue = author_hue(key)
    middle = _hls_rgb(hue, 0.5, NAME_SATURATION)
    if contrast(middle, base) >= MIN_CONTRAST:
        return middle
    darker = contrast((0, 0, 0), base) >= contrast((255, 255, 255), base)
    near, far = 0.5, (0.0 if darker else 1.0)  # `far` always reads; `near` does not
    for _ in range(16):  # luminance grows with lightness: halve the interval
        mid = (near + far) / 2
        if contrast(_hls_rgb(hue, mid, NAME_SATURATION), base) >= MIN_CONTRAST:
            far = mid
        else:
            near = mid
    return _hls_rgb(hue, far, NAME_SATURATION)


# Nickname completion ---------------------------------------------------------------------------

def nick_matches(prefix: str, names: Iterable[str]) -> list[str]:
    """Names starting with `prefix`, ignoring case; each once, in case-insensitive order."""
    wanted = prefix.casefold()
    seen: dict[str, str] = {}
    for name in names:
        name = name.strip()
        if name and name.casefold().startswith(wanted):
            seen.setdefault(name.casefold(), name)
    return [seen[key] for key in sorted(seen)]


class NickCompleter:
    """Tab completion of nicknames in a composer's text.

    `complete(text, cursor)` completes the word before the cursor to a matching nickname (": "
    after it at the start of the message, " " elsewhere) and answers the new (text, cursor), or
    None when nothing matches. Asked again with the text and cursor it just answered, it moves
    to the next match (or the previous one, `backward`)."""

    def __init__(self, names: Iterable[str] = ()):
        self.names: list[str] = []
        # (text answered, cursor answered, that text without the completion, where it goes,
        #  the matches, which one is shown)
        self._cycle: tuple[str, int, str, int, list[str], int] | None = None
        self.set_names(names)

    def set_names(self, names: Iterable[str]) -> None:
        self.names = [n for n in dict.fromkeys(n.strip() for n in names) if n]
        self._cycle = None

    def complete(self, text: str, cursor: int, *,
                 backward: bool = False) -> tuple[str, int] | None:
        cursor = max(0, min(cursor, len(text)))
        if self._cycle is not None and self._cycle[:2] == (text, cursor):
            _, _, base, start, matches, i = self._cycle
            return self._apply(base, start, matches, (i + (-1 if backward else 1)) % len(matches))
        start = cursor
        while start > 0 and not text[start - 1].isspace():
            start -= 1
        matches: list[str] = []
        if text[start:cursor].startswith("@"):  # "@ad" completes like "ad", keeping the "@"
            matches = nick_matches(text[start + 1:cursor], self.names) \
                if cursor > start + 1 else []
            start += bool(matches)  # else a nickname that itself starts with "@"
        if not matches:
            prefix = text[start:cursor]
            matches = nick_matches(prefix, self.names) if prefix else []
        if not matches:
            self._cycle = None
            return None
        rest = text[cursor:]
        suffix = self._suffix(text, start)
        if rest.startswith(suffix):  # completing "ad|: hi" again must not double the ": "
            rest = rest[len(suffix):]
        return self._apply(text[:start] + rest, start, matches,
                           len(matches) - 1 if backward else 0)

    @staticmethod
    def _suffix(text: str, start: int) -> str:
        return ": " if text[:start].strip() in ("", "@") else " "

    def _apply(self, base: str, start: int, matches: list[str], i: int) -> tuple[str, int]:
        inserted = matches[i] + self._suffix(base, start)
        text = base[:start] + inserted + base[start:]
        cursor = start + len(inserted)
        self._cycle = (text, cursor, base, start, matches, i)
        return text, cursor
