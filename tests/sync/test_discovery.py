"""mDNS discovery through real zeroconf on the loopback interface (docs/ARCHITECTURE.md "Sync").

Nodes are given no peer address at all: they find each other by their `_hearth._tcp.local.`
adverts on 127.0.0.1, recognise members by the membership tag, and ignore everyone else.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from tests.support import node_online, node_peers, node_post

from .nodes import (
    CHANNEL,
    LOCAL,
    Cluster,
    create_workspace,
    texts,
    wait_converged,
    wait_online,
    wait_until,
)


def _discovered(records: list[dict], port: int) -> bool:
    return any(r["host"] == LOCAL and r["port"] == port and r["source"] == "mdns"
               for r in records)


def test_members_find_each_other_on_loopback_and_converge(cluster: Cluster):
    pa, pb = cluster.members(2)
    a = cluster.start(pa, mdns=True)
    node_post(a, CHANNEL, "before b was around")
    b = cluster.start(pb, mdns=True)

    wait_online(a, b)
    assert _discovered(node_peers(a), b.port) or _discovered(node_peers(b), a.port)
    node_post(b, CHANNEL, "found you")
    wait_until(lambda: "found you" in texts(a), what="b's post to reach a")
    wait_converged([a, b])
    assert "before b was around" in texts(b)


def test_node_of_another_workspace_is_ignored(cluster: Cluster, tmp_path: Path,
                                              caplog: pytest.LogCaptureFixture):
    caplog.set_level(logging.DEBUG, logger="sync.discovery")
    pa, pb = cluster.members(2)
    stranger_paths = create_workspace(tmp_path, "stranger", "mallory")
    stranger = cluster.start(stranger_paths, mdns=True)
    a = cluster.start(pa, mdns=True)
    b = cluster.start(pb, mdns=True)

    wait_online(a, b)
    # Every node has seen at least one advert it did not recognise: the stranger's (by a and
    # b) and the members' (by the stranger).
    wait_until(lambda: sum("of another workspace" in r.getMessage()
                           for r in caplog.records) >= 3,
               what="the adverts of the other workspace to be seen and ignored")
    node_post(a, CHANNEL, "members only")
    wait_until(lambda: "members only" in texts(b), what="a's post to reach b")
    wait_converged([a, b])

    for member in (a, b):
        assert stranger.key not in node_online(member)
        assert all(r["port"] != stranger.port for r in node_peers(member))
    assert node_online(stranger) == set()
    assert all(r["port"] not in (a.port, b.port) for r in node_peers(stranger))
    assert "members only" not in texts(stranger)


