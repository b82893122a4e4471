"""Emoji names, Qt-free: the `emoji` package's CLDR short names as `:shortcode:`s.

What the picker and the composer's `:shortcode:` completion read: `catalogue()` (every fully
qualified RGI emoji without a skin-tone modifier, about 1,900, each with its CLDR name, its
aliases and its group), `search` (ranked matches for what was typed after a colon), `lookup`
and `emojize` (":thumbs_up:" to 👍 in a whole message), and `remember` (the recent picks).

The `emoji` package names emoji but does not group them, so `group_of` sorts them into the
nine CLDR groups with a small table of code points (`_GROUP_TABLE`): whatever can take a skin
tone is a person or a hand; otherwise the first code point decides, looked up in the table."""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from functools import cache
from types import ModuleType

GROUPS = ("smileys", "people", "animals", "food", "travel", "activities", "objects", "symbols",
          "flags")
GROUP_LABELS = {
    "smileys": "Smileys", "people": "People", "animals": "Animals & nature",
    "food": "Food & drink", "travel": "Travel & places", "activities": "Activities",
    "objects": "Objects", "symbols": "Symbols", "flags": "Flags",
}
RECENT_LIMIT = 24  # recent picks `remember` keeps

_SKIN_TONES = frozenset(chr(c) for c in range(0x1F3FB, 0x1F400))
# A shortcode as typed: no spaces or colons inside ("+1", "thumbs_up", "man’s_shoe"), and
# not inside a word ("a:b:c" and "10:30:45" name nothing).
SHORTCODE = re.compile(r"(?<!\w):([^\s:]+):(?!\w)")
# What the composer completes: a colon at the start or after a space, then two or more
# characters, up to the cursor.
_TYPING = re.compile(r"(?:^|(?<=\s)):([^\s:]{2,})$")
_CLOSED = re.compile(r"(?<!\w):([^\s:]+):$")


@dataclass(frozen=True)
class Emoji:
    char: str  # the fully qualified sequence ("❤️" with its variation selector)
    name: str  # the CLDR short name as a shortcode: ":red_heart:"
    aliases: tuple[str, ...]  # other shortcodes that name it: (":heart:",)
    group: str  # one of GROUPS

    @property
    def names(self) -> tuple[str, ...]:
        return (self.name, *self.aliases)


def _emoji() -> ModuleType:
    """The `emoji` package, imported on first use: loading its tables takes ~20 ms, which a
    window that starts without anyone typing a colon need not spend."""
    import emoji

    return emoji


@cache
def _qualified() -> tuple[tuple[str, dict], ...]:
    """(emoji, its data) for every fully qualified emoji the `emoji` package knows."""
    emoji = _emoji()
    fully_qualified = emoji.STATUS["fully_qualified"]
    return tuple((char, data) for char, data in emoji.EMOJI_DATA.items()
                 if data["status"] == fully_qualified)


def shortcode(text: str) -> str | None:
    """`:thumbs_up:` for "👍" (skin tones and variation selectors included), None when `text`
    is not one emoji."""
    emoji = _emoji()
    if not emoji.purely_emoji(text) or emoji.emoji_count(text) != 1:
        return None
    name = emoji.demojize(text)
    return name if name != text else None


# Groups ---------------------------------------------------------------------------------------

SM, PE, AN, FO, TR, AC, OB, SY, FL = GROUPS

# (first code point, group) for code points up to the next entry's; checked after skin tones.
# Made from the CLDR emoji ordering (emoji-test.txt); a wrong guess only files an emoji under
# another tab, search still finds it.
_GROUP_TABLE: tuple[tuple[int, str], ...] = (
    (0x0000, SY), (0x231A, TR), (0x231C, SY), (0x2328, OB), (0x2329, SY), (0x23F0, TR),
    (0x23F4, SY), (0x2600, TR), (0x260E, OB), (0x260F, SY), (0x2614, TR), (0x2615, FO),
    (0x2616, SY), (0x2618, AN), (0x2619, SY), (0x2620, SM), (0x2621, SY), (0x2639, SM),
    (0x263B, SY), (0x265F, AC), (0x2667, SY), (0x2668, TR), (0x2669, SY), (0x2692, OB),
    (0x2693, TR), (0x2694, OB), (0x2695, SY), (0x2696, OB), (0x2698, SY), (0x2699, OB),
    (0x269A, SY), (0x26A1, TR), (0x26A2, SY), (0x26B0, OB), (0x26B2, SY), (0x26BD, AC),
    (0x26BF, SY), (0x26C4, TR), (0x26C6, SY), (0x26C8, TR), (0x26C9, SY), (0x26CF, OB),
    (0x26D0, SY), (0x26D1, OB), (0x26D2, SY), (0x26D3, OB), (0x26D4, SY), (0x26E9, TR),
    (0x26EB, SY), (0x26F0, TR), (0x26F3, AC), (0x26F4, TR), (0x26F6, SY), (0x26F7, PE),
    (0x26F8, AC), (0x26F9, PE), (0x26FA, TR), (0x26FB, SY), (0x26FD, TR), (0x26FE, SY),
    (0x2702, OB), (0x2703, SY), (0x2708, TR), (0x2709, OB), (0x270A, PE), (0x270E, SY),
    (0x270F, OB), (0x2710, SY), (0x2712, OB), (0x2713, SY), (0x2728, AC), (0x2729, SY),
    (0x2744, TR), (0x2745, SY), (0x2763, SM), (0x2765, SY), (0x2B50, TR), (0x2B51, SY),
    (0x1F004, AC), (0x1F005, SY), (0x1F0CF, AC), (0x1F0D0, SY), (0x1F1E6, FL), (0x1F200, SY),
    (0x1F300, TR), (0x1F32D, FO), (0x1F331, AN), (0x1F336, FO), (0x1F337, AN), (0x1F33D, FO),
    (0x1F33E, AN), (0x1F345, FO), (0x1F380, AC), (0x1F382, FO), (0x1F383, AC), (0x1F38C, FL),
    (0x1F38D, AC), (0x1F392, OB), (0x1F394, SY), (0x1F396, AC), (0x1F398, SY), (0x1F399, OB),
    (0x1F39C, SY), (0x1F39E, OB), (0x1F39F, AC), (0x1F3A0, TR), (0x1F3A3, AC), (0x1F3A4, OB),
    (0x1F3A6, SY), (0x1F3A7, OB), (0x1F3A8, AC), (0x1F3A9, OB), (0x1F3AA, TR), (0x1F3AB, AC),
    (0x1F3AC, OB), (0x1F3AD, AC), (0x1F3B5, OB), (0x1F3BD, AC), (0x1F3C1, FL), (0x1F3C2, PE),
    (0x1F3C5, AC), (0x1F3C7, PE), (0x1F3C8, AC), (0x1F3CA, PE), (0x1F3CD, TR), (0x1F3CF, AC),
    (0x1F3D4, TR), (0x1F3F1, SY), (0x1F3F3, FL), (0x1F3F5, AN), (0x1F3F6, SY), (0x1F3F7, OB),
    (0x1F3F8, AC), (0x1F3F9, OB), (0x1F3FA, FO), (0x1F3FB, SY), (0x1F400, AN), (0x1F440, PE),
    (0x1F451, OB), (0x1F463, PE), (0x1F479, SM), (0x1F47C, PE), (0x1F47D, SM), (0x1F481, PE),
    (0x1F484, OB), (0x1F485, PE), (0x1F488, TR), (0x1F489, OB), (0x1F48B, SM), (0x1F48D, OB),
    (0x1F48F, PE), (0x1F490, AN), (0x1F491, PE), (0x1F492, TR), (0x1F493, SM), (0x1F4A0, SY),
    (0x1F4A1, OB), (0x1F4A2, SM), (0x1F4A7, TR), (0x1F4A8, SM), (0x1F4AA, PE), (0x1F4AB, SM),
    (0x1F4AE, AN), (0x1F4AF, SM), (0x1F4B0, OB), (0x1F4B1, SY), (0x1F4B3, OB), (0x1F4BA, TR),
    (0x1F4BB, OB), (0x1F4DB, SY), (0x1F4DC, OB), (0x1F4F3, SY), (0x1F4F7, OB), (0x1F500, SY),
    (0x1F507, OB), (0x1F518, SY), (0x1F525, TR), (0x1F526, OB), (0x1F52A, FO), (0x1F52B, OB),
    (0x1F52E, AC), (0x1F52F, SY), (0x1F549, SY), (0x1F54A, AN), (0x1F54B, TR), (0x1F54E, SY),
    (0x1F550, TR), (0x1F56F, OB), (0x1F570, TR), (0x1F573, SM), (0x1F574, PE), (0x1F576, OB),
    (0x1F577, AN), (0x1F579, AC), (0x1F57A, PE), (0x1F57B, OB), (0x1F590, PE), (0x1F591, OB),
    (0x1F595, PE), (0x1F597, OB), (0x1F5A4, SM), (0x1F5A5, OB), (0x1F5BC, AC), (0x1F5BD, OB),
    (0x1F5E3, PE), (0x1F5E4, OB), (0x1F5E8, SM), (0x1F5E9, OB), (0x1F5EF, SM), (0x1F5F0, OB),
    (0x1F5FA, TR), (0x1F5FF, OB), (0x1F600, SM), (0x1F645, PE), (0x1F648, SM), (0x1F64B, PE),
    (0x1F650, SY), (0x1F680, TR), (0x1F6A3, PE), (0x1F6A4, TR), (0x1F6A9, FL), (0x1F6AA, OB),
    (0x1F6AB, SY), (0x1F6AC, OB), (0x1F6AD, SY), (0x1F6B2, TR), (0x1F6B3, SY), (0x1F6B4, PE),
    (0x1F6B7, SY), (0x1F6BD, OB), (0x1F6BE, SY), (0x1F6BF, OB), (0x1F6C0, PE), (0x1F6C1, OB),
    (0x1F6C2, SY), (0x1F6CB, OB), (0x1F6CC, PE), (0x1F6CD, OB), (0x1F6CE, TR), (0x1F6CF, OB),
    (0x1F6D0, SY), (0x1F6D1, TR), (0x1F6D2, OB), (0x1F6D3, SY), (0x1F6D5, TR), (0x1F6D7, OB),
    (0x1F6D8, TR), (0x1F6DA, SY), (0x1F6DD, TR), (0x1F6E0, OB), (0x1F6E2, TR), (0x1F6F7, AC),
    (0x1F6F8, TR), (0x1F6FD, SY), (0x1F90C, PE), (0x1F90D, SM), (0x1F90F, PE), (0x1F910, SM),
    (0x1F918, PE), (0x1F920, SM), (0x1F926, PE), (0x1F927, SM), (0x1F930, PE), (0x1F93B, SY),
    (0x1F93C, PE), (0x1F93F, AC), (0x1F940, AN), (0x1F941, OB), (0x1F942, FO), (0x1F945, AC),
    (0x1F946, SY), (0x1F947, AC), (0x1F950, FO), (0x1F970, SM), (0x1F977, PE), (0x1F978, SM),
    (0x1F97B, OB), (0x1F980, FO), (0x1F981, AN), (0x1F990, FO), (0x1F992, AN), (0x1F99E, FO),
    (0x1F99F, AN), (0x1F9AA, FO), (0x1F9AB, AN), (0x1F9AF, OB), (0x1F9B0, SY), (0x1F9B4, PE),
    (0x1F9BA, OB), (0x1F9BB, PE), (0x1F9BC, TR), (0x1F9BE, PE), (0x1F9C0, FO), (0x1F9CC, PE),
    (0x1F9D0, SM), (0x1F9D1, PE), (0x1F9E1, SM), (0x1F9E2, OB), (0x1F9E7, AC), (0x1F9EA, OB),
    (0x1F9ED, TR), (0x1F9EE, OB), (0x1F9F1, TR), (0x1F9F2, OB), (0x1F9F3, TR), (0x1F9F4, OB),
    (0x1F9F5, AC), (0x1F9F7, OB), (0x1F9F8, AC), (0x1F9F9, OB), (0x1F9FF, AC), (0x1FA00, SY),
    (0x1FA70, OB), (0x1FA75, SM), (0x1FA78, OB), (0x1FA80, AC), (0x1FA82, TR), (0x1FA83, OB),
    (0x1FA84, AC), (0x1FA87, OB), (0x1FA8B, TR), (0x1FA8C, OB), (0x1FA90, TR), (0x1FA91, OB),
    (0x1FAA8, TR), (0x1FAA9, AC), (0x1FAAA, OB), (0x1FAAC, AC), (0x1FAAD, OB), (0x1FAAF, SY),
    (0x1FAB0, AN), (0x1FAB5, TR), (0x1FAB6, AN), (0x1FAC0, PE), (0x1FAC7, SY), (0x1FAC8, AN),
    (0x1FAC9, SY), (0x1FACC, AN), (0x1FAD0, FO), (0x1FADE, SY), (0x1FADF, AC), (0x1FAE0, SM),
    (0x1FAE6, PE), (0x1FAE7, OB), (0x1FAE8, SM), (0x1FAEC, SY), (0x1FAEF, SM), (0x1FAF0, PE),
    (0x1FAF9, SY),
)
_TABLE_STARTS = [start for start, _ in _GROUP_TABLE]
# Where each group's list starts in code point order (wrapping round), so it opens as CLDR's
# does: faces, then hands and people, animals from the monkey, fruit, globes, the chequered flag.
_GROUP_LEADS = {SM: 0x1F600, PE: 0x1F44B, AN: 0x1F400, FO: 0x1F347, TR: 0x1F30D, AC: 0x1F383,
                OB: 0x1F453, SY: 0x1F3E7, FL: 0x1F3C1}


@cache
def _toned() -> frozenset[str]:
    """The emoji that take a skin tone: people and hands."""
    return frozenset(char[0] for char, _ in _qualified() if _SKIN_TONES.intersection(char))


def group_of(char: str) -> str:
    """The group of `char`, one of GROUPS."""
    first = char[0]
    if first in _toned():
        return PE
    return _GROUP_TABLE[bisect.bisect_right(_TABLE_STARTS, ord(first)) - 1][1]


# The catalogue --------------------------------------------------------------------------------

@cache
def catalogue() -> tuple[Emoji, ...]:
    """Every fully qualified emoji without a skin tone, by group (GROUPS' order), then by code
    points from the group's lead (_GROUP_LEADS) on, wrapping round."""
    found = [
        Emoji(char, data["en"], tuple(a for a in data.get("alias", ()) if a != data["en"]),
              group_of(char))
        for char, data in _qualified() if not _SKIN_TONES.intersection(char)]
    order = {group: i for i, group in enumerate(GROUPS)}

    def place(item: Emoji) -> tuple[int, list[int]]:
        lead = _GROUP_LEADS.get(item.group, 0)
        return order[item.group], [(ord(c) - lead) % 0x110000 for c in item.char]

    return tuple(sorted(found, key=place))


@cache
def by_group() -> dict[str, tuple[Emoji, ...]]:
    """GROUPS' emoji, each group in catalogue order."""
    groups: dict[str, list[Emoji]] = {group: [] for group in GROUPS}
    for item in catalogue():
        groups[item.group].append(item)
    return {group: tuple(items) for group, items in groups.items()}


@cache
def _by_char() -> dict[str, Emoji]:
    return {item.char: item for item in catalogue()}


def find(char: str) -> Emoji | None:
    """The catalogue's entry for `char` (a skin-toned emoji has none)."""
    return _by_char().get(char)


@cache
def _names() -> dict[str, str]:
    """Every shortcode of a fully qualified emoji (skin tones too) to its emoji."""
    names: dict[str, str] = {}
    for char, data in _qualified():
        names[data["en"]] = char
    for char, data in _qualified():  # ":cat:" is 🐈's name and an alias of 🐱
        for name in data.get("alias", ()):
            names.setdefault(name, char)
    return names


@cache
def _folded_names() -> dict[str, str]:
    folded: dict[str, str] = {}
    for name, char in _names().items():
        folded.setdefault(name.casefold(), char)
    return folded


def lookup(name: str) -> str | None:
    """The emoji a shortcode names (":thumbs_up:", ":+1:", ":Japan:" or ":japan:"), None if
    none does. The colons are optional."""
    name = f":{name.strip(':')}:"
    return _names().get(name) or _folded_names().get(name.casefold())


def emojize(text: str) -> str:
    """`text` with each known `:shortcode:` replaced by its emoji; unknown ones stay as typed."""
    return SHORTCODE.sub(lambda m: lookup(m.group(0)) or m.group(0), text)


def typed_shortcode(before: str) -> tuple[int, str] | None:
    """(where it starts, what follows the colon) when the text before the cursor ends in a
    shortcode being typed (":thu", at the start or after a space), else None."""
    found = _TYPING.search(before)
    return (found.start(), found.group(1)) if found else None


def closed_shortcode(before: str) -> tuple[int, str] | None:
    """(where it starts, its emoji) when the text before the cursor ends in a known shortcode
    whose closing colon was just typed ("hi :thumbs_up:"), else None."""
    found = _CLOSED.search(before)
    char = lookup(found.group(0)) if found else None
    return (found.start(), char) if found and char else None


# Search ---------------------------------------------------------------------------------------

def _fold(name: str) -> str:
    return name.strip(":").casefold().replace(" ", "_")


@cache
def _searchable() -> tuple[tuple[Emoji, tuple[str, ...]], ...]:
    return tuple((item, tuple(_fold(n) for n in item.names)) for item in catalogue())


def _rank(query: str, name: str) -> int | None:
    """0 the whole name, 1 the name starts with it, 2 a word of it does, 3 it is inside, None:
    no match."""
    if name == query:
        return 0
    if name.startswith(query):
        return 1
    at = name.find(query)
    if at < 0:
        return None
    while at >= 0:
        if not name[at - 1].isalnum():
            return 2
        at = name.find(query, at + 1)
    return 3


def search(query: str, limit: int = 20) -> list[tuple[str, str]]:
    """(shortcode, emoji) pairs whose names match `query` ("thu", ":+1", "red heart"): names
    that are the query first, then those it starts, then those with a word it starts, then
    those containing it; shorter names first within each. An emoji is listed once, under its
    best-matching name; skin-toned variants are left out."""
    query = _fold(query)
    if not query:
        return []
    found: list[tuple[int, int, str, str]] = []
    for item, folded in _searchable():
        best: tuple[int, int, str] | None = None
        for name, key in zip(item.names, folded, strict=True):
            rank = _rank(query, key)
            if rank is not None and (best is None or (rank, len(key)) < best[:2]):
                best = (rank, len(key), name)
        if best is not None:
            found.append((*best, item.char))
    found.sort()
    return [(name, char) for _, _, name, char in found[:max(0, limit)]]


def remember(recent: list[str] | tuple[str, ...], char: str,
             limit: int = RECENT_LIMIT) -> list[str]:
    """`recent` (most recent first) after `char` was picked."""
    return [char, *(c for c in recent if c != char)][:limit]
