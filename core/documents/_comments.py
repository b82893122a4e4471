"""Comments anchored to ranges of a branch's text."""

from __future__ import annotations

from ._commits import _Commits


class _Comments(_Commits):
    """Comments on branches, on top of branches and commits."""
