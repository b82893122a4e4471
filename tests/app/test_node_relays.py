"""Running Nodes that share no network reach each other through a relay (app/node_relays.py,
sync/_relaying.py): a message, typing, who is online "via relay", delivery, and a file."""

from __future__ import annotations

import hashlib
import os
import threading
from pathlib import Path

import pytest

from app import relays
from app.events import MessagesArrived
from app.workspace import Workspace
from sync.events import PeerTyping
from tests.support import (
    Cluster,
    channels,
    create_workspace,
    node_post,
    node_read,
    two_members,
    wait_until,
)
from tests.sync.relaying import relay_process


def test_two_nodes_with_no_route_between_them_chat_and_share_a_file_through_a_relay(
        tmp_path: Path) -> None:
    pa, pb = two_members(tmp_path)
    with Workspace.open(pa) as a:
        channels(a, "general")
    with relay_process(tmp_path / "relay") as relay, Cluster(tmp_path) as cluster:
        with Workspace.open(pa) as a:
            relays.add_relay(a, f"127.0.0.1:{relay.port}", relay.key.hex())
        # B learns the relay from the code it joined with (no member online, no LAN peer).
        relays.remember_from_code(pb.workspace_dir, [relay.address])
        node_a, node_b = cluster.start(pa), cluster.start(pb)
        assert node_a.port != node_b.port  # two nodes, no peers given, no mDNS

        wait_until(lambda: node_b.key in node_a.reach().result(5).relayed
                   and node_a.key in node_b.reach().result(5).relayed,
                   what="each to hear the other through the relay")
        reach = node_a.reach().result(5)
        assert reach.lan == frozenset() and [s.connected for s in reach.relays] == [True]
        assert node_b.key in node_a.online().result(5)

        arrived = threading.Event()
        typing: list[PeerTyping] = []
        node_b.subscribe(lambda e: (arrived.set() if isinstance(e, MessagesArrived) else None,
                                    typing.append(e) if isinstance(e, PeerTyping) else None))
        node_a.typing("general")
        mid = node_post(node_a, "general", "hello from the office")
        wait_until(arrived.is_set, what="B to be told the message arrived")
        assert [m.id for m in node_read(node_b, "general")][-1] == mid
        wait_until(lambda: typing, what="B to see A typing")
        assert typing[0].key == node_a.key and typing[0].channel == "general"
        wait_until(lambda: mid not in node_a.pending(), what="A's message to count as delivered")
        # B learnt the relay from the workspace object by now, not only from the code.
        wait_until(lambda: node_b.run(lambda ws: relays.relays(ws.replica)).result(5),
                   what="B to learn the workspace's relay")

        source = tmp_path / "plan.bin"
        source.write_bytes(os.urandom(700_000))
        message = node_a.facade.attach("general", [source], "the plan").result(30)
        wait_until(lambda: any(m.id == message for m in node_read(node_b, "general")),
                   what="the file's message to reach B")
        node_b.facade.download(message, 0).result(60)
        saved = node_b.facade.save_attachment(message, 0, tmp_path / "saved").result(30)
        assert hashlib.sha256(saved.read_bytes()).digest() == \
            hashlib.sha256(source.read_bytes()).digest()


def test_a_newcomer_with_an_invite_joins_through_the_relay_while_a_member_is_connected(
        tmp_path: Path) -> None:
    """An invite's code names the relay; the newcomer, on no network of ours, knocks there,
    ada's node (connected to the relay) admits them, and they sync on as a member. With no
    member connected, or an invite used up, the knock gets a one-line reason and nothing is
    left behind."""
    from app import joining
    from app.paths import Paths
    from app.workspace import WorkspaceError

    pa = create_workspace(tmp_path, "ada", "ada")
    with Workspace.open(pa) as a:
        channels(a, "general")
        a.post("general", "welcome, whoever comes")
    with relay_process(tmp_path / "relay") as relay, Cluster(tmp_path) as cluster:
        with Workspace.open(pa) as a:
            relays.add_relay(a, f"127.0.0.1:{relay.port}", relay.key.hex())
            code, _ = a.members.invite(uses=1)
            spare, _ = a.members.invite(uses=1)
        early = Paths.resolve(tmp_path / "early", "default")
        with pytest.raises(WorkspaceError, match="does not know this workspace"):
            joining.join_workspace(early, code, nick="eve", mdns=False, timeout=10)
        assert not early.workspace_dir.exists()  # nothing half-joined
        node_a = cluster.start(pa)
        wait_until(lambda: any(s.connected for s in node_a.reach().result(5).relays),
                   what="ada's node to register the workspace with the relay")
        node_a.stop()
        with pytest.raises(WorkspaceError, match="no member is connected"):
            joining.join_workspace(early, code, nick="eve", mdns=False, timeout=10)
        assert not early.workspace_dir.exists()

        node_a = cluster.start(pa)
        wait_until(lambda: any(s.connected for s in node_a.reach().result(5).relays),
                   what="ada's node to reach the relay")
        pg = Paths.resolve(tmp_path / "grace", "default")
        joining.join_workspace(pg, code, nick="grace", mdns=False, timeout=30)
        node_g = cluster.start(pg)  # no LAN peer: the relay the code named
        wait_until(lambda: any(m.text == "welcome, whoever comes"
                               for m in node_read(node_g, "general")),
                   what="grace to read the channel through the relay")
        assert node_g.key in node_a.run(lambda ws: set(ws.members.view().members)).result(5)
        pz = Paths.resolve(tmp_path / "zed", "default")
        with pytest.raises(WorkspaceError, match="used up"):
            joining.join_workspace(pz, code, nick="zed", mdns=False, timeout=10)
        assert not pz.workspace_dir.exists()
        assert spare  # another invite stays usable


def test_a_removed_member_knocking_with_an_old_invite_is_refused_through_the_relay(
        tmp_path: Path) -> None:
    """bob joined with an invite, was removed, and knocks again with the same code from a new
    data folder holding his identity: ada's node refuses him, with the reason, and nothing is
    left behind."""
    import shutil

    from app import joining
    from app.paths import Paths
    from app.workspace import WorkspaceError

    pa = create_workspace(tmp_path, "ada", "ada")
    with relay_process(tmp_path / "relay") as relay, Cluster(tmp_path) as cluster:
        with Workspace.open(pa) as a:
            relays.add_relay(a, f"127.0.0.1:{relay.port}", relay.key.hex())
            code, _ = a.members.invite(uses=5)
        node_a = cluster.start(pa)
        wait_until(lambda: any(s.connected for s in node_a.reach().result(5).relays),
                   what="ada's node to reach the relay")
        pb = Paths.resolve(tmp_path / "bob", "default")
        joining.join_workspace(pb, code, nick="bob", mdns=False, timeout=30)
        bob = Workspace.open(pb)
        try:
            key = bob.key
        finally:
            bob.close()
        node_a.run(lambda ws: ws.members.remove(key, "left")).result(10)
        again = Paths.resolve(tmp_path / "bob-again", "default")
        again.data.mkdir(parents=True)
        shutil.copy(pb.identity, again.identity)
        with pytest.raises(WorkspaceError, match="you were removed"):
            joining.join_workspace(again, code, nick="bob", mdns=False, timeout=20)
        assert not again.workspace_dir.exists()
