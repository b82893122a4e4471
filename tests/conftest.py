"""Fixtures every test folder may use (the helpers behind them are in tests/support.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import support
from tests.support import Cluster, TwoNodes, start_two_nodes


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
