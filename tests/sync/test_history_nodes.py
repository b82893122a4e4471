"""Fetching history between two running Nodes on 127.0.0.1: what the "history" events say
(the numbers the window's bar and `hearth serve` show) against what really arrives, the
sync-status file `hearth status` reads, and a member that keeps one channel."""

from __future__ import annotations

import json

from analytics.recorder import Recorder
from app import keeping, sync_status
from app.events import HistoryProgressed
from app.node import Node
from app.workspace import Workspace
from core import kinds
from sync.store import ReplicaStore
from tests.support import channels as make_channels
from tests.support import node_call, node_read

from .nodes import LOCAL, Cluster, wait_until

PER_CHANNEL = 600


def _fill(paths, channels: tuple[str, ...]) -> None:
    with Workspace.open(paths) as ws:
        for channel in channels:
            make_channels(ws, channel)
            for n in range(PER_CHANNEL):
                ws.post(channel, f"{channel} {n}")


def _objects(node: Node) -> int:
    """Ids in the reconciled set (every object held: nothing is deleted or refused here)."""
    return node_call(node, lambda: sum(
        info.count for info in ReplicaStore(node.workspace.replica).streams().values()))


def _start(cluster: Cluster, paths, peer: Node, events: list[HistoryProgressed]) -> Node:
    node = Node(paths, port=0, interfaces=[LOCAL], mdns=False, peers=[(LOCAL, peer.port)],
                reconcile_interval=None)
    node.subscribe(lambda e: events.append(e) if isinstance(e, HistoryProgressed) else None)
    cluster.nodes.append(node)
    node.start()
    return node


def test_history_events_count_what_really_arrives(cluster: Cluster):
    pa, pb = cluster.members(2)
    _fill(pa, ("general", "random"))
    a = cluster.start(pa)
    events: list[HistoryProgressed] = []
    b = _start(cluster, pb, a, events)
    wait_until(lambda: events and events[-1].progress.done, what="history to arrive")
    held = _objects(b)
    assert held == _objects(a)
    progress = [e.progress for e in events]
    moving, final = progress[:-1], progress[-1]
    assert moving and not any(p.done for p in moving)
    assert final.here == final.total == held
    # The total is known from the start, from the summaries' counts (less the few objects
    # only b held, until negotiation finds them exact), and "here" only grows.
    assert all(held - 5 <= p.total <= held for p in moving), (held, progress)
    assert [p.here for p in progress] == sorted(p.here for p in progress)
    keys = {kinds.channel_key("general"), kinds.channel_key("random")}
    assert moving[0].channels and moving[0].channels <= keys
    assert b.history() is None
    assert sync_status.read(pb.workspace_dir) is None  # removed once it was over


def test_a_member_keeping_one_channel_fetches_only_it_until_it_keeps_another(
        cluster: Cluster):
    pa, pb = cluster.members(2)
    _fill(pa, ("general", "random"))
    with Workspace.open(pb) as ws:  # b knows both channels, and keeps one
        ws.join("general")
        make_channels(ws, "random")  # b's computer holds nothing of it yet: made, so joined
        keeping.keep_only(ws, ["general"])
    a = cluster.start(pa)
    events: list[HistoryProgressed] = []
    b = _start(cluster, pb, a, events)
    wait_until(lambda: len(node_read(b, "general", limit=1000)) >= PER_CHANNEL,
               what="general's history")
    wait_until(lambda: events and events[-1].progress.done, what="the round's end")
    assert [m for m in node_read(b, "random", limit=1000) if m.text.startswith("random ")] == []
    b.facade.keep(["random"]).result(timeout=10)
    wait_until(lambda: len([m for m in node_read(b, "random", limit=1000)
                            if m.text.startswith("random ")]) == PER_CHANNEL,
               what="random's history after keeping it")


def _events(node: Node, kind: str) -> list[dict]:
    taken = node.recorder.take_batch(10_000)
    lines = [json.loads(line) for line in (taken[1] if taken else [])]
    return [{k: v for k, v in e.items() if k not in ("ts", "pid")}
            for e in lines if e["event"] == kind]


def test_analytics_count_one_fetch_and_each_change_of_what_is_kept(cluster: Cluster):
    pa, pb = cluster.members(2)
    _fill(pa, ("general",))
    with Workspace.open(pb) as ws:
        ws.join("general")
    Recorder(pb.data).enable()
    a = cluster.start(pa)
    events: list[HistoryProgressed] = []
    b = _start(cluster, pb, a, events)
    wait_until(lambda: events and events[-1].progress.done, what="history to arrive")
    [fetched] = _events(b, "history_fetched")
    # 600 posts and a join arrived: the 100-999 bucket, in some bucket of seconds.
    assert fetched.keys() == {"event", "schema", "objects", "seconds", "kept_all"}
    assert (fetched["schema"], fetched["objects"], fetched["kept_all"]) == (6, 100, True)
    b.facade.keep_only(["general"]).result(timeout=10)
    b.facade.keep_all().result(timeout=10)
    b.facade.keep_all().result(timeout=10)  # no change: nothing counted
    assert _events(b, "channels_kept") == [
        {"event": "channels_kept", "schema": 6, "all": False, "channels": 1, "documents": 0},
        {"event": "channels_kept", "schema": 6, "all": True, "channels": 0, "documents": 0}]
