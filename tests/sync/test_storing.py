"""sync._storing over a real replica: objects from peers are stored on the writer thread, in
order with the session events around them, checked ahead by the signature helpers, and the
loop never holds more than MAX_QUEUED of them."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from storage import Replica, Status
from sync import _storing
from sync._storing import Storing

from .conftest import Chat

NOW_S = 1_900_000_000.0


class Peer:
    """What Storing and its callbacks see of a connection: a name, whether it was told to
    close, and how many of its objects its session was told are stored."""

    def __init__(self, name: str):
        self.name = name
        self.closed: str | None = None
        self.session = self
        self.rounds = self  # session.rounds.stored
        self.acknowledged = 0  # objects the session was told are stored

    def stored(self, count: int) -> None:
        self.acknowledged += count

    def close(self, reason: str) -> None:
        self.closed = reason

    def protocol_error(self, reason: str) -> None:
        self.closed = reason

    def wake(self) -> None:
        pass


@pytest.fixture
def setup(tmp_path: Path):
    chat = Chat()
    replica = Replica.create(tmp_path / "r.sqlite3", chat.ws, chat.root.public_key,
                             clock=lambda: NOW_S)
    replica.ingest([chat.genesis])
    log: list[tuple] = []

    def stored(frames, results):
        log.append(("stored", [c.name for c, _ in frames], [r.status for r in results],
                    replica.count()))

    def handle(connection, event):
        log.append(("event", connection.name, event, replica.count()))

    storing = Storing(replica, stored, handle)
    yield chat, replica, storing, log
    storing.close()
    replica.close()


def _posts(chat: Chat, n: int, channel: str = "general") -> list[bytes]:
    return [chat.post("alice", channel, f"post {k}").raw for k in range(n)]


def test_an_event_after_objects_is_handled_once_they_are_stored(setup):
    chat, replica, storing, log = setup
    a, b = Peer("a"), Peer("b")
    first, second = _posts(chat, 300), _posts(chat, 40, "random")

    async def run():
        storing.objects(a, first)
        storing.event(a, "round over")  # comes after `first`: waits for it
        storing.objects(b, second)
        storing.event(b, "closed")
        await storing.async_drain()

    asyncio.run(run())
    held = 1 + 300
    assert log[0] == ("stored", ["a"], [Status.ADDED] * 300, held)
    assert log[1] == ("event", "a", "round over", held)
    assert log[2] == ("stored", ["b"], [Status.ADDED] * 40, held + 40)
    assert log[3] == ("event", "b", "closed", held + 40)
    assert len(log) == 4
    assert (a.acknowledged, b.acknowledged) == (300, 40)  # a round's sums may be answered


def test_an_event_waits_only_for_its_own_sessions_objects(setup, monkeypatch):
    chat, replica, storing, log = setup
    a, b = Peer("a"), Peer("b")
    gate = threading.Event()
    ingest = replica.ingest_checked

    def slow(parts):
        gate.wait(10)
        return ingest(parts)

    monkeypatch.setattr(replica, "ingest_checked", slow)

    async def run():
        storing.objects(a, _posts(chat, 300))
        storing.event(a, "round over")
        assert storing.busy
        # b sent nothing before its hello: whether it is served is decided now, not after
        # a's catch-up is stored.
        storing.event(b, "connected")
        assert log == [("event", "b", "connected", 1)]
        settled = asyncio.ensure_future(storing.async_settled(b))
        await asyncio.sleep(0)
        assert settled.done()
        gate.set()
        await storing.async_settled(a)
        assert log[-1] == ("event", "a", "round over", 301)

    asyncio.run(run())


def test_an_event_with_nothing_queued_is_handled_at_once(setup):
    _, replica, storing, log = setup

    async def run():
        storing.event(Peer("a"), "hello")
        assert log == [("event", "a", "hello", 1)]  # not after a loop turn

    asyncio.run(run())


def test_frames_of_a_catch_up_are_stored_together_and_in_order(setup):
    chat, replica, storing, log = setup
    peer = Peer("a")
    frames = [_posts(chat, 50) for _ in range(10)]

    async def run():
        for raws in frames:
            storing.objects(peer, raws)  # 500 objects: above INBOX_BULK, so they wait
        await storing.async_drain()

    asyncio.run(run())
    assert [entry[0] for entry in log] == ["stored"]
    assert log[0][1] == ["a"] * 10 and log[0][3] == 501
    assert replica.messages("general", limit=1)[0].text == "post 49"


def test_a_handler_that_fails_closes_its_session_and_the_queue_goes_on(setup):
    chat, replica, _, _ = setup
    handled = []

    def handle(connection, event):
        if event == "bad":
            raise RuntimeError("a bug")
        handled.append(event)

    storing = Storing(replica, lambda frames, results: None, handle)
    a = Peer("a")

    async def run():
        storing.objects(a, _posts(chat, 5))
        storing.event(a, "bad")
        storing.event(a, "next")
        await storing.async_drain()

    asyncio.run(run())
    storing.close()
    assert a.closed == "internal error" and handled == ["next"]


@pytest.mark.parametrize("bound, limit, batch, counter", [
    ("MAX_QUEUED", 200, ("INGEST_BATCH", 100), "_queued"),
    ("MAX_QUEUED_BYTES", 40_000, ("INGEST_BYTES", 20_000), "_queued_bytes"),
], ids=["objects", "bytes"])
def test_the_loop_waits_for_the_writer_when_too_much_is_queued(setup, monkeypatch, bound,
                                                               limit, batch, counter):
    chat, replica, storing, log = setup
    monkeypatch.setattr(_storing, bound, limit)
    monkeypatch.setattr(_storing, *batch)
    peer = Peer("a")
    frames = [_posts(chat, 25) for _ in range(24)]
    step = len(frames[0]) if counter == "_queued" else sum(map(len, frames[0]))
    queued = []

    async def run():
        for raws in frames:
            storing.objects(peer, raws)
            queued.append(getattr(storing, counter))
        await storing.async_drain()

    asyncio.run(run())
    assert step * 3 < max(queued) <= limit + step  # it filled up, and no further
    assert replica.count() == 1 + 600
    assert sum(len(entry[2]) for entry in log) == 600


def test_an_invalid_object_is_answered_rejected_and_the_rest_stored(setup):
    chat, replica, storing, log = setup
    raws = _posts(chat, 300)
    raws[7] = raws[7][:-1] + bytes([raws[7][-1] ^ 1])  # a signature that does not verify

    async def run():
        storing.objects(Peer("a"), raws)
        await storing.async_drain()

    asyncio.run(run())
    statuses = log[0][2]
    assert statuses[7] is Status.REJECTED
    assert statuses.count(Status.ADDED) == 299


def test_a_batch_that_cannot_be_stored_closes_the_sessions_that_sent_it(setup):
    chat, replica, _, _ = setup
    log: list[tuple] = []
    storing = Storing(replica, lambda frames, results: log.append(("stored",)),
                      lambda connection, event: log.append(("event", event)))
    a, b = Peer("a"), Peer("b")
    raws = _posts(chat, 20)
    replica.close()  # the writer's ingest fails: the replica is closed

    async def run():
        storing.objects(a, raws[:10])
        storing.objects(b, raws[10:])
        storing.event(b, "after")
        await storing.async_drain()

    asyncio.run(run())
    storing.close()
    assert a.closed == b.closed == "could not store what was sent"
    assert log == [("event", "after")]  # nothing stored; the event still comes


def test_a_catch_ups_batches_start_small_and_grow(setup, monkeypatch):
    # The first objects of a catch-up (each channel's newest) are stored in a small batch, so
    # the window reads them soon; later batches double up to INGEST_BATCH, and once the writer
    # has caught up the next catch-up starts small again.
    chat, replica, _, log = setup
    monkeypatch.setattr(_storing, "FIRST_BATCH", 100)
    monkeypatch.setattr(_storing, "INGEST_BATCH", 400)
    storing = Storing(replica, lambda frames, results: log.append(len(results)),
                      lambda connection, event: None)
    peer = Peer("a")

    async def run():
        for _ in range(10):
            storing.objects(peer, _posts(chat, 100))
        await storing.async_drain()
        for _ in range(3):
            storing.objects(peer, _posts(chat, 100, "random"))
        await storing.async_drain()

    try:
        asyncio.run(run())
    finally:
        storing.close()
    assert log == [100, 200, 400, 300, 100, 200]
    assert replica.count() == 1 + 1300
