"""Shared helpers of the multi-node sync tests: member replicas on disk, running Nodes, waits.

A `Cluster` makes the replicas of one workspace the way people do (the first with
`Workspace.init`, the others by `sharing.join_workspace` with its invite code), runs each as a
real `Node` on 127.0.0.1 (real sockets, no mDNS unless asked), and stops every Node it started
when the test ends. Waits poll with a deadline; nothing here sleeps a fixed time to let sync
"happen".
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import aiohttp

from app import sharing
from app.node import Node
from app.paths import Paths
from app.workspace import Workspace
from core.identity import Identity
from storage import Replica
from sync import connection as conn_mod
from sync.session import Closed, Session
from sync.store import MemoryStore

LOCAL = "127.0.0.1"
CHANNEL = "general"
TIMEOUT_S = 30.0  # generous: a loaded 2-core machine; latency is for the benchmarks
POLL_S = 0.05
NICKS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]

T = TypeVar("T")


def wait_until(predicate: Callable[[], T], *, timeout: float = TIMEOUT_S,
               what: str = "the condition") -> T:
    """Poll `predicate` every 50 ms until it returns something truthy; fail after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(POLL_S)


# Replicas ------------------------------------------------------------------------------------

def create_workspace(root: Path, name: str = "a", nick: str = "alice") -> Paths:
    paths = Paths.resolve(root / name, "default")
    Workspace.init(paths, nick).close()
    return paths


def join_member(root: Path, code: str, name: str, nick: str) -> Paths:
    paths = Paths.resolve(root / name, "default")
    sharing.join_workspace(paths, code, nick=nick)
    return paths


def make_members(root: Path, count: int) -> list[Paths]:
    """`count` replicas of one new workspace: the creator's, then `count - 1` joined ones."""
    first = create_workspace(root, "m0", NICKS[0])
    code = sharing.invite(first).encode()
    return [first] + [join_member(root, code, f"m{n}", NICKS[n % len(NICKS)])
                      for n in range(1, count)]


def replica_digest(paths: Paths) -> str:
    """The digest of a replica read through a connection of its own (no Node needed)."""
    with Replica(paths.replica) as replica:
        return replica.digest()


# Nodes ---------------------------------------------------------------------------------------

def digest(node: Node) -> str:
    return node.call(lambda: node.workspace.replica.digest())


def texts(node: Node, channel: str = CHANNEL) -> list[str]:
    return [m.text for m in node.read(channel, limit=10_000)]


def has_object(node: Node, oid: bytes) -> bool:
    return node.call(lambda: node.workspace.replica.has(oid))


def converged(nodes: list[Node]) -> bool:
    return len({digest(node) for node in nodes}) == 1


def wait_converged(nodes: list[Node], *, timeout: float = TIMEOUT_S) -> str:
    """Wait until every node's replica has the same digest; returns it."""
    wait_until(lambda: converged(nodes), timeout=timeout,
               what=f"{len(nodes)} replicas to converge")
    return digest(nodes[0])


def wait_online(a: Node, b: Node, *, timeout: float = TIMEOUT_S) -> None:
    """Wait until a and b each hold an open session with the other."""
    wait_until(lambda: b.key in a.online() and a.key in b.online(), timeout=timeout,
               what="the two nodes to be connected")


class Cluster:
    """The Nodes of one test; `close()` stops every one still running (in parallel)."""

    def __init__(self, root: Path):
        self.root = root
        self.nodes: list[Node] = []

    def members(self, count: int) -> list[Paths]:
        return make_members(self.root, count)

    def start(self, paths: Paths, *, peers: Iterable[Node | tuple[str, int]] = (),
              reconcile_interval: float | None = None, mdns: bool = False,
              interfaces: list[str] | None = None) -> Node:
        addresses = [(LOCAL, p.port) if isinstance(p, Node) else p for p in peers]
        node = Node(paths, port=0, interfaces=interfaces or [LOCAL], mdns=mdns,
                    peers=addresses, reconcile_interval=reconcile_interval)
        node.start()
        self.nodes.append(node)
        return node

    def chain(self, paths: list[Paths], **kwargs) -> list[Node]:
        """Node k dials node k-1 only."""
        nodes: list[Node] = []
        for p in paths:
            nodes.append(self.start(p, peers=nodes[-1:], **kwargs))
        return nodes

    def star(self, paths: list[Paths], **kwargs) -> list[Node]:
        """Every node dials the first one."""
        hub = self.start(paths[0], **kwargs)
        return [hub] + [self.start(p, peers=[hub], **kwargs) for p in paths[1:]]

    def mesh(self, paths: list[Paths], **kwargs) -> list[Node]:
        """Node k dials every node before it: each pair is linked once."""
        nodes: list[Node] = []
        for p in paths:
            nodes.append(self.start(p, peers=list(nodes), **kwargs))
        return nodes

    def close(self) -> None:
        running, self.nodes = self.nodes, []
        if running:
            with ThreadPoolExecutor(len(running)) as pool:
                list(pool.map(lambda node: node.stop(), running))

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def post_concurrently(nodes: list[Node], per_node: int, prefix: str = "msg") -> list[str]:
    """Every node posts `per_node` messages at the same time; returns the texts posted."""
    def work(n: int) -> list[str]:
        posted = []
        for k in range(per_node):
            text = f"{prefix} {n}.{k}"
            nodes[n].post(CHANNEL, text)
            posted.append(text)
        return posted

    with ThreadPoolExecutor(len(nodes)) as pool:
        return [text for batch in pool.map(work, range(len(nodes))) for text in batch]


# A test-controlled peer ----------------------------------------------------------------------

class RawPeer:
    """A sync peer driven by the test: a real `Session` (given secret, identity and workspace
    id) over an aiohttp WebSocket to a Node, so a test can send what no Node would send."""

    def __init__(self, session: Session, ws: aiohttp.ClientWebSocketResponse):
        self.session = session
        self.ws = ws
        self.events: list = []

    @classmethod
    async def connect(cls, http: aiohttp.ClientSession, port: int, *, secret: bytes,
                      workspace: bytes, identity: Identity | None = None,
                      store: MemoryStore | None = None) -> RawPeer:
        ws = await conn_mod.connect(http, LOCAL, port)
        session = Session(store or MemoryStore(), initiator=True, secret=secret,
                          identity=identity or Identity.generate(), workspace=workspace,
                          now=time.monotonic(), reconcile_interval=None)
        return cls(session, ws)

    async def send(self, data: bytes) -> None:
        """Send one message; a node that already hung up ends the session."""
        try:
            await self.ws.send_bytes(data)
        except (ConnectionError, aiohttp.ClientError) as exc:
            self.session.connection_lost(f"send failed: {exc!r}")
            self._drain()

    async def flush(self) -> None:
        for data in self.session.data_to_send():
            await self.send(data)

    def _drain(self) -> None:
        while (event := self.session.next_event()) is not None:
            self.events.append(event)

    async def pump(self, until: Callable[[], bool], *, timeout: float = TIMEOUT_S) -> None:
        """Exchange messages until `until()` holds or the socket closes."""
        deadline = time.monotonic() + timeout
        await self.flush()
        while not until():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("timed out driving the test peer")
            try:
                msg = await asyncio.wait_for(self.ws.receive(), remaining)
            except TimeoutError:
                continue
            if msg.type == aiohttp.WSMsgType.BINARY:
                self.session.receive(msg.data, time.monotonic())
            else:
                self.session.connection_lost(f"websocket {msg.type.name}")
            self._drain()
            if self.session.closed:
                return
            await self.flush()

    @property
    def closed_event(self) -> Closed | None:
        return next((e for e in self.events if isinstance(e, Closed)), None)
