"""Helpers of the multi-node sync tests: member replicas on disk, running Nodes, a raw peer.

The members, the `Cluster` of running Nodes and the waits are shared by every test folder and
live in tests/support.py; they are re-exported here under the names the sync tests (and others)
import from this module. What is only the sync tests' own is below: reading a Node or a replica,
posting from many Nodes at once, and a `RawPeer` a test drives byte by byte.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import aiohttp

from app.node import Node
from app.paths import Paths
from core.identity import Identity
from storage import Replica
from sync import connection as conn_mod
from sync.session import Closed, Session
from sync.store import MemoryStore
from tests.support import (
    CHANNEL,
    LOCAL,
    NICKS,
    POLL_S,
    TIMEOUT_S,
    Cluster,
    TwoNodes,
    converged,
    create_workspace,
    digest,
    join_member,
    make_members,
    node_call,
    node_post,
    node_read,
    start_two_nodes,
    two_members,
    wait_converged,
    wait_online,
    wait_until,
)

__all__ = [
    "CHANNEL", "LOCAL", "NICKS", "POLL_S", "TIMEOUT_S", "Cluster", "RawPeer", "TwoNodes",
    "admitted",
    "converged", "create_workspace", "digest", "has_object", "join_member", "make_members",
    "post_concurrently", "replica_digest", "start_two_nodes", "texts", "two_members",
    "wait_converged", "wait_online", "wait_until",
]


def replica_digest(paths: Paths) -> str:
    """The digest of a replica read through a connection of its own (no Node needed)."""
    with Replica(paths.replica) as replica:
        return replica.digest()


def texts(node: Node, channel: str = CHANNEL) -> list[str]:
    return [m.text for m in node_read(node, channel, limit=10_000)]


def admitted(node: Node) -> Identity:
    """A new identity that `node`'s member admits (with a personal code's admission): a test
    peer needs one to be served, since a node serves only keys its membership view lists."""
    identity = Identity.generate()
    node_call(node, lambda: node.workspace.members.invite_for(identity.public_key))
    return identity


def has_object(node: Node, oid: bytes) -> bool:
    return node_call(node, lambda: node.workspace.replica.has(oid))


def post_concurrently(nodes: list[Node], per_node: int, prefix: str = "msg") -> list[str]:
    """Every node posts `per_node` messages at the same time; returns the texts posted."""
    def work(n: int) -> list[str]:
        posted = []
        for k in range(per_node):
            text = f"{prefix} {n}.{k}"
            node_post(nodes[n], CHANNEL, text)
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
