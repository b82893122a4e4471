"""Where comment cards go beside the editor, decided without Qt (ui/doc_comments.py draws them):
how a comment's range follows edits, how cards stack without overlapping, and what each card
shows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from app.records import CommentInfo, CommentsView
from app.text_edits import minimal_edits

from ._rows import time_label
from .timeline import author_names

CARD_GAP = 6  # px between stacked cards
QUOTE_SHOWN = 80  # codepoints of a comment's words its card shows
Edit = tuple[int, int, str]  # (position, delete count, inserted text), in codepoints


def follow(position: int, edits: Sequence[Edit], *, after: bool) -> int:
    """Where `position` is once `edits` (in the order app.documents.minimal_edits gives them)
    are made. Text inserted exactly at it goes before it when `after` (a comment's start sticks
    to the character after it), else after it (its end, to the character before); a position
    in deleted text goes to where that text was."""
    for at, delete, insert in edits:
        if at + delete < position or (at + delete == position and (delete or after)):
            position += len(insert) - delete
        elif at < position:
            position = at + (len(insert) if after else 0)
    return position


def carried(old: str, new: str, start: int, end: int) -> tuple[int, int]:
    """The range [start, end) of `old` in `new` (see `follow`)."""
    if old == new:
        return start, end
    edits = minimal_edits(old, new)
    return follow(start, edits, after=True), follow(end, edits, after=False)


def stack(wanted: Sequence[int], heights: Sequence[int], gap: int = CARD_GAP) -> list[int]:
    """Tops for cards that want to sit at `wanted` (in that order, top to bottom): as wanted,
    or just below the card above when it would overlap it."""
    tops: list[int] = []
    bottom = None  # of the card above, with the gap
    for want, height in zip(wanted, heights, strict=True):
        tops.append(want if bottom is None else max(want, bottom))
        bottom = tops[-1] + height + gap
    return tops


def shown_quote(quote: str, limit: int = QUOTE_SHOWN) -> str:
    """A comment's words as its card shows them: on one line, cut at `limit`."""
    one_line = " ".join(quote.split())
    return f"“{one_line if len(one_line) <= limit else one_line[:limit] + '…'}”"


@dataclass(frozen=True)
class Card:
    """What one comment's card shows, and what it offers."""

    comment: CommentInfo
    name: str
    when: str
    quote: str
    replies: tuple[tuple[bytes, str, str, str], ...]  # (author, name, when, text)
    can_resolve: bool
    resolved: str  # "Resolved by ada", or "" while open


def cards(view: CommentsView, me: bytes) -> list[Card]:
    """The cards of a view, in its order: names as the history names people (a key suffix for
    lookalikes), and Resolve for the comment's author and the editors."""
    authors = [c.author for c in view.comments] + [
        r.author for c in view.comments for r in c.replies] + [
        c.resolved_by for c in view.comments if c.resolved_by is not None]
    named = author_names(view.names, authors)
    return [Card(c, named[c.author], time_label(c.ts), shown_quote(c.quote),
                 tuple((r.author, named[r.author], time_label(r.ts), r.text) for r in c.replies),
                 not c.resolved and (me == c.author or me in view.editors),
                 f"Resolved by {named[c.resolved_by]}" if c.resolved_by is not None else "")
            for c in view.comments]


# Widgets -------------------------------------------------------------------------------------

