"""Scaffolding every test folder shares: one wait, one fake clock, and members with their Nodes.

- `wait_until` polls a predicate with a deadline (`TIMEOUT_S`, generous for a loaded 2-core
  machine: latency belongs in the benchmarks); nothing in the tests sleeps a fixed time to let
  something "happen".
- `FakeClock` is a clock only the test moves, for every injectable clock in the code: wall and
  monotonic clocks in seconds (storage, sync sessions, analytics), or `core.documents`'
  milliseconds counting up at each reading (`tick=1`).
- Members of one workspace are made the way people make them: the first with `Workspace.init`,
  the others by `sharing.join_workspace` with a personal code the first made for their key
  (`join`: no network needed; joining by an invite's code over a join session is tested in
  tests/sync/test_joining.py). A `Cluster` runs them as real
  `Node`s on 127.0.0.1 (real sockets, no mDNS unless asked) and stops every Node it started;
  `start_two_nodes` is the common case, two members connected (the `two_nodes` fixture of
  tests/conftest.py).

The app is imported only inside the helpers that need it, so tests that only want a wait or a
clock (tests/core, tests/storage) do not load the sync stack.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from concurrent.futures import Future

    from app.node import Node
    from app.paths import Paths
    from app.records import Message
    from app.workspace import Workspace
    from sync.service import SyncService

TIMEOUT_S = 30.0  # how long any wait of the tests may take: generous, a loaded 2-core machine
CALL_TIMEOUT_S = 60.0  # how long a call on a Node's thread may take (node_call and the others)
POLL_S = 0.05
LOCAL = "127.0.0.1"
CHANNEL = "general"
NICKS = ["alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi"]

T = TypeVar("T")


# Waiting -------------------------------------------------------------------------------------

def wait_until(predicate: Callable[[], T], *, what: str = "the condition",
               timeout: float = TIMEOUT_S, poll: float = POLL_S,
               detail: Callable[[], str] | None = None) -> T:
    """Poll `predicate` every `poll` seconds until it returns something truthy, and return that;
    after `timeout` seconds fail with an AssertionError naming `what` (and `detail()`, when
    given: the logs of a process that did not come up, say)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            message = f"timed out after {timeout:.0f} s waiting for {what}"
            raise AssertionError(f"{message}\n{detail()}" if detail else message)
        time.sleep(poll)


# A clock the test moves ------------------------------------------------------------------------

class FakeClock:
    """An injectable clock that only moves when the test moves it.

    `clock()` reads it and `clock.now` is its reading, in the unit of the clock it stands in
    for (seconds for time.time and time.monotonic, milliseconds for core.documents). With
    `tick`, every reading first moves it on by `tick` (a counting clock: each reading is new).
    """

    def __init__(self, now: float = 0, *, tick: float = 0):
        self.now = now
        self.tick = tick

    def __call__(self) -> float:
        if self.tick:
            self.now += self.tick
        return self.now

    def advance(self, amount: float) -> float:
        self.now += amount
        return self.now

    # For a clock in seconds read by code that works in milliseconds (storage.Replica).

    def set_ms(self, ms: int) -> None:
        self.now = ms / 1000

    def advance_ms(self, ms: int) -> None:
        self.now += ms / 1000

    def __repr__(self) -> str:
        return f"FakeClock({self.now!r}, tick={self.tick!r})"


# Members of one workspace ----------------------------------------------------------------------

def create_workspace(root: Path, name: str = "a", nick: str = "alice") -> Paths:
    """A new workspace in the data folder `root / name`, created by `nick`."""
    from app.paths import Paths
    from app.workspace import Workspace

    paths = Paths.resolve(root / name, "default")
    Workspace.init(paths, nick).close()
    return paths


def join_member(root: Path, inviter: Paths, name: str, nick: str) -> Paths:
    """The data folder `root / name` joins the workspace of `inviter` as `nick`."""
    from app.paths import Paths

    paths = Paths.resolve(root / name, "default")
    join(inviter, paths, nick=nick)
    return paths


def join(inviter: Paths, paths: Paths, *, nick: str | None = None) -> bytes:
    """`paths` joins the workspace of `inviter` with a personal code the inviter made for its
    identity key (made now if the data folder has none): no network needed."""
    from app import joining, sharing

    code = sharing.invite_for(inviter, joining.identity_key(paths))
    return sharing.join_workspace(paths, code, nick=nick)


def make_members(root: Path, count: int, *, nicks: Sequence[str] = NICKS,
                 names: Sequence[str] | None = None) -> list[Paths]:
    """`count` replicas of one new workspace: the creator's, then `count - 1` joined ones.
    Folder k is `root / names[k]` (default `m{k}`) and its nickname `nicks[k % len(nicks)]`."""
    names = list(names) if names is not None else [f"m{n}" for n in range(count)]
    assert len(names) == count, names
    first = create_workspace(root, names[0], nicks[0])
    return [first] + [join_member(root, first, names[n], nicks[n % len(nicks)])
                      for n in range(1, count)]


def two_members(root: Path, nicks: Sequence[str] = ("alice", "bob"),
                names: Sequence[str] | None = None) -> tuple[Paths, Paths]:
    """Two members of one new workspace; their folders are named after their nicknames."""
    first, second = make_members(root, 2, nicks=nicks,
                                 names=list(names) if names is not None else list(nicks))
    return first, second


def channels(ws, *names: str) -> None:
    """Make each of `names` that `ws` does not know yet, as a person does before posting in
    a new channel: posting, a topic or a join never makes one (Workspace.create_channel).
    Confirmed public: a test's channels are nobody's private channel, even on a member's
    computer that has not synced yet (tests/app/test_no_implicit_channels.py tests the ask)."""
    for name in names:
        if ws.known_channel(name) is None:
            ws.create_channel(name, public=True)


def node_channels(node, *names: str) -> None:
    """`channels` on a running Node's workspace, on its thread (the objects go its one path:
    pushed to peers, shown in windows)."""
    node.run(lambda ws: channels(ws, *names)).result(CALL_TIMEOUT_S)


@contextlib.contextmanager
def members_in_step(root: Path, nicks: Sequence[str]) -> Iterator[list[Workspace]]:
    """Open Workspaces of one new workspace in folders `root / nick`: the first creates it,
    the others join; each holds what all hold, as after a sync all round."""
    from app.workspace import Workspace

    folders = [create_workspace(root, nicks[0], nicks[0])]
    folders += [join_member(root, folders[0], nick, nick) for nick in nicks[1:]]
    spaces = [Workspace.open(p) for p in folders]
    try:
        share_all(spaces)
        yield spaces
    finally:
        for ws in spaces:
            ws.close()


def share_all(spaces: Sequence) -> None:
    """Every open Workspace of `spaces` is offered what each of the others holds."""
    for ws in spaces:
        share(ws, *[other for other in spaces if other is not ws])


def share(source, *targets) -> None:
    """What a sync (or a bundle) does between two open Workspaces: every object of `source`
    offered to each target's one ingest path."""
    raws = [row[0] for row in source.replica.conn.execute("SELECT raw FROM objects ORDER BY oid")]
    for target in targets:
        target.replica.ingest(raws)


# Running Nodes ---------------------------------------------------------------------------------
# A Node's work runs on its thread (Node.run); these wait for it. Inside `node_call`, a test may
# touch the Node's internals: `node.workspace`, and `node_service(node)` for the sync layer's.

def node_call(node: Node, fn: Callable[..., T], *args: object,
              timeout: float = CALL_TIMEOUT_S) -> T:
    """fn(*args) run on the Node's thread, waited for."""
    return node.run(lambda _: fn(*args)).result(timeout)


def node_submit(node: Node, fn: Callable[..., T], *args: object) -> Future[T]:
    """fn(*args) run on the Node's thread, not waited for (work started on several at once)."""
    return node.run(lambda _: fn(*args))


def node_service(node: Node) -> SyncService:
    """The Node's SyncService, for tests of the sync layer: touch it inside `node_call`."""
    assert node._service is not None, "the node has not started"
    return node._service


def node_post(node: Node, channel: str, text: str) -> bytes:
    return node.facade.run(lambda ws: ws.post(channel, text).id).result(CALL_TIMEOUT_S)


def node_read(node: Node, channel: str, *, limit: int = 50,
              before: str | None = None) -> list[Message]:
    return node.facade.run(
        lambda ws: ws.read(channel, limit=limit, before=before)).result(CALL_TIMEOUT_S)


def node_online(node: Node) -> set[bytes]:
    """Keys of the peers the Node has an open session with."""
    return node.online().result(CALL_TIMEOUT_S)


def node_peers(node: Node) -> list[dict]:
    return node.peers().result(CALL_TIMEOUT_S)


def node_add_peer(node: Node, host: str, port: int) -> None:
    node.add_peer(host, port).result(CALL_TIMEOUT_S)


def digest(node: Node) -> str:
    return node.run(lambda ws: ws.replica.digest()).result(CALL_TIMEOUT_S)


def converged(nodes: list[Node]) -> bool:
    return len({digest(node) for node in nodes}) == 1


def wait_converged(nodes: list[Node], *, timeout: float = TIMEOUT_S) -> str:
    """Wait until every node's replica has the same digest; returns it."""
    wait_until(lambda: converged(nodes), timeout=timeout,
               what=f"{len(nodes)} replicas to converge")
    return digest(nodes[0])


def wait_online(a: Node, b: Node, *, timeout: float = TIMEOUT_S) -> None:
    """Wait until a and b each hold an open session with the other."""
    wait_until(lambda: b.key in node_online(a) and a.key in node_online(b), timeout=timeout,
               what="the two nodes to be connected")


class Cluster:
    """The Nodes of one test; `close()` stops every one still running (in parallel)."""

    def __init__(self, root: Path):
        self.root = root
        self.nodes: list[Node] = []

    def members(self, count: int, **kwargs) -> list[Paths]:
        return make_members(self.root, count, **kwargs)

    def start(self, paths: Paths, *, peers: Iterable[Node | tuple[str, int]] = (),
              reconcile_interval: float | None = None, mdns: bool = False,
              interfaces: list[str] | None = None) -> Node:
        from app.node import Node

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


@dataclass
class TwoNodes:
    """Two members of one workspace, each a running Node on 127.0.0.1, connected: `b` dialled
    `a`. `pa` and `pb` are their Paths; `cluster` stops both at the end of the test."""

    a: Node
    b: Node
    pa: Paths
    pb: Paths
    cluster: Cluster

    def __iter__(self):  # a, b = two_nodes
        return iter((self.a, self.b))


def start_two_nodes(cluster: Cluster, pa: Paths, pb: Paths, **kwargs) -> TwoNodes:
    """Start `pa` and `pb` as Nodes (b dials a) and wait until each has a session with the
    other. `kwargs` go to `Cluster.start` (reconcile_interval, mdns, interfaces)."""
    a = cluster.start(pa, **kwargs)
    b = cluster.start(pb, peers=[a], **kwargs)
    wait_online(a, b)
    return TwoNodes(a, b, pa, pb, cluster)
