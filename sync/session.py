"""A sync session with one peer, as a pure state machine (docs/ARCHITECTURE.md "Sync").

Bytes and `now` go in (`receive`, `handle_timer`); bytes, a timer deadline and events come out
(`data_to_send`, `get_timer`, `next_event`). The asyncio layer (sync.connection) only moves
WebSocket messages; tests wire two sessions together in memory.

On the wire, the first three messages are a Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b handshake
with the workspace secret as the pre-shared key, so a computer without the secret learns
nothing and can inject nothing. Every later message is one Noise transport message holding a
flag byte (1 = last chunk of a frame) and a chunk; chunks join into frames of canonical CBOR
maps of at most MAX_FRAME bytes:

    hello {v, key, sig, ws}   Ed25519 key, its signature of the handshake hash, workspace id
    interest {keep}           the streams the sender keeps (None: all; sync._interest)
    sums  {r, ss}             round r's stream summaries: [stream, fingerprint, count, class]
                              from the initiator, and [..., newest ts] of those that differ
                              back (sync._rounds; with `stores_later`, once the objects
                              received before it are `stored`)
    neg   {r, s, d, l, m}     negentropy message m of round r over stream s (d 1: newest first;
                              replies of at most l bytes)
    want  {ids}               ids the sender lacks
    objs  {raws}              objects (answers to want, the sender's extras, live pushes)
    done  {}                  ends the answer to one want (ids no longer held are left out)
    synced {r}                the initiator's round r is over: it holds all the responder held
    ping  {} / pong {}        keep-alive; a ping may carry caps (see below)
    typing {ch}               the sender's person is typing in channel ch (never stored)
    presence {doc, br, heads, anchor, at}
                              the sender's person has document doc open on branch br, with the
                              selection from anchor to at (codepoints of the text at commits
                              heads; anchor == at: a cursor and no selection; never stored)
    left  {doc}               the sender's person closed document doc (never stored)
    get   {ids}               chunks of attached files the sender wants (1..MAX_GET_IDS ids)
    chunk {id, data}          one chunk asked for (data hashes to id, or the sender is cut off)
    nochunk {ids}             chunks asked for that the sender does not hold
    bye   {reason}

Typing indicators are not objects: `send_typing` sends at most one `typing` frame per channel
per TYPING_SEND_INTERVAL_S; the receiver takes at most TYPING_RECEIVE_LIMIT of them per
TYPING_RECEIVE_WINDOW_S, drops the rest silently, and reports each as a `Typing` event with
the peer's authenticated key. Nobody stores or relays them. Protocol version 2 peers from
before typing close the session on any unknown frame, so `typing` goes only to a peer that
said it understands it: once it has read the peer's hello, a session sends `ping {caps:
["typing", "presence"]}`. Every version answers a ping and ignores its other fields, so older
peers just answer `pong`, and no version bump splits the network. A `typing` frame with other fields or
a channel name that no object could carry is malformed, like any other malformed frame.

Presence in documents (others' cursors) follows typing: the `presence` capability in the same
ping, frames only to a peer that announced it, checked field by field, a receive limit
(PRESENCE_RECEIVE_LIMIT per PRESENCE_RECEIVE_WINDOW_S, `presence` and `left` together; the
rest dropped silently), and `Presence`/`PresenceLeft` events named by the hello's key. The
sender differs in one way: a cursor's last position matters, so instead of dropping what comes
within PRESENCE_SEND_INTERVAL_S of the last frame for a document, `send_presence` keeps the
newest and sends it when the interval is over (a timer). `left` goes at once, and only to a
peer that was sent a `presence` for that document. A position is in codepoints of the text at
the commits `heads` (the sender's editor as of its last commit: what it has typed since is
mapped back onto that text), so a receiver holding the same heads places it exactly and
carries it through later edits itself (ui/doc_presence.py says why positions and heads rather
than Yjs sticky indices). A window repeats its presence every PRESENCE_REFRESH_S while the
document is open, so a receiver drops a sender it has not heard from for a while
(sync.service.PRESENCE_TTL_S), and a `left` or the session's end removes it at once.

Chunks of attached files (sync/_files.py) travel on the same session, outside the reconciled
set, only between peers that both announced the `files` capability: `get` asks, and each id is
answered in order by a `chunk` or, for the ids not held, one `nochunk` per get. A chunk frame
is produced only when no object frame is waiting, a peer may queue at most MAX_QUEUED_GETS gets,
and an answer for an id not asked, or bytes that do not hash to their id, end the session as a
fault (the peer is cut off).

Who is served, and how much, is the host's to say: with `gated`, a session says nothing after
the peer's `hello` until the host lets the peer in (`admitted`) or refuses it (`refuse`, which
may first hand the peer signed objects: a removed member's removal), so a refused peer hears
only the close. `outgoing_limit` bounds the objects queued for the socket (the host shares a
key's allowance among its sessions), and sync._pacing says when the host should stop reading
(reconciliation work over budget, replies the peer leaves unread).

Nothing a peer says is stored on its word: objects take the one ingest path, and a deletion
travels only as the signed delete object (deleted ids are not in the reconciled set). Answers
are read from the store as the output buffer drains, so a peer that asks and never reads costs
a bounded amount of memory.
"""

from __future__ import annotations

import os
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

from noise.connection import Keypair, NoiseConnection
from noise.exceptions import NoiseHandshakeError, NoiseInvalidMessage, NoiseValueError

from core.encoding import EncodingError, check_canonical, decode_item, object_id
from core.identity import Identity, verify
from core.objects import MAX_OBJECT_SIZE

from ._errors import SessionError, _require
from ._files import (
    FILES,
    ChunkArrived,
    ChunksLacking,
    ChunkSource,
    FilesReady,
    _Files,
    encode_frame,
    is_chunk_frame,
)
from ._interest import EVERYTHING, Interest
from ._pacing import _Pacing
from ._rounds import SyncProgress, _Round, _Rounds

# The signals' names stay importable from here, where the protocol is.
from ._signals import (
    MAX_CAP_NAME,
    MAX_CAPS,
    PRESENCE,
    TYPING,
    _Signals,
)
from ._signals import (
    MAX_POSITION as MAX_POSITION,
)
from ._signals import (
    MAX_PRESENCE_DOCS as MAX_PRESENCE_DOCS,
)
from ._signals import (
    MAX_PRESENCE_HEADS as MAX_PRESENCE_HEADS,
)
from ._signals import (
    PRESENCE_RECEIVE_LIMIT as PRESENCE_RECEIVE_LIMIT,
)
from ._signals import (
    PRESENCE_RECEIVE_WINDOW_S as PRESENCE_RECEIVE_WINDOW_S,
)
from ._signals import (
    PRESENCE_REFRESH_S as PRESENCE_REFRESH_S,
)
from ._signals import (
    PRESENCE_SEND_INTERVAL_S as PRESENCE_SEND_INTERVAL_S,
)
from ._signals import (
    TYPING_RECEIVE_LIMIT as TYPING_RECEIVE_LIMIT,
)
from ._signals import (
    TYPING_RECEIVE_WINDOW_S as TYPING_RECEIVE_WINDOW_S,
)
from ._signals import (
    TYPING_SEND_INTERVAL_S as TYPING_SEND_INTERVAL_S,
)
from ._signals import (
    Presence as Presence,
)
from ._signals import (
    PresenceLeft as PresenceLeft,
)
from ._signals import (
    Typing as Typing,
)
from .negentropy import Negentropy
from .store import Store

PROTOCOL_VERSION = 3  # 3: reconciliation per stream, with interests; 2: no "gone" frame
NOISE_PROTOCOL = b"Noise_XXpsk0_25519_ChaChaPoly_BLAKE2b"
PROLOGUE = b"hearth/1"
HELLO_CONTEXT = b"hearth-hello/1"
MAX_NOISE_MESSAGE = 65535
CHUNK = MAX_NOISE_MESSAGE - 16 - 1  # minus the AEAD tag and the flag byte
MAX_FRAME = 1 << 20
MAX_HANDSHAKE_MESSAGE = 1024
OBJECTS_FRAME_BYTES = 256 * 1024
WANT_BATCH = 2048
WANT_WINDOW = 4  # want frames in flight, so a large catch-up streams with bounded memory
MAX_QUEUED_WANTS = 2 * WANT_WINDOW  # a peer asking more before reading answers is cut off
ANSWER_READ = 64  # objects read from the store at a time while answering
MAX_OUTGOING = 8 << 20  # bytes queued for the socket before we stop producing more
SENT_MEMORY = 50_000  # ids remembered as already sent to this peer
# Negentropy splitting (the encoding is fixed, these are ours to tune): measured on 1M items,
# 12 buckets and id lists below 24 items halve the bytes per difference of the reference's
# 16/32 (bench/reconcile.py) and keep d=0 at one round trip and d=1 at three.
NEG_BUCKETS = 12
NEG_ID_LIST_THRESHOLD = 24
# Negentropy messages must fit a frame: a large set answering an id list would not otherwise.
NEG_FRAME_LIMIT = 512 * 1024
# Ranges per negentropy message, both ways: each costs an index look-up, so this bounds what one
# message can cost the event loop (about 60 ms on a 2-core laptop); more is refused.
NEG_MAX_RANGES = 2048
NEG_PARAMS = {"buckets": NEG_BUCKETS, "id_list_threshold": NEG_ID_LIST_THRESHOLD,
              "max_ranges": NEG_MAX_RANGES}

# How the timeouts relate (tests/test_timeouts.py checks it): a quiet peer is pinged twice
# before it counts as silent (PING_INTERVAL_S * 2 < IDLE_TIMEOUT_S), a reply may take as long as
# the socket may take to accept a frame (sync.connection.SEND_TIMEOUT_S), and an honest dialler
# completes its handshake well within what the acceptor allows (HANDSHAKE_TIMEOUT_S).
HANDSHAKE_TIMEOUT_S = 10.0
REPLY_TIMEOUT_S = 30.0
PING_INTERVAL_S = 15.0
IDLE_TIMEOUT_S = 45.0
RECONCILE_INTERVAL_S = 30.0
ROUND_RETRY_S = 1.0  # a round put off while the last one's objects are still being sent

_LAST, _MORE = b"\x01", b"\x00"  # the flag byte before each piece of a frame
CAPS = (TYPING, PRESENCE)  # what this version understands beyond protocol version 2's frames
FILES_CAPS = (*CAPS, FILES)  # ... and with a chunk store, chunks of attached files


# Events -------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Connected:
    peer_key: bytes


@dataclass(frozen=True)
class ObjectsReceived:
    raws: list[bytes]


@dataclass(frozen=True)
class ReconcileComplete:
    """The initiator's round finished and every object it asked for has arrived."""

    round: int
    messages: int
    have: int
    need: int


@dataclass(frozen=True)
class PeerReconciled:
    """(Responder) the peer finished round `round` with us: it holds everything we held when
    the round began, so our objects up to then have reached it."""

    round: int


@dataclass(frozen=True)
class Closed:
    reason: str
    error: bool
    fault: bool = False  # the peer sent what this protocol never sends (not a timeout)


Event = (Connected | ObjectsReceived | ReconcileComplete | PeerReconciled | SyncProgress
         | Typing | Presence | PresenceLeft | FilesReady | ChunkArrived | ChunksLacking | Closed)


@dataclass
class Stats:
    bytes_sent: int = 0
    bytes_received: int = 0
    objects_sent: int = 0
    objects_received: int = 0
    rounds: int = 0
    messages: int = 0


@dataclass
class _Answer:
    """Objects owed to the peer, read from the store only as the output buffer drains."""

    ids: deque[bytes]
    done: bool  # an answer to a want: ends with a "done" frame
    ready: deque[bytes] = field(default_factory=deque)
    ready_bytes: int = 0


def _ids(value: Any, what: str) -> list[bytes]:
    _require(isinstance(value, list) and all(
        isinstance(i, bytes) and len(i) == 32 for i in value), what)
    return value


class Session(_Signals, _Files, _Rounds, _Pacing):
    """One side of a connection. `initiator` is the side that dialled; it drives
    reconciliation rounds (sync._rounds), and both sides push new objects once connected."""

    _retry_s = ROUND_RETRY_S
    _reply_timeout_s = REPLY_TIMEOUT_S
    _want_window = WANT_WINDOW
    _want_batch_size = WANT_BATCH
    _neg_params = NEG_PARAMS

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
        self.frame_size_limit = frame_size_limit
        self.reconcile_interval = reconcile_interval
        self.stats = Stats()
        self.peer_key: bytes | None = None
        self.state = "handshake"
        self._noise = self._noise_for(secret)
        # A responder also takes a handshake under an older epoch's secret (a member who has
        # not heard of the newest epoch yet catches up); `old_epoch` says it did.
        self._older = () if initiator else tuple(older_secrets)
        self._heard = False  # the responder has read the initiator's first message
        self.old_epoch = False
        self._out: deque[bytes] = deque()
        self._out_bytes = 0
        self._events: deque[Event] = deque()
        self._partial = bytearray()
        self._sent: OrderedDict[bytes, None] = OrderedDict()
        self._backlog: deque[bytes] = deque()  # live pushes waiting for room in _out
        self._answers: deque[_Answer] = deque()
        self._early: list[tuple[list[bytes], list[bytes], list[tuple[bytes, int]] | None]] = []
        self._init_rounds(interest, stores_later)
        self._deadline = now + HANDSHAKE_TIMEOUT_S
        self._last_received = now
        self._next_ping = now + PING_INTERVAL_S
        self._next_round: float | None = None
        self.peer_caps: frozenset[str] = frozenset()  # what the peer's ping said it understands
        self._init_signals()
        self._init_files(chunks)
        # Objects queued for the socket at most (the host shares a key's allowance among its
        # sessions: SyncService).
        self.outgoing_limit = MAX_OUTGOING
        self._init_pacing(now)
        if initiator:
            self._send_raw(self._noise.write_message())

    # Public API -----------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.state == "closed"

    @property
    def connected(self) -> bool:
        return self.state == "open"

    def data_to_send(self) -> list[bytes]:
        """WebSocket binary messages to send now, in order."""
        self._fill()
        out = list(self._out)
        self._out.clear()
        self._out_bytes = 0
        return out

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    @property
    def has_output(self) -> bool:
        """Objects are still owed to the peer: call `data_to_send` again once the socket
        has taken what it returned."""
        return self.connected and bool(self._backlog or self._answers or self._files_output)

    @property
    def has_frames(self) -> bool:
        """Frames are queued (by a call since the last `data_to_send`): send them now."""
        return bool(self._out)

    def get_timer(self) -> float | None:
        if self.closed:
            return None
        deadlines = [d for d in (self._deadline, self._next_round) if d is not None]
        if self.connected:
            deadlines += [self._next_ping, self._last_received + IDLE_TIMEOUT_S]
            deadlines += self._signal_deadlines()
            deadlines += self._files_deadlines()
            deadlines += self._pacing_deadlines()
        return min(deadlines) if deadlines else None

    def receive(self, data: bytes, now: float) -> None:
        """One WebSocket message from the peer."""
        if self.closed:
            return
        self.stats.bytes_received += len(data)
        self._last_received = now
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
            what = "handshake" if self.state != "open" else "reply"
            self._fail(f"timed out waiting for the peer's {what}")
            return
        if self.connected:
            if self._pacing_timer(now):  # (first: a socket taking bytes is a live peer)
                self._fail("the peer does not read its replies")
                return
            if now >= self._last_received + IDLE_TIMEOUT_S:
                self._fail("the peer went silent")
                return
            if self._files_timer(now):
                self._fail("timed out waiting for the peer's chunks")
                return
            if now >= self._next_ping:
                self._send_frame({"t": "ping"})
                self._next_ping = now + PING_INTERVAL_S
            if self._next_round is not None and now >= self._next_round:
                self.reconcile(now)
            self._signal_timer(now)

    def push(self, raws: list[bytes], ids: list[bytes],
             streams: list[tuple[bytes, int]] | None = None) -> None:
        """Send new objects (local or relayed) unless this peer already had them from us, or
        does not keep their streams ((stream, class) of each; None: all kept)."""
        if not self.connected:
            return
        if self.peer_interest is None:  # sorted once the peer says what it keeps
            self._early.append((raws, ids, streams))
            return
        interest = self.peer_interest
        fresh = [raw for n, (raw, oid) in enumerate(zip(raws, ids, strict=True))
                 if (streams is None or interest.covers(*streams[n])) and self._remember_sent(oid)]
        self._backlog.extend(fresh)

    def _release_early_pushes(self) -> None:
        early, self._early = self._early, []
        for raws, ids, streams in early:
            self.push(raws, ids, streams)

    def mark_known(self, ids: list[bytes]) -> None:
        """Ids the peer is known to hold (it sent them): never push them back."""
        for oid in ids:
            self._remember_sent(oid)

    def close(self, reason: str = "closing") -> None:
        if self.closed:
            return
        if self.state != "handshake":
            self._send_frame({"t": "bye", "reason": reason[:200]})
        self._closed(reason, error=False)

    def refuse(self, reason: str, told: list[bytes] = ()) -> None:
        """Close with `reason`, first handing the peer the signed objects `told` (a removed
        member's removal: they take the one ingest path there and decide by themselves) in
        ordinary `objs` frames; the caller bounds how many and how large."""
        if self.connected and told:
            raws = deque(told)
            while raws:
                self._send_objs(raws)
        self.close(reason)

    def protocol_error(self, reason: str) -> None:
        """The transport saw something this protocol never sends: close on the peer's account."""
        self._fail(reason, fault=True)

    def connection_lost(self, reason: str = "connection closed") -> None:
        if not self.closed:
            # An error unless the rounds the initiator owes are over (none begun counts).
            expected = self._round is not None or (self.initiator and self._rounds == 0)
            self._closed(reason, error=self.state != "open" or expected)

    # Handshake ------------------------------------------------------------------------------

    def _noise_for(self, secret: bytes) -> NoiseConnection:
        noise = NoiseConnection.from_name(NOISE_PROTOCOL)
        if self.initiator:
            noise.set_as_initiator()
        else:
            noise.set_as_responder()
        noise.set_keypair_from_private_bytes(Keypair.STATIC, os.urandom(32))
        noise.set_psks(psk=secret)
        noise.set_prologue(PROLOGUE)
        noise.start_handshake()
        return noise

    def _first_message(self, data: bytes) -> None:
        """Read the initiator's first message under the newest secret, else an older one
        (its AEAD tag tells them apart)."""
        self._heard = True
        try:
            self._noise.read_message(data)
            return
        except Exception:  # not the newest epoch's
            if not self._older:
                raise
        for secret in self._older:
            noise = self._noise_for(secret)
            try:
                noise.read_message(data)
            except Exception:  # noqa: S112 - not this epoch's either: the next
                continue
            self._noise, self.old_epoch = noise, True
            return
        raise SessionError("no epoch's secret reads it")

    def _handshake(self, data: bytes, now: float) -> None:
        if len(data) > MAX_HANDSHAKE_MESSAGE:
            raise SessionError("handshake message too large")
        try:
            if self.initiator or self._heard:
                self._noise.read_message(data)
            else:
                self._first_message(data)
            if not self._noise.handshake_finished:
                self._send_raw(self._noise.write_message())
        except (NoiseHandshakeError, NoiseInvalidMessage, NoiseValueError, ValueError) as exc:
            raise SessionError(f"handshake failed (wrong workspace secret?): {exc!r}") from None
        except Exception as exc:  # cryptography's InvalidTag and friends
            raise SessionError(f"handshake failed (wrong workspace secret?): {exc!r}") from None
        if self._noise.handshake_finished:
            self.state = "hello"
            proof = self.identity.sign(HELLO_CONTEXT + self._noise.get_handshake_hash())
            self._send_frame({"t": "hello", "v": PROTOCOL_VERSION,
                              "key": self.identity.public_key, "sig": proof,
                              "ws": self.workspace})

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
        if not verify(key, HELLO_CONTEXT + self._noise.get_handshake_hash(), sig):
            raise SessionError("peer's identity proof does not verify")
        self.peer_key = key
        self.state = "open"
        self._deadline = None
        self._next_ping = now + PING_INTERVAL_S
        self._events.append(Connected(key))
        if not self._gated:
            self.admitted()

    def admitted(self) -> None:
        """(With `gated`) the host lets the peer in: the session begins."""
        if not self.connected:
            return
        # The peer reads this after our hello, so it is open by then; versions from before
        # typing answer a ping whatever else it holds.
        caps = CAPS if self.chunks is None else FILES_CAPS
        self._send_frame({"t": "ping", "caps": list(caps)})
        self._send_interest()  # the initiator's first round waits for the peer's

    # Transport ------------------------------------------------------------------------------

    def _transport(self, data: bytes, now: float) -> None:
        if len(data) > MAX_NOISE_MESSAGE:
            raise SessionError("message larger than a Noise message")
        try:
            plain = self._noise.decrypt(data)
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

    def _on_frame(self, data: bytes, now: float) -> None:
        try:
            frame = decode_item(data)
            if not is_chunk_frame(frame, data):  # a chunk's is checked without a copy
                check_canonical(frame, data)
        except EncodingError as exc:
            raise SessionError(f"malformed frame: {exc}") from None
        _require(isinstance(frame, dict) and isinstance(frame.get("t"), str), "no type")
        kind = frame["t"]
        if kind == "hello":
            self._on_hello(frame, now)
            return
        _require(self.state == "open", f"{kind} before hello")
        handler = {"interest": self._on_interest, "sums": self._on_sums,
                   "neg": self._on_neg, "want": self._on_want, "objs": self._on_objs,
                   "done": self._on_done, "synced": self._on_synced, "ping": self._on_ping,
                   "pong": self._on_pong, "typing": self._on_typing,
                   "presence": self._on_presence, "left": self._on_left,
                   "get": self._on_get, "chunk": self._on_chunk, "nochunk": self._on_nochunk,
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
            self._files_caps()
        self._send_frame({"t": "pong"})

    def _on_pong(self, frame: dict, now: float) -> None:
        pass

    def _on_bye(self, frame: dict, now: float) -> None:
        reason = frame.get("reason")
        self._closed(f"peer closed: {reason if isinstance(reason, str) else 'bye'}", False)

    def _on_want(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "ids"}, "want fields")
        ids = _ids(frame["ids"], "want ids")
        _require(len(ids) <= WANT_BATCH, "want too long")
        if sum(answer.done for answer in self._answers) >= MAX_QUEUED_WANTS:
            raise SessionError("peer keeps asking without reading the answers")
        self._answers.append(_Answer(deque(ids), done=True))

    def _on_objs(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "raws"}, "objs fields")
        raws = frame["raws"]
        _require(isinstance(raws, list) and all(
            isinstance(r, bytes) and len(r) <= MAX_OBJECT_SIZE for r in raws), "raws")
        self.stats.objects_received += len(raws)
        ids = [object_id(raw) for raw in raws]
        self.mark_known(ids)
        self._arrived(ids)
        if raws:
            self._events.append(ObjectsReceived(raws))
            self._received_objects(len(raws))

    def _on_synced(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "r"} and isinstance(frame["r"], int)
                 and not self.initiator, "synced")
        self._events.append(PeerReconciled(frame["r"]))

    def _negentropy(self, storage) -> Negentropy:
        return Negentropy(storage, self.frame_size_limit, **NEG_PARAMS)

    @staticmethod
    def _extras(ids: list[bytes]) -> _Answer:
        return _Answer(deque(ids), done=False)

    @staticmethod
    def _complete(rnd: _Round) -> ReconcileComplete:
        return ReconcileComplete(rnd.number, rnd.messages, rnd.have, rnd.need)

    # Output ---------------------------------------------------------------------------------

    def _remember_sent(self, oid: bytes) -> bool:
        if oid in self._sent:
            return False
        self._sent[oid] = None
        if len(self._sent) > SENT_MEMORY:
            self._sent.popitem(last=False)
        return True

    def _fill(self) -> None:
        """Turn owed objects into "objs" frames while the output buffer has room: live
        pushes first, then answers in the order they were asked for."""
        if not self.connected:
            return
        while self._backlog and self._out_bytes < self.outgoing_limit:
            self._send_objs(self._backlog)
        while self._answers and self._out_bytes < self.outgoing_limit:
            answer = self._answers[0]
            while answer.ids and answer.ready_bytes < OBJECTS_FRAME_BYTES:
                take = [answer.ids.popleft() for _ in range(min(ANSWER_READ, len(answer.ids)))]
                for raw in self.store.missing(take):
                    answer.ready.append(raw)
                    answer.ready_bytes += len(raw)
            if answer.ready:
                answer.ready_bytes -= self._send_objs(answer.ready, resent=True)
            if not answer.ids and not answer.ready:
                self._answers.popleft()
                if answer.done:
                    self._send_frame({"t": "done"})
                else:
                    self._maybe_finish_round(self._last_received)
        self._fill_files()

    def _send_objs(self, raws: deque[bytes], *, resent: bool = False) -> int:
        """Send one "objs" frame of the first objects of `raws`; returns their size. Objects
        the peer asked for count as sent even if pushed before (a push can be lost)."""
        batch, size = [], 0
        while raws and size + len(raws[0]) < OBJECTS_FRAME_BYTES:
            batch.append(raws.popleft())
            size += len(batch[-1])
        if not batch:  # a single object larger than the frame budget still fits MAX_FRAME
            batch.append(raws.popleft())
            size = len(batch[0])
        if resent:
            for raw in batch:
                oid = object_id(raw)
                self._sent.pop(oid, None)  # re-remembered as the newest sent
                self._remember_sent(oid)
        self.stats.objects_sent += len(batch)
        self._send_frame({"t": "objs", "raws": batch})
        return size

    def _send_frame(self, frame: dict) -> None:
        data = encode_frame(frame)
        if len(data) > MAX_FRAME:
            raise SessionError(f"refusing to send a frame of {len(data)} bytes")
        view = memoryview(data)
        for start in range(0, max(len(data), 1), CHUNK):
            last = start + CHUNK >= len(data)
            self._send_raw(self._noise.encrypt((_LAST if last else _MORE) + view[start:start + CHUNK]))

    def _send_raw(self, data: bytes) -> None:
        self._out.append(data)
        self._out_bytes += len(data)
        self.stats.bytes_sent += len(data)

    def _fail(self, reason: str, *, fault: bool = False) -> None:
        if not self.closed:
            self._closed(reason, error=True, fault=fault)

    def _closed(self, reason: str, error: bool, *, fault: bool = False) -> None:
        self.state = "closed"
        self._backlog.clear()
        self._answers.clear()
        self._presence_pending.clear()
        self._files_closed()
        self._events.append(Closed(reason, error, fault))

