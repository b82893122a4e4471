"""Chunks of attached files on a sync session (docs/ARCHITECTURE.md "Attachments"; the frames:
docs/protocol.md).

The session's `files` (sync.session.Session owns it) asks a peer for chunks and answers its
asks, outside the reconciled set and only between peers that both announced the `files`
capability.

Asking: `request_chunks` sends `get` frames of at most MAX_GET_IDS ids; what is asked and not
yet answered is `asked` (the fetcher keeps at most FETCH_WINDOW of them per peer). An answer
for an id not asked, or a chunk whose bytes do not hash to its id, closes the session as a
fault: the peer is cut off and the fetcher asks another. The session hashes each chunk it
receives unless `check_chunks` is off: the fetcher turns it off and hashes in its store
threads, before storing, so the event loop and the hashing use both cores.

Answering: a peer's gets queue up (at most MAX_QUEUED_GETS; more is a fault) as lists of ids,
and chunks are read from the chunk store one at a time, only when no object frame is waiting
and the output holds less than FILES_OUTGOING bytes, so chat goes first and a peer that asks
and never reads costs bounded memory. One call of `fill` makes at most FILES_PER_CALL chunk
frames: the host sends them and comes round again, so what else its thread has to do (a post
being made, objects to push) waits for one chunk, never for a batch of them. Chat goes first
on the cores as well: once objects move on the session either way (pushed, or received), no
chunk is made for CHAT_FIRST_S after the last of them, except one every MAX_HOLD_S, so the
posting, storing and verifying they cause are not slowed by reading, sending, hashing and
writing chunks, and endless chat still leaves a file moving.

A chunk frame is encoded and checked here rather than by cbor2 (`encode_frame`,
`is_chunk_frame`): the bytes are the same canonical CBOR, but cbor2 takes longer to copy 256 KiB
into its output than BLAKE2b takes to hash them, so it would be the slowest step of a transfer.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from core.attachments import ID_SIZE, MAX_CHUNK, chunk_id
from core.encoding import dumps

from ._errors import SessionError, _require

if TYPE_CHECKING:
    from .session import Session

FILES = "files"  # the capability a ping's caps names
MAX_GET_IDS = 32  # chunk ids in one get frame
MAX_QUEUED_GETS = 32  # a peer's gets waiting for their answers; more is a fault
FETCH_WINDOW = 16  # chunks asked of one peer and not yet answered (4 MiB of 256 KiB chunks)
FILES_OUTGOING = 2 << 20  # chunk bytes queued for the socket before the next are read
FILES_PER_CALL = 1  # chunk frames one `fill` makes (each about 0.3 ms of a core to send)
CHAT_FIRST_S = 0.02  # no chunk this long after objects last moved on the session...
MAX_HOLD_S = 0.1  # ...unless none went for this long (a file moves under endless chat)
# A peer that holds asked chunks this long without an answer is given up on (the session
# ends, not as a fault: a slow link is no crime); its chunks go to other peers.
CHUNK_REPLY_TIMEOUT_S = 30.0
BAD_CHUNK = "the peer sent a chunk that does not hash to its id"  # a fault: the peer is cut off


_TEMPLATE = dumps({"t": "chunk", "id": bytes(ID_SIZE), "data": b""})  # ends in 0x40: b""
_ID_AT = _TEMPLATE.index(bytes(ID_SIZE))
_BEFORE_ID, _BEFORE_DATA = _TEMPLATE[:_ID_AT], _TEMPLATE[_ID_AT + ID_SIZE:-1]


def _bytes_head(size: int) -> bytes:
    """The canonical CBOR head of a byte string of `size` bytes (major type 2)."""
    if size < 24:
        return bytes([0x40 | size])
    for extra, code in ((1, 24), (2, 25), (4, 26), (8, 27)):
        if size < 1 << (8 * extra):
            return bytes([0x40 | code]) + size.to_bytes(extra, "big")
    raise ValueError("a byte string too long for CBOR")


def _chunk_head(cid: bytes, size: int) -> bytes:
    return _BEFORE_ID + cid + _BEFORE_DATA + _bytes_head(size)


def _is_chunk(frame: dict) -> bool:
    return (frame.keys() == {"t", "id", "data"} and type(frame["t"]) is str
            and frame["t"] == "chunk" and type(frame["id"]) is bytes
            and len(frame["id"]) == ID_SIZE and type(frame["data"]) is bytes)


def split_chunk_frame(raw: bytes | bytearray) -> tuple[bytes, memoryview] | None:
    """The id and data of a chunk frame in its canonical encoding, read without decoding (and
    copying) the data; None when `raw` is not one (it is then decoded the usual way)."""
    if not raw.startswith(_BEFORE_ID):
        return None
    at = len(_BEFORE_ID) + ID_SIZE
    if raw[at:at + len(_BEFORE_DATA)] != _BEFORE_DATA:
        return None
    at += len(_BEFORE_DATA)
    for head in (1, 2, 3, 5, 9):  # the lengths a byte string's head can have
        size = len(raw) - at - head
        if size >= 0 and raw[at:at + head] == _bytes_head(size):
            cid = bytes(raw[len(_BEFORE_ID):len(_BEFORE_ID) + ID_SIZE])
            return cid, memoryview(raw)[at + head:]
    return None


def encode_frame(frame: dict) -> bytes:
    """`dumps(frame)`; a chunk frame's with one copy of its data."""
    if _is_chunk(frame):
        return b"".join((_chunk_head(frame["id"], len(frame["data"])), frame["data"]))
    return dumps(frame)


def is_chunk_frame(frame: Any, encoded: bytes | bytearray) -> bool:
    """True when `frame` is a chunk frame and `encoded`, what it was decoded from, is exactly
    its canonical encoding (False is no verdict: check it the usual way)."""
    if type(frame) is not dict or not _is_chunk(frame):
        return False
    data = frame["data"]
    head = _chunk_head(frame["id"], len(data))
    # The decoder read `data` from what follows the head, so equal heads and lengths are
    # equal encodings.
    return len(encoded) == len(head) + len(data) and encoded[:len(head)] == head


class ChunkSource(Protocol):
    def read(self, cid: bytes) -> bytes | None:
        """A chunk's bytes, or None when it is not held."""
        ...


@dataclass(frozen=True)
class FilesReady:
    """The peer announced `files` and this session can ask it for chunks."""


@dataclass(frozen=True)
class ChunkArrived:
    """A chunk asked for arrived. `checked`: its bytes hash to its id; otherwise (a session
    whose `check_chunks` is off) whoever takes it must check them before storing them, and
    cut the peer off (`protocol_error`) when they do not."""

    id: bytes
    data: bytes | memoryview  # a view of the frame it came in, which nothing else holds
    checked: bool = True


@dataclass(frozen=True)
class ChunksLacking:
    """The peer says it holds none of these chunks asked for."""

    ids: tuple[bytes, ...]


def _chunk_ids(value: Any, what: str) -> list[bytes]:
    _require(isinstance(value, list) and 0 < len(value) <= MAX_GET_IDS and all(
        isinstance(i, bytes) and len(i) == ID_SIZE for i in value), what)
    return value


class Files:
    """Asking the peer for chunks, and answering its asks from `chunks` (None: no chunk store,
    so `files` is not announced)."""

    def __init__(self, session: Session, chunks: ChunkSource | None):
        self._session = session
        self.chunks = chunks
        self._gets: deque[deque[bytes]] = deque()  # the peer's asks, in order
        self._lacking: list[bytes] = []  # ids of the first get not held here
        self._asked: OrderedDict[bytes, None] = OrderedDict()  # our asks, unanswered
        self._chunk_deadline: float | None = None
        self._files_told = False
        self._chat_at: float | None = None  # when objects last moved, while chunks wait
        self._chunk_at = float("-inf")  # when the last chunk frame was made
        # The fetcher turns this off and hashes each chunk in its store thread instead, so
        # the event loop does not spend a core's time hashing what it receives.
        self.check_chunks = True
        self.chunks_received = 0
        self.chunks_sent = 0

    # Asking ----------------------------------------------------------------------------------

    @property
    def ready(self) -> bool:
        """This session may ask the peer for chunks (it announced `files`)."""
        session = self._session
        return session.connected and self.chunks is not None and FILES in session.peer_caps

    @property
    def asked(self) -> list[bytes]:
        """Chunks asked of the peer and not answered yet, in the order asked."""
        return list(self._asked)

    @property
    def in_flight(self) -> int:
        """How many chunks are asked of the peer and not answered yet."""
        return len(self._asked)

    def request_chunks(self, ids: list[bytes], now: float) -> list[bytes]:
        """Ask the peer for these chunks (those asked already are not asked twice); returns
        the ids asked now."""
        if not self.ready:
            return []
        fresh = [cid for cid in dict.fromkeys(ids) if cid not in self._asked]
        for start in range(0, len(fresh), MAX_GET_IDS):
            self._session.send_frame({"t": "get", "ids": fresh[start:start + MAX_GET_IDS]})
        for cid in fresh:
            self._asked[cid] = None
        if fresh and self._chunk_deadline is None:
            self._chunk_deadline = now + CHUNK_REPLY_TIMEOUT_S
        return fresh

    def _answered(self, cid: bytes, now: float) -> None:
        _require(cid in self._asked, "a chunk answer nobody asked for")
        del self._asked[cid]
        self._chunk_deadline = now + CHUNK_REPLY_TIMEOUT_S if self._asked else None

    def on_chunk(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "id", "data"}, "chunk fields")
        cid, data = frame["id"], frame["data"]
        _require(isinstance(cid, bytes) and len(cid) == ID_SIZE, "chunk id")
        _require(isinstance(data, bytes), "chunk data")
        self.on_chunk_data(cid, data, now)

    def on_chunk_data(self, cid: bytes, data: bytes | memoryview, now: float) -> None:
        """A chunk frame's id and data (split_chunk_frame read them without decoding)."""
        _require(len(data) <= MAX_CHUNK, "chunk data")
        self._answered(cid, now)
        if self.check_chunks and chunk_id(data) != cid:
            raise SessionError(BAD_CHUNK)
        self.chunks_received += 1
        self._session.emit(ChunkArrived(cid, data, self.check_chunks))

    def on_nochunk(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "ids"}, "nochunk fields")
        ids = _chunk_ids(frame["ids"], "nochunk ids")
        for cid in ids:
            self._answered(cid, now)
        self._session.emit(ChunksLacking(tuple(ids)))

    # Answering -------------------------------------------------------------------------------

    def on_get(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "ids"}, "get fields")
        ids = _chunk_ids(frame["ids"], "get ids")
        _require(self.chunks is not None, "get without the files capability")
        if len(self._gets) >= MAX_QUEUED_GETS:
            raise SessionError("peer keeps asking for chunks without reading the answers")
        self._gets.append(deque(ids))

    def chat_moved(self, now: float) -> None:
        """Objects were pushed to the peer or came from it: chunks wait (`fill`)."""
        if self._gets:
            self._chat_at = now

    def _holding(self, now: float | None) -> bool:
        if now is None or self._chat_at is None:
            return False
        if now < self._chat_at + CHAT_FIRST_S and now < self._chunk_at + MAX_HOLD_S:
            return True
        self._chat_at = None
        return False

    def fill(self, now: float | None = None) -> None:
        """Answer the peer's gets while nothing else waits and the output has room, with at
        most FILES_PER_CALL chunks; with `now`, none while chat goes first (`chat_moved`)."""
        if self._holding(now):
            return
        budget = FILES_PER_CALL
        while (self._gets and budget and not self._session.outbox.owes
               and self._session.out_bytes < FILES_OUTGOING):
            ids = self._gets[0]
            if ids:
                cid = ids.popleft()
                data = self.chunks.read(cid) if self.chunks is not None else None
                if data is None or len(data) > MAX_CHUNK:
                    self._lacking.append(cid)
                else:
                    self.chunks_sent += 1
                    budget -= 1
                    if now is not None:
                        self._chunk_at = now
                    self._session.send_frame({"t": "chunk", "id": cid, "data": data})
            if not ids:
                self._gets.popleft()
                if self._lacking:
                    self._session.send_frame({"t": "nochunk", "ids": self._lacking})
                    self._lacking = []
        if not self._gets:
            self._chat_at = None  # nothing held: the next gets go at once

    @property
    def owes(self) -> bool:
        """Gets of the peer's are still to be answered, and may be now (not while chat goes
        first: the session's timer says when they may)."""
        return bool(self._gets) and self._chat_at is None

    # Timers and the end ----------------------------------------------------------------------

    def deadlines(self) -> list[float]:
        out = [] if self._chunk_deadline is None else [self._chunk_deadline]
        if self._chat_at is not None and self._gets:  # when the chunks held may go
            out.append(min(self._chat_at + CHAT_FIRST_S, self._chunk_at + MAX_HOLD_S))
        return out

    def timer_expired(self, now: float) -> bool:
        """True when the peer held our asks too long (the session then ends)."""
        return self._chunk_deadline is not None and now >= self._chunk_deadline

    def caps_changed(self) -> None:
        """The peer's ping named its caps: tell the fetcher once that chunks may be asked."""
        if self.ready and not self._files_told:
            self._files_told = True
            self._session.emit(FilesReady())

    def closed(self) -> None:
        self._chat_at = None
        self._gets.clear()
        self._lacking = []
        self._chunk_deadline = None
