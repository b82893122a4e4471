"""What a reconciliation round holds (sync._rounds drives it): its streams, what each lacks and
gives, the share of each want, the summaries' checks, and the events that report rounds.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from core.kinds import CHANNEL_CLASS, DOCUMENT_CLASS, WORKSPACE_CLASS

from ._errors import _require
from .negentropy import FINGERPRINT_SIZE, fingerprint_from_sum

WANT_SLICE = 32  # ids a want takes from a stream before the next stream's turn
EARLY_SHARE = 64  # ids a want takes from a stream at most while others still negotiate
MAX_SUM_STREAMS = 16384  # streams one summary names (the newest, when more are held)
EMPTY_FINGERPRINT = fingerprint_from_sum(0, 0)
_CLASSES = (WORKSPACE_CLASS, CHANNEL_CLASS, DOCUMENT_CLASS)


@dataclass(frozen=True)
class SyncProgress:
    """(Initiator) how far this round has come: `held` objects were here when it began,
    `received` of the `expected` ones it fetches have arrived since; `pending` are the
    streams this side keeps whose objects are still to be found or asked for; `done` once
    the round is over."""

    round: int
    held: int
    received: int
    expected: int
    pending: frozenset[bytes]
    done: bool = False


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


@dataclass
class StreamSync:
    stream: bytes
    klass: int
    newest_first: bool
    fetch: bool  # this side keeps it: ask for what it lacks
    give: bool  # the peer keeps it: send what the peer lacks
    estimate: int  # how many it lacks, from the counts
    found: int = 0  # ids found lacking so far
    need: deque[bytes] = field(default_factory=deque)
    waiting: bool = False  # a message of ours is unanswered
    parked: bytes | None = None  # our next message, held while `need` is long
    done: bool = False  # negotiation over
    needed: set[bytes] = field(default_factory=set)  # the ids in `need`
    given: set[bytes] = field(default_factory=set)  # ids queued for the peer as extras

    def take(self, count: int) -> list[bytes]:
        """The next `count` ids to ask for."""
        ids = [self.need.popleft() for _ in range(count)]
        self.needed.difference_update(ids)
        return ids

    @property
    def expected(self) -> int:
        return self.found if self.done else max(self.found, self.estimate)


@dataclass
class Round:
    number: int
    held: int = 0
    messages: int = 0
    summing: bool = True  # the responder's summary has not come yet
    queue: deque[bytes] = field(default_factory=deque)  # streams still to negotiate
    streams: dict[bytes, StreamSync] = field(default_factory=dict)
    have: int = 0
    need: int = 0
    received: int = 0
    in_flight: deque[set[bytes]] = field(default_factory=deque)  # ids of each want out
    turn: int = 0  # where the next want's turn through the streams begins

    def want_batch(self, limit: int, focus: bytes | None) -> list[bytes]:
        """Ids for one want of at most `limit`: the focused stream's first, then WANT_SLICE of
        each other stream's in turn (starting after the stream the last want ended with) until
        full. While streams are still negotiating, each stream gives at most EARLY_SHARE, so
        those come in with their newest before anyone's history."""
        batch: list[bytes] = []
        focused = self.streams.get(focus) if focus is not None else None
        if focused is not None:
            batch.extend(focused.take(min(len(focused.need), limit)))
        wanting = [st for st in self.streams.values() if st.need]
        if not wanting:
            return batch
        later = any(st.fetch and not st.need and not st.done for st in self.streams.values())
        room = {id(st): EARLY_SHARE if later else limit for st in wanting}
        start = self.turn % len(wanting)
        turn = wanting[start:] + wanting[:start]
        while len(batch) < limit:
            moved = False
            for n, st in enumerate(turn):
                take = min(WANT_SLICE, len(st.need), limit - len(batch), room[id(st)])
                if take > 0:
                    batch.extend(st.take(take))
                    room[id(st)] -= take
                    moved = True
                if len(batch) >= limit:
                    self.turn = start + n + 1
                    break
            if not moved:
                break
        return batch


def _stream_entry(value: Any, fields: int) -> list:
    _require(isinstance(value, list) and len(value) == fields, "sums entry")
    stream, fingerprint, count, klass = value[:4]
    _require(isinstance(stream, bytes) and len(stream) == 32, "sums stream")
    _require(isinstance(fingerprint, bytes) and len(fingerprint) == FINGERPRINT_SIZE,
             "sums fingerprint")
    _require(isinstance(count, int) and count >= 0 and klass in _CLASSES, "sums count")
    _require(all(isinstance(v, int) and v >= 0 for v in value[4:]), "sums newest")
    return value


def sums_entries(frame: dict, fields: int) -> list[list]:
    """The checked entries of a `sums` frame (`fields` each: 4 asked, 5 answered)."""
    _require(frame.keys() == {"t", "r", "ss"} and isinstance(frame["r"], int), "sums fields")
    ss = frame["ss"]
    _require(isinstance(ss, list) and len(ss) <= 2 * MAX_SUM_STREAMS, "sums streams")
    entries = [_stream_entry(v, fields) for v in ss]
    _require(len({e[0] for e in entries}) == len(entries), "sums repeats a stream")
    return entries
