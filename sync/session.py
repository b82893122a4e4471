"""A sync session with one peer, as a pure state machine (docs/ARCHITECTURE.md "Sync").

Frames: docs/protocol.md

Bytes and `now` go in (`receive`, `handle_timer`); bytes, a timer deadline and events come out
(`data_to_send`, `get_timer`, `next_event`). The asyncio layer (sync.connection) only moves
WebSocket messages; tests wire two sessions together in memory. After the Noise handshake
(`handshake`, sync._handshake) every message is one Noise transport message holding a flag byte
(1 = last chunk of a frame) and a chunk; chunks join into frames of canonical CBOR maps of at
most MAX_FRAME bytes, which the session hands to what it owns: `rounds` (reconciliation,
sync._rounds), `outbox` (objects owed the peer, sync._outbox), `signals` (typing and presence,
sync._signals), `files` (chunks of attached files, sync._files) and `pacing` (when to stop
reading, sync._pacing).

Who is served, and how much, is the host's to say: with `gated`, a session says nothing after
the peer's `hello` until the host lets the peer in (`admitted`) or refuses it (`refuse`, which
may first hand the peer signed objects: a removed member's removal), so a refused peer hears
only the close. Nothing a peer says is stored on its word: objects take the one ingest path,
and a deletion travels only as the signed delete object.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from typing import cast

from core.encoding import EncodingError, check_canonical, decode_item, object_id
from core.identity import Identity
from core.objects import MAX_OBJECT_SIZE

from ._errors import SessionError, _require
from ._files import (
    FILES,
    ChunkArrived,
    ChunksLacking,
    ChunkSource,
    Files,
    FilesReady,
    encode_frame,
    is_chunk_frame,
    split_chunk_frame,
)
from ._handshake import Handshake
from ._interest import EVERYTHING, Interest
from ._outbox import (
    ANSWER_READ,
    MAX_OUTGOING,
    MAX_QUEUED_WANTS,
    OBJECTS_FRAME_BYTES,
    SENT_MEMORY,
    Outbox,
)
from ._pacing import Pacing
from ._rounds import (
    NEG_BUCKETS,
    NEG_FRAME_LIMIT,
    NEG_ID_LIST_THRESHOLD,
    NEG_MAX_RANGES,
    NEG_PARAMS,
    WANT_BATCH,
    WANT_WINDOW,
    PeerReconciled,
    ReconcileComplete,
    Rounds,
    SyncProgress,
)
from ._signals import (
    MAX_CAP_NAME,
    MAX_CAPS,
    MAX_POSITION,
    MAX_PRESENCE_DOCS,
    MAX_PRESENCE_HEADS,
    PRESENCE,
    PRESENCE_RECEIVE_LIMIT,
    PRESENCE_RECEIVE_WINDOW_S,
    PRESENCE_REFRESH_S,
    PRESENCE_SEND_INTERVAL_S,
    PTYPING,
    TYPING,
    TYPING_RECEIVE_LIMIT,
    TYPING_RECEIVE_WINDOW_S,
    TYPING_SEND_INTERVAL_S,
    Presence,
    PresenceLeft,
    PrivateTyping,
    Signals,
    Typing,
)
from ._timeouts import (
    HANDSHAKE_TIMEOUT_S,
    IDLE_TIMEOUT_S,
    PING_INTERVAL_S,
    RECONCILE_INTERVAL_S,
    REPLY_TIMEOUT_S,
    ROUND_RETRY_S,
)
from .store import Store

PROTOCOL_VERSION = 3  # 3: reconciliation per stream, with interests; 2: no "gone" frame
MAX_NOISE_MESSAGE = 65535
CHUNK = MAX_NOISE_MESSAGE - 16 - 1  # minus the AEAD tag and the flag byte
MAX_FRAME = 1 << 20

_LAST, _MORE = b"\x01", b"\x00"  # the flag byte before each piece of a frame
CAPS = (TYPING, PRESENCE, PTYPING)  # what this version understands beyond protocol version 2's frames
FILES_CAPS = (*CAPS, FILES)  # ... and with a chunk store, chunks of attached files


# Events -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Connected:
    peer_key: bytes


@dataclass(frozen=True)
class ObjectsReceived:
    raws: list[bytes]


@dataclass(frozen=True)
class Closed:
    reason: str
    error: bool
    fault: bool = False  # the peer sent what this protocol never sends (not a timeout)


Event = (Connected | ObjectsReceived | ReconcileComplete | PeerReconciled | SyncProgress
         | Typing | PrivateTyping | Presence | PresenceLeft | FilesReady | ChunkArrived | ChunksLacking | Closed)


@dataclass
class Stats:
    bytes_sent: int = 0
    bytes_received: int = 0
    objects_sent: int = 0
    objects_received: int = 0
    rounds: int = 0
    messages: int = 0


class Session:
    """One side of a connection. `initiator` is the side that dialled; it drives
    reconciliation rounds (`rounds`), and both sides push new objects once connected
    (`outbox.push`)."""

    def __init__(self, store: Store, *, initiator: bool, secret: bytes, identity: Identity,
                 workspace: bytes, now: float, frame_size_limit: int = NEG_FRAME_LIMIT,
                 reconcile_interval: float | None = RECONCILE_INTERVAL_S,
                 older_secrets: tuple[bytes, ...] = (), chunks: ChunkSource | None = None,
                 interest: Interest = EVERYTHING, stores_later: bool = False,
                 gated: bool = False):
        self.store = store
        # `gated`: after the peer's hello, nothing more is said until the host lets the peer
        # in (`admitted`) or refuses it (`refuse`): a refused peer hears only the close.
        self._gated = gated
        self.initiator = initiator
        self.identity = identity
        self.workspace = workspace
        self.stats = Stats()
        self.peer_key: bytes | None = None
        self.peer_caps: frozenset[str] = frozenset()  # what the peer's ping said it understands
        self.state = "handshake"
        self._out: deque[bytes] = deque()
        self.out_bytes = 0  # bytes in `_out`, not yet returned by data_to_send
        self._events: deque[Event] = deque()
        self._partial = bytearray()
        self._deadline: float | None = now + HANDSHAKE_TIMEOUT_S  # the handshake's and hello's
        self.last_received = now
        self._next_ping = now + PING_INTERVAL_S
        self.outbox = Outbox(self)
        self.rounds = Rounds(self, interest, stores_later=stores_later,
                             frame_size_limit=frame_size_limit, interval=reconcile_interval)
        self.signals = Signals(self)
        self.files = Files(self, chunks)
        self.pacing = Pacing(self, now)
        self.handshake = Handshake(self, secret, older_secrets)

    # Public API -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.state == "closed"

    @property
    def connected(self) -> bool:
        return self.state == "open"

    def data_to_send(self, now: float | None = None) -> list[bytes]:
        """WebSocket binary messages to send now, in order (with `now`, chunks of files wait
        while objects move: sync._files)."""
        if self.connected:  # owed objects, then chunks, become frames while there is room
            self.outbox.fill()
            self.files.fill(now)
        out = list(self._out)
        self._out.clear()
        self.out_bytes = 0
        return out

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    @property
    def has_output(self) -> bool:
        """Objects are still owed to the peer: call `data_to_send` again once the socket
        has taken what it returned."""
        return self.connected and (self.outbox.owes or self.files.owes)

    @property
    def mid_frame(self) -> bool:
        """The last message read was a piece of a frame still to be completed: reading it
        changed nothing but the buffer."""
        return bool(self._partial)

    @property
    def has_frames(self) -> bool:
        """Frames are queued (by a call since the last `data_to_send`): send them now."""
        return bool(self._out)

    def get_timer(self) -> float | None:
        if self.closed:
            return None
        deadlines = [self._deadline] if self._deadline is not None else []
        deadlines += self.rounds.deadlines()
        if self.connected:
            deadlines += [self._next_ping, self.last_received + IDLE_TIMEOUT_S]
            deadlines += self.signals.deadlines()
            deadlines += self.files.deadlines()
            deadlines += self.pacing.deadlines()
        return min(deadlines) if deadlines else None

    def receive(self, data: bytes, now: float) -> None:
        """One WebSocket message from the peer."""
        if self.closed:
            return
        self.stats.bytes_received += len(data)
        self.last_received = now
        try:
            if self.state == "handshake":
                self._handshake(data, now)
            else:
                self._transport(data, now)
        except SessionError as exc:
            self._fail(str(exc), fault=True)

    def handle_timer(self, now: float) -> None:
        if self.closed:
            return
        if self._deadline is not None and now >= self._deadline:
            self._fail("timed out waiting for the peer's handshake")
            return
        if self.rounds.timer_expired(now):
            self._fail("timed out waiting for the peer's reply")
            return
        if self.connected:
            if self.pacing.timer_expired(now):  # (first: a socket taking bytes is a live peer)
                self._fail("the peer does not read its replies")
                return
            if now >= self.last_received + IDLE_TIMEOUT_S:
                self._fail("the peer went silent")
                return
            if self.files.timer_expired(now):
                self._fail("timed out waiting for the peer's chunks")
                return
            if now >= self._next_ping:
                self.send_frame({"t": "ping"})
                self._next_ping = now + PING_INTERVAL_S
            self.rounds.timer(now)
            self.signals.timer(now)

    def close(self, reason: str = "closing") -> None:
        if self.closed:
            return
        if self.state != "handshake":
            self.send_frame({"t": "bye", "reason": reason[:200]})
        self._closed(reason, error=False)

    def refuse(self, reason: str, told: Sequence[bytes] = ()) -> None:
        """Close with `reason`, first handing the peer the signed objects `told` (a removed
        member's removal: they take the one ingest path there and decide by themselves) in
        ordinary `objs` frames; the caller bounds how many and how large."""
        if self.connected and told:
            raws = deque(told)
            while raws:
                self.outbox.send_objs(raws)
        self.close(reason)

    def protocol_error(self, reason: str) -> None:
        """The transport saw something this protocol never sends: close on the peer's account."""
        self._fail(reason, fault=True)

    def connection_lost(self, reason: str = "connection closed") -> None:
        if not self.closed:
            # An error unless the rounds the initiator owes are over (none begun counts).
            self._closed(reason, error=self.state != "open" or self.rounds.unsettled)

    def admitted(self) -> None:
        """(With `gated`) the host lets the peer in: the session begins."""
        if not self.connected:
            return
        # The peer reads this after our hello, so it is open by then; versions from before
        # typing answer a ping whatever else it holds.
        caps = CAPS if self.files.chunks is None else FILES_CAPS
        self.send_frame({"t": "ping", "caps": list(caps)})
        self.rounds.send_interest()  # the initiator's first round waits for the peer's

    # For the session's parts ----------------------------------------------------------------

    def emit(self, event: Event) -> None:
        self._events.append(event)

    def send_frame(self, frame: dict) -> None:
        data = encode_frame(frame)
        if len(data) > MAX_FRAME:
            raise SessionError(f"refusing to send a frame of {len(data)} bytes")
        view = memoryview(data)
        for start in range(0, max(len(data), 1), CHUNK):
            last = start + CHUNK >= len(data)
            piece = (_LAST if last else _MORE) + view[start:start + CHUNK]
            self.send_raw(self.handshake.noise.encrypt(piece))

    def send_raw(self, data: bytes) -> None:
        self._out.append(data)
        self.out_bytes += len(data)
        self.stats.bytes_sent += len(data)

    # Handshake ------------------------------------------------------------------------------

    def _handshake(self, data: bytes, now: float) -> None:
        self.handshake.read(data)
        if self.handshake.finished:
            self.state = "hello"
            self.send_frame({"t": "hello", "v": PROTOCOL_VERSION,
                             "key": self.identity.public_key,
                             "sig": self.handshake.proof(self.identity), "ws": self.workspace})

    def _on_hello(self, frame: dict, now: float) -> None:
        _require(self.state == "hello", "hello twice")
        _require(frame.keys() == {"t", "v", "key", "sig", "ws"}, "hello fields")
        key, sig = frame["key"], frame["sig"]
        _require(isinstance(key, bytes) and len(key) == 32, "hello key")
        _require(isinstance(sig, bytes) and len(sig) == 64, "hello sig")
        # Another version or workspace is no fault of the peer's: it is closed, not penalized.
        if frame["v"] != PROTOCOL_VERSION:
            self._fail(f"peer speaks sync protocol {frame['v']!r}, we speak {PROTOCOL_VERSION}")
            return
        if frame["ws"] != self.workspace:
            self._fail("peer is in another workspace with the same secret")
            return
        if not self.handshake.verify(key, sig):
            raise SessionError("peer's identity proof does not verify")
        self.peer_key = key
        self.state = "open"
        self._deadline = None
        self._next_ping = now + PING_INTERVAL_S
        self.emit(Connected(key))
        if not self._gated:
            self.admitted()

    # Transport ------------------------------------------------------------------------------

    def _transport(self, data: bytes, now: float) -> None:
        if len(data) > MAX_NOISE_MESSAGE:
            raise SessionError("message larger than a Noise message")
        try:
            plain = self.handshake.noise.decrypt(data)
        except Exception:  # InvalidTag: tampered, replayed or injected
            raise SessionError("a message failed decryption") from None
        _require(len(plain) >= 1 and plain[0] in (0, 1), "chunk flag")
        if plain[0] == 1 and not self._partial:  # a frame in one message: no copy to join
            self._on_frame(plain[1:], now)
            return
        self._partial += memoryview(plain)[1:]
        if len(self._partial) > MAX_FRAME:
            raise SessionError(f"frame larger than {MAX_FRAME} bytes")
        if plain[0] == 1:
            frame_bytes, self._partial = self._partial, bytearray()
            self._on_frame(frame_bytes, now)

    def _on_frame(self, data: bytes | bytearray, now: float) -> None:
        if self.state == "open":  # a chunk's data is read in place, not decoded or copied
            chunk = split_chunk_frame(data)
            if chunk is not None:
                self.files.on_chunk_data(*chunk, now)
                return
        try:
            raw = cast(bytes, data)  # cbor2 reads a bytearray too: a joined frame is not copied
            frame = decode_item(raw)
            if not is_chunk_frame(frame, raw):  # a chunk's is checked without a copy
                check_canonical(frame, raw)
        except EncodingError as exc:
            raise SessionError(f"malformed frame: {exc}") from None
        _require(isinstance(frame, dict) and isinstance(frame.get("t"), str), "no type")
        kind = frame["t"]
        if kind == "hello":
            self._on_hello(frame, now)
            return
        _require(self.state == "open", f"{kind} before hello")
        rounds, signals, files = self.rounds, self.signals, self.files
        handler = {"interest": rounds.on_interest, "sums": rounds.on_sums,
                   "neg": rounds.on_neg, "want": self.outbox.on_want, "objs": self._on_objs,
                   "done": rounds.on_done, "synced": rounds.on_synced, "ping": self._on_ping,
                   "pong": self._on_pong, "typing": signals.on_typing,
                   "ptyping": signals.on_ptyping,
                   "presence": signals.on_presence, "left": signals.on_left,
                   "get": files.on_get, "chunk": files.on_chunk, "nochunk": files.on_nochunk,
                   "bye": self._on_bye}.get(kind)
        if handler is None:
            raise SessionError(f"unknown frame type {kind!r}")
        handler(frame, now)

    def _on_ping(self, frame: dict, now: float) -> None:
        # Other fields are ignored, as every version has: a later one may add some.
        if "caps" in frame:
            caps = frame["caps"]
            _require(isinstance(caps, list) and len(caps) <= MAX_CAPS and all(
                isinstance(c, str) and len(c) <= MAX_CAP_NAME for c in caps), "ping caps")
            self.peer_caps = frozenset(caps)
            self.files.caps_changed()
        self.send_frame({"t": "pong"})

    def _on_pong(self, frame: dict, now: float) -> None:
        pass

    def _on_bye(self, frame: dict, now: float) -> None:
        reason = frame.get("reason")
        self._closed(f"peer closed: {reason if isinstance(reason, str) else 'bye'}", False)

    def _on_objs(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "raws"}, "objs fields")
        raws = frame["raws"]
        _require(isinstance(raws, list) and all(
            isinstance(r, bytes) and len(r) <= MAX_OBJECT_SIZE for r in raws), "raws")
        self.stats.objects_received += len(raws)
        ids = [object_id(raw) for raw in raws]
        self.files.chat_moved(now)
        self.outbox.mark_known(ids)
        self.rounds.arrived(ids)
        if raws:
            self.emit(ObjectsReceived(raws))
            self.rounds.received_objects(len(raws))

    # The end --------------------------------------------------------------------------------

    def _fail(self, reason: str, *, fault: bool = False) -> None:
        if not self.closed:
            self._closed(reason, error=True, fault=fault)

    def _closed(self, reason: str, error: bool, *, fault: bool = False) -> None:
        self.state = "closed"
        self.outbox.clear()
        self.signals.closed()
        self.files.closed()
        self.emit(Closed(reason, error, fault))


__all__ = [
    "ANSWER_READ", "CAPS", "CHUNK", "EVERYTHING", "FILES_CAPS", "HANDSHAKE_TIMEOUT_S",
    "IDLE_TIMEOUT_S", "MAX_CAPS", "MAX_CAP_NAME", "MAX_FRAME", "MAX_NOISE_MESSAGE",
    "MAX_OUTGOING", "MAX_POSITION", "MAX_PRESENCE_DOCS", "MAX_PRESENCE_HEADS",
    "MAX_QUEUED_WANTS", "NEG_BUCKETS", "NEG_FRAME_LIMIT", "NEG_ID_LIST_THRESHOLD",
    "NEG_MAX_RANGES", "NEG_PARAMS", "OBJECTS_FRAME_BYTES", "PING_INTERVAL_S", "PRESENCE",
    "PRESENCE_RECEIVE_LIMIT", "PRESENCE_RECEIVE_WINDOW_S", "PRESENCE_REFRESH_S",
    "PRESENCE_SEND_INTERVAL_S", "PROTOCOL_VERSION", "PTYPING", "RECONCILE_INTERVAL_S", "REPLY_TIMEOUT_S",
    "ROUND_RETRY_S", "SENT_MEMORY", "TYPING", "TYPING_RECEIVE_LIMIT", "TYPING_RECEIVE_WINDOW_S",
    "TYPING_SEND_INTERVAL_S", "WANT_BATCH", "WANT_WINDOW", "ChunkArrived", "ChunkSource",
    "ChunksLacking", "Closed", "Connected", "Event", "FilesReady", "Interest", "ObjectsReceived",
    "PeerReconciled", "Presence", "PresenceLeft", "ReconcileComplete", "Session", "SessionError",
    "PrivateTyping", "Stats", "SyncProgress", "Typing",
]
