"""What the sync service reports to the Node and the command line, and what it asks of them
(re-exported by sync.service)."""

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
        text = os.strerror(cause.errno) if cause.errno else cause.strerror
        return text[:1].lower() + text[1:]
    return type(cause).__name__


@dataclass(frozen=True)
class SyncEvent:
    """What the service tells the Node: `kind` is peers | synced | objects | delivered, and
    for usage analytics session (a sync session ended: its counts) | rejected (a peer's object
    was refused: detail["reason"]).

    unreachable: a peer we dial did not answer (`address`, `reason` as a person says it,
    `retry_s`): told once, when it stops answering, not on every retry.

    peers (`online`: how many peers are connected) also says what changed, for `hearth serve`:
    a session opened (`connected`: True, `peer` key, `address` "host:port", port "-" when the
    peer dialled us) or ended (`connected`: False, `peer` (None if the handshake failed),
    `address`, `reason`, `error`, `fault`, `refused_s`: how long the peer's identity is now
    refused for, `was_connected`: whether it had been announced as connected, `duplicate`:
    closed by design, as the second connection between two peers). synced also carries
    `address` and the session's `objects_in` and `objects_out` so far; so does objects, with
    `peer`, when the objects came from a peer.

    files: progress of a fetch (sync.fetcher): `list` (the list chunk's id), `have` and `size`
    (bytes of the file), `done`, `error` (a one-line reason, or None).

    typing: a connected peer's person is typing (`key`: the peer's identity, `channel` as the
    peer named it, `expires`: the time.monotonic() after which to stop showing it, unless
    another comes). Never stored, never relayed.

    presence: a connected peer's person has a document open (`key`, `doc` id, `branch`,
    `heads` the commit ids its positions refer to, `anchor` and `at` the selection in
    codepoints, `expires` as for typing, PRESENCE_TTL_S on). presence-left: they closed it, or
    their session ended (`key`, `doc`). Never stored, never relayed."""

    kind: str
    detail: dict


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
