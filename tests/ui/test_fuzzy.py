"""The quick switcher's fuzzy matcher (ui/_fuzzy.py), without Qt: what matches, where, and in
which order."""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

from hypothesis import example, given, settings
from hypothesis import strategies as st

from ui._fuzzy import (
    CONSECUTIVE,
    GAP_EXTEND,
    GAP_OPEN,
    LENGTH_STEP,
    MATCH,
    Match,
    fold,
    match,
    prepare,
    rank,
)


def ranked(query: str, names: list[str]) -> list[str]:
    candidates = [prepare(name) for name in names]
    return [names[i] for i, _ in rank(query, candidates)]


def test_ui_fuzzy_imports_no_qt():
    probe = "import sys, ui._fuzzy; print(any(m.startswith('PySide6') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2], timeout=60, check=True)
    assert result.stdout.strip() == "False"


def test_the_typed_characters_match_in_order_anywhere_in_the_name():
    assert match("dsgn", "design").positions == (0, 2, 4, 5)
    assert match("ngsd", "design") is None
    assert match("xyz", "design") is None
    assert match("designs", "design") is None
    assert match("", "design") == Match(0, ())


def test_a_prefix_ranks_above_a_later_word_start_above_a_middle():
    # The intended order for "gen": the name it starts, then a word it starts in a longer
    # name, then letters inside a word.
    assert ranked("gen", ["legend", "engineering-gen", "general"]) == \
        ["general", "engineering-gen", "legend"]
    assert match("gen", "engineering-gen").positions == (12, 13, 14)


def test_initials_match_at_word_starts():
    assert match("rn", "release-notes").positions == (0, 8)
    assert ranked("rn", ["corner", "release-notes"]) == ["release-notes", "corner"]
    # Every separator and camelCase start a word.
    for name in ("release notes", "release_notes", "release.notes", "release#notes",
                 "releaseNotes"):
        assert match("rn", name).positions == (0, 8 if "N" not in name else 7), name
    assert ranked("fb", ["fabric", "FooBar"]) == ["FooBar", "fabric"]


def test_a_run_of_consecutive_characters_beats_scattered_ones():
    assert match("des", "dense-sheet").positions == (0, 1, 6)  # the s that starts "sheet"
    assert ranked("des", ["dense-sheet", "design"]) == ["design", "dense-sheet"]
    # The best placement, not the first one found: "notes" is the run at the end.
    assert match("notes", "no time for notes").positions == (12, 13, 14, 15, 16)


def test_a_longer_name_ranks_below_a_shorter_one_matched_alike():
    assert ranked("general", ["general-chat-archive", "general"]) == \
        ["general", "general-chat-archive"]


def test_case_and_accents_are_ignored():
    assert match("CAFE", "Café").positions == (0, 1, 2, 3)
    assert match("café", "CAFE").positions == (0, 1, 2, 3)
    assert match("strasse", "Straße").positions == (0, 1, 2, 3, 4, 5)  # "ss" is the one ß
    assert match("uber", "Über-Plan").positions == (0, 1, 2, 3)
    assert fold("Ünïcödé") == "unicode"


def test_words_typed_out_of_order_still_match_for_less():
    in_order = match("design rev", "design-review")
    assert in_order.positions == (0, 1, 2, 3, 4, 5, 7, 8, 9)
    reversed_words = match("rev design", "design-review")
    assert reversed_words.positions == in_order.positions
    assert reversed_words.score < in_order.score
    assert match("rev xyz", "design-review") is None


def test_ties_keep_the_given_order():
    names = ["# ops-b", "# ops-a", "# ops-c"]
    assert ranked("ops", names) == names
    assert [i for i, _ in rank("ops", [prepare(n) for n in names], boosts=[0, 0, 1])] == \
        [2, 0, 1]


def test_rank_among_keeps_only_the_indices_given():
    candidates = [prepare(n) for n in ("design", "dense", "daily")]
    assert [i for i, _ in rank("de", candidates, among=[1, 2])] == [1]


# The score is the best over every placement ---------------------------------------------------

def brute_force(query: str, name: str) -> int | None:
    """The documented score, by trying every placement of the query's characters."""
    candidate = prepare(name)
    text, bonus = candidate.folded, candidate.bonus
    query = "".join(fold(query).split())
    best = None
    for places in itertools.combinations(range(len(text)), len(query)):
        if any(text[p] != ch for p, ch in zip(places, query, strict=True)):
            continue
        score = 0
        for n, p in enumerate(places):
            score += MATCH + bonus[p]
            if n and p == places[n - 1] + 1:
                score += CONSECUTIVE
            elif n:
                score -= GAP_OPEN + GAP_EXTEND * (p - places[n - 1] - 2)
        score -= (len(text) - len(query)) // LENGTH_STEP
        best = score if best is None else max(best, score)
    return best


names = st.text(alphabet="abAB-_ .", min_size=1, max_size=9)
queries = st.text(alphabet="abB-", min_size=1, max_size=4)


@settings(max_examples=400)
@given(queries, names)
@example("aba", "ab-ba")  # the b right after the first a, or the one before the last
def test_the_score_is_the_best_of_every_placement(query, name):
    found = match(query, name)
    expected = brute_force(query, name)
    assert (found and found.score) == expected
    if found:
        assert list(found.positions) == sorted(set(found.positions))
        assert "".join(fold(name[p]) for p in found.positions) == fold(query)


@given(st.text(alphabet="aéEß", min_size=1, max_size=3), st.text(alphabet="aAéÉßs", max_size=6))
def test_positions_point_into_the_name_as_given(query, name):
    found = match(query, name)
    assert (found is None) == (brute_force(query, name) is None)
    if found:
        assert list(found.positions) == sorted(set(found.positions))
        matched = iter(fold("".join(name[p] for p in found.positions)))
        assert all(ch in matched for ch in fold(query))  # what was typed, in order
