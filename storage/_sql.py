"""Small SQL helpers the storage modules share."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

_CHUNK = 500  # ids per IN (...) query, below SQLite's variable limit


def chunks(seq: Sequence, size: int = _CHUNK) -> Iterable[Sequence]:
    for start in range(0, len(seq), size):
        yield seq[start:start + size]


def placeholders(count: int) -> str:
    return ",".join("?" * count)


def admin_act(alias: str = "") -> str:
    """SQL: the row (author, id) counts with an admin's power: its author is an admin now, or
    the end of their grant kept it (core.membership.MembershipView.acts_as_admin)."""
    a = f"{alias}." if alias else ""
    return (f"({a}author IN (SELECT key FROM admins) "
            f"OR {a}id IN (SELECT id FROM admin_kept))")
