"""Fuzzy matching for the quick switcher, without Qt: typed characters found in order in a name,
scored the way Sublime Text, VS Code and Slack rank their quick-open lists.

A query matches a candidate when its characters (whitespace left out) appear in the candidate in
the same order, not necessarily next to each other: "dsgn" matches "design". Case and accents
are ignored (both sides are folded: NFKD, combining marks dropped, casefolded, so "cafe"
matches "Café" and "strasse" matches "Straße"). When the characters in order do not match and
the query has several words, each word may match on its own, in any order ("review design"
finds "design-review"), for a penalty.

The score of a match is the best over every way of placing the characters (dynamic
programming), each matched character earning MATCH and, where it stands:
  - START at the first letter or digit of the candidate (after any leading "#" or spaces),
  - BOUNDARY at a word start: after a space, "-", "_", ".", "#" or any other non-alphanumeric
    character, at an upper-case letter after a lower-case one (camelCase) or a digit after a
    letter,
  - CONSECUTIVE when it follows the previous matched character directly;
and losing GAP_OPEN + GAP_EXTEND per further skipped character for each gap between two matched
characters, and a point for every LENGTH_STEP characters of the candidate left unmatched.

So a prefix beats a word start beats a middle: "gen" ranks "general" (a prefix run) above
"engineering-gen" (a run at a later word start, in a longer name), and both above
"legend" (a run in the middle of a word). "rn" matches "release-notes" at its two word starts.

Positions are Python string indices (codepoints) into the candidate as given, for highlighting.
Ties in `rank` keep the candidates' own order, so rankings are deterministic.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

MATCH = 16
START = 14
BOUNDARY = 10
CONSECUTIVE = 8
GAP_OPEN = 3
GAP_EXTEND = 1
LENGTH_STEP = 4
WORDS_APART = 8  # matched word by word, not in the order typed


@dataclass(frozen=True)
class Match:
    score: int
    positions: tuple[int, ...]  # indices into the candidate of the characters matched


@dataclass(frozen=True)
class Candidate:
    """A name prepared once for matching many queries against it."""

    text: str  # as given
    folded: str  # casefolded, without accents
    origin: tuple[int, ...]  # folded index -> index into text
    bonus: tuple[int, ...]  # folded index -> START, BOUNDARY or 0


def fold(text: str) -> str:
    """`text` casefolded, with accents and other combining marks removed."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


def _fold_char(ch: str) -> str:
    decomposed = unicodedata.normalize("NFKD", ch)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


def _bonuses(text: str) -> list[int]:
    bonus = []
    started = False
    for i, ch in enumerate(text):
        if not ch.isalnum():
            bonus.append(0)
            continue
        before = text[i - 1] if i else ""
        if not started:
            bonus.append(START)
            started = True
        elif not before.isalnum() or (ch.isupper() and before.islower()) or \
                (ch.isdigit() and not before.isdigit()):
            bonus.append(BOUNDARY)
        else:
            bonus.append(0)
    return bonus


def prepare(text: str) -> Candidate:
    bonus = _bonuses(text)
    if text.isascii():
        return Candidate(text, text.lower(), tuple(range(len(text))), tuple(bonus))
    folded, origin, folded_bonus = [], [], []
    for i, ch in enumerate(text):
        for k, c in enumerate(_fold_char(ch)):
            folded.append(c)
            origin.append(i)
            folded_bonus.append(bonus[i] if k == 0 else 0)  # "ß" -> "ss": the first s
    return Candidate(text, "".join(folded), tuple(origin), tuple(folded_bonus))


def match(query: str, candidate: str | Candidate) -> Match | None:
    """How well `query` matches `candidate`, and where; None when it does not match. An empty
    query matches everything with score 0."""
    if isinstance(candidate, str):
        candidate = prepare(candidate)
    return _match(fold(query).split(), candidate)


def _match(words: list[str], candidate: Candidate) -> Match | None:
    if not words:
        return Match(0, ())
    found = _align("".join(words), candidate)
    if found is not None or len(words) == 1:
        return found
    score, positions = -WORDS_APART, set()
    for word in words:
        part = _align(word, candidate)
        if part is None:
            return None
        score += part.score
        positions.update(part.positions)
    return Match(score, tuple(sorted(positions)))


def rank(query: str, candidates: Sequence[Candidate], boosts: Sequence[int] | None = None,
         among: Iterable[int] | None = None) -> list[tuple[int, Match]]:
    """(index, match) of the candidates that match `query`, best first: by score plus the
    candidate's boost, then by index. `among` limits the indices tried (those that matched a
    shorter query: a longer query never matches more)."""
    words = fold(query).split()
    hits = []
    for i in range(len(candidates)) if among is None else among:
        found = _match(words, candidates[i])
        if found is not None:
            hits.append((found.score + (boosts[i] if boosts else 0), i, found))
    hits.sort(key=lambda hit: (-hit[0], hit[1]))
    return [(i, found) for _, i, found in hits]


def _align(query: str, candidate: Candidate) -> Match | None:
    """The best placement of `query`'s characters, in order, in `candidate.folded`."""
    text, bonus = candidate.folded, candidate.bonus
    # The first and the last place each character can take (greedy from either end).
    first, at = [], -1
    for ch in query:
        at = text.find(ch, at + 1)
        if at < 0:
            return None
        first.append(at)
    last, at = [0] * len(query), len(text)
    for i in range(len(query) - 1, -1, -1):
        at = text.rfind(query[i], 0, at)
        last[i] = at
    # best[i]: (position, score, back) for each place of query[i], by position; back is the
    # index in best[i - 1] of the place before it.
    best: list[list[tuple[int, int, int]]] = []
    for i, ch in enumerate(query):
        row: list[tuple[int, int, int]] = []
        at = text.find(ch, first[i])
        if i == 0:
            while 0 <= at <= last[i]:
                row.append((at, MATCH + bonus[at], -1))
                at = text.find(ch, at + 1)
        else:
            previous = best[-1]
            k = 0  # previous places before `at`
            # Best over places k at least two before `at` of score + GAP_EXTEND * k: the gap
            # then costs GAP_OPEN + GAP_EXTEND * (at - k - 2).
            far, far_back = None, -1
            while 0 <= at <= last[i]:
                while k < len(previous) and previous[k][0] < at:
                    pos, score, _ = previous[k]
                    if pos < at - 1 and (far is None or score + GAP_EXTEND * pos > far):
                        far, far_back = score + GAP_EXTEND * pos, k
                    k += 1
                choice, back = None, -1
                if far is not None:
                    choice = far - GAP_OPEN - GAP_EXTEND * (at - 2) + MATCH + bonus[at]
                    back = far_back
                if k and previous[k - 1][0] == at - 1:
                    run = previous[k - 1][1] + MATCH + bonus[at] + CONSECUTIVE
                    if choice is None or run >= choice:
                        choice, back = run, k - 1
                    # the place just before is "far" for every later place
                    pos, score, _ = previous[k - 1]
                    if far is None or score + GAP_EXTEND * pos > far:
                        far, far_back = score + GAP_EXTEND * pos, k - 1
                if choice is not None:
                    row.append((at, choice, back))
                at = text.find(ch, at + 1)
        if not row:
            return None
        best.append(row)
    end = max(range(len(best[-1])), key=lambda j: (best[-1][j][1], -j))
    score = best[-1][end][1] - (len(text) - len(query)) // LENGTH_STEP
    places = []
    for row in reversed(best):
        places.append(row[end][0])
        end = row[end][2]
    positions = dict.fromkeys(candidate.origin[p] for p in reversed(places))  # "ß" matched by "ss"
    return Match(score, tuple(positions))
