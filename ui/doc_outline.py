"""A Markdown document's outline, decided without Qt: its headings, each with its level, its
title and where its line starts, for the outline beside the editor (ui/doc_preview.py).

It reads the headings CommonMark reads: ATX ("## Goals", closing #s dropped) and setext (a
paragraph underlined with === or ---), leaving out what is in fenced or indented code blocks,
and a --- after a blank line (a rule). A heading inside a quote or a list is not in the outline.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ._markdown import FENCE, closes_fence

_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_ONLY_HASHES = re.compile(r"#+")
_SETEXT = re.compile(r" {0,3}(=+|-+)[ \t]*$")
# Lines that start another kind of block: they neither start nor continue a paragraph that a
# setext underline could make a heading.
_OTHER_BLOCK = re.compile(r" {0,3}(?:>|[-+*][ \t]|\d{1,9}[.)][ \t]|[-+*]$|(?:[-*_][ \t]*){3,}$)")


@dataclass(frozen=True)
class Heading:
    level: int  # 1 to 6
    title: str  # as written, spaces collapsed
    position: int  # codepoint offset of its first line in the text


def headings(text: str) -> list[Heading]:
    """The headings of Markdown `text`, in order."""
    found: list[Heading] = []
    fence: str | None = None  # the open fence's characters
    paragraph: list[str] = []  # the lines of the paragraph read so far
    paragraph_at = 0
    previous_blank = True
    offset = 0
    for line in text.split("\n"):
        at, offset = offset, offset + len(line) + 1
        blank = not line.strip()
        if fence is not None:
            if closes_fence(line, fence):
                fence = None
            previous_blank = False
            continue
        if (match := FENCE.match(line)) is not None and not (
                match.group(1)[0] == "`" and "`" in line[match.end():]):
            fence, paragraph = match.group(1), []
        elif blank:
            paragraph = []
        elif not paragraph and previous_blank and line.startswith(("    ", "\t")):
            pass  # indented code
        elif (atx := _ATX.match(line)) is not None:
            title = atx.group(2) or ""
            if _ONLY_HASHES.fullmatch(title):
                title = ""
            if title.strip():
                found.append(Heading(len(atx.group(1)), _collapse(title), at))
            paragraph = []
        elif paragraph and (setext := _SETEXT.match(line)) is not None:
            level = 1 if setext.group(1)[0] == "=" else 2
            found.append(Heading(level, _collapse(" ".join(paragraph)), paragraph_at))
            paragraph = []
        elif _OTHER_BLOCK.match(line):
            paragraph = []
        else:
            if not paragraph:
                paragraph_at = at
            paragraph.append(line.strip())
        previous_blank = blank
    return found


def _collapse(title: str) -> str:
    return " ".join(title.split())
