"""Integration tests of LAN sync between real Nodes on 127.0.0.1 (docs/ARCHITECTURE.md "Sync").

Every node is a `Node` on its own thread with real sockets; convergence is judged by
`Replica.digest()` (every view's content) and by what `read` shows, waited for with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
import os
import socket
import threading
import time
from pathlib import Path

import aiohttp
import pytest

from app.events import ObjectsStored, Synced
from app.node import Node, NodeError, NodeLocked
from app.paths import Paths
from app.workspace import Workspace
from core import kinds
from core.encoding import object_id
from core.identity import Identity
from core.objects import build
from storage import Replica, Status
from sync import connection as conn_mod
from tests.support import (
    node_add_peer,
    node_call,
    node_online,
    node_peers,
    node_post,
    node_read,
    node_service,
)

from .nodes import (
    CHANNEL,
    LOCAL,
    TIMEOUT_S,
    Cluster,
    RawPeer,
    TwoNodes,
    admitted,
    create_workspace,
    digest,
    has_object,
    join_member,
    post_concurrently,
    start_two_nodes,
    texts,
    wait_converged,
    wait_online,
    wait_until,
)

SIG_ENTRY = b"\x63sig\x58\x40"  # the "sig" key and the header of its 64-byte value


def _secret(node: Node) -> bytes:
    return node.paths.secret.read_bytes()


def _workspace_id(node: Node) -> bytes:
    return node.workspace.id


def _rounds(node: Node) -> int:
    """Reconciliation rounds of the node's open sessions."""
    return node_call(node, lambda: sum(c.session.stats.rounds
                                 for c in node_service(node).connections.values()))


def _post_object(identity: Identity, workspace: bytes, text: str):
    return build(identity, "post/text", stream=kinds.channel_stream(workspace, CHANNEL),
                 body={"channel": CHANNEL, "text": text}, ts=int(time.time() * 1000))


def _with_bad_signature(raw: bytes) -> bytes:
    start = raw.index(SIG_ENTRY) + len(SIG_ENTRY)
    return raw[:start] + bytes([raw[start] ^ 0x01]) + raw[start + 1:]


# Convergence ----------------------------------------------------------------------------------

def test_two_nodes_converge_after_offline_and_concurrent_posts(cluster: Cluster):
    pa, pb = cluster.members(2)
    # Both wrote while apart...
    for paths, who in ((pa, "alice"), (pb, "bob")):
        with Workspace.open(paths) as ws:
            for k in range(5):
                ws.post(CHANNEL, f"offline {who} {k}")
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    # ...and both write at once while connecting and connected.
    posted = post_concurrently([a, b], 20)

    wait_converged([a, b])
    expected = sorted(posted + [f"offline {w} {k}" for w in ("alice", "bob") for k in range(5)])
    assert sorted(texts(a)) == expected
    assert sorted(texts(b)) == expected
    assert texts(a) == texts(b)  # the same order too


@pytest.mark.parametrize("topology", ["chain", "star"])
def test_five_nodes_converge_after_concurrent_posts(cluster: Cluster, topology: str):
    paths = cluster.members(5)
    nodes = getattr(cluster, topology)(paths)
    posted = post_concurrently(nodes, 8, prefix=topology)

    common = wait_converged(nodes)
    assert all(digest(node) == common for node in nodes)
    for node in nodes:
        shown = texts(node)
        assert len(shown) == len(posted) == 40
        assert sorted(shown) == sorted(posted)
    # Everyone also knows everyone's nickname (profile streams crossed the whole topology).
    nicks = {m.nick for m in node_read(nodes[-1], CHANNEL, limit=100)}
    assert nicks == {"alice", "bob", "carol", "dave", "erin"}


def test_new_member_catches_up_with_a_long_history(cluster: Cluster):
    (pa,) = cluster.members(1)
    history = 3000  # more than one "want" batch, and enough for the signature helper
    with Workspace.open(pa) as ws:
        for k in range(history):
            ws.post(CHANNEL, f"history {k}")
    pb = join_member(cluster.root, pa, "newcomer", "nina")
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_converged([a, b], timeout=120)
    shown = [m.text for m in node_read(b, CHANNEL, limit=history + 10)]
    assert shown == [f"history {k}" for k in range(history)]


def test_same_identity_on_two_computers_syncs(cluster: Cluster):
    pa = create_workspace(cluster.root, "laptop", "alice")
    desktop = cluster.root / "desktop"
    desktop.mkdir()
    (desktop / "identity.key").write_bytes(pa.identity.read_bytes())
    (desktop / "identity.key").chmod(0o600)
    pb = join_member(cluster.root, pa, "desktop", "alice")
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    assert a.key == b.key
    wait_converged([a, b])
    posted = post_concurrently([a, b], 10, prefix="alice on two computers")
    wait_converged([a, b])
    assert sorted(texts(a)) == sorted(texts(b)) == sorted(posted)


def test_live_push_needs_no_reconciliation_round(two_nodes: TwoNodes):
    a, b = two_nodes  # reconcile_interval=None
    wait_converged([a, b])
    # The first (and with reconcile_interval=None, only) round has finished.
    wait_until(lambda: node_peers(b)[0]["last_sync"], what="b's first round with a")
    rounds = node_peers(b)[0]["stats"]["rounds"]

    seen: dict[str, list] = {"a": [], "b": []}
    a.subscribe(seen["a"].append)
    b.subscribe(seen["b"].append)

    from_a = node_post(a, CHANNEL, "pushed from a")  # a accepted b's connection
    wait_until(lambda: "pushed from a" in texts(b), what="a's post to reach b")
    from_b = node_post(b, CHANNEL, "pushed from b")  # b dialled a
    wait_until(lambda: "pushed from b" in texts(a), what="b's post to reach a")

    # The event follows the stored post on the Node's thread: readable first, then told.
    wait_until(lambda: any(isinstance(e, ObjectsStored) and from_a in e.ids
                           for e in seen["b"]), what="b's objects event")
    wait_until(lambda: any(isinstance(e, ObjectsStored) and from_b in e.ids
                           for e in seen["a"]), what="a's objects event")
    assert not [e for e in seen["a"] + seen["b"] if isinstance(e, Synced)]
    assert _rounds(a) == _rounds(b) == rounds == 1
    assert digest(a) == digest(b)


def test_writes_by_another_connection_are_noticed_and_pushed(two_nodes: TwoNodes):
    a, b = two_nodes  # reconcile_interval=None
    pa = two_nodes.pa
    wait_converged([a, b])

    # `hearth post` beside a running `hearth serve`: another SQLite connection to a's file.
    with Workspace.open(pa) as other:
        oid = other.post(CHANNEL, "written beside the node").id
    wait_until(lambda: has_object(b, oid), what="b to receive the other connection's post")
    assert "written beside the node" in texts(b)
    wait_converged([a, b])


# Outsiders and misbehaving peers -------------------------------------------------------------

def test_computer_without_the_secret_can_neither_read_nor_write(
        cluster: Cluster, tmp_path: Path, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="sync.service")
    pa, pb = cluster.members(2)
    # An outsider with a workspace of its own, and one who joined with a tampered code
    # (right workspace id and root, wrong secret).
    px = create_workspace(tmp_path, "x", "mallory")
    real = pa.secret.read_bytes()
    py = Paths.resolve(tmp_path / "y", "default")
    with Workspace.open(pa) as ws:
        workspace, root = ws.id, ws.replica.workspace.root
    Workspace.create(py, "trudy", secret=bytes(b ^ 0x5A for b in real), workspace=workspace,
                     root=root).close()

    a = cluster.start(pa, reconcile_interval=1.0)
    b = cluster.start(pb, peers=[a], reconcile_interval=1.0)
    x = cluster.start(px, peers=[a], reconcile_interval=1.0)
    y = cluster.start(py, peers=[a], reconcile_interval=1.0)
    node_add_peer(a, LOCAL, x.port)  # a also dials an outsider
    node_post(x, CHANNEL, "outsider x was here")
    node_post(y, CHANNEL, "outsider y was here")
    node_post(a, CHANNEL, "members only")

    def failed(node: Node, port: int) -> bool:
        return any(r["port"] == port and r["failures"] >= 1 and r["key"] is None
                   and r["last_error"] for r in node_peers(node))

    wait_until(lambda: failed(x, a.port) and failed(y, a.port) and failed(a, x.port),
               what="the outsiders' sessions to fail")
    wait_until(lambda: sum("handshake failed" in r.getMessage() for r in caplog.records) >= 3,
               what="handshake failures to be logged")

    # The members keep syncing with each other.
    wait_online(a, b)
    node_post(b, CHANNEL, "still syncing")
    wait_until(lambda: "still syncing" in texts(a), what="b's post to reach a")
    wait_converged([a, b])

    outsiders = {x.key, y.key}
    for member in (a, b):
        assert not outsiders & node_online(member)
        assert node_call(member, lambda m=member: [m.workspace.replica.posts_by(k) for k in outsiders]) \
            == [[], []]
        assert not {"outsider x was here", "outsider y was here"} & set(texts(member))
    for outsider in (x, y):
        assert node_online(outsider) == set()
        shown = set(texts(outsider))
        assert not {"members only", "still syncing"} & shown
        assert node_call(outsider, lambda o=outsider: o.workspace.replica.posts_by(a.key)) == []


async def _send_raw(port: int, payload: bytes | str) -> aiohttp.WSMsgType:
    """Open a plain WebSocket to a node, send one message, and return what comes back."""
    async with aiohttp.ClientSession() as http:
        ws = await http.ws_connect(f"ws://{LOCAL}:{port}{conn_mod.PATH}", max_msg_size=0)
        try:
            if isinstance(payload, str):
                await ws.send_str(payload)
            else:
                await ws.send_bytes(payload)
        except (ConnectionError, aiohttp.ClientError):
            return aiohttp.WSMsgType.CLOSED  # hung up on before it had all of it
        msg = await asyncio.wait_for(ws.receive(), TIMEOUT_S)
        await ws.close()
        return msg.type


async def _garbage_after_handshake(port: int, secret: bytes, workspace: bytes,
                                   garbage: bytes, identity: Identity) -> str:
    """Complete a real handshake with the right secret, then send `garbage`."""
    async with aiohttp.ClientSession() as http:
        peer = await RawPeer.connect(http, port, secret=secret, workspace=workspace,
                                     identity=identity)
        await peer.pump(lambda: peer.session.connected or peer.session.closed)
        assert peer.session.connected, peer.events
        await peer.send(garbage)
        await peer.pump(lambda: peer.session.closed)
        return peer.closed_event.reason


def test_peer_sending_garbage_is_cut_off_and_others_keep_syncing(
        cluster: Cluster, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.INFO, logger="sync.service")
    a, b = start_two_nodes(cluster, *cluster.members(2))

    payloads: list[bytes | str] = [
        b"",
        os.urandom(48),  # the size of a real first handshake message
        os.urandom(700),
        os.urandom(5000),  # larger than any handshake message
        os.urandom(70 * 1024),  # larger than any Noise message: refused by aiohttp itself
        "hello?",  # a text message
    ]
    for payload in payloads:
        kind = asyncio.run(_send_raw(a.port, payload))
        assert kind in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED), (len(payload), kind)
    # A peer that knows the secret is cut off all the same when it sends garbage.
    for garbage in (os.urandom(300), os.urandom(70 * 1024)):
        reason = asyncio.run(_garbage_after_handshake(a.port, _secret(a), _workspace_id(a),
                                                      garbage, admitted(a)))
        assert reason  # the node hung up on it

    wait_until(lambda: node_online(a) == {b.key}, what="a to drop every garbage sender")
    node_post(b, CHANNEL, "after the garbage")
    wait_until(lambda: "after the garbage" in texts(a), what="b's post to reach a")
    wait_converged([a, b])
    ended = [r.getMessage() for r in caplog.records if "ended:" in r.getMessage()]
    assert any("handshake" in m for m in ended)
    assert any("decryption" in m for m in ended)


def test_peer_sending_bad_signatures_is_cut_off_and_nothing_invalid_is_stored(
        cluster: Cluster, caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.WARNING, logger="sync.service")
    a, b = start_two_nodes(cluster, *cluster.members(2))
    ws_id = _workspace_id(a)
    rogue = admitted(a)
    good = _post_object(rogue, ws_id, "a valid post from the rogue peer")
    forged = _post_object(rogue, ws_id, "a post whose signature is wrong")
    bad = _with_bad_signature(forged.raw)
    bad_id = object_id(bad)
    # Someone else's words under the rogue key: a valid signature over other bytes.
    stolen = _post_object(Identity.generate(), ws_id, "I never wrote this")
    start = stolen.raw.index(SIG_ENTRY) + len(SIG_ENTRY)
    impersonation = forged.raw[:start] + stolen.raw[start:start + 64] + forged.raw[start + 64:]
    assert len(impersonation) == len(forged.raw)
    outcomes = []

    async def scenario(raws: list[bytes], sender: Identity) -> None:
        async with aiohttp.ClientSession() as http:
            peer = await RawPeer.connect(http, a.port, secret=_secret(a), workspace=ws_id,
                                         identity=sender)
            await peer.pump(lambda: peer.session.rounds.peer_interest is not None or peer.session.closed)
            assert peer.session.connected, peer.events
            if not outcomes:
                peer.session.outbox.push([good.raw], [good.id])
                await peer.flush()
                while not has_object(a, good.id):
                    await peer.pump(lambda: True)
                    await asyncio.sleep(0.05)
            peer.session.outbox.push(raws, [object_id(raw) for raw in raws])
            await peer.pump(lambda: peer.session.closed)
            outcomes.append(peer.closed_event)

    asyncio.run(scenario([bad], rogue))
    # Another member relays the impersonation (the rogue's own key is refused for a while now).
    asyncio.run(scenario([impersonation], admitted(a)))
    assert len(outcomes) == 2 and all(outcomes)
    wait_until(lambda: sum("invalid object" in r.getMessage() for r in caplog.records) >= 2,
               what="the node to log why it cut the peer off")

    wait_until(lambda: has_object(b, good.id), what="the valid post to be relayed to b")
    for node in (a, b):
        assert not has_object(node, bad_id)
        assert not has_object(node, object_id(impersonation))
        assert node_call(node, lambda n=node: n.workspace.replica.posts_by(rogue.public_key)) \
            == [good.id]
    assert rogue.public_key not in node_online(a)
    node_post(b, CHANNEL, "business as usual")
    wait_until(lambda: "business as usual" in texts(a), what="b's post to reach a")
    wait_converged([a, b])


# Deletes and unknown kinds ---------------------------------------------------------------------

def test_deleted_post_never_comes_back_from_a_peer_that_still_has_it(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a, b, c = cluster.chain([pa, pb, pc], reconcile_interval=1.0)
    post = node_post(a, CHANNEL, "regrettable")
    wait_until(lambda: has_object(c, post), what="the post to reach c")
    wait_converged([a, b, c])

    c.stop()  # c goes away still holding the post
    cluster.nodes.remove(c)
    delete = node_call(a, lambda: a.workspace.conversation.delete(post).id)
    wait_until(lambda: node_call(b, lambda: b.workspace.replica.is_deleted(post)),
               what="b to learn about the delete")
    assert "regrettable" not in texts(b)
    with Replica(pc.replica) as replica:
        assert replica.has(post) and not replica.is_deleted(post)

    c = cluster.start(pc, peers=[b], reconcile_interval=1.0)  # c comes back, through b
    wait_until(lambda: has_object(c, delete), what="the delete to reach c")
    wait_converged([a, b, c])
    for node in (a, b, c):
        assert "regrettable" not in texts(node)
        assert not has_object(node, post)
        assert node_call(node, lambda n=node: n.workspace.replica.is_deleted(post))
    # Further rounds do not bring it back either.
    node_post(a, CHANNEL, "moving on")
    wait_until(lambda: "moving on" in texts(c), what="a later post to reach c")
    wait_converged([a, b, c])
    assert not any(has_object(node, post) for node in (a, b, c))


def test_unknown_kind_from_a_newer_peer_is_stored_and_relayed(cluster: Cluster):
    pa, pb, pc = cluster.members(3)
    a, b, c = cluster.chain([pa, pb, pc])
    wait_online(a, b)
    wait_online(b, c)
    wait_converged([a, b, c])

    stream = hashlib.blake2b(b"polls of a newer Hearth", digest_size=32).digest()
    poll = build(a.workspace.identity, "future/poll", stream=stream,
                 body={"question": "lunch?", "options": ["soup", "pizza"]},
                 ts=int(time.time() * 1000))
    # A newer version of Hearth wrote it to a's replica file.
    with Replica(pa.replica) as replica:
        assert replica.ingest([poll])[0].status is Status.ADDED

    wait_until(lambda: has_object(c, poll.id), what="c to receive the poll through b")
    assert node_call(b, lambda: b.workspace.replica.get(poll.id)) == poll.raw
    assert node_call(c, lambda: c.workspace.replica.get(poll.id)) == poll.raw
    wait_converged([a, b, c])


def test_a_peer_already_connected_is_not_redialled_when_added(
        cluster: Cluster, caplog: pytest.LogCaptureFixture):
    # What mDNS does whenever one side sees the other's advert later than the other way round.
    caplog.set_level(logging.INFO, logger="sync.service")
    pa, pb = cluster.members(2)
    first, second = cluster.start(pa), cluster.start(pb)
    small, large = sorted((first, second), key=lambda node: node.key)
    node_add_peer(small, LOCAL, large.port)
    wait_online(small, large)
    node_add_peer(large, LOCAL, small.port)  # the smaller key's connection is the one both keep

    def duplicates() -> int:  # each duplicate connection is logged by both ends
        return sum("ended: duplicate connection" in r.getMessage()
                   for r in caplog.records) // 2

    def knows(node: Node, other: Node) -> bool:
        return any(r["port"] == other.port and r["key"] == other.key.hex() and r["last_seen"]
                   for r in node_peers(node))

    wait_until(lambda: knows(large, small) or duplicates() >= 3,
               what="the added peer to be recognised, or repeated duplicate dials")
    assert duplicates() <= 1, f"{duplicates()} duplicate connections to a connected peer"
    assert knows(large, small), node_peers(large)
    assert node_online(large) == {small.key}


# Lifecycle -------------------------------------------------------------------------------------

def test_a_restarted_node_redials_the_peers_it_remembers(cluster: Cluster, two_nodes: TwoNodes):
    a, b = two_nodes
    pb = two_nodes.pb
    wait_until(lambda: node_peers(b)[0]["last_sync"], what="b's first round with a")
    b.stop()
    cluster.nodes.remove(b)
    node_post(a, CHANNEL, "while b was away")

    b = cluster.start(pb)  # no --peer this time: a is in b's peers.json
    wait_online(a, b)
    wait_until(lambda: "while b was away" in texts(b), what="b to catch up with a")
    wait_converged([a, b])


def test_second_node_on_the_same_data_folder_is_refused(cluster: Cluster):
    (pa,) = cluster.members(1)
    first = cluster.start(pa)
    second = Node(pa, port=0, interfaces=[LOCAL], mdns=False)
    with pytest.raises(NodeLocked) as info:
        second.start()
    message = str(info.value)
    assert "another Hearth" in message
    assert str(os.getpid()) in message
    assert str(pa.data) in message
    # The first keeps working, and once it stops the folder is free again.
    node_post(first, CHANNEL, "still here")
    first.stop()
    cluster.nodes.remove(first)
    again = cluster.start(pa)
    assert "still here" in texts(again)


def test_a_peer_connecting_while_the_node_stops_is_closed_too(cluster: Cluster):
    (pa,) = cluster.members(1)
    # A peer that never answers keeps one dial in flight for CONNECT_TIMEOUT_S, so stopping
    # takes a few seconds, during which the node still listens.
    silent = socket.socket()
    silent.bind((LOCAL, 0))
    silent.listen(8)
    a = cluster.start(pa, peers=[silent.getsockname()])
    secret, ws_id, port = _secret(a), _workspace_id(a), a.port
    peer_identity = admitted(a)
    stopper = threading.Thread(target=a.stop)

    async def scenario() -> list[str | None]:
        """Connect again and again while the node stops; keep the first session that opens
        and outlives the closing of connections; return how every opened session ended."""
        opened: list[RawPeer] = []
        async with aiohttp.ClientSession() as http:
            stopper.start()
            while stopper.is_alive() and not any(not p.session.closed for p in opened):
                try:
                    peer = await RawPeer.connect(http, port, secret=secret, workspace=ws_id,
                                                 identity=peer_identity)
                except (OSError, aiohttp.ClientError):
                    break  # no longer listening
                await peer.pump(lambda p=peer: p.session.connected or p.session.closed)
                if peer.session.connected:
                    opened.append(peer)
            await asyncio.get_running_loop().run_in_executor(None, stopper.join)
            # stop() has returned: the node must have said goodbye to every peer.
            for peer in opened:
                with contextlib.suppress(AssertionError):
                    await peer.pump(lambda p=peer: p.session.closed, timeout=2)
            return [p.closed_event.reason if p.closed_event else None for p in opened]

    try:
        reasons = asyncio.run(scenario())
    finally:
        silent.close()
        if stopper.is_alive():
            stopper.join()
    cluster.nodes.remove(a)
    assert None not in reasons, "the node returned from stop() with a session still open"
    assert all("shutting down" in reason for reason in reasons), reasons


def test_stop_is_idempotent_and_bounded(cluster: Cluster):
    pa, pb = cluster.members(2)
    # A peer that accepts TCP connections but never answers: the node's dial hangs on it.
    silent = socket.socket()
    silent.bind((LOCAL, 0))
    silent.listen(8)
    idle = None
    try:
        a = cluster.start(pa)
        b = cluster.start(pb, peers=[a, silent.getsockname()])
        wait_online(a, b)
        port = b.port
        # And one that opened a WebSocket to b and then went quiet mid-handshake.
        idle = socket.create_connection((LOCAL, port), timeout=TIMEOUT_S)
        idle.sendall(f"GET {conn_mod.PATH} HTTP/1.1\r\nHost: {LOCAL}:{port}\r\n"
                     "Upgrade: websocket\r\nConnection: Upgrade\r\n"
                     "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     "Sec-WebSocket-Version: 13\r\n\r\n".encode())
        assert idle.recv(1024).startswith(b"HTTP/1.1 101")
        wait_until(lambda: node_call(b, lambda: len(node_service(b).connections)) >= 2,
                   what="b to hold the idle connection")

        stopper = threading.Thread(target=b.stop)
        stopper.start()
        stopper.join(3 * TIMEOUT_S)
        assert not stopper.is_alive(), "stop() did not return"
        b.stop()  # a second stop does nothing
        b.stop()
        with pytest.raises(NodeError):
            node_post(b, CHANNEL, "after stop")
        wait_until(lambda: b.key not in node_online(a), what="a to see b leave")
        with pytest.raises(OSError), socket.create_connection((LOCAL, port), timeout=5):
            pass
        cluster.nodes.remove(b)
        again = cluster.start(pb)  # the data folder was released
        assert again.key == b.key
    finally:
        silent.close()
        if idle is not None:
            idle.close()
