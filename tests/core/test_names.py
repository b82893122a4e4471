"""Lookalike names (core/names.py): Unicode TS #39 skeletons over the vendored confusables table.

`python -m tests.core.test_names` regenerates core/confusables.txt from the installed
confusable-homoglyphs package (a dev dependency); a test below fails when they drift apart.
"""

from __future__ import annotations

import json
import sys
import textwrap
from importlib import resources
from importlib.metadata import version
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from core import kinds
from core.names import (
    is_default_ignorable,
    is_disguised,
    lookalike_keys,
    looks_alike,
    skeleton,
)

TABLE = Path(__file__).resolve().parents[2] / "core" / "confusables.txt"
PACKAGE = "confusable-homoglyphs"


# What looks alike ------------------------------------------------------------------------------

LOOKALIKES = {
    "cyrillic a": ("alice", "\u0430lice"),
    "cyrillic e and o": ("general", "g\u0435neral"),
    "zero-width joiner": ("alice", "al\u200dice"),
    "soft hyphen and word joiner": ("general", "gen\u00aderal\u2060"),
    "capital I for l": ("alice", "aIice"),
    "digit one for l": ("alice", "a1ice"),
    "rn for m": ("emma", "ernrna"),
    "fullwidth": ("ada", "\uff21\uff24\uff21"),
    "case": ("Ada", "ADA"),
    "cyrillic es and o, greek omicron": ("coco", "\u0441\u043e\u0441\u03bf"),
    "mathematical bold": ("bob", "\U0001d41b\U0001d428\U0001d41b"),
    "bidi mark around a name": ("bob", "\u200fbob\u200e"),
    "variation selector": ("ada", "ad\ufe0fa"),
}


def test_lookalike_names_share_a_key() -> None:
    for case, (a, b) in LOOKALIKES.items():
        assert looks_alike(a, b), case
        assert looks_alike(b, a), case


def test_names_that_differ_do_not_look_alike() -> None:
    for a, b in [("alice", "alicia"), ("bob", "rob"), ("ada", "adam"), ("general", "random"),
                 ("\u0434\u0430", "\u0434\u0430\u0448\u0430"), ("x", "y")]:
        assert not looks_alike(a, b), (a, b)


def test_channel_keys_stay_as_they_were() -> None:
    """Lookalike detection sits beside the channel key; it never changes which stream a
    name is, so existing replicas keep their ids."""
    assert kinds.channel_key("General") == "general"
    assert kinds.channel_key("g\u0435neral") != kinds.channel_key("general")
    assert kinds.channel_stream(b"w" * 32, "g\u0435neral") != kinds.channel_stream(
        b"w" * 32, "general")


def test_skeleton_is_idempotent_and_drops_ignorables() -> None:
    assert skeleton("al\u200dice") == skeleton("alice")
    assert skeleton("\u0430") == "a"
    for a, b in LOOKALIKES.values():
        for name in (a, b):
            assert skeleton(skeleton(name)) == skeleton(name)
            assert not any(is_default_ignorable(ch) for ch in skeleton(name))


@given(st.text(max_size=40))
def test_skeletons_are_fixed_points(text: str) -> None:
    once = skeleton(text)
    assert skeleton(once) == once
    assert lookalike_keys(text) == lookalike_keys(text)


def test_disguised_characters_are_the_non_ascii_lookalikes_and_the_invisible() -> None:
    assert [ch for ch in "g\u0435neral" if is_disguised(ch)] == ["\u0435"]
    assert is_disguised("\u200d") and is_disguised("\u202e")
    assert not any(is_disguised(ch) for ch in "alice1mI")  # ASCII is spelled as it is
    assert not any(is_disguised(ch) for ch in "\u65e5\u672c\u8a9e")  # ordinary CJK


# The vendored table is what the package says --------------------------------------------------

def prototypes_from_package() -> dict[str, str]:
    """confusables.txt's source -> prototype mapping, from confusable-homoglyphs' data file.

    The package stores the pairs both ways ({source: [target], target: [source, ...]}), built
    line by line in file order, so a source is a key with exactly one entry, created before
    its target's key; a character is never both a source and a target (the prototypes are
    fixed points). Right-to-left characters are stored between U+200E marks, which go."""
    text = resources.files("confusable_homoglyphs").joinpath("confusables.json").read_text(
        encoding="utf-8")
    pairs = json.loads(text)
    order = {key: n for n, key in enumerate(pairs)}
    table: dict[str, str] = {}
    for key, entries in pairs.items():
        if len(entries) != 1:
            continue  # a prototype with several sources
        other = entries[0]["c"]
        back = pairs.get(other, [])
        if len(back) == 1 and back[0]["c"] == key and order[other] < order[key]:
            continue  # a prototype with one source, which came first
        table[key.replace("\u200e", "")] = other.replace("\u200e", "")
    return table


def table_file(table: dict[str, str]) -> str:
    entries = " ".join(
        f"{ord(source):X}:" + "+".join(f"{ord(ch):X}" for ch in target)
        for source, target in sorted(table.items()))
    body = "\n".join(textwrap.wrap(entries, 96))
    return f"""# Unicode TS #39 confusable prototypes, for core/names.py. GENERATED: do not edit.
#
# Made by `python -m tests.core.test_names` from the data of {PACKAGE} {version(PACKAGE)}
# (MIT), which is Unicode's confusables.txt 13.0.0 (Copyright Unicode, Inc.; Unicode License,
# https://www.unicode.org/license.txt). Each entry is SOURCE:TARGET in hexadecimal code points,
# "+" between the points of a longer target.
{body}
"""


def test_vendored_table_matches_the_package() -> None:
    table = prototypes_from_package()
    assert len(table) > 6000
    assert all(len(source) == 1 for source in table)
    assert not any(ch in table for target in table.values() for ch in target), \
        "a prototype maps further: the direction was read wrongly"
    assert table["\u0430"] == "a" and table["I"] == "l" and table["m"] == "rn"
    assert TABLE.read_text(encoding="utf-8") == table_file(table), \
        "core/confusables.txt is stale: run python -m tests.core.test_names"


if __name__ == "__main__":
    TABLE.write_text(table_file(prototypes_from_package()), encoding="utf-8")
    print(f"wrote {TABLE}", file=sys.stderr)
