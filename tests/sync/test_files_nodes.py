"""Attached files between running Nodes on 127.0.0.1 (sync/fetcher.py, app/node.py): real
sockets, real Noise sessions, real chunk stores. Assertions are on what arrives and in which
order, never on wall-clock times."""

from __future__ import annotations

import asyncio
import hashlib
import os
import threading
from pathlib import Path

import aiohttp
import pytest

from app import preferences
from app.node import Node, NodeError, NodeEvent
from core.attachments import chunk_id
from core.identity import Identity
from sync import fetcher as fetcher_mod
from sync._files import FILES
from sync.session import Closed

from .nodes import CHANNEL, TIMEOUT_S, Cluster, RawPeer, wait_online, wait_until

MB = 1 << 20


@pytest.fixture
def cluster(tmp_path):
    with Cluster(tmp_path) as c:
        yield c


def write_file(folder: Path, name: str, size: int) -> tuple[Path, str]:
    path = folder / name
    with open(path, "wb") as f:
        left = size
        while left:
            piece = os.urandom(min(left, 4 * MB))
            f.write(piece)
            left -= len(piece)
    return path, sha256(path)


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while piece := f.read(4 * MB):
            h.update(piece)
    return h.hexdigest()


def attach(node: Node, path: Path, text: str = "") -> bytes:
    return node.call(lambda: node.workspace_for_tests.attach(CHANNEL, [path], text).id)


def has_message(node: Node, message_id: bytes) -> bool:
    return node.call(lambda: node.workspace_for_tests.replica.has(message_id))


def save(node: Node, message_id: bytes, out: Path) -> Path:
    return node.facade.save_attachment(message_id, 0, out).result(TIMEOUT_S)


def list_id(node: Node, message_id: bytes) -> bytes:
    return node.call(lambda: node.workspace_for_tests.file_ref(message_id, 0).list)


def stored_chunks(node: Node) -> list[bytes]:
    return node.call(lambda: list(node.workspace_for_tests.chunks.ids()))


class Events:
    """Every NodeEvent a Node emits, in order (appended on the Node's thread)."""

    def __init__(self, node: Node):
        self.seen: list[NodeEvent] = []
        self.lock = threading.Lock()
        node.subscribe(self._add)

    def _add(self, event: NodeEvent) -> None:
        with self.lock:
            self.seen.append(event)

    def progress(self, lst: bytes) -> list:
        with self.lock:
            return [e.detail["progress"] for e in self.seen
                    if e.kind == "files" and e.detail["progress"].list == lst]


def no_auto_download(*paths) -> None:
    for p in paths:
        preferences.save(p.data, auto_download_mb=0)


def test_a_20_mb_file_arrives_identical(cluster, tmp_path):
    pa, pb = cluster.members(2)
    no_auto_download(pb)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    events = Events(b)
    path, digest = write_file(tmp_path, "big.bin", 20 * MB + 12345)
    mid = attach(a, path, "twenty megabytes")
    wait_until(lambda: has_message(b, mid), what="the message to arrive")

    b.download(mid, 0).result(TIMEOUT_S)

    saved = save(b, mid, tmp_path / "out")
    assert saved.name == "big.bin" and sha256(saved) == digest
    progress = events.progress(list_id(b, mid))
    assert progress[-1].done and progress[-1].have == progress[-1].size == path.stat().st_size
    assert [p.have for p in progress] == sorted(p.have for p in progress)
    # Downloading what is here already is done at once, and asks nobody anything.
    b.download(mid, 0).result(TIMEOUT_S)


def test_files_below_the_preference_are_fetched_by_themselves(cluster, tmp_path):
    pa, pb = cluster.members(2)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    path, digest = write_file(tmp_path, "small.txt", 300_000)
    mid = attach(a, path)
    wait_until(lambda: b.call(lambda: b.workspace_for_tests.file_complete(list_id(a, mid))),
               what="the file to be fetched without asking")
    assert sha256(save(b, mid, tmp_path / "out")) == digest


def test_killing_the_sender_midway_resumes_from_another_peer(cluster, tmp_path, monkeypatch):
    monkeypatch.setattr(fetcher_mod, "PROGRESS_INTERVAL_S", 0.0)  # an event per chunk
    pa, pb, pc = cluster.members(3)
    no_auto_download(pa, pb, pc)
    a = cluster.start(pa)
    c = cluster.start(pc, peers=[a])
    path, digest = write_file(tmp_path, "movie.bin", 40 * MB)
    mid = attach(a, path)
    wait_until(lambda: has_message(c, mid), what="the message to reach c")
    c.download(mid, 0).result(TIMEOUT_S)  # c holds the whole file too
    lst = list_id(a, mid)

    b = cluster.start(pb, peers=[a])  # b knows only a for now
    wait_until(lambda: has_message(b, mid), what="the message to reach b")
    cut = threading.Event()

    def kill_a_after_some(event: NodeEvent) -> None:  # on b's thread: nothing more from a
        if (event.kind == "files" and event.detail["progress"].have > 0
                and not cut.is_set()):
            cut.set()
            b.service_for_tests.block({a.key})

    b.subscribe(kill_a_after_some)
    fetching = b.download(mid, 0)
    wait_until(cut.is_set, what="some of the file to arrive from a")
    a.stop()
    before = len(stored_chunks(b))
    assert not fetching.done()
    total = 40 * MB // (256 * 1024) + 1  # the chunks and the list
    assert 0 < before < total

    c.add_peer("127.0.0.1", b.port)
    fetching.result(TIMEOUT_S)

    assert sha256(save(b, mid, tmp_path / "out")) == digest
    sent_by_c = c.call(lambda: sum(conn.session.chunks_sent for conn in
                                   c.service_for_tests.connections.values()))
    assert sent_by_c <= total - before  # what b had was never asked again
    assert b.call(lambda: b.workspace_for_tests.file_complete(lst))


class _Liar:
    """A chunk source that holds every chunk, all of them wrong."""

    def read(self, cid: bytes) -> bytes:
        return b"not the chunk you asked for" * 100


async def _serve_bad_chunks(port: int, secret: bytes, workspace: bytes, ready: threading.Event,
                            liar: Identity) -> RawPeer:
    async with aiohttp.ClientSession() as http:
        peer = await RawPeer.connect(http, port, secret=secret, workspace=workspace,
                                     identity=liar)
        peer.session._init_files(_Liar())  # announces `files` and answers every get
        await peer.pump(lambda: FILES in peer.session.peer_caps)
        ready.set()
        await peer.pump(lambda: peer.session.closed, timeout=TIMEOUT_S)
        return peer


def test_a_peer_sending_a_bad_chunk_is_cut_off_and_the_file_comes_from_another(cluster,
                                                                               tmp_path):
    pa, pb = cluster.members(2)
    no_auto_download(pa, pb)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    events = Events(b)
    path, digest = write_file(tmp_path, "doc.pdf", 12 * MB)  # more than one window
    mid = attach(a, path)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")

    liar, ready, result = Identity.generate(), threading.Event(), {}

    def run() -> None:
        result["peer"] = asyncio.run(_serve_bad_chunks(
            b.port, pb.secret.read_bytes(), b.workspace_id, ready, liar))

    thread = threading.Thread(target=run)
    thread.start()
    assert ready.wait(TIMEOUT_S)
    wait_until(lambda: liar.public_key in b.online(), what="the liar to be connected")
    b.download(mid, 0).result(TIMEOUT_S)
    thread.join(TIMEOUT_S)

    assert isinstance(result["peer"].closed_event, Closed)  # b hung up on it
    ended = [e.detail for e in events.seen if e.kind == "peers"
             and e.detail.get("connected") is False and e.detail.get("peer") == liar.public_key]
    assert ended and ended[0]["fault"] and "does not hash" in ended[0]["reason"]
    assert ended[0]["refused_s"] > 0  # cut off: its identity is refused for a while
    assert sha256(save(b, mid, tmp_path / "out")) == digest
    for cid in stored_chunks(b):  # nothing the liar sent was kept
        assert chunk_id(b.call(lambda c=cid: b.workspace_for_tests.chunks.read(c))) == cid


def test_chat_posted_during_a_big_transfer_arrives_before_it_ends(cluster, tmp_path,
                                                                   monkeypatch):
    monkeypatch.setattr(fetcher_mod, "PROGRESS_INTERVAL_S", 0.0)
    pa, pb = cluster.members(2)
    no_auto_download(pa, pb)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    events = Events(b)
    path, _ = write_file(tmp_path, "huge.bin", 96 * MB)
    mid = attach(a, path)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")
    lst = list_id(a, mid)
    fetching = b.download(mid, 0)
    wait_until(lambda: any(p.have for p in events.progress(lst)), what="the transfer to start")
    posted = [a.facade.post(CHANNEL, f"chat {n} during the transfer") for n in range(5)]
    ids = {f.result(TIMEOUT_S) for f in posted}
    fetching.result(TIMEOUT_S)

    with events.lock:
        order = list(events.seen)
    done_at = next(i for i, e in enumerate(order) if e.kind == "files"
                   and e.detail["progress"].list == lst and e.detail["progress"].done)
    arrived_at = {oid: i for i, e in enumerate(order) if e.kind == "objects"
                  for oid in e.detail["ids"]}
    assert ids <= set(arrived_at)
    assert max(arrived_at[oid] for oid in ids) < done_at  # chat did not wait for the file


def test_a_download_fails_with_a_reason_when_no_peer_has_the_file(cluster, tmp_path,
                                                                  monkeypatch):
    monkeypatch.setattr(fetcher_mod, "FETCH_WAIT_S", 0.5)
    pa, pb = cluster.members(2)
    no_auto_download(pa, pb)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    path, _ = write_file(tmp_path, "gone.bin", MB)
    mid = attach(a, path)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")
    a.call(lambda: a.workspace_for_tests.chunks.remove(list(a.workspace_for_tests.chunks.ids())))

    with pytest.raises(NodeError, match="no connected peer has all of this file"):
        b.download(mid, 0).result(TIMEOUT_S)
    assert a.key in b.online()  # lacking a chunk is no fault

    a.stop()
    wait_until(lambda: a.key not in b.online(), what="a to go away")
    with pytest.raises(NodeError, match="no peer that has it is connected"):
        b.download(mid, 0).result(TIMEOUT_S)


class _Holder:
    """A chunk source with nothing in it (this peer only asks)."""

    def read(self, cid: bytes) -> None:
        return None


async def _ask_and_never_read(port: int, secret: bytes, workspace: bytes, ids: list[bytes],
                              asked: threading.Event, done: threading.Event) -> None:
    async with aiohttp.ClientSession() as http:
        peer = await RawPeer.connect(http, port, secret=secret, workspace=workspace)
        peer.session._init_files(_Holder())
        await peer.pump(lambda: FILES in peer.session.peer_caps)
        peer.session.request_chunks(ids, 0.0)
        await peer.flush()
        asked.set()
        while not done.is_set():  # never reads: what the node sends piles up, then stops
            await asyncio.sleep(0.05)


def test_a_peer_that_asks_and_never_reads_is_dropped_when_a_send_times_out(cluster, tmp_path,
                                                                         monkeypatch):
    monkeypatch.setattr("sync.connection.SEND_TIMEOUT_S", 1.0)
    (pa,) = cluster.members(1)
    no_auto_download(pa)
    a = cluster.start(pa)
    path, _ = write_file(tmp_path, "big.bin", 24 * MB)  # more than the socket buffers hold
    mid = attach(a, path)
    lst = list_id(a, mid)
    ids = a.call(lambda: a.workspace_for_tests.file_chunks(lst))
    asked, done = threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(_ask_and_never_read(
        a.port, pa.secret.read_bytes(), a.workspace_id, ids[:1024], asked, done)))
    thread.start()
    try:
        assert asked.wait(TIMEOUT_S)
        wait_until(lambda: not a.online(), what="a to hang up on the peer that never reads")
    finally:
        done.set()
        thread.join(TIMEOUT_S)
    assert a.call(lambda: len(a.service_for_tests.connections)) == 0
