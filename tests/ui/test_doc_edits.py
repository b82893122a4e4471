"""Taking a document's changes into an editor, without Qt (ui/doc_edits.py): the smallest edits
between two texts, made in order where an editor makes them (UTF-16 units of the text as the
edits before left it), turn the old text into the new one, emoji and all. Issue #29: made in
reverse at the old text's positions they gave "4. y (draiftby bada"."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app.documents import minimal_edits
from ui.doc_comments import carried
from ui.doc_edits import apply_edits, editor_edits


def in_utf16(text: str, edits: list[tuple[int, int, str]]) -> str:
    """What an editor that counts UTF-16 units reads once it makes `edits` in order."""
    units = text.encode("utf-16-le")
    for start, end, insert in edits:
        units = units[:2 * start] + insert.encode("utf-16-le") + units[2 * end:]
    return units.decode("utf-16-le")


MAIN, DRAFT = "1. a\n4. z (main by bob)\n5. b\n", "1. a\n4. y (draft by ada)\n5. b\n"


def test_the_issue_29_merge_lands_whole() -> None:
    edits = minimal_edits(MAIN, DRAFT)
    assert len(edits) > 1  # several edits, each at a position the ones before it moved
    assert apply_edits(MAIN, edits) == DRAFT
    assert in_utf16(MAIN, editor_edits(MAIN, edits)) == DRAFT


def test_the_old_reverse_order_corrupted_it() -> None:
    """What the pane did: the edits in reverse, at positions read as the old text's."""
    text = "4. z (main by bob)"
    for position, delete, insert in reversed(minimal_edits(text, "4. y (draft by ada)")):
        text = text[:position] + insert + text[position + delete:]
    assert text == "4. y (draiftby bada"


def test_positions_after_emoji_count_utf16_units_of_the_text_so_far() -> None:
    old, new = "a😀b c😀d", "😀a😀b X c😀😀d"
    edits = editor_edits(old, minimal_edits(old, new))
    assert in_utf16(old, edits) == new
    # "X " goes at codepoint 5 of "😀a😀b c😀d", which is unit 7: both emoji before it count
    # twice, the one just inserted included.
    assert edits == [(0, 0, "😀"), (7, 7, "X "), (10, 10, "😀")]


def test_an_edit_outside_the_text_is_refused() -> None:
    with pytest.raises(ValueError):
        apply_edits("abc", [(2, 2, "")])
    with pytest.raises(ValueError):
        editor_edits("abc", [(4, 0, "x")])


texts = st.text(alphabet=st.sampled_from("ab \n😀éx"), max_size=30)


@given(texts, texts)
def test_any_two_texts(old: str, new: str) -> None:
    edits = minimal_edits(old, new)
    assert apply_edits(old, edits) == new
    assert in_utf16(old, editor_edits(old, edits)) == new


def test_a_comment_on_words_after_a_merge_of_several_edits_stays_on_them() -> None:
    """The comments' margin carries anchors across the same edits, in the same order."""
    start = MAIN.index("5. b")
    assert carried(MAIN, DRAFT, start, start + 4) == (DRAFT.index("5. b"),
                                                      DRAFT.index("5. b") + 4)
