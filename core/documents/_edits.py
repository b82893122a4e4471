"""Edits checked against the text before any is applied, and edits or Yjs updates cut into
pieces that fit in one commit object each."""

from __future__ import annotations

from ._live import _merge
from ._records import DocumentError, Edit

MAX_COMMIT_BYTES = 40_000  # text or update bytes per commit: with its envelope, < 64 KiB
MAX_INSERT = 10_000  # codepoints (at most 4 bytes each) per piece of a long insert


def _check_edits(length: int, edits: list[Edit]) -> None:
    """Refuse edits that fall outside the text, before any is applied."""
    for position, delete, insert in edits:
        if not (isinstance(insert, str) and 0 <= position <= length
                and 0 <= delete <= length - position):
            raise DocumentError(f"edit ({position}, {delete}) is outside the text "
                                f"({length} characters)")
        length += len(insert) - delete


def _groups(edits: list[Edit]) -> list[list[Edit]]:
    """Edits in groups small enough for one commit each (long inserts cut into pieces)."""
    pieces: list[Edit] = []
    for position, delete, insert in edits:
        if len(insert) <= MAX_INSERT:
            pieces.append((position, delete, insert))
            continue
        for start in range(0, len(insert), MAX_INSERT):
            pieces.append((position + start, delete if start == 0 else 0,
                           insert[start:start + MAX_INSERT]))
    groups: list[list[Edit]] = []
    size = MAX_COMMIT_BYTES
    for edit in pieces:
        cost = len(edit[2].encode()) + 16
        if size + cost > MAX_COMMIT_BYTES:
            groups.append([])
            size = 0
        groups[-1].append(edit)
        size += cost
    return groups


def _chunk_updates(updates: list[bytes]) -> list[bytes]:
    """Yjs updates merged into as few chunks as fit in one commit each."""
    chunks: list[bytes] = []
    group: list[bytes] = []
    size = 0
    for update in updates:
        if group and size + len(update) > MAX_COMMIT_BYTES:
            chunks.append(_merge(group))
            group, size = [], 0
        group.append(update)
        size += len(update)
    if group:
        chunks.append(_merge(group))
    return chunks
