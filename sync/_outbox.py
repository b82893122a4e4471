"""Objects owed to the peer: live pushes, answers to its wants and a round's extras (part of
sync.session.Session).

Answers are read from the store only as the output buffer drains (`fill`), so a peer that asks
and never reads costs a bounded amount of memory; live pushes go first, then answers in the
order they were asked for. `limit` bounds the objects queued for the socket (the host shares a
key's allowance among its sessions: SyncService).
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from core.encoding import object_id

from ._errors import SessionError, _require
from ._rounds import WANT_BATCH, WANT_WINDOW

if TYPE_CHECKING:
    from .session import Session

OBJECTS_FRAME_BYTES = 256 * 1024
MAX_QUEUED_WANTS = 2 * WANT_WINDOW  # a peer asking more before reading answers is cut off
ANSWER_READ = 64  # objects read from the store at a time while answering
MAX_OUTGOING = 8 << 20  # bytes queued for the socket before we stop producing more
SENT_MEMORY = 50_000  # ids remembered as already sent to this peer

_Push = tuple[list[bytes], list[bytes], list[tuple[bytes, int]] | None]


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


class Outbox:
    """What this session still owes the peer, and what the peer is known to hold."""

    def __init__(self, session: Session):
        self._session = session
        self.limit = MAX_OUTGOING  # objects' bytes queued for the socket at most
        self.sent: OrderedDict[bytes, None] = OrderedDict()  # ids the peer has from us
        self._backlog: deque[bytes] = deque()  # live pushes waiting for room in the output
        self._answers: deque[_Answer] = deque()
        self._early: list[_Push] = []  # pushes before the peer said what it keeps

    @property
    def owes(self) -> bool:
        """Objects are still to be sent (pushes, answers or extras)."""
        return bool(self._backlog or self._answers)

    @property
    def answering(self) -> bool:
        """Answers to wants or a round's extras are still being sent."""
        return bool(self._answers)

    @property
    def sending_extras(self) -> bool:
        """A round's extras (objects the peer lacks) are still being sent."""
        return any(not answer.done for answer in self._answers)

    def push(self, raws: list[bytes], ids: list[bytes],
             streams: list[tuple[bytes, int]] | None = None) -> None:
        """Send new objects (local or relayed) unless this peer already had them from us, or
        does not keep their streams ((stream, class) of each; None: all kept)."""
        if not self._session.connected:
            return
        interest = self._session.rounds.peer_interest
        if interest is None:  # sorted once the peer says what it keeps
            self._early.append((raws, ids, streams))
            return
        fresh = [raw for n, (raw, oid) in enumerate(zip(raws, ids, strict=True))
                 if (streams is None or interest.covers(*streams[n])) and self.remember(oid)]
        self._backlog.extend(fresh)

    def release_early(self) -> None:
        """The peer said what it keeps: the pushes held until then go (or not)."""
        early, self._early = self._early, []
        for raws, ids, streams in early:
            self.push(raws, ids, streams)

    def mark_known(self, ids: list[bytes]) -> None:
        """Ids the peer is known to hold (it sent them): never push them back."""
        for oid in ids:
            self.remember(oid)

    def remember(self, oid: bytes) -> bool:
        """Remember `oid` as sent; False if it was already."""
        if oid in self.sent:
            return False
        self.sent[oid] = None
        if len(self.sent) > SENT_MEMORY:
            self.sent.popitem(last=False)
        return True

    def on_want(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "ids"}, "want fields")
        ids = _ids(frame["ids"], "want ids")
        _require(len(ids) <= WANT_BATCH, "want too long")
        if sum(answer.done for answer in self._answers) >= MAX_QUEUED_WANTS:
            raise SessionError("peer keeps asking without reading the answers")
        self._answers.append(_Answer(deque(ids), done=True))

    def add_extras(self, ids: list[bytes]) -> None:
        """Objects of a round the peer lacks: sent like an answer, with no "done"."""
        self._answers.append(_Answer(deque(ids), done=False))

    def fill(self) -> None:
        """Turn owed objects into "objs" frames while the output buffer has room: live
        pushes first, then answers in the order they were asked for."""
        session = self._session
        while self._backlog and session.out_bytes < self.limit:
            self.send_objs(self._backlog)
        while self._answers and session.out_bytes < self.limit:
            answer = self._answers[0]
            while answer.ids and answer.ready_bytes < OBJECTS_FRAME_BYTES:
                take = [answer.ids.popleft() for _ in range(min(ANSWER_READ, len(answer.ids)))]
                for raw in session.store.missing(take):
                    answer.ready.append(raw)
                    answer.ready_bytes += len(raw)
            if answer.ready:
                answer.ready_bytes -= self.send_objs(answer.ready, resent=True)
            if not answer.ids and not answer.ready:
                self._answers.popleft()
                if answer.done:
                    session.send_frame({"t": "done"})
                else:
                    session.rounds.maybe_finish(session.last_received)

    def send_objs(self, raws: deque[bytes], *, resent: bool = False) -> int:
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
                self.sent.pop(oid, None)  # re-remembered as the newest sent
                self.remember(oid)
        self._session.stats.objects_sent += len(batch)
        self._session.send_frame({"t": "objs", "raws": batch})
        return size

    def clear(self) -> None:
        """The session ended: nothing more is owed."""
        self._backlog.clear()
        self._answers.clear()
