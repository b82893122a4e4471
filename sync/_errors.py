"""Why a session ends on the peer's account, and the check every frame handler makes."""

from __future__ import annotations


class SessionError(Exception):
    """Why a session was closed on the peer's account (bad bytes, bad frames, timeouts)."""


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise SessionError(f"malformed frame: {what}")
