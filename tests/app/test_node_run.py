"""One surface: `Node.run` (and `NodeFacade.run`) runs any library call on the Node's thread,
and what the window's facade returns is what the library answers the CLI."""

from __future__ import annotations

import threading

import pytest

from app.channel_list import channel_list, named_channels
from app.errors import NodeStopped
from tests.support import CALL_TIMEOUT_S, Cluster, node_channels, node_post


def test_run_calls_the_library_on_the_nodes_thread(cluster: Cluster) -> None:
    (pa,) = cluster.members(1)
    node = cluster.start(pa)
    node_channels(node, "general", "random")
    node_post(node, "general", "hello")
    where = node.run(lambda ws: (threading.current_thread().name, ws.key)).result(CALL_TIMEOUT_S)
    assert where == ("hearth-node", node.key)
    # The window's channel list is the library's, as `hearth channels` names them.
    listed = node.facade.run(channel_list).result(CALL_TIMEOUT_S)
    assert listed == node.facade.run(channel_list).result(CALL_TIMEOUT_S)
    channels, names = node.run(named_channels).result(CALL_TIMEOUT_S)
    assert (listed.channels, listed.names) == (channels, names)
    assert [c.name for c in channels] == ["general", "random"]
    node.stop()
    with pytest.raises(NodeStopped):  # a failed future, never a raise
        node.run(lambda ws: ws.key).result(CALL_TIMEOUT_S)
