"""What a one-off sync returns and raises, and what the sync service asks of the Node
(re-exported by sync.service; its events are sync.events)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass


class SyncFailed(Exception):
    """A one-off sync could not finish; the message says why, in one line."""


@dataclass(frozen=True)
class OnceResult:
    peer_key: bytes
    rounds: int
    objects_sent: int
    objects_received: int
    ms: float


def unreachable(exc: BaseException) -> str:
    """Why a peer could not be reached, as a person would say it ("connection refused")."""
    cause = getattr(exc, "os_error", None) or exc
    if isinstance(cause, TimeoutError):
        return "timed out"
    if isinstance(cause, OSError) and (cause.errno or cause.strerror):
        # asyncio's strerror is "Connect call failed (...)"; the errno says what happened.
        text = os.strerror(cause.errno) if cause.errno else cause.strerror or ""
        return text[:1].lower() + text[1:]
    return type(cause).__name__


@dataclass(frozen=True)
class Admission:
    """Who a member's node lets in (app.membership). `join_key(tag)` is the join session key
    of the invite `tag` names (None: no such invite here, and the request is refused before
    any handshake); `admit(key, tag)` admits the newcomer whose identity the handshake proved,
    or says why not (the session then ends with that reason). `allow(key, old_epoch)` is asked
    at every other session's `hello`: None lets the peer in, a reason ends the session (a
    removed member, anyone the membership view does not list). `tell(key)` is asked when a
    session is refused: the signed objects to hand the peer first (a removed member's
    removal and its kept lists, which decide by themselves at the other end; sync.service
    bounds how many and how large)."""

    join_key: Callable[[bytes], bytes | None]
    admit: Callable[[bytes, bytes], str | None]
    allow: Callable[[bytes, bool], str | None] = lambda key, old_epoch: None
    tell: Callable[[bytes], list[bytes]] = lambda key: []
