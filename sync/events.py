"""What the sync service tells the Node (`SyncService(on_event=...)`): one frozen dataclass per
kind of event, dispatched by isinstance (aioquic's quic/events.py). Each says what happened, for
`hearth serve`'s lines, the window and usage analytics; typing and presence are never stored,
never relayed."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class PeersChanged:
    """A session opened or ended: `online` peers are connected now."""

    online: int


@dataclass(frozen=True)
class PeerConnected(PeersChanged):
    """A session was let in: the peer's key and "host:port" (port "-" when it dialled us)."""

    peer: bytes
    address: str


@dataclass(frozen=True)
class PeerDisconnected(PeersChanged):
    """A session ended. `peer` is None when the handshake failed; `refused_s`: how long the
    peer's identity is refused for now; `was_connected`: whether it had been told as connected;
    `duplicate`: closed by design, as the second connection between two peers."""

    peer: bytes | None
    address: str
    reason: str
    error: bool
    fault: bool
    refused_s: int
    was_connected: bool
    duplicate: bool


@dataclass(frozen=True)
class Synced:
    """A reconciliation round with a peer finished (either side's): `have` and `need` it found,
    and the session's objects moved so far."""

    have: int
    need: int
    peer: bytes | None
    address: str
    objects_in: int
    objects_out: int


@dataclass(frozen=True)
class ObjectsStored:
    """Objects new in the replica (from a peer, made here, or written by another process), in
    the order stored. `peer` (with its session's counts) when they came from one."""

    ids: tuple[bytes, ...]
    peer: bytes | None = None
    address: str | None = None
    objects_in: int = 0
    objects_out: int = 0


@dataclass(frozen=True)
class Delivered:
    """Objects stored here up to `sequence` reached a peer."""

    sequence: int


@dataclass(frozen=True)
class SessionEnded:
    """A session with a known peer ended (for usage analytics): its counts."""

    peers: int
    rounds: int
    bytes: int
    objects: int
    duration_ms: int


@dataclass(frozen=True)
class ObjectRejected:
    """A peer sent an invalid object (it is cut off): why, as core.errors.Reason says it."""

    reason: str


@dataclass(frozen=True)
class PeerUnreachable:
    """A peer we dial stopped answering (told once, not on every retry): why, as a person
    says it, and when it is tried again."""

    address: str
    reason: str
    retry_s: int


@dataclass(frozen=True)
class FileFetch:
    """How fetching an attached file goes (sync.fetcher): bytes `have` of `size` of the file
    whose list chunk is `list`; `error` a one-line reason when it stopped."""

    list: bytes
    have: int
    size: int
    done: bool
    error: str | None


@dataclass(frozen=True)
class HistoryFetch:
    """How far fetching history has come: objects `here` of `total`, the streams still
    `pending`; `done` once no round fetches any."""

    here: int
    total: int
    pending: frozenset[bytes]
    done: bool


@dataclass(frozen=True)
class PeerTyping:
    """A connected peer's person is typing in `channel` (as the peer named it), until the
    time.monotonic() `expires` unless another comes."""

    key: bytes
    channel: str
    expires: float


@dataclass(frozen=True)
class PeerPrivateTyping:
    """A connected peer's person is typing in the private channel `channel` (its id), until
    `expires`. Sync does not check they are a member: the Node does before it passes it on."""

    key: bytes
    channel: bytes
    expires: float


@dataclass(frozen=True)
class PeerPresence:
    """A connected peer's person has document `doc` open on `branch`, the selection from
    `anchor` to `at` (codepoints of the text at commits `heads`), until `expires`."""

    key: bytes
    doc: bytes
    branch: str
    heads: tuple[bytes, ...]
    anchor: int
    at: int
    expires: float


@dataclass(frozen=True)
class PeerPresenceLeft:
    """A peer's person closed document `doc`, or their session ended."""

    key: bytes
    doc: bytes


SyncEvent = (PeersChanged | Synced | ObjectsStored | Delivered | SessionEnded | ObjectRejected
             | PeerUnreachable | FileFetch | HistoryFetch | PeerTyping | PeerPrivateTyping
             | PeerPresence | PeerPresenceLeft)
