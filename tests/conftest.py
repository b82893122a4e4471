"""Fixtures every test folder may use (the helpers behind them are in tests/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.support import Cluster, TwoNodes, start_two_nodes

# Files whose tests share one pytest-xdist worker whenever tests run on several (`make test`): a
# Spark session is started at most once in a run (and the standalone cluster runs beside no other
# Spark test); the tests that advertise and browse by mDNS would see each other's Nodes on the
# loopback if they ran at once. Every other test goes to whichever worker is free (each worker
# has its own QApplication for the window tests).
SHARED_WORKER = {
    "tests/analytics/test_pipeline.py": "spark",
    "tests/analytics/test_report_counts.py": "spark",
    "tests/analytics/test_node_analytics.py": "spark",
    "tests/analytics/test_standalone_cluster.py": "spark",
    "tests/sync/test_discovery.py": "mdns",
    "tests/sync/test_joining.py": "mdns",
    "tests/sync/test_attacks_network.py": "mdns",
}


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """`-n N` (--dist load, the default, or loadgroup) with the groups above, read from the
    test's file. (xdist_group marks do not group under pytest 9.2: pytest-xdist 3.8 rewrites the
    node id to carry the group, which no longer takes effect, pytest-dev/pytest-xdist#1386.)"""
    if config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from xdist.scheduler import LoadGroupScheduling

    class FileGroups(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return SHARED_WORKER.get(nodeid.split("::")[0], nodeid)

    return FileGroups(config, log)


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Starts Nodes for the test (members in tmp_path); stops them all when it ends."""
    with Cluster(tmp_path) as c:
        yield c


@pytest.fixture
def two_members(tmp_path: Path) -> tuple:
    """(alice, bob): the Paths of two members of one new workspace, in tmp_path/alice and
    tmp_path/bob, alice its creator (and root admin), bob joined by her invite code."""
    return support.two_members(tmp_path)


@pytest.fixture
def two_nodes(cluster: Cluster, two_members: tuple) -> TwoNodes:
    """`two_members` running as Nodes on 127.0.0.1 (no mDNS, no periodic reconcile), bob's
    dialled alice's and both hold a session with the other. `.a`, `.b`, `.pa`, `.pb`."""
    return start_two_nodes(cluster, *two_members)
