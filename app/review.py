"""Reviewing documents without a display: diffs with their authors, and three-way merges that
find their conflicts. Pure functions over texts (and core's `Changes`), with
fast-diff-match-patch (Google's diff-match-patch in C++) for the character diffs.

Diffs. `diff` compares two versions' texts character by character (diff-match-patch with its
semantic clean-up) and names who made each inserted or removed run: core's `Changes` of each
version since their common past say who inserted each character, and who removed each character
of the common text. `unified` is the line diff (`hearth doc diff`), lines compared as single
characters so diff-match-patch does that too.

Merges. Ours is the target branch, theirs the source, base their common past (core's
`Document.common`), merged what the CRDT alone makes of both. Each side's changes since the base
are found by diffing it against the base; where a change of ours and one of theirs touch the
same characters of the base, or insert at the same point, the two conflict. Each conflict grows
to whole lines of the base, and until no change of ours, theirs or the merged text crosses its
edge (so each side's text of it, and where it lies in the merged text, are exact). Elsewhere the
CRDT merge stands: the result is the merged text with each such region replaced, and the edits
turning one into the other are all a merge commit carries besides the CRDT merge. A region where
both sides made the same change is no conflict: it reads as that change once (the CRDT alone
would have doubled an insert both made).

A conflict is resolved "ours" (the target's text of it), "theirs" (the source's), or "both":
ours then theirs between git-style markers, so a reader sees it and any editor that knows them
highlights it:

    <<<<<<< main
    # Roadmap MAIN
    =======
    # Roadmap ALT
    >>>>>>> alt
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import fast_diff_match_patch as dmp

from .doc_records import Conflict, DocDiff, Region, Segment
from .unified_diff import DIFF_TIME_LIMIT_S


def _diff(a: str, b: str) -> list[tuple[str, int]]:
    # checklines: lines first, then characters within the lines that changed; on 100,000
    # characters with 2,000 changes about 6x faster, the diff about as small (bench/doc_review.py).
    return dmp.diff(a, b, timelimit=DIFF_TIME_LIMIT_S, checklines=True, cleanup="Semantic",
                    counts_only=True)


@dataclass(frozen=True)
class _BaseRun:
    text: str
    author: None
    base: int


class _Authors:
    """Who inserted each character of a version, and who removed each character of the base
    it is compared from (core's Changes), looked up by position."""

    def __init__(self, changes, text: str) -> None:
        # No changes: the version is the base itself.
        self.runs = list(changes.runs) if changes is not None else [_BaseRun(text, None, 0)]
        self.starts, at = [], 0
        for run in self.runs:
            self.starts.append(at)
            at += len(run.text)
        self.removed = list(changes.removed) if changes is not None else []
        self.removed_starts = [r.start for r in self.removed]

    def pieces(self, start: int, end: int) -> Iterable[tuple[int, int, bytes | None, int | None]]:
        """[start, end) of the version cut where authors change: (start, end, author, the base
        position of the piece when it was in the base)."""
        n = max(0, bisect.bisect_right(self.starts, start) - 1)
        while start < end:
            if n >= len(self.runs):
                yield start, end, None, None
                return
            run, at = self.runs[n], self.starts[n]
            stop = min(end, at + len(run.text))
            base = None if run.base is None else run.base + start - at
            yield start, stop, run.author, base
            start, n = stop, n + 1

    def remover(self, start: int, end: int) -> Iterable[tuple[int, int, bytes | None]]:
        """Base [start, end) cut where who removed it changes: (start, end, remover or None)."""
        n = max(0, bisect.bisect_right(self.removed_starts, start) - 1)
        while start < end:
            while n < len(self.removed) and self.removed[n].end <= start:
                n += 1
            if n >= len(self.removed) or self.removed[n].start >= end:
                yield start, end, None
                return
            removal = self.removed[n]
            if removal.start > start:
                yield start, removal.start, None
                start = removal.start
            stop = min(end, removal.end)
            yield start, stop, removal.author
            start = stop


def diff(old: str, new: str, older=None, newer=None, *, old_ref: str = "", new_ref: str = "",
         names: dict[bytes, str] | None = None) -> DocDiff:
    """The diff from `old` to `new` with authors: `older` and `newer` are core's Changes from
    the versions' common past to each (None: that version is the common past)."""
    old_authors, new_authors = _Authors(older, old), _Authors(newer, new)
    segments: list[Segment] = []

    def add(op: str, text: str, author: bytes | None) -> None:
        if not text:
            return
        if segments and segments[-1].op == op and segments[-1].author == author:
            segments[-1] = Segment(op, segments[-1].text + text, author)
        else:
            segments.append(Segment(op, text, author))

    def side(op: str, text: str, at: int, n: int, mine: _Authors, other: _Authors) -> None:
        """`n` characters of `text` from `at`, inserted ("+", new) or removed ("-", old),
        each by who wrote it on that side; what that side has from the common past was
        removed on the other side, by whoever removed it there."""
        for start, end, author, base in mine.pieces(at, at + n):
            if author is None and base is not None:
                for s, e, remover in other.remover(base, base + end - start):
                    add(op, text[start + s - base:start + e - base], remover)
            else:
                add(op, text[start:end], author)

    i = j = 0
    for op, n in _diff(old, new):
        if op == "=":
            add("=", new[j:j + n], None)
            i, j = i + n, j + n
        elif op == "+":
            side("+", new, j, n, new_authors, old_authors)
            j += n
        else:
            side("-", old, i, n, old_authors, new_authors)
            i += n
    return DocDiff(old_ref, new_ref, old, new, _attributed(segments), dict(names or {}))


def _attributed(segments: list[Segment]) -> tuple[Segment, ...]:
    """Runs of a change that no one is named for take the author of the change around them.
    The text diff may say a character was removed and put back (it lines "beta" up against
    "BETA by bob" as a whole) where the CRDT kept it: then nobody removed it, yet it is part
    of bob's change."""
    out = list(segments)
    start = 0
    while start < len(out):
        if out[start].op == "=":
            start += 1
            continue
        end = start
        while end < len(out) and out[end].op != "=":
            end += 1
        named = [k for k in range(start, end) if out[k].author is not None]
        for n in range(start, end):
            if out[n].author is None and named:
                # the nearest named segment, one of the same kind first (the first of equals)
                best = min((out[k].op != out[n].op, abs(k - n), k) for k in named)[2]
                out[n] = Segment(out[n].op, out[n].text, out[best].author)
        start = end
    joined: list[Segment] = []
    for segment in out:
        if joined and joined[-1].op == segment.op and joined[-1].author == segment.author:
            joined[-1] = Segment(segment.op, joined[-1].text + segment.text, segment.author)
        else:
            joined.append(segment)
    return tuple(joined)


# Merges -------------------------------------------------------------------------------------

@dataclass
class _Change:
    """A change of one side: base[start:end] became that side's [at:to]."""

    start: int
    end: int
    at: int
    to: int

    def touches(self, start: int, end: int, length: int) -> bool:
        """Whether it changes something in base[start:end] or inserts there (at `end` only when
        that is the end of the text)."""
        if self.start == self.end:
            return start <= self.start < end or self.start == end == length
        return self.start < end and self.end > start


def _changes(base: str, text: str) -> list[_Change]:
    out: list[_Change] = []
    b = x = 0
    current: _Change | None = None
    for op, n in _diff(base, text):
        if op == "=":
            if current is not None:
                out.append(current)
                current = None
            b, x = b + n, x + n
            continue
        if current is None:
            current = _Change(b, b, x, x)
        if op == "-":
            b += n
            current.end = b
        else:
            x += n
            current.to = x
    if current is not None:
        out.append(current)
    return out


def _clash(a: _Change, b: _Change) -> bool:
    """Whether a change of ours and one of theirs touch the same part of the base."""
    if a.start == a.end and b.start == b.end:
        return a.start == b.start
    if a.start == a.end:
        return b.start < a.start < b.end
    if b.start == b.end:
        return a.start < b.start < a.end
    return a.start < b.end and b.start < a.end


def _whole_lines(base: str, start: int, end: int) -> tuple[int, int]:
    first = base.rfind("\n", 0, start) + 1
    last = base.find("\n", end - 1 if end > start else start)
    return first, (last + 1 if last >= 0 else len(base))


def _shifts(changes: list[_Change]) -> list[int]:
    """How far each change and those before it moved the text: [0, after 1st, after 2nd...]."""
    out = [0]
    for change in changes:
        out.append(out[-1] + (change.to - change.at) - (change.end - change.start))
    return out


def _position(changes: list[_Change], ends: list[int], shifts: list[int], p: int,
              base_length: int, length: int, *, end: bool) -> int:
    """Where base position `p` (an edge of a region, which no change crosses) is in a side's
    text: before whatever that side inserted at `p`, except at the end of the base, where a
    region's `end` is the end of the side's text."""
    if end and p == base_length:
        return length
    k = bisect.bisect_left(ends, p)  # the changes ending before p moved it...
    if k < len(changes) and ends[k] == p and changes[k].start < p:
        k += 1  # ...and one that ends at it, but not an insert there
    return p + shifts[k]


def _near(changes: list[_Change], ends: list[int], start: int, end: int) -> list[_Change]:
    """The changes (one side's: apart and in order) that may touch base[start:end]."""
    out = []
    for k in range(bisect.bisect_left(ends, start), len(changes)):
        if changes[k].start > end:
            break
        out.append(changes[k])
    return out


def regions(base: str, ours: str, theirs: str, merged: str) -> list[Region]:
    """The parts of the base that both sides changed (see the module's docstring), in order."""
    sides = [_changes(base, text) for text in (ours, theirs, merged)]  # each apart, in order
    ends = [[c.end for c in changes] for changes in sides]
    spans = [_whole_lines(base, min(a.start, b.start), max(a.end, b.end))
             for a in sides[0] for b in _near(sides[1], ends[1], a.start, a.end)
             if _clash(a, b)]
    length = len(base)
    grown: list[tuple[int, int]] = []
    for span in spans:
        while True:  # until no change of any side crosses an edge
            start, end = span
            lo, hi = start, end
            for changes, side_ends in zip(sides, ends, strict=True):
                for change in _near(changes, side_ends, start, end):
                    if change.touches(start, end, length):
                        lo, hi = min(lo, change.start), max(hi, change.end)
            if (lo, hi) == (start, end):
                break
            span = _whole_lines(base, lo, hi)
        grown.append(span)
    joined: list[tuple[int, int]] = []
    for start, end in sorted(grown):
        if joined and start < joined[-1][1] or joined and (start, end) == joined[-1]:
            joined[-1] = (joined[-1][0], max(end, joined[-1][1]))
        else:
            joined.append((start, end))
    texts = (ours, theirs, merged)
    moved = [_shifts(changes) for changes in sides]
    out = []
    for start, end in joined:
        at = [(_position(changes, side_ends, shifts, start, length, len(text), end=False),
               _position(changes, side_ends, shifts, end, length, len(text), end=True))
              for changes, side_ends, shifts, text in zip(sides, ends, moved, texts,
                                                          strict=True)]
        out.append(Region(start, end, base[start:end], ours[slice(*at[0])],
                          theirs[slice(*at[1])], at[0], at[1], at[2], end == length))
    return out


def conflicts(found: Sequence[Region], ours: str, ours_changes, theirs_changes) -> tuple[
        Conflict, ...]:
    """The conflicting regions as Conflicts: lines in `ours` (the target's text), and who
    wrote each side of it (core's Changes from the common past to each side)."""
    out: list[Conflict] = []
    for region in (r for r in found if r.conflict):
        start, end = region.ours_at
        lines = (ours.count("\n", 0, start) + 1, ours.count("\n", 0, max(start, end - 1)) + 1)
        out.append(Conflict(len(out), lines, region.base, region.ours, region.theirs,
                            _wrote(ours_changes, region, region.ours_at),
                            _wrote(theirs_changes, region, region.theirs_at)))
    return tuple(out)


def _wrote(changes, region: Region, at: tuple[int, int]) -> tuple[bytes, ...]:
    """Who inserted text of a side within `at`, or removed base text within the region."""
    authors = _Authors(changes, "")
    start, end = at
    found = [author for _, _, author, _ in authors.pieces(start, end) if author is not None]
    found += [r.author for r in authors.removed if r.start < region.end and r.end > region.start]
    return tuple(dict.fromkeys(found))
