"""Reviewing: what changed between two versions, and merges that find their conflicts."""

from __future__ import annotations

from ._commits import _Commits


class _Review(_Commits):
    """Diffs and conflict-aware merges, on top of branches and commits."""
