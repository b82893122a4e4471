"""Storing on the writer thread, against a real Node on 127.0.0.1: while it is busy storing
one peer's objects, another peer's session is still judged at its hello (a blocked identity is
sent nothing), what a peer sent is never pushed back to it once stored, and a channel joined on
a running Node that keeps only some is fetched."""

from __future__ import annotations

import asyncio
import threading

import aiohttp
import pytest

from app import keeping
from app.workspace import Workspace
from core.identity import Identity
from storage import Replica
from sync import session as session_mod
from sync.session import ObjectsReceived, ReconcileComplete
from sync.store import MemoryStore
from tests.support import channels, node_call, node_channels, node_read, node_service

from .nodes import Cluster, RawPeer, admitted, has_object, wait_until

WRITER_HELD_S = 1.5  # the simulated slow store: long enough for a whole second session


@pytest.fixture
def cluster(tmp_path):
    with Cluster(tmp_path) as c:
        yield c


async def _blocked_peer_asks(node, paths, raws, ids, entered, blocked_key, feeder_identity):
    """A peer sends objects (which keep the writer busy), then a blocked identity connects
    and asks for objects by id: what it got, and why its session ended."""
    secret, workspace = paths.secret.read_bytes(), node.workspace.id
    async with aiohttp.ClientSession() as http:
        feeder = await RawPeer.connect(http, node.port, secret=secret, workspace=workspace,
                                       identity=feeder_identity)
        await feeder.pump(lambda: feeder.session.connected or feeder.session.closed)
        feeder.session.send_frame({"t": "objs", "raws": raws})
        await feeder.flush()
        while not entered.is_set():  # the writer has them
            await asyncio.sleep(0.01)
        peer = await RawPeer.connect(http, node.port, secret=secret, workspace=workspace,
                                     identity=blocked_key)
        await peer.pump(lambda: peer.session.connected or peer.session.closed)
        if not peer.session.closed:
            peer.session.send_frame({"t": "want", "ids": ids})
            await peer.pump(lambda: peer.session.closed or any(
                isinstance(e, ObjectsReceived) for e in peer.events))
        got = sum(len(e.raws) for e in peer.events if isinstance(e, ObjectsReceived))
        closed = peer.closed_event.reason if peer.closed_event else None
        await peer.ws.close()
        await feeder.ws.close()
        return got, closed


def test_a_blocked_peer_is_refused_while_the_writer_is_busy(cluster, monkeypatch):
    (paths,) = cluster.members(1)
    with Workspace.open(paths) as ws:
        posts = [ws.post("general", f"secret {n}") for n in range(20)]
    entered = threading.Event()
    ingest = Replica.ingest_checked

    def slow(self, parts):
        entered.set()
        threading.Event().wait(WRITER_HELD_S)
        return ingest(self, parts)

    monkeypatch.setattr(Replica, "ingest_checked", slow)
    node = cluster.start(paths)
    mallory = Identity.generate()
    node_call(node, lambda: node_service(node).block({mallory.public_key}))
    got, closed = asyncio.run(_blocked_peer_asks(
        node, paths, [p.raw for p in posts], [p.id for p in posts], entered, mallory,
        admitted(node)))
    assert got == 0
    assert closed is not None and "blocked" in closed


def test_a_channel_joined_on_a_running_node_that_keeps_some_is_fetched(cluster):
    pa, pb = cluster.members(2)
    with Workspace.open(pa) as ws:
        channels(ws, "random")
        for n in range(5):
            ws.post("random", f"random {n}")
        ws.post("general", "hello")
    with Workspace.open(pb) as ws:
        ws.join("general")
        keeping.keep_only(ws, ["general"])
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a], reconcile_interval=None)
    wait_until(lambda: any(m.text == "hello" for m in node_read(b, "general", limit=100)),
               what="general")
    # b has never held anything of random: its computer does not know the channel, so the
    # person creates it there, which joins the one the others have (and keeps it).
    node_channels(b, "random")
    wait_until(lambda: {m.text for m in node_read(b, "random", limit=100)} >=
               {f"random {n}" for n in range(5)}, what="random's history")


async def _give(node, paths, raws: list[bytes]) -> None:
    """A peer holding what the node holds and `raws` besides reconciles once with it."""
    with Replica(paths.replica) as replica:
        held = [row[0] for row in replica.conn.execute("SELECT raw FROM objects")]
        workspace = replica.workspace.id
    store = MemoryStore([], workspace=workspace)
    store.add(held + raws)
    identity = admitted(node)
    async with aiohttp.ClientSession() as http:
        peer = await RawPeer.connect(http, node.port, secret=paths.secret.read_bytes(),
                                     workspace=workspace, store=store, identity=identity)
        await peer.pump(lambda: peer.session.closed or any(
            isinstance(e, ReconcileComplete) for e in peer.events))
        assert not peer.session.closed, peer.closed_event
        await peer.ws.close()


def test_objects_a_peer_sent_are_never_pushed_back_to_it(cluster, monkeypatch):
    # A session remembers the last SENT_MEMORY ids it received, and a catch-up may hold more
    # than that waiting to be stored: the push after storing must not rely on that memory.
    monkeypatch.setattr(session_mod, "SENT_MEMORY", 50)
    pa, pb = cluster.members(2)
    with Workspace.open(pb) as ws:
        posts = [ws.post("general", f"from bob {n}") for n in range(300)]
    node = cluster.start(pa, reconcile_interval=None)
    pushed: list[int] = []
    service = node_service(node)
    original = service.announce

    def announce(source=None, received=None):
        before = {id(c): c.session.stats.objects_sent for c in service.connections.values()}
        original(source, received)
        for c in service.connections.values():
            c.session.outbox.fill()  # what was pushed leaves the backlog, and is counted, now
            pushed.append(c.session.stats.objects_sent - before.get(id(c), 0))

    node_call(node, lambda: setattr(service, "announce", announce))
    asyncio.run(_give(node, pa, [p.raw for p in posts]))
    wait_until(lambda: all(has_object(node, p.id) for p in posts), what="bob's posts stored")
    node_call(node, lambda: None)  # the announcement after storing is over
    assert pushed and sum(pushed) == 0
