"""Five fully meshed Nodes under a random schedule of posts, partitions and heals.

A partition splits the nodes in two groups by making every node block the identities of the
other group (`SyncService.block`); a heal lifts every block. While split, a post reaches its
own group and nothing of it crosses; once everything is healed, all five replicas converge.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from app.node import Node
from tests.support import node_call, node_online, node_post, node_service

from .nodes import CHANNEL, Cluster, digest, has_object, texts, wait_converged, wait_until

SIZE = 5


class Net:
    """The five nodes, the current split, and every post made so far."""

    def __init__(self, nodes: list[Node]):
        self.nodes = nodes
        self.groups: list[set[int]] = [set(range(SIZE))]
        self.posted: list[str] = []
        self.counter = itertools.count()

    def group_of(self, n: int) -> set[int]:
        return next(g for g in self.groups if n in g)

    def _block(self, n: int, others: set[int]) -> None:
        node = self.nodes[n]
        keys = {self.nodes[k].key for k in others}
        node_call(node, lambda: node_service(node).block(keys))

    def partition(self, side: set[int]) -> None:
        other = set(range(SIZE)) - side
        for n in range(SIZE):
            self._block(n, other if n in side else side)
        self.groups = [side, other]
        for group in self.groups:
            for n in group:
                node = self.nodes[n]
                wait_until(lambda node=node, group=group: not (
                    node_online(node) - {self.nodes[k].key for k in group}),
                    what="the partition to close cross-group sessions")

    def heal(self) -> None:
        for n in range(SIZE):
            self._block(n, set())
        self.groups = [set(range(SIZE))]

    def post(self, n: int) -> None:
        text = f"post {next(self.counter)} from node {n}"
        oid = node_post(self.nodes[n], CHANNEL, text)
        self.posted.append(text)
        group = self.group_of(n)
        for k in group:
            wait_until(lambda k=k: has_object(self.nodes[k], oid),
                       what=f"node {k} to receive {text!r} within its group")
        for k in set(range(SIZE)) - group:
            assert not has_object(self.nodes[k], oid), f"{text!r} crossed the partition to {k}"


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory):
    root: Path = tmp_path_factory.mktemp("partitions")
    with Cluster(root) as cluster:
        nodes = cluster.mesh(cluster.members(SIZE), reconcile_interval=None)
        wait_converged(nodes)
        yield Net(nodes)


sides = st.sets(st.integers(0, SIZE - 1), min_size=1, max_size=SIZE - 1)
steps = st.lists(
    st.one_of(st.tuples(st.just("post"), st.integers(0, SIZE - 1)),
              st.tuples(st.just("partition"), sides),
              st.tuples(st.just("heal"), st.none())),
    min_size=4, max_size=12)


@settings(max_examples=5, deadline=None, database=None,
          phases=[Phase.explicit, Phase.generate],  # no shrinking: each step is real I/O
          suppress_health_check=[HealthCheck.too_slow])
@example([("partition", {0, 1}), ("post", 0), ("post", 3), ("post", 4), ("heal", None),
          ("partition", {2}), ("post", 2), ("post", 1)])
@given(schedule=steps)
def test_five_nodes_converge_after_any_schedule_of_partitions(net: Net, schedule):
    for action, arg in schedule:
        getattr(net, action)(*([] if arg is None else [arg]))
    net.heal()
    common = wait_converged(net.nodes)
    for node in net.nodes:
        assert digest(node) == common
        assert sorted(texts(node)) == sorted(net.posted)
