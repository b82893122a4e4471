"""Reconciliation rounds, one stream at a time: the initiator's side and the responder's.

The session's `rounds` (sync.session.Session owns it): it sends through the session and asks
its `outbox` (what is owed the peer) and `pacing` (the responder's budget).

A round (protocol version 3) begins with summaries: the initiator sends `sums` with each stream
it holds (id, fingerprint of its items, count, class) and the responder answers with those of
its streams that differ, or that only one side holds, among the streams either side's interest
covers (sync._interest), with its own newest ts. The initiator then reconciles each differing
stream with negentropy (`neg {r, s, d, m}`; `d` 1: newest first, see sync.store.FLIP):
workspace-level streams first, then the stream the window shows (`focus`), then channels,
busiest first, newest first, then documents, oldest first (commits after their parents). At
most NEG_STREAMS await a reply at once, each asks (`l`) for replies no longer than the ids it has
room for below NEED_HIGH, and one without room waits for its ids to be asked, so memory stays
bounded whatever the workspace's size (NEED_HIGH ids per stream kept). Wants take ids from
every stream in turn (an equal share of a want each), the focused stream first, so the newest
messages of every channel arrive before any channel's history. Ids are asked for only in streams this
side's interest covers, and extras are sent only in streams the peer's covers.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from core.kinds import CHANNEL_CLASS, WORKSPACE_CLASS

from ._errors import SessionError, _require
from ._interest import EVERYTHING, Interest
from ._round_state import (
    EMPTY_FINGERPRINT,
    MAX_SUM_STREAMS,
    PeerReconciled,
    ReconcileComplete,
    Round,
    StreamSync,
    SyncProgress,
    sums_entries,
)
from ._timeouts import REPLY_TIMEOUT_S, ROUND_RETRY_S
from .negentropy import (
    FRAME_SIZE_MARGIN,
    ID_SIZE,
    MIN_FRAME_SIZE_LIMIT,
    Negentropy,
    NegentropyError,
)
from .store import StreamInfo

if TYPE_CHECKING:
    from .session import Session

WANT_BATCH = 2048
WANT_WINDOW = 4  # want frames in flight, so a large catch-up streams with bounded memory
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
NEG_STREAMS = 16  # streams awaiting a negotiation reply at once
NEED_HIGH = 4096  # ids a stream may have found lacking and not yet asked for (see _send_neg)


class Rounds:
    """The session's reconciliation: rounds (initiator) and answers to them (responder)."""

    def __init__(self, session: Session, interest: Interest, *, stores_later: bool,
                 frame_size_limit: int, interval: float | None):
        self._session = session
        self.interest = interest
        self.frame_size_limit = frame_size_limit
        self.interval = interval  # between rounds (None: only when asked)
        self.want_window = WANT_WINDOW
        self.want_batch_size = WANT_BATCH
        # The host stores ObjectsReceived after this session reads on (sync._storing) and
        # says so with `stored`; until it has, a round's sums are not answered (below).
        self._stores_later = stores_later
        self._received = 0  # objects received so far, and of them stored (counted in order)
        self._stored = 0
        # A round's sums waiting for the objects received before them: (received then,
        # round, the summaries).
        self._held_sums: tuple[int, int, dict[bytes, list]] | None = None
        self.peer_interest: Interest | None = None  # until its interest frame comes
        self._current: Round | None = None
        self._count = 0
        self._wants_in_flight = 0
        self._again = False  # start another round when this one ends
        self._focus: bytes | None = None
        self.deadline: float | None = None  # a reply of the peer's is due by then
        self.next_round: float | None = None

    @property
    def unsettled(self) -> bool:
        """A round is under way, or (initiator) none has begun yet."""
        return self._current is not None or (self._session.initiator and self._count == 0)

    def deadlines(self) -> list[float]:
        return [d for d in (self.deadline, self.next_round) if d is not None]

    def timer_expired(self, now: float) -> bool:
        """Whether the peer's reply is overdue (the session then ends)."""
        return self.deadline is not None and now >= self.deadline

    def timer(self, now: float) -> None:
        if self.next_round is not None and now >= self.next_round:
            self.reconcile(now)

    # Public API -----------------------------------------------------------------------------

    def reconcile(self, now: float) -> None:
        """Start a reconciliation round (initiator only; ignored while one is running, and
        put off while objects owed from the last one are still being sent)."""
        session = self._session
        if not (session.initiator and session.connected) or self.peer_interest is None:
            return
        if self._current is not None:
            return
        if session.outbox.answering:
            self.next_round = now + ROUND_RETRY_S
            return
        self.next_round = None
        self._again = False
        self._count += 1
        mine = session.store.streams()
        rnd = self._current = Round(self._count)
        rnd.held = sum(info.count for stream, info in mine.items()
                       if self.interest.covers(stream, info.klass))
        newest = sorted(mine.items(), key=lambda item: -item[1].newest)[:MAX_SUM_STREAMS]
        rnd.messages += 1
        self.deadline = now + REPLY_TIMEOUT_S
        session.send_frame({"t": "sums", "r": rnd.number, "ss": [
            [stream, info.fingerprint, info.count, info.klass] for stream, info in newest]})

    def set_interest(self, interest: Interest, now: float) -> None:
        """This side keeps the streams `interest` covers from now on: it tells the peer, stops
        asking for the others, and reconciles again for the ones it did not keep before."""
        if interest == self.interest:
            return
        self.interest = interest
        if not self._session.connected:
            return
        self._session.send_frame(interest.frame())
        rnd = self._current
        if rnd is not None:
            for stream, st in rnd.streams.items():
                st.fetch = st.fetch and interest.covers(stream, st.klass)
                if not st.fetch:
                    st.need.clear()
                    st.needed.clear()
                    st.estimate = st.found = 0
                if not (st.fetch or st.give) and not st.waiting:
                    st.done, st.parked = True, None  # nothing left to learn from it
            rnd.queue = deque(s for s in rnd.queue if not rnd.streams[s].done)
            self._again = True
            self._send_wants(now)
            self.maybe_finish(now)
            self._progress()
        else:
            self.reconcile(now)

    def stored(self, count: int) -> None:
        """The host stored `count` more of the objects this session received (in order)."""
        self._stored += count
        held = self._held_sums
        if held is not None and self._stored >= held[0] and self._session.connected:
            self._held_sums = None
            self._answer_sums(held[1], held[2])

    def focus(self, stream: bytes | None, now: float) -> None:
        """The window shows `stream`: reconcile it and ask for its objects before others'."""
        self._focus = stream
        rnd = self._current
        if rnd is not None and stream is not None and stream in rnd.queue:
            rnd.queue.remove(stream)
            rnd.queue.appendleft(stream)
            self._start_streams(now)

    # Frames ---------------------------------------------------------------------------------

    def send_interest(self) -> None:
        self._session.send_frame(self.interest.frame())

    def on_interest(self, frame: dict, now: float) -> None:
        first = self.peer_interest is None
        self.peer_interest = Interest.from_frame(frame)
        self._session.outbox.release_early()
        if self._session.initiator:
            if first:
                self.reconcile(now)
            elif self._current is not None:
                self._again = True
            else:
                self.reconcile(now)

    def on_sums(self, frame: dict, now: float) -> None:
        self._session.stats.messages += 1
        if self._session.initiator:
            self._summed(frame, now)
            return
        _require(self.peer_interest is not None, "sums before interest")
        _require(self._held_sums is None, "sums before the last was answered")
        theirs = {e[0]: e for e in sums_entries(frame, 4)}
        if self._stored < self._received:
            # A round begun from a state that lacks what the peer sent in the last one would
            # find those objects missing again (and a one-off sync never settle). Objects
            # that come after the sums are not waited for.
            self._held_sums = (self._received, frame["r"], theirs)
            return
        self._answer_sums(frame["r"], theirs)

    def received_objects(self, count: int) -> None:
        if self._stores_later:
            self._received += count

    def _answer_sums(self, number: int, theirs: dict[bytes, list]) -> None:
        assert self.peer_interest is not None
        mine = self._session.store.streams()
        self._session.stats.rounds = max(self._session.stats.rounds, number)
        reply: list[list[Any]] = []
        for stream in mine.keys() | theirs.keys():
            info = mine.get(stream)
            entry = theirs.get(stream)
            fingerprint = info.fingerprint if info else EMPTY_FINGERPRINT
            if entry is not None and entry[1] == fingerprint:
                continue
            if info is not None:
                klass = info.klass
            else:
                assert entry is not None  # a stream of mine or of theirs
                klass = entry[3]
            if not (self.interest.covers(stream, klass)
                    or self.peer_interest.covers(stream, klass)):
                continue
            count, newest = (info.count, info.newest) if info else (0, 0)
            reply.append([stream, fingerprint, count, klass, newest])
        reply.sort(key=lambda e: -e[4])
        self._session.send_frame({"t": "sums", "r": number, "ss": reply[:MAX_SUM_STREAMS]})

    def _summed(self, frame: dict, now: float) -> None:
        rnd = self._current
        _require(rnd is not None and rnd.summing and frame["r"] == rnd.number,
                 "unexpected summary")
        assert rnd is not None and self.peer_interest is not None
        rnd.summing = False
        mine = self._session.store.streams()
        empty = StreamInfo(0, 0, EMPTY_FINGERPRINT, 0)
        order: list[tuple[tuple, bytes]] = []
        for stream, _, count, klass, _newest in sums_entries(frame, 5):
            own = mine.get(stream, empty)
            st = StreamSync(stream, klass, klass == CHANNEL_CLASS,
                             fetch=count > 0 and self.interest.covers(stream, klass),
                             give=own.count > 0 and self.peer_interest.covers(stream, klass),
                             estimate=max(0, count - own.count))
            if not (st.fetch or st.give):
                continue
            if not st.fetch:
                st.estimate = 0
            rnd.streams[stream] = st
            rank = (0 if klass == WORKSPACE_CLASS else 1 if stream == self._focus
                    else 2 if klass == CHANNEL_CLASS else 3)
            order.append(((rank, -count), stream))
        rnd.queue.extend(stream for _, stream in sorted(order))
        self._start_streams(now)
        self.maybe_finish(now)
        self._progress()

    def _start_streams(self, now: float) -> None:
        rnd = self._current
        if rnd is None or rnd.summing:
            return
        active = sum(1 for st in rnd.streams.values() if st.waiting)
        while rnd.queue and active < NEG_STREAMS:
            st = rnd.streams[rnd.queue.popleft()]
            with self._session.store.snapshot(st.stream, newest_first=st.newest_first) as storage:
                message = Negentropy(storage, self.frame_size_limit, **NEG_PARAMS).initiate()
            self._send_neg(st, message, now)
            active += 1

    def _send_neg(self, st: StreamSync, message: bytes, now: float) -> None:
        assert self._current is not None
        self._current.messages += 1
        st.waiting = True
        self.deadline = now + REPLY_TIMEOUT_S
        # Replies hold at most the ids this stream has room for (NEED_HIGH).
        room = (NEED_HIGH - len(st.need)) * ID_SIZE + FRAME_SIZE_MARGIN
        limit = max(room, MIN_FRAME_SIZE_LIMIT)
        limit = min(limit, self.frame_size_limit or limit)
        self._session.send_frame({"t": "neg", "r": self._current.number, "s": st.stream,
                          "d": int(st.newest_first), "l": limit, "m": message})

    def on_neg(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "r", "s", "d", "l", "m"} and isinstance(frame["m"], bytes)
                 and isinstance(frame["r"], int) and isinstance(frame["s"], bytes)
                 and len(frame["s"]) == 32 and frame["d"] in (0, 1)
                 and isinstance(frame["l"], int), "neg fields")
        self._session.stats.messages += 1
        try:
            if self._session.initiator:
                self._client_step(frame, now)
            else:
                # The initiator may ask for shorter replies (it takes what it can hold).
                limit = max(frame["l"], MIN_FRAME_SIZE_LIMIT)
                limit = min(limit, self.frame_size_limit or limit)
                session = self._session
                with session.store.snapshot(frame["s"], newest_first=bool(frame["d"])) as storage:
                    server = Negentropy(storage, limit, **NEG_PARAMS)
                    reply = server.reconcile_server(frame["m"])
                session.pacing.charge(server.ranges_read, now)  # sync._pacing: over budget, wait
                session.send_frame({"t": "neg", "r": frame["r"], "s": frame["s"],
                                    "d": frame["d"], "l": frame["l"], "m": reply})
        except NegentropyError as exc:
            raise SessionError(f"bad reconciliation message: {exc}") from None

    def _client_step(self, frame: dict, now: float) -> None:
        rnd = self._current
        _require(rnd is not None and not rnd.summing and frame["r"] == rnd.number,
                 "unexpected reconciliation reply")
        assert rnd is not None
        st = rnd.streams.get(frame["s"])
        _require(st is not None and st.waiting and frame["d"] == int(st.newest_first),
                 "reconciliation reply for no stream asked")
        assert st is not None
        st.waiting = False
        rnd.messages += 1
        with self._session.store.snapshot(st.stream, newest_first=st.newest_first) as storage:
            step = Negentropy.resume_client(storage, self.frame_size_limit,
                                            **NEG_PARAMS).reconcile_client(frame["m"])
        # With a frame size limit an id can come back in a later step: each is counted and
        # asked for once. One still to ask for, asked and not answered, or that arrived (and
        # may not be stored yet: the session remembers it as known) is not asked again.
        fresh_have = [i for i in step.have if i not in st.given]
        st.given.update(fresh_have)
        known = self._session.outbox.sent
        fresh_need = [i for i in step.need if i not in st.needed and i not in known
                      and not any(i in wanted for wanted in rnd.in_flight)]
        if st.give and fresh_have:
            rnd.have += len(fresh_have)
            self._session.outbox.add_extras(fresh_have)
        if st.fetch:
            st.need.extend(fresh_need)
            st.needed.update(fresh_need)
            st.found += len(fresh_need)
            rnd.need += len(fresh_need)
        if step.next_message is None or not (st.fetch or st.give):
            st.done = True
            st.given = set()
        elif len(st.need) >= NEED_HIGH - MIN_FRAME_SIZE_LIMIT // ID_SIZE:
            st.parked = step.next_message
        else:
            self._send_neg(st, step.next_message, now)
        self._start_streams(now)
        self._send_wants(now)
        self._arm(now)
        self.maybe_finish(now)

    def _send_wants(self, now: float) -> None:
        rnd = self._current
        if rnd is None:
            return
        while self._wants_in_flight < self.want_window:
            ids = rnd.want_batch(self.want_batch_size, self._focus)
            if not ids:
                break
            rnd.in_flight.append(set(ids))
            self._wants_in_flight += 1
            self.deadline = now + REPLY_TIMEOUT_S
            self._session.send_frame({"t": "want", "ids": ids})
        for st in rnd.streams.values():  # streams that waited for their ids to be asked
            if st.parked is not None and len(st.need) < NEED_HIGH // 2:
                message, st.parked = st.parked, None
                self._send_neg(st, message, now)

    def arrived(self, ids: list[bytes]) -> None:
        """Objects came: count those this round asked for."""
        rnd = self._current
        if rnd is None or not rnd.in_flight:
            return
        for oid in ids:
            for wanted in rnd.in_flight:
                if oid in wanted:
                    wanted.discard(oid)
                    rnd.received += 1
                    break
        self._progress()

    def on_synced(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t", "r"} and isinstance(frame["r"], int)
                 and not self._session.initiator, "synced")
        self._session.emit(PeerReconciled(frame["r"]))

    def on_done(self, frame: dict, now: float) -> None:
        _require(frame.keys() == {"t"}, "done fields")
        _require(self._session.initiator and self._wants_in_flight > 0, "done without a want")
        self._wants_in_flight -= 1
        rnd = self._current
        if rnd is not None and rnd.in_flight:
            rnd.in_flight.popleft()
        self._send_wants(now)
        self._arm(now)
        self.maybe_finish(now)

    def _arm(self, now: float) -> None:
        """A reply is due while a message or a want of ours is unanswered."""
        rnd = self._current
        waiting = self._wants_in_flight > 0 or (rnd is not None and (
            rnd.summing or any(st.waiting for st in rnd.streams.values())))
        self.deadline = now + REPLY_TIMEOUT_S if waiting else None

    def maybe_finish(self, now: float) -> None:
        rnd = self._current
        if rnd is None or rnd.summing or rnd.queue or self._wants_in_flight:
            return
        if any(not st.done or st.need for st in rnd.streams.values()):
            return
        if self._session.outbox.sending_extras:
            return  # our extras are still being sent: finished once they are out
        self._current = None
        self.deadline = None
        self._session.stats.rounds += 1
        self._session.emit(ReconcileComplete(rnd.number, rnd.messages, rnd.have, rnd.need))
        self._progress_of(rnd, done=True)
        self._session.send_frame({"t": "synced", "r": rnd.number})
        if self._again:
            self.reconcile(now)
        elif self.interval is not None:
            self.next_round = now + self.interval

    def _progress(self) -> None:
        if self._current is not None and not self._current.summing:
            self._progress_of(self._current, done=False)

    def _progress_of(self, rnd: Round, *, done: bool) -> None:
        expected = sum(st.expected for st in rnd.streams.values() if st.fetch)
        pending = frozenset() if done else frozenset(
            stream for stream, st in rnd.streams.items()
            if st.fetch and (not st.done or st.need))
        if done:
            expected = rnd.received
        self._session.emit(SyncProgress(rnd.number, rnd.held, rnd.received,
                                         max(expected, rnd.received), pending, done))


__all__ = ["EVERYTHING", "Interest", "PeerReconciled", "ReconcileComplete", "SyncProgress"]
