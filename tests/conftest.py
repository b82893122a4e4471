"""Fixtures every test folder may use (the helpers behind them are in tests/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.support import Cluster, TwoNodes, start_two_nodes

# Tests that run on one pytest-xdist worker (`make test` runs with --dist loadgroup): the Spark
# session is started at most once in a run, and the standalone cluster beside it; the tests that
# advertise and browse by mDNS would see each other's Nodes on the loopback if run at once.
SPARK_FIXTURES = {"spark", "run_report"}
SPARK_MODULES = {"tests/analytics/test_standalone_cluster.py"}
MDNS_MODULES = {"tests/sync/test_discovery.py", "tests/sync/test_joining.py",
                "tests/sync/test_attacks_network.py"}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Groups for `--dist loadgroup`: the Spark tests in one, the mDNS tests in another; every
    other test goes to whichever worker is free (each worker has its own QApplication for the
    window tests; a module-scoped fixture may be built on each worker that runs the module).
    Grouping whole files instead kept a file's slowest tests on one worker (test_attacks.py's
    two 25,000-deletion cases, ~2 min each on a loaded machine, back to back)."""
    for item in items:
        module = item.nodeid.split("::")[0]
        if SPARK_FIXTURES & set(getattr(item, "fixturenames", ())) or module in SPARK_MODULES:
            item.add_marker(pytest.mark.xdist_group("spark"))
        elif module in MDNS_MODULES:
            item.add_marker(pytest.mark.xdist_group("mdns"))


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
