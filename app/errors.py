"""The library's error for what a person asked that cannot be done."""

from __future__ import annotations


class WorkspaceError(Exception):
    """Something the person asked for that cannot be done, said in one line."""
