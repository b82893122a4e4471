"""Two sans-I/O sessions wired together in memory, for the sync tests: a `Wire` moves each
session's `data_to_send()` into the other's `receive` and drains their events (ingesting
ObjectsReceived into the receiving side's store); a fake clock only moves when a test advances
it, firing the sessions' timers in order. Hostile peers are real sessions whose frames a test
rewrites (`rewrite`, `tap`, `inject`)."""


from collections.abc import Callable, Iterable

from core.encoding import dumps, loads, object_id
from core.objects import Object
from sync.session import (
    Closed,
    ObjectsReceived,
    Session,
)
from sync.store import MemoryStore, ReplicaStore
from tests.support import FakeClock

from .conftest import identity

T_START = 5_000.0  # where the sessions' fake monotonic clock (FakeClock) starts, in seconds
ALICE = identity("session-alice")
BOB = identity("session-bob")
MALLORY = identity("session-mallory")


# The wire -------------------------------------------------------------------------------------


def apply_objects(store, raws: list[bytes]) -> None:
    if isinstance(store, ReplicaStore):
        results = store.replica.ingest(raws)
        assert not [r for r in results if r.status == "rejected"], results
    else:
        store.add(raws)


class Wire:
    """Two sessions connected in memory.

    `pump()` moves bytes both ways until neither side has anything to send, draining events
    after every message (as sync.connection does); a side that closed has its last bytes
    delivered and then, like a closed WebSocket, makes the other side's `connection_lost`.
    `run_until(t)` advances the clock to `t`, firing every timer that falls due on the way.
    `silence` names a side whose bytes are never delivered (a peer that hangs).
    """

    def __init__(self, a: Session, b: Session, clock: FakeClock, *, lost: bool = True):
        self.a, self.b, self.clock = a, b, clock
        self.lost = lost
        self.silence: Session | None = None
        # A side whose host stores what it receives only when the test says (store_pending),
        # as sync._storing's writer thread does some time after the session read it.
        self.later: Session | None = None
        self.pending: list[bytes] = []
        self.log: dict[int, list[tuple[float, object]]] = {id(a): [], id(b): []}
        self.sent: list[tuple[Session, bytes]] = []

    def events(self, side: Session, kind: type | None = None) -> list:
        return [e for _, e in self.log[id(side)] if kind is None or isinstance(e, kind)]

    def timed(self, side: Session, kind: type) -> list[tuple[float, object]]:
        return [(t, e) for t, e in self.log[id(side)] if isinstance(e, kind)]

    def received_ids(self, side: Session) -> list[bytes]:
        return [object_id(raw) for e in self.events(side, ObjectsReceived) for raw in e.raws]

    def drain(self, side: Session) -> None:
        while (event := side.next_event()) is not None:
            self.log[id(side)].append((self.clock.now, event))
            if isinstance(event, ObjectsReceived):
                if side is self.later:
                    self.pending.extend(event.raws)
                else:
                    apply_objects(side.store, event.raws)

    def store_pending(self, count: int | None = None) -> None:
        """The `later` side's host stores the first `count` (all) of what it received, and
        tells its session."""
        assert self.later is not None
        count = len(self.pending) if count is None else count
        raws, self.pending = self.pending[:count], self.pending[count:]
        apply_objects(self.later.store, raws)
        self.later.rounds.stored(len(raws))

    def pump(self, limit: int = 100_000) -> None:
        for _ in range(limit):
            moved = False
            for src, dst in ((self.a, self.b), (self.b, self.a)):
                for data in src.data_to_send():
                    moved = True
                    self.sent.append((src, data))
                    if src is not self.silence:
                        dst.receive(data, self.clock.now)
                        self.drain(dst)
                self.drain(src)
                if self.lost and src.closed and not dst.closed and src is not self.silence:
                    dst.connection_lost("the peer closed the connection")
                    self.drain(dst)
                    moved = True
            if not moved:
                return
        raise AssertionError("the wire never went quiet")

    def run_until(self, t: float, limit: int = 10_000) -> None:
        for _ in range(limit):
            self.pump()
            timers = [s.get_timer() for s in (self.a, self.b)]
            due = min((x for x in timers if x is not None), default=None)
            if due is None or due > t:
                self.clock.now = max(self.clock.now, t)
                return
            self.clock.now = max(self.clock.now, due)
            for side in (self.a, self.b):
                timer = side.get_timer()
                if timer is not None and timer <= self.clock.now:
                    side.handle_timer(self.clock.now)
                self.drain(side)
        raise AssertionError("timers kept firing")


def sessions(store_a, store_b, clock: FakeClock, *, secret: bytes,
             secret_b: bytes | None = None, ident_a=ALICE, ident_b=BOB, ws: bytes = b"W" * 32,
             ws_b: bytes | None = None, a_initiates: bool = True,
             **kw) -> tuple[Session, Session, Wire]:
    """A pair of Sessions: `a` over store_a and `b` over store_b; `a` dials unless told
    otherwise."""
    a = Session(store_a, initiator=a_initiates, secret=secret, identity=ident_a, workspace=ws,
                now=clock.now, **kw)
    b = Session(store_b, initiator=not a_initiates, secret=secret_b or secret,
                identity=ident_b, workspace=ws_b or ws, now=clock.now, **kw)
    return a, b, Wire(a, b, clock)


def connected(store_a=None, store_b=None, *, secret: bytes, **kw):
    clock = FakeClock(T_START)
    a, b, wire = sessions(store_a or MemoryStore(), store_b or MemoryStore(), clock, secret=secret,
                          **kw)
    wire.pump()
    assert a.connected and b.connected
    return a, b, wire, clock


def ids(objects: Iterable[Object]) -> set[bytes]:
    return {o.id for o in objects}


def held(store: MemoryStore) -> set[bytes]:
    return set(store.objects)


def tap(side: Session) -> list:
    """Record every frame `side` reads (decoded), without changing what it does."""
    frames: list = []
    original = side._on_frame

    def spy(data: bytes, now: float) -> None:
        try:
            frames.append(loads(data))
        except ValueError:
            frames.append(None)
        original(data, now)

    side._on_frame = spy
    return frames


def rewrite(side: Session, change: Callable[[dict], dict]) -> None:
    """Make `side` send change(frame) instead of each frame (a hostile but keyed peer)."""
    side.send_frame = lambda frame: Session.send_frame(side, change(frame))


def inject(evil: Session, victim: Session, plaintexts: Iterable[bytes], now: float) -> None:
    """Encrypt each plaintext (flag byte + chunk) with `evil`'s Noise state, feed `victim`."""
    for plain in plaintexts:
        victim.receive(evil.handshake.noise.encrypt(plain), now)


def frame(value) -> bytes:
    """A whole frame in one chunk."""
    return b"\x01" + dumps(value)


def closed(wire: Wire, side: Session) -> Closed:
    """The one Closed event `side` produced."""
    found = wire.events(side, Closed)
    assert len(found) == 1, found
    return found[0]


def drain_all(side: Session) -> list:
    out = []
    while (event := side.next_event()) is not None:
        out.append(event)
    return out
