"""Taking a document's changes into an open editor, decided without Qt.

`app.documents.minimal_edits(old, new)` gives edits in order, each at a position in the text as
the edits before it left it (codepoints). An editor makes them one by one, in that order, and
counts UTF-16 units: `editor_edits` converts each position against the text as it is when that
edit is made, so every edit lands where it was meant to. (Made in reverse against the old
text's positions, as the pane once did, the later edits land in the wrong places: issue #29's
"4. y (draiftby bada".)

`apply_edits` is the same in plain strings: what the editor must read afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence

Edit = tuple[int, int, str]  # (position, codepoints deleted, text inserted), in order


def _utf16(text: str, position: int) -> int:
    """Codepoint `position` of `text` in UTF-16 units."""
    return len(text[:position].encode("utf-16-le")) // 2


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """`text` once `edits` are made, in order, each at its position in the text so far."""
    for position, delete, insert in edits:
        if not 0 <= position <= position + delete <= len(text):
            raise ValueError(f"edit ({position}, {delete}) outside a text of {len(text)}")
        text = text[:position] + insert + text[position + delete:]
    return text


def editor_edits(text: str, edits: Sequence[Edit]) -> list[tuple[int, int, str]]:
    """`edits` (codepoints, in order) as an editor makes them: (start, end, insert) in UTF-16
    units of the text as the edits before each left it, to be made in the order given."""
    out: list[tuple[int, int, str]] = []
    for position, delete, insert in edits:
        if not 0 <= position <= position + delete <= len(text):
            raise ValueError(f"edit ({position}, {delete}) outside a text of {len(text)}")
        start = _utf16(text, position)
        end = start + _utf16(text[position:], delete)
        out.append((start, end, insert))
        text = text[:position] + insert + text[position + delete:]
    return out

