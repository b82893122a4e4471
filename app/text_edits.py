"""Edits that turn one text into another, touching only what changed: what the window
commits when someone types (positions in codepoints, as core.documents takes them)."""

from __future__ import annotations

import difflib

from core.documents import Edit


def minimal_edits(old: str, new: str) -> list[Edit]:
    """Edits (in codepoints) that turn `old` into `new`, touching only what changed."""
    start = 0
    limit = min(len(old), len(new))
    while start < limit and old[start] == new[start]:
        start += 1
    end_old, end_new = len(old), len(new)
    while end_old > start and end_new > start and old[end_old - 1] == new[end_new - 1]:
        end_old -= 1
        end_new -= 1
    a, b = old[start:end_old], new[start:end_new]
    if not a or not b or len(a) * len(b) > 4_000_000:  # one replacement is already minimal
        return [(start, len(a), b)] if a or b else []
    edits: list[Edit] = []
    shift = 0  # positions move as earlier edits change the length
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            edits.append((start + i1 + shift, i2 - i1, b[j1:j2]))
            shift += (j2 - j1) - (i2 - i1)
    return edits
