"""Members on two networks with no route between them, syncing through a relay in a third
namespace reachable from both (relay/, `hearth relay sync`).

Needs root and working `ip netns`; skipped otherwise (tests/sync/test_netns.py). The relay's
namespace holds 10.78.9.9 on its loopback and one veth to each member (10.78.1.0/24 and
10.78.2.0/24); it forwards nothing, so A and B reach the relay and never each other, and no
multicast crosses. Every namespace is deleted at the end.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from app import relays
from app.paths import Paths
from app.workspace import Workspace
from core.encoding import dumps, object_id
from core.objects import build
from core.relay_seal import EpochKeys
from tests.support import channels, two_members

from .relaying import relay_files_contain, relay_process
from .test_netns import _ip, _netns_unavailable

ROOT = Path(__file__).resolve().parents[2]
RELAY_IP = "10.78.9.9"
MARKER = "wombat-marker-91d0"

pytestmark = pytest.mark.slow


@pytest.fixture
def networks() -> Iterator[dict[str, str]]:
    reason = _netns_unavailable()
    if reason:
        pytest.skip(reason)
    pid = os.getpid()
    names = {"relay": f"hrelay-{pid}-r", "a": f"hrelay-{pid}-a", "b": f"hrelay-{pid}-b",
             "c": f"hrelay-{pid}-c"}
    try:
        for name in names.values():
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
        _ip("-n", names["relay"], "addr", "add", f"{RELAY_IP}/32", "dev", "lo")
        for side, net in (("a", 1), ("b", 2), ("c", 3)):
            here, there = f"hr{side}-r", f"hr{side}-m"
            _ip("-n", names["relay"], "link", "add", here, "type", "veth", "peer", "name",
                there, "netns", names[side])
            _ip("-n", names["relay"], "addr", "add", f"10.78.{net}.1/24", "dev", here)
            _ip("-n", names[side], "addr", "add", f"10.78.{net}.2/24", "dev", there)
            _ip("-n", names["relay"], "link", "set", here, "up")
            _ip("-n", names[side], "link", "set", there, "up")
            _ip("-n", names[side], "route", "add", f"{RELAY_IP}/32", "via", f"10.78.{net}.1")
        yield names
    finally:
        for name in names.values():
            _ip("netns", "del", name, check=False)


def hearth(namespace: str, data: Path, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    env["HEARTH_DATA"] = str(data.parent / "fallback")
    run = subprocess.run(["ip", "netns", "exec", namespace, sys.executable, "-m", "app", *args,
                          "--data", str(data)], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120, stdin=subprocess.DEVNULL)
    if ok:
        assert run.returncode == 0, f"hearth {args}: {run.stdout} {run.stderr}"
    return run


def test_members_with_no_route_between_them_sync_through_the_relay(
        tmp_path: Path, networks: dict[str, str]) -> None:
    pa, pb = two_members(tmp_path)
    unreachable = subprocess.run(["ip", "netns", "exec", networks["a"], "ping", "-c", "1", "-W",
                                  "1", "10.78.2.2"], capture_output=True, timeout=30)
    assert unreachable.returncode != 0  # A cannot reach B
    with relay_process(tmp_path / "relay", host="0.0.0.0",  # noqa: S104
                       prefix=["ip", "netns", "exec", networks["relay"]]) as relay:
        key = relay.key.hex()
        source = tmp_path / "plan.bin"
        source.write_bytes(os.urandom(600_000) + MARKER.encode())
        with Workspace.open(pa) as a, Workspace.open(pb) as b:
            channels(a, "general")
            public = a.post("general", f"open {MARKER}")
            private = a.private.post(a.private.create("inner", [b.key]),
                                     f"private {MARKER}")
            attached = a.files.attach("general", [source], "the plan")
        hearth(networks["a"], pa.data, "relay", "add", f"{RELAY_IP}:{relay.port}", key)
        out = hearth(networks["a"], pa.data, "relay", "sync").stdout
        assert "synced" in out, out
        # A is offline now: B, on the other network, gets it through the relay alone.
        out = hearth(networks["b"], pb.data, "relay", "sync", f"{RELAY_IP}:{relay.port}",
                     key).stdout
        assert "synced" in out, out
        with Workspace.open(pb) as b:
            assert b.replica.has(public.id) and b.replica.has(private.id)
            saved = b.files.save(attached.id, 0, tmp_path / "saved")
            assert hashlib.sha256(saved.read_bytes()).digest() == \
                hashlib.sha256(source.read_bytes()).digest()
            assert [r.hostport for r in relays.relays(b.replica)] == [
                f"{RELAY_IP}:{relay.port}"]
        assert relay_files_contain(relay.folder, MARKER.encode()) == []
        # A newcomer on a fourth network joins with a personal code; no member is online.
        pc = tmp_path / "c"
        key = hearth(networks["c"], pc, "identity", "show").stdout.split()[-1]
        with Workspace.open(pa) as a:
            code = a.members.invite_for(bytes.fromhex(key))
        hearth(networks["c"], pc, "join-workspace", code, "--nick", "carol")
        out = hearth(networks["c"], pc, "relay", "sync").stdout  # the code named the relay
        assert "synced" in out, out
        with Workspace.open(Paths(pc, "default")) as c:
            assert c.replica.has(public.id)
            assert any(m.text == f"open {MARKER}" for m in c.replica.messages("general"))
        # A removes B and rotates; A's next sync moves the relay's space to the new epoch.
        with Workspace.open(pa) as a, Workspace.open(pb) as b:
            a.members.remove(b.key, "moved on")
        hearth(networks["a"], pa.data, "relay", "sync")
        refused = hearth(networks["b"], pb.data, "relay", "sync", "--timeout", "10", ok=False)
        assert refused.returncode != 0 and "refused" in refused.stdout, refused.stdout
    assert relay_files_contain(tmp_path / "relay", MARKER.encode()) == []


def test_a_hostile_relay_on_its_own_network_cannot_make_members_diverge(
        tmp_path: Path, networks: dict[str, str]) -> None:
    """The relay in the third namespace drops every third envelope it hands out and replays
    old ones and an unsigned object sealed under the members' key: B, on the other network,
    takes nothing unsigned, and once its rounds are over holds everything A wrote."""
    pa, pb = two_members(tmp_path)
    with Workspace.open(pa) as a:
        channels(a, "general")
        sent = [a.post("general", f"through a liar {n}") for n in range(40)]
        keys = EpochKeys.derive(*a.members.newest_secret())
        forged = build(a.identity, "post/text", stream=sent[0].stream,
                       body={"channel": "general", "text": "forged"}, ts=sent[0].ts)
        at = forged.raw.index(b"\x63sig\x58\x40") + 6
        unsigned = forged.raw[:at] + bytes(64) + forged.raw[at + 64:]  # a signature of zeros
    extra = tmp_path / "extra.cbor"
    extra.write_bytes(dumps([list(keys.seal(unsigned, 0)),
                             list(keys.seal(sent[0].raw, sent[0].ts))]))
    with relay_process(tmp_path / "relay", host="0.0.0.0",  # noqa: S104
                       prefix=["ip", "netns", "exec", networks["relay"]],
                       hostile=extra) as relay:
        where = f"{RELAY_IP}:{relay.port}"
        hearth(networks["a"], pa.data, "relay", "add", where, relay.key.hex())
        hearth(networks["a"], pa.data, "relay", "sync")
        for _ in range(8):  # each round asks again for what the relay dropped
            hearth(networks["b"], pb.data, "relay", "sync", where, relay.key.hex())
            with Workspace.open(pb) as b:
                if all(b.replica.has(m.id) for m in sent):
                    break
        with Workspace.open(pa) as a, Workspace.open(pb) as b:
            assert all(b.replica.has(m.id) for m in sent)
            assert not b.replica.has(object_id(unsigned))
            held_a = {r[0] for r in a.replica.conn.execute("SELECT id FROM items")}
            held_b = {r[0] for r in b.replica.conn.execute("SELECT id FROM items")}
            assert held_a <= held_b  # converged: nothing of A's is missing
