"""Attached files between running Nodes on 127.0.0.1 (sync/fetcher.py, app/node.py): real
sockets, real Noise sessions, real chunk stores. Assertions are on what arrives and in which
order, never on wall-clock times."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import os
import sqlite3
import threading
from pathlib import Path

import aiohttp
import pytest

from app import preferences
from app.download_requests import download_status, request_download
from app.events import FileProgressed, NodeEvent, ObjectsStored, PeerDisconnected
from app.node import Node, NodeError
from core.attachments import CHUNK_SIZE, chunk_id, encode_list
from core.identity import Identity
from storage.chunks import ChunkStore
from sync import fetcher as fetcher_mod
from sync._files import FILES
from sync.session import Closed
from tests.support import node_add_peer, node_call, node_online, node_service

from .nodes import (
    CHANNEL,
    TIMEOUT_S,
    Cluster,
    RawPeer,
    admitted,
    wait_online,
    wait_until,
)

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
    return node_call(node, lambda: node.workspace.files.attach(CHANNEL, [path], text).id)


def has_message(node: Node, message_id: bytes) -> bool:
    return node_call(node, lambda: node.workspace.replica.has(message_id))


def save(node: Node, message_id: bytes, out: Path) -> Path:
    return node.facade.save_attachment(message_id, 0, out).result(TIMEOUT_S)


def list_id(node: Node, message_id: bytes) -> bytes:
    return node_call(node, lambda: node.workspace.files.ref(message_id, 0).list)


def stored_chunks(node: Node) -> list[bytes]:
    return node_call(node, lambda: list(node.workspace.files.chunks.ids()))


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
            return [e.progress for e in self.seen
                    if isinstance(e, FileProgressed) and e.progress.list == lst]


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
    wait_until(lambda: node_call(b, lambda: b.workspace.files.complete(list_id(a, mid))),
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
        if (isinstance(event, FileProgressed) and event.progress.have > 0
                and not cut.is_set()):
            cut.set()
            node_service(b).block({a.key})

    b.subscribe(kill_a_after_some)
    fetching = b.download(mid, 0)
    wait_until(cut.is_set, what="some of the file to arrive from a")
    a.stop()
    before = len(stored_chunks(b))
    assert not fetching.done()
    total = 40 * MB // (256 * 1024) + 1  # the chunks and the list
    assert 0 < before < total

    node_add_peer(c, "127.0.0.1", b.port)
    fetching.result(TIMEOUT_S)

    assert sha256(save(b, mid, tmp_path / "out")) == digest
    sent_by_c = node_call(c, lambda: sum(conn.session.files.chunks_sent for conn in
                                         node_service(c).connections.values()))
    assert sent_by_c <= total - before  # what b had was never asked again
    assert node_call(b, lambda: b.workspace.files.complete(lst))


class _Liar:
    """A chunk source that holds every chunk, all of them wrong: bytes of another length, or
    (given an honest store) the right chunk with one bit flipped, so only its hash tells."""

    def __init__(self, honest: ChunkStore | None = None):
        self.honest = honest

    def read(self, cid: bytes) -> bytes | None:
        if self.honest is None:
            return b"not the chunk you asked for" * 100
        data = self.honest.read(cid)
        return None if data is None else data[:-1] + bytes([data[-1] ^ 1])


async def _serve_bad_chunks(port: int, secret: bytes, workspace: bytes, ready: threading.Event,
                            liar: Identity, source: _Liar) -> RawPeer:
    async with aiohttp.ClientSession() as http:
        peer = await RawPeer.connect(http, port, secret=secret, workspace=workspace,
                                     identity=liar)
        peer.session.files.chunks = source  # announces `files` and answers every get
        await peer.pump(lambda: FILES in peer.session.peer_caps)
        ready.set()
        await peer.pump(lambda: peer.session.closed, timeout=TIMEOUT_S)
        return peer


@pytest.mark.parametrize("flipped", [False, True], ids=["wrong-length", "one-bit-flipped"])
def test_a_peer_sending_a_bad_chunk_is_cut_off_and_the_file_comes_from_another(cluster,
                                                                               tmp_path,
                                                                               flipped):
    pa, pb = cluster.members(2)
    no_auto_download(pa, pb)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    events = Events(b)
    path, digest = write_file(tmp_path, "doc.pdf", 12 * MB)  # more than one window
    mid = attach(a, path)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")

    liar, ready, result = admitted(b), threading.Event(), {}
    honest = ChunkStore(node_call(a, lambda: a.workspace.files.chunks.folder))
    source = _Liar(honest if flipped else None)

    def run() -> None:
        result["peer"] = asyncio.run(_serve_bad_chunks(
            b.port, pb.secret.read_bytes(), b.workspace_id, ready, liar, source))

    thread = threading.Thread(target=run)
    thread.start()
    assert ready.wait(TIMEOUT_S)
    wait_until(lambda: liar.public_key in node_online(b), what="the liar to be connected")
    b.download(mid, 0).result(TIMEOUT_S)
    thread.join(TIMEOUT_S)

    assert isinstance(result["peer"].closed_event, Closed)  # b hung up on it
    ended = [e for e in events.seen
             if isinstance(e, PeerDisconnected) and e.peer == liar.public_key]
    assert ended and ended[0].fault and "does not hash" in ended[0].reason
    assert ended[0].refused_s > 0  # cut off: its identity is refused for a while
    assert sha256(save(b, mid, tmp_path / "out")) == digest
    for cid in stored_chunks(b):  # nothing the liar sent was kept
        assert chunk_id(node_call(b, lambda c=cid: b.workspace.files.chunks.read(c))) == cid


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
    posted = [a.facade.run(lambda ws, n=n: ws.post(CHANNEL, f"chat {n} during the transfer").id)
              for n in range(5)]
    ids = {f.result(TIMEOUT_S) for f in posted}
    fetching.result(TIMEOUT_S)

    with events.lock:
        order = list(events.seen)
    done_at = next(i for i, e in enumerate(order) if isinstance(e, FileProgressed)
                   and e.progress.list == lst and e.progress.done)
    arrived_at = {oid: i for i, e in enumerate(order) if isinstance(e, ObjectsStored)
                  for oid in e.ids}
    assert ids <= set(arrived_at)
    assert max(arrived_at[oid] for oid in ids) < done_at  # chat did not wait for the file


def test_a_file_arrives_while_objects_sent_before_its_chunks_wait_to_be_stored(
        cluster, tmp_path, monkeypatch):
    """Chunks wait for no object. b's writer is held (a slow disk, a big catch-up) with a post
    from a in it; the file's chunks, sent after that post on the same session, still reach the
    fetcher at once, and the download ends. They once waited behind the objects: the session
    counted them answered, the fetcher asked for more, and under load a node receiving from
    three seeders held 450 MB of them."""
    a, b, _, mid, digest = two_with_a_file(cluster, tmp_path, 6 * MB)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")
    replica = node_service(b).replica
    writing, release = threading.Event(), threading.Event()
    ingest = replica.ingest_checked

    def held(*args, **kwargs):
        writing.set()
        release.wait(2 * TIMEOUT_S)
        return ingest(*args, **kwargs)

    monkeypatch.setattr(replica, "ingest_checked", held)
    try:
        post = node_call(a, lambda: a.workspace.post(CHANNEL, "sent before the chunks").id)
        wait_until(writing.is_set, what="b's writer to take a's post")
        b.download(mid, 0).result(TIMEOUT_S)
        assert not has_message(b, post)  # the writer was held all along
        assert sha256(save(b, mid, tmp_path / "out.bin")) == digest
    finally:
        release.set()
    wait_until(lambda: has_message(b, post), what="the post, once the writer is free")


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
    node_call(a, lambda: a.workspace.files.chunks.remove(list(a.workspace.files.chunks.ids())))

    with pytest.raises(NodeError, match="no connected peer has all of this file"):
        b.download(mid, 0).result(TIMEOUT_S)
    assert a.key in node_online(b)  # lacking a chunk is no fault

    a.stop()
    wait_until(lambda: a.key not in node_online(b), what="a to go away")
    with pytest.raises(NodeError, match="no peer that has it is connected"):
        b.download(mid, 0).result(TIMEOUT_S)


class _Holder:
    """A chunk source with nothing in it (this peer only asks)."""

    def read(self, cid: bytes) -> None:
        return None


async def _ask_and_never_read(port: int, secret: bytes, workspace: bytes, ids: list[bytes],
                              asked: threading.Event, done: threading.Event,
                              identity: Identity) -> None:
    async with aiohttp.ClientSession() as http:
        peer = await RawPeer.connect(http, port, secret=secret, workspace=workspace,
                                     identity=identity)
        peer.session.files.chunks = _Holder()
        await peer.pump(lambda: FILES in peer.session.peer_caps)
        peer.session.files.request_chunks(ids, 0.0)
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
    ids = node_call(a, lambda: a.workspace.files.chunk_ids(lst))
    asked, done = threading.Event(), threading.Event()
    asker = admitted(a)
    thread = threading.Thread(target=lambda: asyncio.run(_ask_and_never_read(
        a.port, pa.secret.read_bytes(), a.workspace_id, ids[:1024], asked, done, asker)))
    thread.start()
    try:
        assert asked.wait(TIMEOUT_S)
        wait_until(lambda: not node_online(a), what="a to hang up on the peer that never reads")
    finally:
        done.set()
        thread.join(TIMEOUT_S)
    assert node_call(a, lambda: len(node_service(a).connections)) == 0


# Defects found in review: fetches that share chunks or a list, failures that must end a fetch.

def forge(node: Node, message_id: bytes, size: int, first: int | None = None) -> bytes:
    """Post, as `node`, a message naming file 0 of `message_id` with another size and, with
    `first`, a list of only its first chunks (a list made and stored there)."""
    def run() -> bytes:
        ws = node.workspace
        d = dict(ws.replica.object(message_id).body["files"][0], size=size)
        if first is not None:
            listing = encode_list(ws.files.chunk_ids(d["list"])[:first])
            d["list"] = chunk_id(listing)
            ws.files.chunks.put(d["list"], listing)
        channel, stream = ws.channel_stream(CHANNEL)
        return ws.publish("post/file", stream, {"channel": channel, "text": "",
                                                "files": [d]}).id
    return node_call(node, run)


def copy_chunks(src: Node, dst: Node, ids: list[bytes]) -> None:
    data = node_call(src, lambda: [src.workspace.files.chunks.read(c) for c in ids])
    node_call(dst, lambda: [dst.workspace.files.chunks.put(c, d) for c, d in zip(ids, data, strict=True)])


def cut_off(b: Node, a: Node) -> None:
    node_call(b, lambda: node_service(b).block({a.key}))
    wait_until(lambda: a.key not in node_online(b), what="a to be cut off")


def reconnect(b: Node, a: Node) -> None:
    node_call(b, lambda: node_service(b).block(set()))


def two_with_a_file(cluster, tmp_path, size: int, *, quota_mb: int | None = None):
    pa, pb = cluster.members(2)
    no_auto_download(pa, pb)
    if quota_mb is not None:
        preferences.save(pb.data, storage_quota_mb=quota_mb)
    a = cluster.start(pa)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    path, digest = write_file(tmp_path, "real.bin", size)
    return a, b, pb, attach(a, path), digest


def test_two_files_whose_lists_share_chunks_both_arrive(cluster, tmp_path):
    a, b, _, mid, digest = two_with_a_file(cluster, tmp_path, 3 * CHUNK_SIZE + 10)
    part = forge(a, mid, 2 * CHUNK_SIZE, first=2)  # its chunks are the first two of mid's
    wait_until(lambda: has_message(b, mid) and has_message(b, part), what="both messages")
    cut_off(b, a)
    lists = [list_id(b, mid), list_id(b, part)]
    copy_chunks(a, b, lists)  # both fetches know their chunks before any is asked
    events = Events(b)
    whole, first_two = b.download(mid, 0), b.download(part, 0)
    wait_until(lambda: all(events.progress(lst) for lst in lists), what="both fetches to start")
    reconnect(b, a)

    whole.result(TIMEOUT_S)
    first_two.result(TIMEOUT_S)
    assert sha256(save(b, mid, tmp_path / "out")) == digest


def test_a_list_with_a_lying_size_fails_and_does_not_capture_the_honest_download(
        cluster, tmp_path):
    a, b, _, mid, digest = two_with_a_file(cluster, tmp_path, 3 * CHUNK_SIZE + 10)
    lying = forge(a, mid, 3 * CHUNK_SIZE + 100)  # same list, a last chunk 90 bytes longer
    wait_until(lambda: has_message(b, mid) and has_message(b, lying), what="both messages")
    lst = list_id(a, mid)
    last = node_call(a, lambda: a.workspace.files.chunk_ids(lst)[-1])

    with pytest.raises(NodeError, match="the file's chunk list does not match its size"):
        b.download(lying, 0).result(TIMEOUT_S)
    assert last not in stored_chunks(b)

    cut_off(b, a)  # both asked at once: the lying one first
    events = Events(b)
    lied, honest = b.download(lying, 0), b.download(mid, 0)
    wait_until(lambda: len(events.progress(lst)) >= 2, what="both fetches to start")
    reconnect(b, a)
    honest.result(TIMEOUT_S)
    with pytest.raises(NodeError, match="does not match its size"):
        lied.result(TIMEOUT_S)
    assert sha256(save(b, mid, tmp_path / "out")) == digest


def test_a_download_fails_with_the_reason_when_recording_it_fails(cluster, tmp_path):
    a, b, _, mid, _ = two_with_a_file(cluster, tmp_path, CHUNK_SIZE + 10)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")
    ws = b.workspace
    recorded = ws.files.complete

    def full_disk(*args, **kwargs) -> bool:
        if recorded(*args, **kwargs):
            raise sqlite3.OperationalError("database or disk is full")
        return False

    node_call(b, lambda: setattr(ws.files, "complete", full_disk))
    with pytest.raises(NodeError, match="database or disk is full"):
        b.download(mid, 0).result(TIMEOUT_S)


def test_a_full_disk_fails_the_download_with_the_reason_and_keeps_what_was_stored(
        cluster, tmp_path, monkeypatch):
    a, b, _, mid, digest = two_with_a_file(cluster, tmp_path, 6 * CHUNK_SIZE + 10)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")
    real, written = os.pwritev, []

    def fills_up(fd, buffers, offset):  # the receiver's disk: full after three chunks
        if len(written) >= 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        written.append(fd)
        return real(fd, buffers, offset)

    monkeypatch.setattr(os, "pwritev", fills_up)
    with pytest.raises(NodeError, match="cannot store the file here: No space left on device"):
        b.download(mid, 0).result(TIMEOUT_S)
    store = node_call(b, lambda: b.workspace.files.chunks)
    assert len(list(store.ids())) == 3  # the list chunk and two others, whole
    monkeypatch.undo()

    b.download(mid, 0).result(TIMEOUT_S)
    assert sha256(save(b, mid, tmp_path / "out")) == digest


def test_a_file_being_fetched_is_not_evicted_when_another_completes(cluster, tmp_path):
    a, b, pb, mid, digest = two_with_a_file(cluster, tmp_path, 8 * MB, quota_mb=1)
    small, _ = write_file(tmp_path, "small.bin", 300_000)
    other = attach(a, small)
    wait_until(lambda: has_message(b, mid) and has_message(b, other), what="the messages")
    big, little = list_id(a, mid), list_id(a, other)
    ids = node_call(a, lambda: a.workspace.files.chunk_ids(big))
    little_ids = node_call(a, lambda: [little, *a.workspace.files.chunk_ids(little)])
    cut_off(b, a)
    copy_chunks(a, b, [big, *ids[:16]])  # half the big file (4 MiB): more than the quota
    copy_chunks(a, b, little_ids)  # the small one whole
    events = Events(b)
    fetching = b.download(mid, 0)
    wait_until(lambda: events.progress(big), what="the big file's fetch to start")

    b.download(other, 0).result(TIMEOUT_S)  # complete here: the quota is enforced

    assert set(ids[:16]) <= set(stored_chunks(b))
    reconnect(b, a)
    fetching.result(TIMEOUT_S)
    assert sha256(save(b, mid, tmp_path / "out")) == digest


def test_a_download_request_that_fails_is_answered_and_the_next_is_taken(cluster, tmp_path):
    a, b, pb, mid, _ = two_with_a_file(cluster, tmp_path, CHUNK_SIZE + 10)
    wait_until(lambda: has_message(b, mid), what="the message to arrive")
    ws = b.workspace

    def locked(*args, **kwargs):
        raise sqlite3.OperationalError("database is locked")

    node_call(b, lambda: setattr(ws.files, "ref", locked))
    status = request_download(pb, mid, 0)
    wait_until(lambda: (download_status(status) or {}).get("error"),
               what="the failed request to be answered")
    assert "database is locked" in download_status(status)["error"]
    node_call(b, lambda: delattr(ws.files, "ref"))

    status = request_download(pb, mid, 0)
    wait_until(lambda: (download_status(status) or {}).get("done"),
               what="the next request to be answered")
    b.stop()  # the loop still runs to its end: the sessions are closed
    wait_until(lambda: b.key not in node_online(a), what="b to say goodbye")
