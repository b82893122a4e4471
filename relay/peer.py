"""One member's connection to the relay, as a pure state machine (sync.relay_wire's protocol).

Bytes go in (`receive`); bytes and events come out (`data_to_send`, `next_event`); relay.server
moves them. Until a member proves the token of a registered space (or registers one), every
frame but `auth` and `register` is a fault, and a failed proof, an unknown space and a bad
registration all end with the same one-word refusal, so an outsider learns nothing.
"""

from __future__ import annotations

import time
from bisect import insort
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

from core.attachments import MAX_CHUNK
from core.encoding import dumps, loads
from core.identity import verify
from core.relay_knock import MAX_KNOCK_BLOB
from core.relay_seal import SPACE_SIZE, Envelope, token_valid
from sync.negentropy import Negentropy, NegentropyError, VectorStorage
from sync.relay_wire import (
    KEY_SIZE,
    KNOCK_ID_SIZE,
    MAX_CHUNK_NAMES,
    MAX_ENVS_BYTES,
    MAX_OWNERS,
    MAX_SIGNAL_BLOB,
    NEG_FRAME_LIMIT,
    NEG_PARAMS,
    REGISTER_CONTEXT,
    TAG_SIZE,
    Channel,
    WireError,
    batches,
    envelopes_in,
    item_of,
    items_of,
    opaque_ids,
    require,
)

from .store import RelayStore

REFUSED = "refused"
MAX_QUEUED_GETS = 4  # gets a member may send before reading the answers; more is a fault
MAX_CACHED = 16  # spaces whose negentropy snapshot is kept between messages
INSORT_MAX = 64  # envelopes of one put inserted one by one; more are appended and sorted
MAX_QUEUED_BYTES = 32 << 20  # live pushes waiting for a member that does not read: then cut off
SIGNALS_PER_S = 20  # signals taken from one connection per second; the rest are dropped


@dataclass(frozen=True)
class Joined:
    """The member proved the token of `space` at `epoch` (its live pushes start; members
    of an older epoch are cut off)."""

    space: bytes
    epoch: int


@dataclass(frozen=True)
class Stored:
    """The member put envelopes that were new: push them to the space's other members."""

    space: bytes
    envelopes: tuple[Envelope, ...]


@dataclass(frozen=True)
class Signalled:
    """The member sent a signal: forward it to the space's other members (never stored)."""

    space: bytes
    blob: bytes


@dataclass(frozen=True)
class Knocked:
    """A newcomer knocked on `space` (it waits for a member's answer)."""

    space: bytes
    tag: bytes
    blob: bytes


@dataclass(frozen=True)
class Answered:
    """A member answered the knock `knock`."""

    space: bytes
    knock: bytes
    blob: bytes


@dataclass(frozen=True)
class Ended:
    reason: str
    fault: bool


Event = Joined | Stored | Signalled | Knocked | Answered | Ended


@dataclass
class _Snapshot:
    version: int  # the store's version of the space it holds
    items: list[tuple[int, bytes]]  # negentropy items, kept in order
    storage: VectorStorage | None = None  # sealed from `items`, until they change


class Snapshots:
    """Each space's negentropy items, read from the store once and then kept up to date as
    puts add envelopes (anything else that changes a space, an eviction, retention, a move, has
    them read again); sealed for a round only when they changed since the last."""

    def __init__(self, store: RelayStore):
        self._store = store
        self._cache: OrderedDict[bytes, _Snapshot] = OrderedDict()

    def get(self, space: bytes) -> VectorStorage:
        cached = self._cache.get(space)
        version = self._store.version(space)
        if cached is None or cached.version != version:
            cached = self._cache[space] = _Snapshot(
                version, sorted(items_of(self._store.items(space))))
            while len(self._cache) > MAX_CACHED:
                self._cache.popitem(last=False)
        self._cache.move_to_end(space)
        if cached.storage is None:
            cached.storage = VectorStorage.sealed(cached.items)
        return cached.storage

    def added(self, space: bytes, before: int, envelopes: list[Envelope]) -> None:
        """A put took `envelopes` into `space`, whose version was `before`: a snapshot that was
        current then takes them in (if the put changed nothing else)."""
        cached = self._cache.get(space)
        if cached is None or cached.version != before:
            return
        if self._store.version(space) != before + 1:
            del self._cache[space]  # the put evicted too: read again
            return
        if len(envelopes) > INSORT_MAX:  # a run appended and merged: timsort's linear case
            cached.items += items_of((env.bucket, env.opaque) for env in envelopes)
            cached.items.sort()
        else:
            for env in envelopes:
                insort(cached.items, item_of(env.bucket, env.opaque))
        cached.version, cached.storage = before + 1, None


class RelayPeer:
    """The relay's side of one connection: the Noise responder, the proof or registration,
    then reconciliation, puts, gets, chunks and signals for the space it joined."""

    def __init__(self, store: RelayStore, snapshots: Snapshots, static_private: bytes, *,
                 max_spaces: int, clock: Callable[[], float] = time.monotonic):
        self.store = store
        self._clock = clock
        self._signal_window = (0.0, 0)  # (second it began, signals taken in it)
        self._snapshots = snapshots
        self._max_spaces = max_spaces
        self.channel = Channel(initiator=False, static_private=static_private)
        self.space: bytes | None = None
        self.epoch = -1  # the space's epoch when the member joined
        self._out: deque[bytes] = deque()
        self._events: deque[Event] = deque()
        # Gets not answered yet: ("envs", opaque ids) or ("chunks", chunk names).
        self._gets: deque[tuple[str, list[bytes]]] = deque()
        self.closed = False
        self.bytes_in = 0
        self.owner = False  # joined by a registration: may leave handovers
        self.knocking: bytes | None = None  # the space a newcomer knocked on (it waits)

    @property
    def joined(self) -> bool:
        return self.space is not None

    def data_to_send(self) -> list[bytes]:
        """Messages to send now; answers to gets are read from the store as they go (at most
        about MAX_ENVS_BYTES a call: call again while `has_output`)."""
        if self._gets and not self.closed and self.space is not None:
            what, ids = self._gets.popleft()
            if what == "chunks":
                self._answer_chunks(self.space, ids)
            else:
                found = self.store.get(self.space, ids[:256])
                if ids[256:]:
                    self._gets.appendleft((what, ids[256:]))
                for batch in batches(found):
                    self._send({"t": "envs", "envs": batch, "live": False})
                if not ids[256:]:
                    self._send({"t": "done"})
        out = list(self._out)
        self._out.clear()
        return out

    def _answer_chunks(self, space: bytes, names: list[bytes]) -> None:
        lacking = []
        for name in names:
            data = self.store.chunk(space, name)
            if data is None:
                lacking.append(name)
            else:
                self._send({"t": "chunk", "name": name, "data": data})
        if lacking:
            self._send({"t": "nochunk", "names": lacking})

    @property
    def has_output(self) -> bool:
        return bool(self._gets) and not self.closed

    def next_event(self) -> Event | None:
        return self._events.popleft() if self._events else None

    def deliver(self, envelopes: list[Envelope]) -> None:
        """Another member of this space stored these: push them."""
        if self.joined and not self.closed and self._current():
            for batch in batches(envelopes):
                self._send({"t": "envs", "envs": batch, "live": True})
            if sum(map(len, self._out)) > MAX_QUEUED_BYTES:
                self._out.clear()
                self.close("too slow", tell=False)

    def forward_knock(self, knock: bytes, tag: bytes, blob: bytes) -> None:
        """A newcomer's knock on this member's space."""
        if self.joined and not self.closed and self._current():
            self._send({"t": "knock", "id": knock, "tag": tag, "blob": blob})

    def answered(self, blob: bytes) -> None:
        """(A knocking newcomer's connection) a member's answer; then the connection ends."""
        if self.knocking is not None and not self.closed:
            self._send({"t": "answer", "blob": blob})
            self.close("answered")

    def forward_signal(self, blob: bytes) -> None:
        """Another member's signal: passed on if this member is still of the space's epoch."""
        if self.joined and not self.closed and self._current():
            self._send({"t": "signal", "blob": blob})

    def close(self, reason: str, *, fault: bool = False, tell: bool = True) -> None:
        if self.closed:
            return
        if tell and self.channel.ready:
            self._send({"t": "bye", "reason": reason})
        self.closed = True
        self._gets.clear()
        self._events.append(Ended(reason, fault))

    def receive(self, data: bytes) -> None:
        if self.closed:
            return
        self.bytes_in += len(data)
        try:
            if not self.channel.ready:
                answer = self.channel.handshake(data)
                if answer is not None:
                    self._out.append(answer)
                return
            frame = self.channel.decode(data)
            if frame is not None:
                self._frame(frame)
        except WireError as exc:
            self.close(REFUSED if not self.joined else str(exc), fault=True)
        except NegentropyError as exc:
            self.close(f"malformed negentropy message: {exc}", fault=True)

    # Frames -------------------------------------------------------------------------------------

    def _send(self, frame: dict) -> None:
        self._out.extend(self.channel.encode(frame))

    def _frame(self, frame: dict) -> None:
        kind = frame["t"]
        if not self.joined:
            if kind == "auth" and self.knocking is None:
                self._auth(frame)
            elif kind == "register" and self.knocking is None:
                self._register(frame)
            elif kind == "knock" and self.knocking is None:
                self._knock(frame)
            else:
                self.close(REFUSED, fault=True)
            return
        if not self._current():
            return
        if kind == "neg":
            require(frame.keys() == {"t", "m"} and isinstance(frame["m"], bytes), "neg")
            server = Negentropy(self._snapshots.get(self.space or b""), NEG_FRAME_LIMIT,
                                **NEG_PARAMS)
            self._send({"t": "neg", "m": server.reconcile_server(frame["m"])})
        elif kind == "put":
            require(frame.keys() == {"t", "envs"}, "put")
            envelopes = envelopes_in(frame["envs"], "put")
            require(sum(len(e.box) for e in envelopes) <= MAX_ENVS_BYTES + 65536, "put size")
            before = self.store.version(self.space or b"")
            added = self.store.put(self.space or b"", envelopes)
            if added:
                self._snapshots.added(self.space or b"", before, added)
            held = self.store.space(self.space or b"")
            self._send({"t": "stored", "n": len(added), "floor": held.floor if held else 0})
            if added:
                self._events.append(Stored(self.space or b"", tuple(added)))
        elif kind == "get":
            require(frame.keys() == {"t", "ids"}, "get")
            require(len(self._gets) < MAX_QUEUED_GETS, "get (too many unanswered)")
            self._gets.append(("envs", opaque_ids(frame["ids"], "get")))
        elif kind == "getchunk":
            require(frame.keys() == {"t", "names"}, "getchunk")
            require(len(self._gets) < MAX_QUEUED_GETS, "getchunk (too many unanswered)")
            names = opaque_ids(frame["names"], "getchunk", MAX_CHUNK_NAMES)
            require(bool(names), "getchunk")
            self._gets.append(("chunks", names))
        elif kind == "hold":
            require(frame.keys() == {"t", "names"}, "hold")
            names = opaque_ids(frame["names"], "hold")
            self._send({"t": "held", "names": self.store.chunks_held(self.space or b"", names)})
        elif kind == "putchunk":
            require(frame.keys() == {"t", "name", "data"}, "putchunk")
            [name] = opaque_ids([frame["name"]], "putchunk")
            data = frame["data"]
            require(isinstance(data, bytes) and 0 < len(data) <= MAX_CHUNK, "putchunk data")
            new = self.store.put_chunk(self.space or b"", name, data)
            held = self.store.space(self.space or b"")
            self._send({"t": "stored", "n": int(new), "floor": held.floor if held else 0})
        elif kind == "signal":
            blob = frame.get("blob")
            require(frame.keys() == {"t", "blob"} and isinstance(blob, bytes)
                    and len(blob) <= MAX_SIGNAL_BLOB, "signal")
            assert isinstance(blob, bytes)
            now = int(self._clock())
            began, taken = self._signal_window
            taken = taken + 1 if began == now else 1
            self._signal_window = (now, taken)
            if taken <= SIGNALS_PER_S:
                self._events.append(Signalled(self.space or b"", blob))
        elif kind == "handover":
            require(self.owner and frame.keys() == {"t", "token", "epoch", "envs"}
                    and isinstance(frame["token"], bytes) and len(frame["token"]) == KEY_SIZE
                    and type(frame["epoch"]) is int and 0 <= frame["epoch"] < self.epoch,
                    "handover")
            envelopes = envelopes_in(frame["envs"], "handover")
            require(sum(len(e.box) for e in envelopes) <= MAX_ENVS_BYTES, "handover size")
            self.store.put_handover(self.space or b"", frame["token"], frame["epoch"],
                                    dumps(frame["envs"]))
        elif kind == "answer":
            require(frame.keys() == {"t", "id", "blob"} and isinstance(frame["id"], bytes)
                    and len(frame["id"]) == KNOCK_ID_SIZE and isinstance(frame["blob"], bytes)
                    and len(frame["blob"]) <= MAX_KNOCK_BLOB, "answer")
            self._events.append(Answered(self.space or b"", frame["id"], frame["blob"]))
        elif kind == "ping":
            self._send({"t": "pong"})
        else:
            raise WireError(f"frame {kind!r}")

    def _auth(self, frame: dict) -> None:
        require(frame.keys() == {"t", "space", "proof"}, "auth")
        space = self.store.space(frame["space"]) if isinstance(frame["space"], bytes) else None
        proof = frame["proof"]
        if space is None or not isinstance(proof, bytes):
            self.close(REFUSED)
            return
        hh = self.channel.handshake_hash
        if not token_valid(space.token, hh, proof):
            # An older epoch's token: what its owner left for it (the new epoch's seals), if
            # anything, then the same refusal.
            for token, envs in self.store.handovers(space.space):
                if token_valid(token, hh, proof):
                    self._send({"t": "handover", "envs": loads(envs)})
                    break
            self.close(REFUSED)
            return
        self._join(space.space, space.epoch, space.floor)

    def _knock(self, frame: dict) -> None:
        require(frame.keys() == {"t", "space", "tag", "blob"}, "knock")
        space, tag, blob = frame["space"], frame["tag"], frame["blob"]
        require(isinstance(tag, bytes) and len(tag) == TAG_SIZE and isinstance(blob, bytes)
                and len(blob) <= MAX_KNOCK_BLOB, "knock")
        held = self.store.space(space) if isinstance(space, bytes) else None
        if held is None:
            self.close(REFUSED)
            return
        self.knocking = held.space
        self._events.append(Knocked(held.space, tag, blob))

    def _register(self, frame: dict) -> None:
        require(frame.keys() == {"t", "space", "token", "epoch", "owners", "by", "proof", "sig"},
                "register")
        space, token, epoch, owners, by = (frame[k] for k in
                                           ("space", "token", "epoch", "owners", "by"))
        require(isinstance(space, bytes) and len(space) == SPACE_SIZE, "register space")
        require(isinstance(token, bytes) and len(token) == KEY_SIZE, "register token")
        require(type(epoch) is int and 0 <= epoch < 2**63, "register epoch")
        require(isinstance(owners, list) and 1 <= len(owners) <= MAX_OWNERS and all(
            isinstance(o, bytes) and len(o) == KEY_SIZE for o in owners), "register owners")
        require(isinstance(by, bytes) and isinstance(frame["sig"], bytes)
                and isinstance(frame["proof"], bytes), "register")
        hh = self.channel.handshake_hash
        signed = REGISTER_CONTEXT + hh + dumps([space, token, epoch, owners])
        held = self.store.space(space)
        allowed = (by in owners and verify(by, signed, frame["sig"])
                   and token_valid(token, hh, frame["proof"]))
        if held is None:
            allowed = allowed and len(self.store.spaces()) < self._max_spaces
        else:
            # The same epoch with another token: two admins rotated at once, and the one
            # whose rotation lost (core.membership "Epochs") has since learnt the winner's.
            allowed = allowed and by in held.owners and epoch >= held.epoch
        if not allowed:
            self.close(REFUSED)
            return
        record = self.store.register(space, token, epoch, owners)
        self.owner = True
        self._join(record.space, record.epoch, record.floor)

    def _join(self, space: bytes, epoch: int, floor: int) -> None:
        self.space, self.epoch = space, epoch
        self._send({"t": "ok", "epoch": epoch, "floor": floor})
        self._events.append(Joined(space, epoch))

    def _current(self) -> bool:
        """Whether the space is still at the epoch whose token the member proved; if not
        (an admin moved it since: perhaps the member was removed), the member is cut off."""
        held = self.store.space(self.space or b"")
        if held is not None and held.epoch == self.epoch:
            return True
        self.close(REFUSED)
        return False
