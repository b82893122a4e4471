"""`hearth serve` on a computer whose key was removed (issue #28, item 7): it is handed the signed
removal by the first member's node it dials, and exits non-zero with one line naming who
removed it, when and why; started again, it exits at once with the same line. Before, it kept
serving and redialing about once a second (158 refusals in 3 minutes)."""

from __future__ import annotations

import re
import subprocess
import sys

from app import joining
from app.workspace import Workspace
from tests.support import make_members, share

from .conftest import ROOT
from .test_sync_cli import LOCAL, serving

EXIT_TIMEOUT_S = 60


def _serve(hearth, data, *extra: str) -> subprocess.CompletedProcess:
    argv = [sys.executable, "-m", "app", "serve", "--data", str(data), "--no-mdns",
            "--interface", LOCAL, "--port", "0", *extra]
    return subprocess.run(argv, cwd=ROOT, env=hearth.env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=EXIT_TIMEOUT_S)


def test_serve_on_a_removed_computer_exits_non_zero_naming_who_when_and_why(hearth, tmp_path):
    pa, pc = make_members(tmp_path, 2, names=["a", "c"])  # alice and bob
    bob = joining.identity_key(pc)
    with Workspace.open(pa) as wa, Workspace.open(pc) as wc:
        share(wa, wc)  # what bob's computer held from an earlier sync (alice's nickname)
        alice = wa.key
        wa.members.remove(bob, "left the team")
    expected = re.compile(r"hearth: removed from this workspace by alice \(" + alice.hex()[:8]
                          + r"\) on \d{4}-\d\d-\d\d \d\d:\d\d UTC: left the team$")
    with serving(hearth, pa.data) as node:
        told = _serve(hearth, pc.data, "--peer", node.address)
    assert told.returncode == 2, told
    assert "on port" in told.stdout  # it served until it was told
    assert expected.match(told.stderr.strip().splitlines()[-1]), told.stderr
    again = _serve(hearth, pc.data)  # no peer needed: its own replica says so
    assert again.returncode == 2
    assert "on port" not in again.stdout
    assert expected.match(again.stderr.strip().splitlines()[-1]), again.stderr
