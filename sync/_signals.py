"""Typing indicators and presence in documents: live frames a session sends and takes, never
stored or relayed (the frames: docs/protocol.md).

The session's `signals` (sync.session.Session owns it). Both go only to a peer whose ping named
the capability (`typing`, `presence`), are checked field by field, and are taken at most
TYPING_RECEIVE_LIMIT per TYPING_RECEIVE_WINDOW_S (PRESENCE_RECEIVE_LIMIT per
PRESENCE_RECEIVE_WINDOW_S for `presence` and `left` together); the rest are dropped silently,
and each taken one is an event named by the peer's hello key. `send_typing` sends at most one
frame per channel per TYPING_SEND_INTERVAL_S; `send_presence` keeps the newest position that
comes within PRESENCE_SEND_INTERVAL_S of the last frame for a document and sends it when the
interval is over (a cursor's last position matters); `left` goes at once, only to a peer that
was sent a presence there. Private typing (`ptyping`, capability PTYPING) names a private
channel by its 32-byte id; the sender picks the sessions (the channel's current members), the
receiver's Node checks the sender is one, and it has the same intervals and bound as `typing`
(counted apart, so one kind's flood leaves the other's indicators).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from core.errors import InvalidObject
from core.kinds import MAX_CHANNEL, MAX_LIST, MAX_NAME, channel_key, check_name

from ._errors import SessionError, _require

if TYPE_CHECKING:
    from .session import Session

# Typing indicators: live frames, never stored. A sender repeats while its person types, so
# a receiver's indicator (kept a few seconds, sync.service.TYPING_TTL_S) stays lit.
TYPING = "typing"  # the capability a ping's caps names
MAX_CAPS = 16  # names in a ping's caps (each at most MAX_CAP_NAME characters)
MAX_CAP_NAME = 32
TYPING_SEND_INTERVAL_S = 3.0  # per channel, per session
TYPING_RECEIVE_LIMIT = 10  # frames a session takes per window; more are dropped silently
TYPING_RECEIVE_WINDOW_S = 10.0
PTYPING = "ptyping"  # the capability for typing in a private channel (same interval and bound)

# Presence in documents: live frames, never stored, like typing (see the module docstring).
PRESENCE = "presence"  # the capability a ping's caps names
PRESENCE_SEND_INTERVAL_S = 0.1  # per document, per session; the newest position waits for it
PRESENCE_REFRESH_S = 2.0  # how often a window repeats its presence while a document is open
# At most 10 presence frames a second (the send interval), as many `left` frames, with room:
# an honest sender never reaches it.
PRESENCE_RECEIVE_LIMIT = 100
PRESENCE_RECEIVE_WINDOW_S = 5.0
MAX_PRESENCE_HEADS = MAX_LIST  # commit ids a presence names (a commit links at most as many)
MAX_POSITION = (1 << 31) - 1  # what Qt's int holds
MAX_PRESENCE_DOCS = 16  # documents a session remembers a peer's presence in (for its end)


@dataclass(frozen=True)
class Typing:
    """The peer (`key`, authenticated by its hello) says its person is typing in `channel`."""

    key: bytes
    channel: str


@dataclass(frozen=True)
class PrivateTyping:
    """The peer (`key`) says its person is typing in the private channel `channel` (its id)."""

    key: bytes
    channel: bytes


@dataclass(frozen=True)
class Presence:
    """The peer (`key`, authenticated by its hello) has document `doc` open on `branch`, its
    selection from `anchor` to `at` in codepoints of the text at the commits `heads`."""

    key: bytes
    doc: bytes
    branch: str
    heads: tuple[bytes, ...]
    anchor: int
    at: int


@dataclass(frozen=True)
class PresenceLeft:
    """The peer (`key`) closed document `doc`."""

    key: bytes
    doc: bytes


def _position(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_POSITION


def _presence_fields(doc: Any, branch: Any, heads: Any, anchor: Any, at: Any) -> str | None:
    """What is wrong with a presence's fields ("document", "branch", ...), None if nothing."""
    if not (isinstance(doc, bytes) and len(doc) == 32):
        return "document"
    try:
        check_name(branch, "branch name", MAX_NAME)
    except InvalidObject:
        return "branch"
    if not (isinstance(heads, list | tuple) and len(heads) <= MAX_PRESENCE_HEADS
            and all(isinstance(h, bytes) and len(h) == 32 for h in heads)
            and len(set(heads)) == len(heads)):
        return "heads"
    if not (_position(anchor) and _position(at)):
        return "position"
    return None


def _take_typing(taken: deque[float], now: float) -> bool:
    """Whether a typing frame is within TYPING_RECEIVE_LIMIT for `taken` (and count it)."""
    while taken and now - taken[0] >= TYPING_RECEIVE_WINDOW_S:
        taken.popleft()
    if len(taken) >= TYPING_RECEIVE_LIMIT:
        return False
    taken.append(now)
    return True


K = TypeVar("K", str, bytes)


def _send_due(sent: dict[K, float], key: K, now: float) -> bool:
    """Whether a typing frame for `key` may go now, one per TYPING_SEND_INTERVAL_S (and count
    it sent). Keys whose interval is over are forgotten, so the memory stays small."""
    last = sent.get(key)
    if last is not None and now - last < TYPING_SEND_INTERVAL_S:
        return False
    for done in [k for k, t in sent.items() if now - t >= TYPING_SEND_INTERVAL_S]:
        del sent[done]
    sent[key] = now
    return True


class Signals:
    """Sending and taking typing and presence frames."""

    def __init__(self, session: Session):
        self._session = session
        self._typing_sent: dict[str, float] = {}  # channel key -> when we last sent typing
        self._typing_received: deque[float] = deque()  # when recent typing frames were taken
        self._ptyping_sent: dict[bytes, float] = {}  # private channel -> when we last sent
        self._ptyping_received: deque[float] = deque()  # when recent ptyping frames were taken
        self._presence_sent: dict[bytes, float] = {}  # document -> when our last presence went
        self._presence_pending: dict[bytes, dict] = {}  # document -> the newest, waiting
        self._presence_shown: set[bytes] = set()  # documents the peer has our presence in
        self._presence_received: deque[float] = deque()  # when recent frames were taken
        self._presence_heard: OrderedDict[bytes, None] = OrderedDict()  # the peer's documents

    def deadlines(self) -> list[float]:
        """When presences waiting for their interval are due."""
        return [self._presence_sent[doc] + PRESENCE_SEND_INTERVAL_S
                for doc in self._presence_pending]

    def timer(self, now: float) -> None:
        for doc, frame in list(self._presence_pending.items()):
            if now - self._presence_sent[doc] >= PRESENCE_SEND_INTERVAL_S:
                del self._presence_pending[doc]
                self._send_presence(doc, frame, now)

    def send_typing(self, channel: str, now: float) -> bool:
        """Tell the peer this person is typing in `channel`: at most one frame per channel per
        TYPING_SEND_INTERVAL_S, and only to a peer that said it understands it. Returns
        whether a frame was queued. A name no channel could have is ignored."""
        if not self._session.connected or TYPING not in self._session.peer_caps:
            return False
        try:
            check_name(channel, "channel name", MAX_CHANNEL)
        except InvalidObject:
            return False
        if not _send_due(self._typing_sent, channel_key(channel), now):
            return False
        self._session.send_frame({"t": "typing", "ch": channel})
        return True

    def send_private_typing(self, channel: bytes, now: float) -> bool:
        """Tell the peer this person is typing in the private channel `channel` (its id): like
        send_typing, to a peer that announced PTYPING. The caller sends it only to members."""
        if not self._session.connected or PTYPING not in self._session.peer_caps:
            return False
        if not (isinstance(channel, bytes) and len(channel) == 32):
            return False
        if not _send_due(self._ptyping_sent, channel, now):
            return False
        self._session.send_frame({"t": "ptyping", "pc": channel})
        return True

    def send_presence(self, doc: bytes, branch: str, heads: list[bytes], anchor: int, at: int,
                      now: float) -> bool:
        """Tell the peer this person has `doc` open on `branch` with the selection from `anchor`
        to `at` (codepoints of the text at commits `heads`): at once, or if a presence for
        `doc` went less than PRESENCE_SEND_INTERVAL_S ago, when the interval is over (the
        newest replaces any still waiting). Only to a peer that said it understands it; fields
        no receiver would take are ignored. Returns whether a frame was sent or is waiting."""
        if not self._session.connected or PRESENCE not in self._session.peer_caps:
            return False
        if _presence_fields(doc, branch, heads, anchor, at) is not None:
            return False
        frame = {"t": "presence", "doc": doc, "br": branch, "heads": sorted(heads),
                 "anchor": anchor, "at": at}
        last = self._presence_sent.get(doc)
        if last is not None and now - last < PRESENCE_SEND_INTERVAL_S:
            self._presence_pending[doc] = frame
            return True
        self._presence_pending.pop(doc, None)
        self._send_presence(doc, frame, now)
        return True

    def send_left(self, doc: bytes) -> bool:
        """Tell the peer this person closed `doc`, if it was sent a presence there (a waiting
        one is dropped). Returns whether a frame was sent."""
        self._presence_pending.pop(doc, None)
        if not self._session.connected or doc not in self._presence_shown:
            return False
        self._presence_shown.discard(doc)
        self._session.send_frame({"t": "left", "doc": doc})
        return True

    @property
    def presence_docs(self) -> list[bytes]:
        """The documents the peer said it has open (at most MAX_PRESENCE_DOCS, the newest),
        and has not left: where its presence ends with the session."""
        return list(self._presence_heard)

    def on_typing(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "ch"}, "typing fields")
        try:
            channel = check_name(frame["ch"], "channel name", MAX_CHANNEL)
        except InvalidObject:
            raise SessionError("malformed frame: typing channel") from None
        if not _take_typing(self._typing_received, now):
            return  # a flood costs the peer its indicators, not the session
        key = self._session.peer_key
        assert key is not None  # open sessions have one
        self._session.emit(Typing(key, channel))

    def on_ptyping(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "pc"}, "ptyping fields")
        channel = frame["pc"]
        _require(isinstance(channel, bytes) and len(channel) == 32, "ptyping channel")
        if not _take_typing(self._ptyping_received, now):
            return  # a flood costs the peer its indicators, not the session
        key = self._session.peer_key
        assert key is not None  # open sessions have one
        self._session.emit(PrivateTyping(key, channel))

    def on_presence(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "doc", "br", "heads", "anchor", "at"}, "presence fields")
        doc, heads = frame["doc"], frame["heads"]
        wrong = _presence_fields(doc, frame["br"], heads, frame["anchor"], frame["at"])
        _require(wrong is None, f"presence {wrong}")
        if not self._take_presence(now):
            return
        self._presence_heard.pop(doc, None)
        self._presence_heard[doc] = None
        if len(self._presence_heard) > MAX_PRESENCE_DOCS:
            self._presence_heard.popitem(last=False)  # its cursor expires on its own
        key = self._session.peer_key
        assert key is not None  # open sessions have one
        self._session.emit(Presence(key, doc, frame["br"], tuple(heads), frame["anchor"],
                                    frame["at"]))

    def on_left(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "doc"}, "left fields")
        doc = frame["doc"]
        _require(isinstance(doc, bytes) and len(doc) == 32, "left document")
        if not self._take_presence(now):
            return
        self._presence_heard.pop(doc, None)
        key = self._session.peer_key
        assert key is not None
        self._session.emit(PresenceLeft(key, doc))

    def closed(self) -> None:
        """The session ended: no presence waits to be sent."""
        self._presence_pending.clear()

    def _take_presence(self, now: float) -> bool:
        """Whether a presence or left frame is within the receive limit (and count it)."""
        taken = self._presence_received
        while taken and now - taken[0] >= PRESENCE_RECEIVE_WINDOW_S:
            taken.popleft()
        if len(taken) >= PRESENCE_RECEIVE_LIMIT:
            return False  # a flood costs the peer its cursor, not the session
        taken.append(now)
        return True

    def _send_presence(self, doc: bytes, frame: dict, now: float) -> None:
        # Forget documents whose interval is over and that have nothing waiting.
        self._presence_sent = {d: t for d, t in self._presence_sent.items()
                               if now - t < PRESENCE_SEND_INTERVAL_S
                               or d in self._presence_pending}
        self._presence_sent[doc] = now
        self._presence_shown.add(doc)
        self._session.send_frame(frame)
