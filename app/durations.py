"""How long ago something happened, as a person says it: the `hearth peers` table and the
window's Peers dialog read the same."""

from __future__ import annotations


def ago(seconds: float | None, now: float) -> str:
    """How long ago a time was, as a person says it: "never", "just now", "40 s ago",
    "3 min ago", "2 h ago", "5 days ago"."""
    if not seconds:
        return "never"
    elapsed = now - seconds
    if elapsed < 1:  # or a clock that was ahead
        return "just now"
    for size, unit in ((86400, " days"), (3600, " h"), (60, " min")):
        if elapsed >= size:
            count = int(elapsed // size)
            return f"{count}{' day' if count == 1 and size == 86400 else unit} ago"
    return f"{int(elapsed)} s ago"
