"""Others' cursors in a document, decided without Qt: who is where, until when, and how a
position in one text maps onto another (ui/doc_presence.py shows them; tests run without a
display).

A presence names a selection in codepoints of the text at a set of commits (its `heads`).
`map_position` carries a position from one text to another across the difference between
them: the sender maps its cursor from its editor (which may hold typing not committed yet) onto
the text at its heads, and the receiver from the text at those heads onto its own editor.
`PresenceBook` keeps each person's latest presence per document until it expires or they leave.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# The changed middle of two texts is matched character by character up to this many pairs;
# beyond it, a position inside the change goes to the change's start.
MATCH_LIMIT = 4_000_000


def common_prefix(a: str, b: str) -> int:
    """How many leading codepoints `a` and `b` share (slices compared by halves, so a long
    document costs a few C-speed comparisons, not a Python loop per character)."""
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def common_suffix(a: str, b: str, limit: int) -> int:
    """How many trailing codepoints `a` and `b` share, at most `limit`."""
    low, high = 0, min(len(a), len(b), limit)
    while low < high:
        middle = (low + high + 1) // 2
        if a[len(a) - middle:len(a) - low] == b[len(b) - middle:len(b) - low]:
            low = middle
        else:
            high = middle - 1
    return low


def map_position(old: str, new: str, position: int) -> int:
    """Where codepoint `position` of `old` is in `new`: it keeps its characters where they
    were kept, and a position in text that is gone goes to where that text was (a position
    exactly where text was inserted stays before it). Clamped to `old`'s length."""
    position = max(0, min(position, len(old)))
    if old == new:
        return position
    start = common_prefix(old, new)
    end = common_suffix(old, new, min(len(old), len(new)) - start)
    if position <= start:
        return position
    if position >= len(old) - end:
        return position + len(new) - len(old)
    a, b = old[start:len(old) - end], new[start:len(new) - end]
    offset = position - start
    if len(a) * len(b) > MATCH_LIMIT:
        return start
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for tag, i1, i2, j1, _ in matcher.get_opcodes():
        if i1 <= offset < i2:
            return start + (j1 + offset - i1 if tag == "equal" else j1)
    return start + len(b)  # not reached: offset < len(a)


@dataclass(frozen=True)
class Presence:
    """One person's selection in a document: from `anchor` to `at`, codepoints of the text
    at the commits `heads` (hex) of `branch`; shown until `expires` (time.monotonic())."""

    key: bytes
    doc: bytes
    branch: str
    heads: tuple[str, ...]
    anchor: int
    at: int
    expires: float

    def refers_to(self, heads: list[str]) -> bool:
        """Whether its positions are in the text at `heads` (the same set of commits)."""
        return sorted(self.heads) == sorted(heads)


class PresenceBook:
    """The latest presence of each person in each document, until it expires or they leave."""

    def __init__(self) -> None:
        self._book: dict[tuple[bytes, bytes], Presence] = {}

    def heard(self, presence: Presence) -> None:
        self._book[(presence.key, presence.doc)] = presence

    def left(self, key: bytes, doc: bytes) -> bool:
        """They closed `doc`; whether they were there."""
        return self._book.pop((key, doc), None) is not None

    def expire(self, now: float) -> list[Presence]:
        """Forget every presence whose time is over at `now`; returns them."""
        gone = [p for p in self._book.values() if p.expires <= now]
        for presence in gone:
            del self._book[(presence.key, presence.doc)]
        return gone

    def next_expiry(self) -> float | None:
        return min((p.expires for p in self._book.values()), default=None)

    def in_document(self, doc: bytes) -> list[Presence]:
        """Who is in `doc` (on any branch)."""
        return [p for (_, d), p in self._book.items() if d == doc]

    def get(self, key: bytes, doc: bytes) -> Presence | None:
        return self._book.get((key, doc))

    def clear(self) -> None:
        self._book.clear()
