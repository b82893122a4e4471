"""Small SQL helpers the storage modules share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_CHUNK = 500  # ids per IN (...) query, below SQLite's variable limit


def chunks(seq: Sequence, size: int = _CHUNK) -> Iterable[Sequence]:
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


def placeholders(count: int) -> str:
    return ",".join("?" * count)
