"""Two computers on one LAN, for real: two `hearth serve` processes in their own network
namespaces joined by a veth pair, finding each other by mDNS and syncing (docs/ARCHITECTURE.md "Sync").

Needs root and working `ip netns`; skipped otherwise. Every address used lives inside the two
namespaces this test creates (10.77.0.0/24), and both are deleted at the end.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .nodes import CHANNEL, two_members, wait_until

ROOT = Path(__file__).resolve().parents[2]
ADDRESSES = ("10.77.0.1", "10.77.0.2")
CMD_TIMEOUT_S = 60
TIMEOUT_S = 60.0

pytestmark = pytest.mark.slow


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, timeout=CMD_TIMEOUT_S,
                          check=check)


def _netns_unavailable() -> str | None:
    if not sys.platform.startswith("linux"):
        return "network namespaces are Linux-only"
    if os.geteuid() != 0:
        return "creating network namespaces needs root"
    if shutil.which("ip") is None:
        return "the `ip` command (iproute2) is not installed"
    probe = f"hearth-probe-{os.getpid()}"
    try:
        made = _ip("netns", "add", probe, check=False)
        if made.returncode != 0:
            return f"`ip netns add` does not work here: {made.stderr.strip()}"
        ran = _ip("netns", "exec", probe, "ip", "link", "set", "lo", "up", check=False)
        if ran.returncode != 0:
            return f"`ip netns exec` does not work here: {ran.stderr.strip()}"
    finally:
        _ip("netns", "del", probe, check=False)
    return None


@pytest.fixture
def namespaces() -> Iterator[tuple[str, str]]:
    """Two namespaces joined by a veth pair, 10.77.0.1/24 and 10.77.0.2/24."""
    reason = _netns_unavailable()
    if reason:
        pytest.skip(reason)
    names = (f"hearth-{os.getpid()}-a", f"hearth-{os.getpid()}-b")
    veths = ("hveth-a", "hveth-b")
    try:
        for name in names:
            _ip("netns", "add", name)
            _ip("-n", name, "link", "set", "lo", "up")
        # Created inside the first namespace, its peer end moved straight into the second:
        # nothing is added to the host's own network.
        _ip("-n", names[0], "link", "add", veths[0], "type", "veth", "peer", "name", veths[1],
            "netns", names[1])
        for name, veth, address in zip(names, veths, ADDRESSES, strict=True):
            _ip("-n", name, "addr", "add", f"{address}/24", "dev", veth)
            _ip("-n", name, "link", "set", veth, "up")
        yield names
    finally:
        for name in names:
            _ip("netns", "del", name, check=False)


class Host:
    """One computer: a namespace, a data folder, and the `hearth` commands run inside it."""

    def __init__(self, namespace: str, address: str, data: Path, fallback: Path):
        self.namespace = namespace
        self.address = address
        self.data = data
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
        self.env["HEARTH_DATA"] = str(fallback)  # a command ignoring --data stays in tmp
        self.serve_proc: subprocess.Popen | None = None
        self.serve_out = data.with_name(data.name + "-serve.out")
        self.serve_err = data.with_name(data.name + "-serve.err")

    def argv(self, *args: str) -> list[str]:
        return ["ip", "netns", "exec", self.namespace, sys.executable, "-m", "app", *args,
                "--data", str(self.data)]

    def hearth(self, *args: str) -> str:
        run = subprocess.run(self.argv(*args), cwd=ROOT, env=self.env, capture_output=True,
                             text=True, timeout=CMD_TIMEOUT_S, stdin=subprocess.DEVNULL)
        assert run.returncode == 0, f"hearth {args} failed: {run.stderr}"
        return run.stdout

    def serve(self) -> int:
        with open(self.serve_out, "wb") as out, open(self.serve_err, "wb") as err:
            self.serve_proc = subprocess.Popen(
                self.argv("serve", "--interface", self.address), cwd=ROOT, env=self.env,
                stdout=out, stderr=err, stdin=subprocess.DEVNULL)

        def port() -> re.Match | None:
            assert self.serve_proc.poll() is None, f"serve exited: {self.serve_log}"
            return re.search(r"on port (\d+)", self.serve_out.read_text())

        return int(wait_until(port, timeout=TIMEOUT_S, what="serve to print its port").group(1))

    @property
    def serve_log(self) -> str:
        return self.serve_err.read_text(errors="replace")

    def stop(self) -> int | None:
        if self.serve_proc is None:
            return None
        if self.serve_proc.poll() is None:
            self.serve_proc.send_signal(signal.SIGTERM)
        try:
            return self.serve_proc.wait(CMD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.serve_proc.kill()
            self.serve_proc.wait(CMD_TIMEOUT_S)
            raise

    def texts(self) -> list[str]:
        return [m["text"] for m in json.loads(self.hearth("read", CHANNEL, "--json"))]

    def peers(self) -> list[dict]:
        return json.loads(self.hearth("peers", "--json"))


def test_two_hosts_discover_each_other_by_mdns_and_sync(namespaces: tuple[str, str],
                                                        tmp_path: Path):
    pa, pb = two_members(tmp_path, names=("a", "b"))
    hosts = [Host(ns, address, paths.data, tmp_path / "fallback")
             for ns, address, paths in zip(namespaces, ADDRESSES, (pa, pb), strict=True)]
    a, b = hosts
    try:
        for host in hosts:
            host.serve()
        a.hearth("post", CHANNEL, "hello across the veth")
        wait_until(lambda: "hello across the veth" in b.texts(), timeout=TIMEOUT_S,
                   what="a's post to reach b over the namespaces' link")
        b.hearth("post", CHANNEL, "and back")
        wait_until(lambda: "and back" in a.texts(), timeout=TIMEOUT_S,
                   what="b's post to reach a")
        codes = [host.stop() for host in hosts]
    finally:
        for host in hosts:
            if host.serve_proc is not None and host.serve_proc.poll() is None:
                host.serve_proc.kill()
                host.serve_proc.wait(CMD_TIMEOUT_S)
    logs = a.serve_log + b.serve_log
    assert codes == [0, 0], logs
    assert "Traceback" not in logs
    assert a.texts() == b.texts()
    # No --peer was given: the link came from the mDNS adverts on the veth addresses.
    known = {(r["host"], r["port"]) for host in hosts for r in host.peers()}
    assert {h for h, _ in known} & set(ADDRESSES), known
