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
from dataclasses import dataclass, field

import fast_diff_match_patch as dmp

from core.documents import RESOLUTIONS

ALREADY_MERGED = "already merged, nothing to do"
CONTEXT_LINES = 3  # around each hunk of a unified diff, as diff -u
# Seconds one diff may take: diff-match-patch is about quadratic on text that has little in
# common (240,000 such characters took minutes), and it runs on the Node's thread. Past this the
# diff is still exact, only coarser (larger replaced runs).
DIFF_TIME_LIMIT_S = 0.5
_LINE_CODES = 0x10000  # lines diffed as characters from here (past every surrogate)


# Records ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Segment:
    """A run of a diff: "=" in both versions, "+" only in the newer, "-" only in the older;
    `author` made the change (None for "=", or when it is not known)."""

    op: str
    text: str
    author: bytes | None = None


@dataclass(frozen=True)
class Hunk:
    """Changes on the same lines: where they start in each version (lines from 1), how many
    lines they span in each, and the segments, unchanged text between changes included."""

    old_line: int
    old_lines: int
    new_line: int
    new_lines: int
    segments: tuple[Segment, ...]

    @property
    def authors(self) -> tuple[bytes, ...]:
        return tuple(dict.fromkeys(s.author for s in self.segments
                                   if s.op != "=" and s.author is not None))


@dataclass(frozen=True)
class DocDiff:
    """What changed from one version of a document to another, and who changed it."""

    old_ref: str
    new_ref: str
    old_text: str
    new_text: str
    segments: tuple[Segment, ...]  # the newer text with the older one's removals in place
    names: dict[bytes, str] = field(default_factory=dict)  # nicknames of the workspace

    @property
    def hunks(self) -> list[Hunk]:
        return hunks(self.segments)

    @property
    def authors(self) -> tuple[bytes, ...]:
        return tuple(dict.fromkeys(s.author for s in self.segments
                                   if s.op != "=" and s.author is not None))

    def unified(self) -> list[str]:
        return unified(self.old_text, self.new_text, self.old_ref, self.new_ref)


@dataclass(frozen=True)
class Region:
    """A part of the base that both sides changed: base[start:end], each side's text of it,
    and where it lies in each side's text and in the CRDT's merged text."""

    start: int
    end: int
    base: str
    ours: str
    theirs: str
    ours_at: tuple[int, int]
    theirs_at: tuple[int, int]
    merged_at: tuple[int, int]
    at_end: bool  # it runs to the end of the text

    @property
    def conflict(self) -> bool:
        return self.ours != self.theirs


@dataclass(frozen=True)
class Conflict:
    """One conflict of a merge: where it is, each side's text and who wrote each side."""

    index: int  # from 0, in the order of the text
    lines: tuple[int, int]  # first and last line of it in the target (ours), from 1
    base: str
    ours: str
    theirs: str
    ours_authors: tuple[bytes, ...] = ()
    theirs_authors: tuple[bytes, ...] = ()


@dataclass(frozen=True)
class MergePreview:
    """What merging `source` into `target` would make: the merged text as parts (plain text,
    and the index of a conflict where one is), read at those heads."""

    doc: str  # the document's id (hex)
    source: str
    target: str
    source_heads: tuple[str, ...]
    target_heads: tuple[str, ...]
    merged: str  # what the CRDT alone makes of both
    regions: tuple[Region, ...]
    conflicts: tuple[Conflict, ...]
    names: dict[bytes, str] = field(default_factory=dict)
    # The target already holds every commit of the source (merged before, and the source has
    # not moved since): merging adds nothing.
    already_merged: bool = False

    @property
    def parts(self) -> list[str | int]:
        """The result, as plain text and conflict indexes in order."""
        out: list[str | int] = []
        at, n = 0, 0
        for region in self.regions:
            start, end = region.merged_at
            out.append(self.merged[at:start])
            if region.conflict:
                out.append(n)
                n += 1
            else:
                out.append(region.ours)
            at = end
        out.append(self.merged[at:])
        return [p for p in out if p != ""]

    def resolved(self, index: int, choice: str) -> str:
        """Conflict `index`'s text when resolved by `choice` (one of RESOLUTIONS)."""
        region = [r for r in self.regions if r.conflict][index]
        return _resolve(region, choice, self.target, self.source)

    def text(self, choices: Sequence[str]) -> str:
        """The result with each conflict resolved as chosen (one choice per conflict)."""
        return "".join(p if isinstance(p, str) else self.resolved(p, choices[p])
                       for p in self.parts)

    def replacements(self, choices: Sequence[str]) -> list[tuple[int, int, str]]:
        """What turns `merged` into `text(choices)`: (start, end, text) of `merged`, in order,
        one per region."""
        if len(choices) != sum(r.conflict for r in self.regions):
            raise ValueError("one choice per conflict")
        out, n = [], 0
        for region in self.regions:
            if region.conflict:
                wanted = _resolve(region, choices[n], self.target, self.source)
                n += 1
            else:
                wanted = region.ours
            out.append((*region.merged_at, wanted))
        return out


@dataclass(frozen=True)
class Merged:
    """A merge made: its commit, the conflicts it found and how each was resolved. `commit` is
    None when the target already held all of the source: nothing was committed."""

    commit: str | None
    conflicts: tuple[Conflict, ...]
    resolutions: tuple[str, ...]


# Diffs --------------------------------------------------------------------------------------

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
                best = min(named, key=lambda k, n=n: (out[k].op != out[n].op, abs(k - n)))
                out[n] = Segment(out[n].op, out[n].text, out[best].author)
        start = end
    joined: list[Segment] = []
    for segment in out:
        if joined and joined[-1].op == segment.op and joined[-1].author == segment.author:
            joined[-1] = Segment(segment.op, joined[-1].text + segment.text, segment.author)
        else:
            joined.append(segment)
    return tuple(joined)


def hunks(segments: Sequence[Segment]) -> list[Hunk]:
    """The changed segments grouped by line: changes with no line break between them are one
    hunk (the unchanged text between them included). A hunk starts at the line of its first
    change in each version and spans the lines its removed (older) and inserted (newer)
    characters are on (0 on a side it has no characters of)."""
    out: list[Hunk] = []
    line = {"-": 1, "+": 1}  # the line each version is at
    current: list[Segment] = []
    start = {"-": 1, "+": 1}
    last: dict[str, int] = {}

    def close() -> None:
        while current and current[-1].op == "=":
            current.pop()
        if current:
            spans = {op: last[op] - start[op] + 1 if op in last else 0 for op in "-+"}
            out.append(Hunk(start["-"], spans["-"], start["+"], spans["+"], tuple(current)))
            current.clear()
            last.clear()

    for segment in segments:
        breaks = segment.text.count("\n")
        if segment.op == "=" and (breaks or not current):
            close()
        elif not current:
            start = dict(line)
        if segment.op != "=" or current:
            current.append(segment)
        for op in ("-", "+"):
            if segment.op in ("=", op):
                if segment.op == op and segment.text:
                    last[op] = line[op] + segment.text[:-1].count("\n")
                line[op] += breaks
    close()
    return out


def unified(old: str, new: str, old_label: str, new_label: str,
            context: int = CONTEXT_LINES) -> list[str]:
    """A unified diff (as `diff -u` prints it) of two texts' lines, as lines without their
    line breaks; [] when the texts are equal."""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    codes: dict[str, str] = {}

    def encode(lines: list[str]) -> str:
        return "".join(codes.setdefault(line, chr(_LINE_CODES + len(codes))) for line in lines)

    ops = dmp.diff(encode(a), encode(b), timelimit=DIFF_TIME_LIMIT_S, checklines=False,
                   cleanup="No", counts_only=True)
    opcodes: list[tuple[str, int, int, int, int]] = []
    i = j = 0
    for op, n in ops:
        di, dj = (n, n) if op == "=" else (n, 0) if op == "-" else (0, n)
        opcodes.append((op, i, i + di, j, j + dj))
        i, j = i + di, j + dj
    if all(op == "=" for op, *_ in opcodes):
        return []
    out = [f"--- {old_label}", f"+++ {new_label}"]
    for group in _grouped(opcodes, context):
        i1, i2 = group[0][1], group[-1][2]
        j1, j2 = group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@")
        for op, s1, e1, s2, e2 in group:
            if op == "=":
                out += _prefixed(" ", a, s1, e1)
            elif op == "-":
                out += _prefixed("-", a, s1, e1)
            else:
                out += _prefixed("+", b, s2, e2)
    return out


def _range(start: int, stop: int) -> str:
    length = stop - start
    first = start + 1 if length else start
    return str(first) if length == 1 else f"{first},{length}"


def _prefixed(mark: str, lines: list[str], start: int, stop: int) -> list[str]:
    out = []
    for line in lines[start:stop]:
        out.append(mark + line.rstrip("\r\n"))
        if not line.endswith("\n"):
            out.append("\\ No newline at end of file")
    return out


def _grouped(opcodes: list[tuple[str, int, int, int, int]],
             context: int) -> list[list[tuple[str, int, int, int, int]]]:
    """Changes with up to `context` unchanged lines around them, those closer than twice that
    together (difflib's grouping)."""
    codes = list(opcodes)
    if codes[0][0] == "=":
        op, i1, i2, j1, j2 = codes[0]
        codes[0] = op, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0] == "=":
        op, i1, i2, j1, j2 = codes[-1]
        codes[-1] = op, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups, group = [], []
    for op, i1, i2, j1, j2 in codes:
        if op == "=" and i2 - i1 > 2 * context:
            group.append((op, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((op, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "="):
        groups.append(group)
    return [g for g in groups if any(op != "=" for op, *_ in g)]


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


def _resolve(region: Region, choice: str, ours_label: str, theirs_label: str) -> str:
    if choice == "ours":
        return region.ours
    if choice == "theirs":
        return region.theirs
    if choice != "both":
        raise ValueError(f"a conflict is resolved by one of {', '.join(RESOLUTIONS)}")

    def block(text: str) -> str:
        return text if not text or text.endswith("\n") else text + "\n"
    closing = "\n" if not region.at_end or region.ours.endswith("\n") \
        or region.theirs.endswith("\n") else ""
    return (f"<<<<<<< {ours_label}\n{block(region.ours)}=======\n{block(region.theirs)}"
            f">>>>>>> {theirs_label}{closing}")


def conflicts(found: Sequence[Region], ours: str, ours_changes, theirs_changes) -> tuple[
        Conflict, ...]:
    """The conflicting regions as Conflicts: lines in `ours` (the target's text), and who
    wrote each side of it (core's Changes from the common past to each side)."""
    out = []
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
