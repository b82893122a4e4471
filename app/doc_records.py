"""The records of documents as the window and the commands show them: a document's summary,
a diff with its authors, a merge's preview with its conflicts, a merge made. Frozen values;
app/review.py makes the diffs and previews, app/documents.py the rest."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.documents import RESOLUTIONS

from .errors import WorkspaceError
from .unified_diff import unified

ALREADY_MERGED = "already merged, nothing to do"
# What the document pane says of a branch this holder cannot read or change.
ONLY_EDITORS = ("Only its editors can read it: ask one of them to share it or add you as an "
                "editor.")
READ_ONLY = "You can read this branch; only its editors can change it."
KEY_NOT_HERE = ("The whole workspace can read it, but its key has not arrived here yet; it "
                "opens once sync brings it.")
ALREADY = "the branch already reads like that"
__all__ = ["ALREADY", "ALREADY_MERGED", "KEY_NOT_HERE", "ONLY_EDITORS", "READ_ONLY", "RESOLUTIONS", "Conflict", "DocDiff", "DocumentSummary", "Hunk",
           "MergeConflicts", "MergePreview", "Merged", "Region", "Segment", "hunks"]


@dataclass(frozen=True)
class DocumentSummary:
    id: str
    title: str
    creator: bytes
    ts: int


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


class MergeConflicts(WorkspaceError):
    """A merge that found conflicts and was not told how to resolve them: nothing changed.
    `preview` holds them (MergePreview.conflicts)."""

    def __init__(self, preview: MergePreview):
        n = len(preview.conflicts)
        source, target = shlex.quote(preview.source), shlex.quote(preview.target)
        command = (f"hearth doc merge {preview.doc[:12]} --from {source} --into {target} "
                   "--prefer ours|theirs|both")
        super().__init__(
            f"{preview.source} and {preview.target} changed the same text in {n} "
            f"place{'s' if n != 1 else ''}; nothing was merged. Choose how to resolve "
            f"{'them' if n != 1 else 'it'}: `{command}`")
        self.preview = preview


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
