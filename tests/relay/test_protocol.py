"""The relay protocol in memory: sync.relay_member against relay.peer, no sockets."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from core import kinds
from core.identity import Identity
from core.objects import build, decode_trusted
from core.relay_seal import Envelope, EpochKeys, bucket_of, space_id
from relay.peer import REFUSED, SIGNALS_PER_S, Ended, RelayPeer, Signalled, Snapshots, Stored
from relay.store import RelayStore
from sync.relay_member import (
    Authorized,
    Opened,
    Reconciled,
    Registration,
    RelayMember,
    SignalReceived,
)
from sync.relay_wire import relay_public_key

WS = bytes([9]) * 32
SPACE = space_id(WS)
ADMIN = Identity.from_seed(bytes([1]) * 32)
AUTHOR = Identity.from_seed(bytes([2]) * 32)
SECRET0, SECRET1 = bytes([3]) * 32, bytes([4]) * 32
RELAY_KEY = bytes([5]) * 32


def posts(count: int, prefix: str = "m", start: int = 1_700_000_000_000) -> list[bytes]:
    return [build(AUTHOR, "post/text", stream=kinds.channel_stream(WS, "general"),
                  body={"channel": "general", "text": f"{prefix}{n}"},
                  ts=start + n * 600_000).raw for n in range(count)]


class Side:
    """A member's objects, as RelayLink holds them (without a replica)."""

    def __init__(self, keys: EpochKeys, raws: list[bytes]):
        self.keys = keys
        self.raws: dict[bytes, bytes] = {}
        self.opened: list[bytes] = []
        self.ignore: frozenset[bytes] = frozenset()  # deleted here
        self.add(raws)

    def add(self, raws: list[bytes]) -> None:
        for raw in raws:
            self.raws[self.keys.opaque(decode_trusted(raw).id)] = raw

    def items(self) -> dict[bytes, int]:
        return {o: bucket_of(decode_trusted(r).ts) for o, r in self.raws.items()}

    def seal(self, opaques: list[bytes]) -> list[Envelope]:
        return [self.keys.seal(self.raws[o], decode_trusted(self.raws[o]).ts) for o in opaques]


class Relay:
    def __init__(self, tmp: Path, **store_args: int):
        self.store = RelayStore(tmp / "relay.db", **store_args)
        self.snapshots = Snapshots(self.store)
        self.key = relay_public_key(RELAY_KEY)
        self.peers: list[RelayPeer] = []

    def connect(self, side: Side, registration: Registration | None = None
                ) -> tuple[RelayMember, RelayPeer]:
        member = RelayMember(self.key, side.keys, SPACE, side.seal, registration=registration)
        peer = RelayPeer(self.store, self.snapshots, RELAY_KEY, max_spaces=10,
                         clock=lambda: 100.0)  # one second: the signal limit is exact
        self.peers.append(peer)
        self.pump(member, peer, side)
        return member, peer

    def pump(self, member: RelayMember, peer: RelayPeer, side: Side) -> list:
        events: list = []
        moved = True
        while moved:
            moved = False
            for data in member.data_to_send():
                peer.receive(data)
                moved = True
            while (event := peer.next_event()) is not None:
                events.append(event)
                for other in self.peers:
                    if other is not peer and isinstance(event, Stored):
                        other.deliver(list(event.envelopes))
                    elif other is not peer and isinstance(event, Signalled):
                        other.forward_signal(event.blob)
            while True:
                for data in peer.data_to_send():
                    member.receive(data)
                    moved = True
                if not peer.has_output:
                    break
            while (event := member.next_event()) is not None:
                events.append(event)
                if isinstance(event, Authorized):
                    member.reconcile(side.items(), side.ignore)
                elif isinstance(event, Opened):
                    side.opened += event.raws
        return events


def test_register_upload_then_another_member_downloads(tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    keys = EpochKeys.derive(0, SECRET0)
    a, b = Side(keys, posts(300)), Side(keys, posts(5, "b"))
    ma, pa = relay.connect(a, Registration(ADMIN, (ADMIN.public_key,)))
    assert ma.authorized and not ma.busy and pa.joined
    held = relay.store.space(SPACE)
    assert held is not None and held.count == 300 and held.owners == {ADMIN.public_key}
    mb, _ = relay.connect(b)
    assert mb.authorized and not mb.busy
    assert set(b.opened) == set(a.raws.values())
    assert relay.store.space(SPACE).count == 305  # type: ignore[union-attr]
    # Live: a's link puts a new object; b, connected, has it pushed.
    new = posts(1, "live", start=1_800_000_000_000)
    a.add(new)
    ma.upload([keys.seal(new[0], 1_800_000_000_000)])
    relay.pump(ma, pa, a)
    relay.pump(mb, relay.peers[1], b)
    assert new[0] in b.opened


def test_an_outsider_and_a_stale_token_get_only_a_refusal(tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    old, new = EpochKeys.derive(0, SECRET0), EpochKeys.derive(1, SECRET1)
    outsider = Side(EpochKeys.derive(0, os.urandom(32)), posts(3))
    m, p = relay.connect(outsider)  # no space yet
    assert not m.authorized and m.closed and p.closed
    relay.connect(Side(old, []), Registration(ADMIN, ()))
    for keys in (EpochKeys.derive(0, os.urandom(32)), new):
        m, p = relay.connect(Side(keys, posts(3)))
        assert not m.authorized and p.closed and relay.store.items(SPACE) == []
    # The admin moves the space to epoch 1: the epoch-0 token (a removed member's) is refused.
    admin, _ = relay.connect(Side(new, posts(2)), Registration(ADMIN, ()))
    assert admin.authorized
    removed = Side(old, posts(4, "r"))
    m, p = relay.connect(removed)
    events = relay.pump(m, p, removed)
    assert not m.authorized and m.closed
    assert relay.store.space(SPACE).epoch == 1  # type: ignore[union-attr]
    assert len(relay.store.items(SPACE)) == 2
    assert not any(isinstance(e, Opened) for e in events)


def test_an_owner_leaves_a_handover_for_the_old_token_and_nobody_else_gets_it(
        tmp_path: Path) -> None:
    """After a move, an owner leaves envelopes under epoch 0's keys for epoch 0's token: a
    member still of epoch 0 gets them (and the refusal); an outsider gets nothing; a member who
    is no owner cannot leave one."""
    relay = Relay(tmp_path)
    old, new = EpochKeys.derive(0, SECRET0), EpochKeys.derive(1, SECRET1)
    relay.connect(Side(old, []), Registration(ADMIN, ()))
    seals = posts(3, "seal")
    owner, peer = relay.connect(Side(new, []), Registration(ADMIN, ()))
    owner.hand_over(old, [old.seal(raw, decode_trusted(raw).ts) for raw in seals])
    relay.pump(owner, peer, Side(new, []))
    member, _ = relay.connect(Side(new, []))
    member.hand_over(old, [])  # a member's link never sends one; forged, the relay refuses it
    member._send({"t": "handover", "token": old.token_key, "epoch": 0, "envs": []})
    member_peer = relay.peers[-1]
    relay.pump(member, member_peer, Side(new, []))
    assert member_peer.closed  # a handover from a connection that did not register: refused
    behind = Side(old, [])
    m, p = relay.connect(behind)
    assert not m.authorized and m.closed and sorted(behind.opened) == sorted(seals)
    stranger = Side(EpochKeys.derive(0, os.urandom(32)), [])
    m, p = relay.connect(stranger)
    assert m.closed and stranger.opened == []


def test_only_an_owner_moves_a_space_and_never_backwards(tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    old, new = EpochKeys.derive(0, SECRET0), EpochKeys.derive(1, SECRET1)
    relay.connect(Side(new, []), Registration(ADMIN, ()))
    stranger = Identity.from_seed(bytes([8]) * 32)
    for keys, who in ((EpochKeys.derive(2, os.urandom(32)), stranger), (old, ADMIN)):
        m, p = relay.connect(Side(keys, []), Registration(who, ()))
        assert not m.authorized and p.closed
    assert relay.store.space(SPACE).epoch == 1  # type: ignore[union-attr]
    # Two admins rotated to epoch 1 at once: the loser's computer moves to the winner's token.
    winner = EpochKeys.derive(1, os.urandom(32))
    m, _ = relay.connect(Side(winner, []), Registration(ADMIN, ()))
    assert m.authorized
    held = relay.store.space(SPACE)
    assert held is not None and (held.epoch, held.token) == (1, winner.token_key)


def test_a_member_reconciles_newest_first_and_skips_below_the_floor(tmp_path: Path) -> None:
    relay = Relay(tmp_path, quota=60 * 400)
    keys = EpochKeys.derive(0, SECRET0)
    a = Side(keys, posts(200))
    m, p = relay.connect(a, Registration(ADMIN, ()))
    held = relay.store.space(SPACE)
    assert held is not None and 0 < held.count < 200 and held.floor > 0
    newest = max(bucket for bucket, _ in relay.store.items(SPACE))
    assert newest == max(a.items().values())
    count = held.count
    m.reconcile(a.items())
    events = relay.pump(m, p, a)
    done = [e for e in events if isinstance(e, Reconciled)]
    assert done and done[0].uploaded == 0  # nothing below the floor is sent again
    assert relay.store.space(SPACE).count == count  # type: ignore[union-attr]


def test_junk_from_a_relay_is_dropped_not_opened(tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    keys = EpochKeys.derive(0, SECRET0)
    a = Side(keys, posts(3))
    relay.connect(a, Registration(ADMIN, ()))
    # What a hostile relay could hand out: random boxes, an envelope under another opaque id.
    real = keys.seal(a.raws[next(iter(a.raws))], 0)
    relay.store.put(SPACE, [Envelope(os.urandom(16), 5, os.urandom(200)),
                            Envelope(os.urandom(16), 5, real.box)])
    b = Side(keys, [])
    m, p = relay.connect(b)
    assert set(b.opened) == set(a.raws.values())
    assert not any(isinstance(e, Ended) for e in relay.pump(m, p, b))


@pytest.mark.parametrize("frame", [{"t": "neg", "m": b"\x61"}, {"t": "get", "ids": []},
                                   {"t": "put", "envs": []}])
def test_frames_before_the_proof_are_refused(tmp_path: Path, frame: dict) -> None:
    relay = Relay(tmp_path)
    member = RelayMember(relay.key, EpochKeys.derive(0, SECRET0), SPACE, lambda ids: [])
    peer = RelayPeer(relay.store, relay.snapshots, RELAY_KEY, max_spaces=10)
    for data in member.data_to_send():
        peer.receive(data)
    for data in peer.data_to_send():
        member.channel.handshake(data)
    for data in member.channel.encode(frame):
        peer.receive(data)
    assert peer.closed
    event = peer.next_event()
    assert isinstance(event, Ended) and event.reason == REFUSED and event.fault


def test_a_member_connected_across_the_move_is_cut_off(tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    old, new = EpochKeys.derive(0, SECRET0), EpochKeys.derive(1, SECRET1)
    relay.connect(Side(old, posts(2)), Registration(ADMIN, ()))
    removed = Side(old, [])
    m, p = relay.connect(removed)
    assert m.authorized and not p.closed and len(removed.opened) == 2
    admin, _ = relay.connect(Side(new, posts(3, "n")), Registration(ADMIN, ()))
    assert admin.authorized
    p.deliver([new.seal(posts(1, "x")[0], 0)])  # nothing more reaches the removed member
    m.upload([old.seal(posts(1, "late")[0], 0)])
    relay.pump(m, p, removed)
    assert p.closed and m.closed and len(removed.opened) == 2
    assert len(relay.store.items(SPACE)) == 3


def test_signals_pass_to_connected_members_within_a_limit_and_are_never_stored(
        tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    keys = EpochKeys.derive(0, SECRET0)
    ma, pa = relay.connect(Side(keys, []), Registration(ADMIN, ()))
    b = Side(keys, [])
    mb, pb = relay.connect(b)
    for n in range(SIGNALS_PER_S + 5):
        ma.signal(AUTHOR, f"typing {n}".encode())
    ma.signal(AUTHOR, b"x")
    sent = relay.pump(ma, pa, Side(keys, []))
    assert sum(isinstance(e, Signalled) for e in sent) <= SIGNALS_PER_S
    got = [e for e in relay.pump(mb, pb, b) if isinstance(e, SignalReceived)]
    assert got and all(e.sender == AUTHOR.public_key for e in got)
    assert got[0].body == b"typing 0"
    assert relay.store.items(SPACE) == []
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert b"typing" not in files


def test_what_was_deleted_here_is_not_fetched_again(tmp_path: Path) -> None:
    relay = Relay(tmp_path)
    keys = EpochKeys.derive(0, SECRET0)
    raws = posts(3)
    relay.connect(Side(keys, raws), Registration(ADMIN, ()))
    b = Side(keys, [])
    b.ignore = frozenset({keys.opaque(decode_trusted(raws[0]).id)})
    m, _ = relay.connect(b)
    assert m.authorized and sorted(b.opened) == sorted(raws[1:])


def test_chunks_of_attached_files_go_through_within_the_quota(tmp_path: Path) -> None:
    from core.attachments import chunk_id
    from sync.relay_member import ChunkArrived, ChunksHeld, ChunksLacking

    relay = Relay(tmp_path, quota=3 * (1000 + 80))
    keys = EpochKeys.derive(0, SECRET0)
    ma, pa = relay.connect(Side(keys, []), Registration(ADMIN, ()))
    chunks = [os.urandom(1000) for _ in range(4)]
    for data in chunks:
        ma.put_chunk(chunk_id(data), data)
    relay.pump(ma, pa, Side(keys, []))
    held = relay.store.space(SPACE)
    assert held is not None and held.count == 3 and held.bytes <= held.quota  # the oldest went
    files = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.is_file())
    assert chunk_id(chunks[1]) not in files  # named by a keyed hash
    b = Side(keys, [])
    mb, pb = relay.connect(b)
    mb.get_chunks([chunk_id(data) for data in chunks] + [bytes(32)])
    events = relay.pump(mb, pb, b)
    arrived = {e.cid: e.data for e in events if isinstance(e, ChunkArrived)}
    lacking = {cid for e in events if isinstance(e, ChunksLacking) for cid in e.cids}
    assert arrived == {chunk_id(d): d for d in chunks[1:]}
    assert lacking == {chunk_id(chunks[0]), bytes(32)} and not mb.closed
    mb.ask_held([chunk_id(d) for d in chunks])
    [held] = [e for e in relay.pump(mb, pb, b) if isinstance(e, ChunksHeld)]
    assert held.held == {chunk_id(d) for d in chunks[1:]} and len(held.asked) == 4
    assert mb.held_pending == 0


def test_a_relay_that_hands_over_a_wrong_chunk_is_left(tmp_path: Path) -> None:
    from core.attachments import chunk_id

    relay = Relay(tmp_path)
    keys = EpochKeys.derive(0, SECRET0)
    relay.connect(Side(keys, []), Registration(ADMIN, ()))
    real, fake = os.urandom(500), os.urandom(500)
    relay.store.put_chunk(SPACE, keys.chunk_name(chunk_id(real)), fake)
    b = Side(keys, [])
    m, p = relay.connect(b)
    m.get_chunks([chunk_id(real)])
    relay.pump(m, p, b)
    assert m.closed


def test_a_knock_names_a_known_space_and_nothing_else_is_taken_while_it_waits(
        tmp_path: Path) -> None:
    """A newcomer's knock (relay.peer): on a space the relay does not hold, a refusal; on one
    it holds, a Knocked event (the server forwards it) and, while it waits, any other frame
    ends the connection; a member's answer is forwarded and ends it."""
    from relay.peer import Answered, Knocked
    from sync.relay_member import Answered as AnswerArrived
    from sync.relay_member import RelayKnocker

    relay = Relay(tmp_path)
    keys = EpochKeys.derive(0, SECRET0)

    def knocker(space: bytes) -> tuple[RelayKnocker, RelayPeer]:
        k = RelayKnocker(relay.key, space, bytes(16), b"blob")
        p = RelayPeer(relay.store, relay.snapshots, RELAY_KEY, max_spaces=10)
        for _ in range(3):
            for data in k.data_to_send():
                p.receive(data)
            for data in p.data_to_send():
                k.receive(data)
        return k, p

    k, p = knocker(SPACE)
    assert p.closed and k.closed  # no such space here
    member, member_peer = relay.connect(Side(keys, []), Registration(ADMIN, ()))
    k, p = knocker(SPACE)
    assert not p.closed and [type(e) for e in iter(p.next_event, None)] == [Knocked]
    member_peer.forward_knock(b"12345678", bytes(16), b"blob")
    relay.pump(member, member_peer, Side(keys, []))
    member.answer(b"12345678", b"welcome")
    for data in member.data_to_send():
        member_peer.receive(data)
    assert [type(e) for e in iter(member_peer.next_event, None)] == [Answered]
    p.answered(b"welcome")
    for data in p.data_to_send():
        k.receive(data)
    events = list(iter(k.next_event, None))
    assert isinstance(events[0], AnswerArrived) and events[0].blob == b"welcome"
    assert p.closed and k.closed
    k, p = knocker(SPACE)  # a knocker that then tries to prove a token: cut off
    for data in k.channel.encode({"t": "auth", "space": SPACE, "proof": b"x"}):
        p.receive(data)
    assert p.closed and any(isinstance(e, Ended) and e.fault for e in iter(p.next_event, None))
