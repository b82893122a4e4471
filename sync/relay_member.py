"""A member's side of a relay connection, as a pure state machine (sync.relay_wire's protocol).

Bytes go in (`receive`); bytes and events come out (`data_to_send`, `next_event`); the host
(sync.relay_client) moves them, hands it the items it holds (`reconcile`), a `sealer` that
reads the objects the relay lacks from the replica and seals them (as sync.session reads its
store), and takes the objects that open (`Opened`) to the one ingest path. Envelopes that do not open under the epoch's keys, or
whose opaque id is not their content's, are dropped and counted (`unopened`): what a relay
hands over is never more than a candidate object, which ingest checks like any other.

One round: negentropy over (bucket, opaque) items newest first; what the relay lacks (not
below its floor) is sealed and put as each step names it, `get`s ask for what this member lacks, at most GET_WINDOW
in flight, and `Reconciled` comes once every get is answered and every put acknowledged.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from core.attachments import chunk_id
from core.encoding import dumps
from core.identity import Identity
from core.relay_knock import MAX_KNOCK_BLOB
from core.relay_seal import Envelope, EpochKeys, SealError

from .negentropy import Negentropy, NegentropyError, VectorStorage
from .relay_wire import (
    MAX_CHUNK_NAMES,
    MAX_IDS,
    NEG_FRAME_LIMIT,
    NEG_PARAMS,
    REGISTER_CONTEXT,
    Channel,
    WireError,
    batches,
    envelopes_in,
    items_of,
    opaque_ids,
    opaque_of,
    require,
)

GET_WINDOW = 2  # gets in flight, and as many chunk gets (the relay takes 4 unanswered)


@dataclass(frozen=True)
class Authorized:
    """The relay took the token: reconcile now. `floor`: buckets it no longer takes."""

    epoch: int
    floor: int


@dataclass(frozen=True)
class Opened:
    """Objects that came sealed (an answer, or `live`: pushed as another member stored them)."""

    raws: tuple[bytes, ...]
    live: bool


@dataclass(frozen=True)
class SignalReceived:
    """Another member's signal (typing, presence), with the key that signed it."""

    sender: bytes
    body: bytes


@dataclass(frozen=True)
class ChunkArrived:
    """A chunk of an attached file asked for (its bytes hash to its id)."""

    cid: bytes
    data: bytes


@dataclass(frozen=True)
class ChunksLacking:
    """Chunks asked for that the relay does not hold."""

    cids: tuple[bytes, ...]


@dataclass(frozen=True)
class ChunksHeld:
    """The answer to `ask_held`: which of the chunks asked about the relay holds."""

    asked: tuple[bytes, ...]
    held: frozenset[bytes]


@dataclass(frozen=True)
class KnockReceived:
    """A newcomer with an invite's code knocks (core.relay_knock): answer with `answer`."""

    knock: bytes
    tag: bytes
    blob: bytes


@dataclass(frozen=True)
class Answered:
    """(RelayKnocker) a member's answer to our knock."""

    blob: bytes


@dataclass(frozen=True)
class Reconciled:
    uploaded: int
    downloaded: int
    unopened: int


@dataclass(frozen=True)
class Ended:
    reason: str
    refused: bool  # the relay refused us (unknown space, stale token): no fault of the link


Event = (Authorized | Opened | SignalReceived | KnockReceived | Answered | ChunkArrived
         | ChunksLacking | ChunksHeld | Reconciled | Ended)


@dataclass(frozen=True)
class Registration:
    """An admin's registration: their identity signs it; `owners` may move the space later."""

    identity: Identity
    owners: tuple[bytes, ...]


class RelayMember:
    """A member's side of one relay connection: the Noise initiator pinning the relay's key,
    the proof (or an admin's registration), rounds, live puts, chunks and signals."""

    def __init__(self, relay_key: bytes, keys: EpochKeys, space: bytes,
                 sealer: Callable[[list[bytes]], list[Envelope]], *,
                 registration: Registration | None = None):
        self.keys = keys
        self._sealer = sealer  # opaque ids -> the envelopes of the objects held
        self.space = space
        self._registration = registration
        self.channel = Channel(initiator=True, remote_key=relay_key)
        self._out: deque[bytes] = deque([self.channel.first_message()])
        self._events: deque[Event] = deque()
        self.authorized = False
        self.closed = False
        self.floor = 0
        self._neg: Negentropy | None = None
        self._buckets: dict[bytes, int] = {}
        self._need: list[bytes] = []
        self._ignore: frozenset[bytes] = frozenset()
        self._wanted: deque[list[bytes]] = deque()
        self._gets = 0
        self._chunk_wanted: deque[list[bytes]] = deque()  # chunk ids not asked for yet
        self._chunk_batches: list[set[bytes]] = []  # names asked for, per getchunk in flight
        self._asked: dict[bytes, bytes] = {}  # chunk name -> chunk id
        self._holds: deque[dict[bytes, bytes]] = deque()  # per `hold` in flight: name -> id
        self._puts = 0
        self._round = False
        self._counts = [0, 0, 0]  # uploaded, downloaded, unopened (this round)
        self._handed = False  # a handover arrived (at most one, before the refusal)

    def data_to_send(self) -> list[bytes]:
        out = list(self._out)
        self._out.clear()
        return out

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    @property
    def busy(self) -> bool:
        """A round is going on."""
        return self._round

    def close(self, reason: str = "closing") -> None:
        if not self.closed:
            self.closed = True
            self._events.append(Ended(reason, False))

    def receive(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            if not self.channel.ready:
                self.channel.handshake(data)
                self._send(self._introduction())
                return
            frame = self.channel.decode(data)
            if frame is not None:
                self._frame(frame)
        except (WireError, NegentropyError) as exc:
            self._end(f"the relay broke the protocol: {exc}")

    def reconcile(self, items: dict[bytes, int], ignore: frozenset[bytes] = frozenset(),
                  storage: VectorStorage | None = None) -> None:
        """Start a round over the items held (opaque id -> bucket; `storage`: them as a
        sealed negentropy set already, else built here); the relay's envelopes named in
        `ignore` (objects deleted here) are not fetched."""
        if not self.authorized or self.closed or self._round:
            return
        self._round, self._counts = True, [0, 0, 0]
        self._buckets, self._need, self._ignore = items, [], ignore
        if storage is None:
            storage = VectorStorage.sealed(items_of((b, o) for o, b in items.items()))
        self._neg = Negentropy(storage, NEG_FRAME_LIMIT, **NEG_PARAMS)
        self._send({"t": "neg", "m": self._neg.initiate()})

    def upload(self, envelopes: list[Envelope]) -> None:
        """Put envelopes (in a round: what the relay lacks; else live, as objects arrive)."""
        if not self.authorized or self.closed:
            return
        for batch in batches([e for e in envelopes if e.bucket >= self.floor]):
            self._send({"t": "put", "envs": batch})
            self._puts += 1
            self._counts[0] += len(batch)

    def signal(self, sender: Identity, body: bytes) -> None:
        """Typing or presence for the members connected now (never stored by the relay)."""
        if self.authorized and not self.closed:
            self._send({"t": "signal", "blob": self.keys.seal_signal(sender, body)})

    def answer(self, knock: bytes, blob: bytes) -> None:
        """Answer a newcomer's knock (core.relay_knock.seal_answer)."""
        if self.authorized and not self.closed:
            self._send({"t": "answer", "id": knock, "blob": blob})

    @property
    def registering(self) -> bool:
        """This link registers its space (an admin's): it may leave handovers."""
        return self._registration is not None

    def hand_over(self, older: EpochKeys, envelopes: list[Envelope]) -> None:
        """(An owner) leave `envelopes`, sealed under the older epoch's keys `older`, for the
        holders of that epoch's token (members who missed the move to this one)."""
        # One frame: a handover is the newest epoch's seals, not a history.
        batch = next(batches(envelopes), None)
        if batch and self.authorized and not self.closed and self._registration is not None:
            self._send({"t": "handover", "token": older.token_key, "epoch": older.epoch,
                        "envs": batch})

    def put_chunk(self, cid: bytes, data: bytes) -> None:
        """Put a chunk of an attached file (ciphertext under its file's key already)."""
        if self.authorized and not self.closed:
            self._send({"t": "putchunk", "name": self.keys.chunk_name(cid), "data": data})
            self._puts += 1

    def get_chunks(self, cids: list[bytes]) -> None:
        """Ask for chunks: each ends as a ChunkArrived or in a ChunksLacking."""
        if self.authorized and not self.closed:
            self._chunk_wanted.extend(cids[i:i + MAX_CHUNK_NAMES]
                                      for i in range(0, len(cids), MAX_CHUNK_NAMES))
            self._ask_chunks()

    @property
    def puts_pending(self) -> int:
        """Puts (of envelopes or chunks) the relay has not acknowledged yet."""
        return self._puts

    @property
    def held_pending(self) -> int:
        """`hold` questions not answered yet."""
        return len(self._holds)

    def ask_held(self, cids: list[bytes]) -> None:
        """Ask which of these chunks the relay holds: a ChunksHeld per MAX_IDS of them."""
        if self.authorized and not self.closed:
            for i in range(0, len(cids), MAX_IDS):
                names = {self.keys.chunk_name(cid): cid for cid in cids[i:i + MAX_IDS]}
                self._holds.append(names)
                self._send({"t": "hold", "names": list(names)})

    def _ask_chunks(self) -> None:
        while self._chunk_wanted and len(self._chunk_batches) < GET_WINDOW:
            names = {self.keys.chunk_name(cid): cid for cid in self._chunk_wanted.popleft()}
            self._asked.update(names)
            self._chunk_batches.append(set(names))
            self._send({"t": "getchunk", "names": list(names)})

    def _chunk_answered(self, name: bytes) -> bytes:
        require(name in self._asked, "chunk (not asked for)")
        for batch in self._chunk_batches:
            batch.discard(name)
        self._chunk_batches = [batch for batch in self._chunk_batches if batch]
        self._ask_chunks()
        return self._asked.pop(name)

    def ping(self) -> None:
        if self.authorized and not self.closed:
            self._send({"t": "ping"})

    # Frames -------------------------------------------------------------------------------------

    def _send(self, frame: dict) -> None:
        self._out.extend(self.channel.encode(frame))

    def _end(self, reason: str, refused: bool = False) -> None:
        if not self.closed:
            self.closed = True
            self._events.append(Ended(reason, refused))

    def _introduction(self) -> dict:
        hh = self.channel.handshake_hash
        proof = self.keys.prove(hh)
        reg = self._registration
        if reg is None:
            return {"t": "auth", "space": self.space, "proof": proof}
        owners = sorted(set(reg.owners) | {reg.identity.public_key})
        token = self.keys.token_key
        signed = REGISTER_CONTEXT + hh + dumps([self.space, token, self.keys.epoch, owners])
        return {"t": "register", "space": self.space, "token": token, "epoch": self.keys.epoch,
                "owners": owners, "by": reg.identity.public_key, "proof": proof,
                "sig": reg.identity.sign(signed)}

    def _frame(self, frame: dict) -> None:
        kind = frame["t"]
        if kind == "bye":
            reason = frame.get("reason")
            self._end(f"the relay said: {reason}" if isinstance(reason, str) else "bye",
                      refused=not self.authorized)
            return
        if not self.authorized and kind == "handover":
            # We proved an older epoch's token: the new epoch's seals, left by an owner.
            require(frame.keys() == {"t", "envs"} and not self._handed, "handover")
            self._handed = True
            self._opened(envelopes_in(frame["envs"], "handover"), False)
            return
        if not self.authorized:
            require(kind == "ok" and frame.keys() == {"t", "epoch", "floor"}
                    and type(frame["floor"]) is int and type(frame["epoch"]) is int, "ok")
            self.authorized, self.floor = True, frame["floor"]
            self._events.append(Authorized(frame["epoch"], self.floor))
            return
        if kind == "neg":
            require(frame.keys() == {"t", "m"} and isinstance(frame["m"], bytes)
                    and self._neg is not None, "neg")
            assert self._neg is not None
            step = self._neg.reconcile_client(frame["m"])
            self._need += [o for o in map(opaque_of, step.need) if o not in self._ignore]
            lacking = [o for o in map(opaque_of, step.have)
                       if self._buckets.get(o, -1) >= self.floor]
            if lacking:
                self.upload(self._sealer(lacking))
            if step.next_message is not None:
                self._send({"t": "neg", "m": step.next_message})
            else:
                self._neg = None
                self._wanted.extend(self._need[i:i + MAX_IDS]
                                    for i in range(0, len(self._need), MAX_IDS))
                self._need = []
                self._ask()
        elif kind == "envs":
            require(frame.keys() == {"t", "envs", "live"} and type(frame["live"]) is bool, "envs")
            self._opened(envelopes_in(frame["envs"], "envs"), frame["live"])
        elif kind == "done":
            require(self._gets > 0, "done (no get)")
            self._gets -= 1
            self._ask()
        elif kind == "stored":
            require(self._puts > 0 and frame.keys() == {"t", "n", "floor"}
                    and type(frame["n"]) is int and type(frame["floor"]) is int, "stored")
            self._puts -= 1
            self.floor = max(self.floor, frame["floor"])
            self._ask()
        elif kind == "chunk":
            require(frame.keys() == {"t", "name", "data"} and isinstance(frame["data"], bytes)
                    and isinstance(frame["name"], bytes), "chunk")
            cid = self._chunk_answered(frame["name"])
            if chunk_id(frame["data"]) != cid:
                self._events.append(ChunksLacking((cid,)))
                raise WireError("a chunk that is not the one asked for")
            self._events.append(ChunkArrived(cid, frame["data"]))
        elif kind == "held":
            require(frame.keys() == {"t", "names"} and bool(self._holds), "held")
            names = self._holds.popleft()
            held = opaque_ids(frame["names"], "held")
            require(all(name in names for name in held), "held (not asked about)")
            self._events.append(ChunksHeld(tuple(names.values()),
                                           frozenset(names[name] for name in held)))
        elif kind == "nochunk":
            require(frame.keys() == {"t", "names"} and isinstance(frame["names"], list), "nochunk")
            self._events.append(ChunksLacking(tuple(
                self._chunk_answered(name) for name in opaque_ids(frame["names"], "nochunk"))))
        elif kind == "knock":
            require(frame.keys() == {"t", "id", "tag", "blob"}
                    and all(isinstance(frame[k], bytes) for k in ("id", "tag", "blob"))
                    and len(frame["blob"]) <= MAX_KNOCK_BLOB, "knock")
            self._events.append(KnockReceived(frame["id"], frame["tag"], frame["blob"]))
        elif kind == "signal":
            require(frame.keys() == {"t", "blob"} and isinstance(frame["blob"], bytes), "signal")
            try:
                sender, body = self.keys.open_signal(frame["blob"])
            except SealError:
                return  # not a member's: dropped
            self._events.append(SignalReceived(sender, body))
        elif kind != "pong":
            raise WireError(f"frame {kind!r}")

    def _opened(self, envelopes: list[Envelope], live: bool) -> None:
        raws = []
        for env in envelopes:
            try:
                raws.append(self.keys.open(env))
            except SealError:
                self._counts[2] += 1
        self._counts[1] += len(raws)
        if raws:
            self._events.append(Opened(tuple(raws), live))

    def _ask(self) -> None:
        while self._wanted and self._gets < GET_WINDOW:
            self._send({"t": "get", "ids": self._wanted.popleft()})
            self._gets += 1
        if self._round and self._neg is None and not self._wanted and not self._gets \
                and not self._puts:
            self._round = False
            self._events.append(Reconciled(*self._counts))


class RelayKnocker:
    """A newcomer's side of a knock (sans-I/O, as RelayMember): the Noise channel to the
    relay, `knock {space, tag, blob}`, then an Answered event and Ended, or Ended alone."""

    def __init__(self, relay_key: bytes, space: bytes, tag: bytes, blob: bytes):
        self.channel = Channel(initiator=True, remote_key=relay_key)
        self._knock = {"t": "knock", "space": space, "tag": tag, "blob": blob}
        self._out: deque[bytes] = deque([self.channel.first_message()])
        self._events: deque[Event] = deque()
        self.closed = False

    def data_to_send(self) -> list[bytes]:
        out = list(self._out)
        self._out.clear()
        return out

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def receive(self, data: bytes) -> None:
        if self.closed:
            return
        try:
            if not self.channel.ready:
                self.channel.handshake(data)
                self._out.extend(self.channel.encode(self._knock))
                return
            frame = self.channel.decode(data)
            if frame is None:
                return
            if frame["t"] == "answer":
                require(frame.keys() == {"t", "blob"} and isinstance(frame["blob"], bytes)
                        and len(frame["blob"]) <= MAX_KNOCK_BLOB, "answer")
                self._events.append(Answered(frame["blob"]))
            elif frame["t"] == "bye":
                reason = frame.get("reason")
                self._end(reason if isinstance(reason, str) else "bye")
            else:
                raise WireError(f"frame {frame['t']!r}")
        except WireError as exc:
            self._end(f"the relay broke the protocol: {exc}")

    def _end(self, reason: str) -> None:
        if not self.closed:
            self.closed = True
            self._events.append(Ended(reason, True))


class RelaySide(Protocol):
    """What `exchange` needs of the relay's side of a connection (relay.peer.RelayPeer)."""

    @property
    def has_output(self) -> bool: ...

    def receive(self, data: bytes) -> None: ...

    def data_to_send(self) -> list[bytes]: ...

    def next_event(self) -> object | None: ...


def exchange(member: RelayMember, relay: RelaySide, handle: Callable[[Event], None]) -> None:
    """Wire a member to a relay connection in memory (no sockets, as aioquic's tests wire two
    peers), for benchmarks and model tests: pass messages both ways, each member event to
    `handle` (which may make the member send more), until nothing moves, the member closed, or
    its round is over."""
    while not member.closed:
        moved = False
        for data in member.data_to_send():
            relay.receive(data)
            moved = True
        while relay.next_event() is not None:
            pass
        while True:
            for data in relay.data_to_send():
                member.receive(data)
                moved = True
            if not relay.has_output:
                break
        while (event := member.next_event()) is not None:
            handle(event)
        if not moved or (member.authorized and not member.busy):
            return
