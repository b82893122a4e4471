"""When two names look alike: Unicode TS #39 confusable skeletons for nicknames and channels.

A skeleton is for comparing, never for showing: two names whose skeletons are equal look
alike ("alice", "аlice" with a Cyrillic а, "al\u200dice" with a zero-width joiner, "aIice"
with a capital I). The steps: NFKC (fullwidth and other compatibility forms), NFD, drop the
default-ignorable code points (zero-width joiners, bidi marks, variation selectors, ...), map
each character to its prototype from confusables.txt (core/confusables.txt, generated from the
confusable-homoglyphs package's copy of Unicode's data), NFD again, until nothing changes.

TS #39 skeletons keep case ("I" looks like "l", "i" does not), while names here compare
case-insensitively ("Ada" and "ADA" are one name). So a name has two keys, the skeleton of the
name and the skeleton of its case fold, and two names look alike when they share a key.

Validity never depends on this (a lookalike name is a valid name): it only decides how names
are shown and when the person is asked whether they meant another channel.
"""

from __future__ import annotations

import unicodedata
from functools import cache, lru_cache
from importlib import resources

# Default_Ignorable_Code_Point (DerivedCoreProperties.txt): drawn as nothing at all.
_IGNORABLE = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
_MAX_ROUNDS = 8  # a fixed point comes after one or two rounds


def is_default_ignorable(ch: str) -> bool:
    point = ord(ch)
    return any(lo <= point <= hi for lo, hi in _IGNORABLE)


@cache
def _prototypes() -> dict[str, str]:
    """The confusables table, a constant shipped beside this module (package data)."""
    text = resources.files(__package__).joinpath("confusables.txt").read_text("ascii")
    table = {}
    for line in (row for row in text.split("\n") if not row.startswith("#")):
        for entry in line.split():
            source, _, target = entry.partition(":")
            table[chr(int(source, 16))] = "".join(chr(int(p, 16)) for p in target.split("+"))
    return table


def _round(text: str, table: dict[str, str]) -> str:
    text = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", text))
    return unicodedata.normalize("NFD", "".join(
        table.get(ch, ch) for ch in text if not is_default_ignorable(ch)))


def skeleton(text: str) -> str:
    """The TS #39 skeleton of NFKC(`text`): equal skeletons look alike. Case is kept.

    Repeated to a fixed point: some prototypes are compatibility characters ("%" maps to
    "º/₀") whose NFKC maps again, and skeleton(skeleton(x)) must be skeleton(x)."""
    table = _prototypes()
    current = _round(text, table)
    for _ in range(_MAX_ROUNDS):
        mapped = _round(current, table)
        if mapped == current:
            break
        current = mapped
    return current


@lru_cache(maxsize=4096)  # names repeat a lot; bounded: names come from peers
def lookalike_keys(name: str) -> frozenset[str]:
    """The keys of a name: its skeleton, and the skeleton of its case fold. Two names look
    alike exactly when they share a key."""
    folded = unicodedata.normalize("NFKC", name).casefold()
    return frozenset((skeleton(name), skeleton(folded)))


def looks_alike(a: str, b: str) -> bool:
    return not lookalike_keys(a).isdisjoint(lookalike_keys(b))


def is_disguised(ch: str) -> bool:
    """Whether `ch` is invisible or a non-ASCII character drawn like another one: what to
    spell out (as U+XXXX) when two names look alike."""
    if is_default_ignorable(ch):
        return True
    return not ch.isascii() and ch in _prototypes()
