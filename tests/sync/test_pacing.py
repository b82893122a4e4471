"""The bookkeeping behind issue #28's limits, without sockets: the reconciliation budget and
the reading pace of a responder session (sync._budget, sync._pacing), a gated session's
silence until it is let in, and the guard's room for pending sockets (sync._guard)."""

from __future__ import annotations

from sync import _guard, _pacing
from sync._budget import KEY_RANGES_PER_S, RangeBudget
from sync.negentropy import Bound, Message, Mode, Range, encode_message
from sync.session import NEG_MAX_RANGES, REPLY_TIMEOUT_S, Closed, Session
from sync.store import MemoryStore
from tests.support import FakeClock

from .conftest import T0_MS
from .session_support import ALICE, BOB, T_START, Wire, connected, drain_all, frame, inject


def _flood_frame(stream: bytes = bytes(32), *, limit: int = 4096) -> bytes:
    """A `neg` of NEG_MAX_RANGES fingerprint ranges no replica matches."""
    ranges = tuple(Range(Bound(T0_MS + 500 * n), Mode.FINGERPRINT, bytes(16))
                   for n in range(NEG_MAX_RANGES))
    return frame({"t": "neg", "r": 1, "s": stream, "d": 0, "l": limit,
                  "m": encode_message(Message(ranges))})


def test_a_budget_in_debt_waits_as_long_as_its_rate_takes_to_refill():
    budget = RangeBudget(100.0, 200.0, now=0.0)
    budget.charge(500, now=0.0)  # the work is done before its size is known
    assert budget.wait(0.0) == 3.0
    assert budget.wait(2.0) == 1.0
    assert budget.wait(3.0) == 0.0
    budget.charge(0, now=1000.0)
    assert budget.tokens == 200.0  # never more than a burst


def test_a_responder_over_its_reconciliation_budget_stops_reading_until_it_refills(pool, secret):
    a, evil, wire, clock = connected(MemoryStore(pool), MemoryStore(), secret=secret,
                                     a_initiates=False)
    assert a.pacing.read_wait(clock.now) is None
    inject(evil, a, [_flood_frame(), _flood_frame()], clock.now)
    assert not a.closed
    until = a.pacing.read_wait(clock.now)
    assert until is not None
    assert until - clock.now >= NEG_MAX_RANGES / KEY_RANGES_PER_S * 0.99  # a message's worth
    assert a.pacing.read_wait(until) is None  # refilled by then


def test_a_responder_whose_replies_pile_up_unread_stops_reading_then_hangs_up(
        chat, pool, secret, monkeypatch):
    monkeypatch.setattr(_pacing, "UNREAD_REPLIES_BYTES", 256 << 10)  # fewer frames to fill
    a, evil, wire, clock = connected(MemoryStore(pool), MemoryStore(), secret=secret,
                                     a_initiates=False)
    a.pacing.written(0)  # the host reports what the socket takes; it takes nothing from here on
    a.outbox.limit = 0  # no objects owed: only replies count
    stream = chat.channel("general")

    def flood() -> None:  # the session itself does not pace: its host asks read_wait
        for _ in range(64):
            inject(evil, a, [_flood_frame(stream, limit=512 * 1024)], clock.now)
            a.data_to_send()  # taken by the host, never written
            if a.pacing.read_wait(clock.now) == float("inf"):
                return

    flood()
    assert a.pacing.read_wait(clock.now) == float("inf"), a.pacing.unsent
    assert a.pacing.unsent > _pacing.UNREAD_REPLIES_BYTES
    a.pacing.written(a.pacing.unsent)  # the peer read them after all
    clock.advance(NEG_MAX_RANGES * 64 / KEY_RANGES_PER_S)  # and the budget refilled
    assert a.pacing.read_wait(clock.now) is None
    flood()
    assert a.pacing.read_wait(clock.now) == float("inf")
    a.pacing.written(1)  # a slow reader: the socket takes a little now and then
    a.handle_timer(clock.advance(REPLY_TIMEOUT_S - 1))
    assert not a.closed
    a.handle_timer(clock.advance(REPLY_TIMEOUT_S - 1))
    assert not a.closed  # timed from its last progress
    a.handle_timer(clock.advance(1))
    assert a.closed  # nothing taken for REPLY_TIMEOUT_S
    [ended] = [e for e in drain_all(a) if isinstance(e, Closed)]
    assert "does not read its replies" in ended.reason


def test_a_gated_session_says_nothing_after_hello_until_let_in(secret):
    clock = FakeClock(T_START)
    a = Session(MemoryStore(), initiator=True, secret=secret, identity=ALICE,
                workspace=b"W" * 32, now=clock.now)
    b = Session(MemoryStore(), initiator=False, secret=secret, identity=BOB,
                workspace=b"W" * 32, now=clock.now, gated=True)
    wire = Wire(a, b, clock)
    wire.pump()
    assert a.connected and b.connected
    assert a.rounds.peer_interest is None  # b has not let a in: no ping, no interest from b
    b.admitted()
    wire.pump()
    assert a.rounds.peer_interest is not None


def test_the_guard_gives_a_newcomers_room_from_the_address_holding_the_most():
    guard = _guard.Guard()
    crowd = [f"10.0.{n}.1" for n in range(_guard.MAX_PENDING // _guard.MAX_CONNECTIONS_PER_ADDRESS)]
    tokens = {host: [object() for _ in range(_guard.MAX_CONNECTIONS_PER_ADDRESS)]
              for host in crowd}
    for host in crowd:
        for token in tokens[host]:
            assert guard.admit(host, 0.0, token).refused is None
    assert guard.pending() == _guard.MAX_PENDING
    # One address holds no more than its share, and a host already holding as many as the
    # busiest is refused rather than given someone's place.
    verdict = guard.admit(crowd[0], 0.0, object())
    assert verdict.refused is not None
    member = object()
    verdict = guard.admit("192.168.1.7", 0.0, member)
    assert verdict.refused is None and len(verdict.evict) == 1
    evicted = verdict.evict[0]
    assert any(evicted is tokens[host][0] for host in crowd)  # the oldest of a busiest one
    assert guard.pending() == _guard.MAX_PENDING
    guard.authenticated("192.168.1.7", member)  # a member's session: no longer pending
    assert guard.pending("192.168.1.7") == 0 and guard.open["192.168.1.7"] == 1


def test_the_guard_bounds_one_networks_pending_sockets():
    guard = _guard.Guard()
    hosts = [f"10.9.9.{n}" for n in range(1, 3)]  # one /24
    for host in hosts:
        for _ in range(_guard.MAX_CONNECTIONS_PER_ADDRESS):
            assert guard.admit(host, 0.0, object()).refused is None
    assert _guard.network("10.9.9.3") == "10.9.9.0/24"
    assert _guard.network("fe80::1:2:3:4") == "fe80::/64"
    verdict = guard.admit("10.9.9.3", 0.0, object())  # the network is full: room is made
    assert verdict.refused is None and len(verdict.evict) == 1
    assert guard.pending("10.9.9.3") == 1
