"""The sharing commands of the `hearth` command line: serve, sync --once, peers, invite,
join-workspace, export and import. `serve` runs as a real process (it serves until SIGTERM);
the other commands run in this process (tests/app/conftest.py), and test_cli_smoke.py runs them
as processes too."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from storage import Replica
from tests.support import two_members, wait_until

from .conftest import ROOT, Hearth

LOCAL = "127.0.0.1"
STOP_TIMEOUT_S = 30


class Serve:
    """`hearth serve` in the background; `port` is the one it printed."""

    def __init__(self, hearth: Hearth, data: Path, *extra: str):
        self.out = data.with_name(data.name + "-serve.out")
        self.err = data.with_name(data.name + "-serve.err")
        argv = [sys.executable, "-m", "app", "serve", "--data", str(data), "--no-mdns",
                "--interface", LOCAL, "--port", "0", *extra]
        with open(self.out, "wb") as out, open(self.err, "wb") as err:
            self.proc = subprocess.Popen(argv, cwd=ROOT, env=hearth.env, stdout=out,
                                         stderr=err, stdin=subprocess.DEVNULL)
        match = wait_until(self._port_line, what="`hearth serve` to print its port")
        self.port = int(match.group(1))

    def _port_line(self) -> re.Match | None:
        if self.proc.poll() is not None:
            raise AssertionError(f"`hearth serve` exited: {self.stderr}")
        return re.search(r"on port (\d+)", self.out.read_text())

    @property
    def address(self) -> str:
        return f"{LOCAL}:{self.port}"

    @property
    def stderr(self) -> str:
        return self.err.read_text(errors="replace")

    def terminate(self) -> int:
        """SIGTERM, then the exit code."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(STOP_TIMEOUT_S)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(STOP_TIMEOUT_S)


@contextmanager
def serving(hearth: Hearth, data: Path, *extra: str) -> Iterator[Serve]:
    serve = Serve(hearth, data, *extra)
    try:
        yield serve
    finally:
        serve.kill()


def replica_path(data: Path) -> Path:
    return data / "workspaces" / "default" / "replica.sqlite3"


def digest(data: Path) -> str:
    with Replica(replica_path(data)) as replica:
        return replica.digest()


def texts(hearth: Hearth, data: Path) -> list[str]:
    return [m["text"] for m in hearth("read", "general", "--json", data=data).json()]


def member_folders(tmp_path: Path) -> tuple[Path, Path]:
    """The data folders of alice (tmp_path/a), who created a workspace, and bob (tmp_path/b),
    who joined it with her invite code (`hearth invite` and `hearth join-workspace` are
    tested below and in test_cli_smoke.py)."""
    a, b = two_members(tmp_path, names=("a", "b"))
    return a.data, b.data


def closed_port() -> tuple[socket.socket, int]:
    """A port on 127.0.0.1 that nothing listens on (kept bound so nobody else takes it)."""
    sock = socket.socket()
    sock.bind((LOCAL, 0))
    return sock, sock.getsockname()[1]


# serve + sync --once --------------------------------------------------------------------------


def outsider(hearth: Hearth, tmp_path: Path, text: str) -> Path:
    """The folder of someone in another workspace, with one post."""
    folder = tmp_path / "outsider"
    hearth("init", "--nick", "mallory", data=folder)
    hearth("post", "general", text, data=folder)
    return folder

def test_sync_once_with_a_serving_peer_converges(hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    hearth("post", "general", "from alice", data=a)
    hearth("post", "general", "from bob", data=b)
    with serving(hearth, a) as serve:
        run = hearth("sync", "--peer", serve.address, "--once", data=b)
        assert run.line.startswith(f"in sync with {serve.address}")
        wait_until(lambda: digest(a) == digest(b), what="the replicas to converge")
        assert texts(hearth, a) == texts(hearth, b)
        assert {"from alice", "from bob"} <= set(texts(hearth, b))
        # A second sync finds nothing to move.
        again = hearth("sync", "--peer", serve.address, "--once", data=b)
        assert "0 objects in, 0 out" in again.line
        assert serve.terminate() == 0


def test_sync_once_with_an_unreachable_peer_fails_in_one_line(hearth: Hearth, tmp_path: Path):
    _, b = member_folders(tmp_path)
    sock, port = closed_port()
    with sock:
        error = hearth.fails("sync", "--peer", f"{LOCAL}:{port}", "--once", data=b)
    assert error == f"hearth: cannot reach {LOCAL}:{port}: connection refused"
    assert "HOST:PORT" in hearth.fails("sync", "--peer", "nonsense", "--once", data=b)


def test_sync_once_with_the_wrong_secret_is_refused_at_the_handshake(
        hearth: Hearth, tmp_path: Path):
    a, _ = member_folders(tmp_path)
    stranger = outsider(hearth, tmp_path, "let me in")
    hearth("post", "general", "members only", data=a)
    before = digest(a)
    with serving(hearth, a) as serve:
        error = hearth.fails("sync", "--peer", serve.address, "--once", data=stranger)
        assert "handshake" in error
        assert digest(a) == before
        assert serve.proc.poll() is None  # still serving
        assert serve.terminate() == 0
    assert "members only" not in texts(hearth, stranger)
    assert "let me in" not in texts(hearth, a)


def test_serve_refuses_a_busy_port_a_busy_data_folder_and_a_missing_workspace(
        hearth: Hearth, tmp_path: Path):
    a, _ = member_folders(tmp_path)
    with socket.socket() as busy:
        busy.bind((LOCAL, 0))
        busy.listen()
        port = str(busy.getsockname()[1])
        error = hearth.fails("serve", "--no-mdns", "--interface", LOCAL, "--port", port,
                             data=a)
    assert "address already in use" in error
    with serving(hearth, a) as serve:
        error = hearth.fails("serve", "--no-mdns", "--interface", LOCAL, data=a)
        assert "another Hearth" in error and str(serve.proc.pid) in error
        assert serve.terminate() == 0
    assert "no workspace" in hearth.fails("serve", "--no-mdns", data=tmp_path / "nothing")


# invite / join-workspace ----------------------------------------------------------------------

def test_invite_and_join_workspace_round_trip(hearth: Hearth, tmp_path: Path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    workspace = hearth("init", "--nick", "alice", data=a).line
    made = hearth("invite", "--uses", "1", "--expires", "7d", "--json", data=a).json()
    code = made["code"]
    assert code.startswith("hearth-") and made["uses"] == 1 and made["expires"]
    assert a.joinpath("workspaces", "default", "secret.key").read_bytes().hex() not in code

    broken = {
        "truncated": code[:-7],
        "mistyped": code[:20] + ("b" if code[20] != "b" else "c") + code[21:],
        "not base32": code[:20] + "0" + code[21:],
        "too long": code + "-abcdef",
        "empty": " ",
    }
    for what, bad in broken.items():
        error = hearth.fails("join-workspace", bad, "--nick", "bob", data=b)
        assert "invite code" in error, (what, error)
        assert not replica_path(b).exists(), f"a {what} code left a replica behind"

    with serving(hearth, a) as serve:
        assert hearth("join-workspace", f"  {code.upper()}\n", "--nick", "bob", "--peer",
                      serve.address, data=b).line == workspace
        secret = b / "workspaces" / "default" / "secret.key"
        assert secret.stat().st_mode & 0o777 == 0o600
        me = hearth("whoami", "--json", data=b).json()
        assert me["workspace"] == workspace and me["nick"] == "bob" and not me["admin"]
        assert "already exists" in hearth.fails("join-workspace", code, "--nick", "bob",
                                                "--peer", serve.address, data=b)
        # Used once: the next person is refused, and nothing of theirs is left behind.
        error = hearth.fails("join-workspace", code, "--nick", "carol", "--peer",
                             serve.address, data=c)
        assert error == "hearth: this invite is used up"
        assert not replica_path(c).exists()
        # A revoked invite admits no one.
        other = hearth("invite", data=a).line
        hearth("invite", "--revoke", other, data=a)
        error = hearth.fails("join-workspace", other, "--nick", "carol", "--peer",
                             serve.address, data=c)
        assert error == "hearth: this invite was revoked"
        assert serve.terminate() == 0

    members = hearth("workspace", "members", "--json", data=a).json()
    assert [(m["nick"], m["admin"], m["admitted_by_nick"]) for m in members] == [
        ("alice", True, None), ("bob", False, "alice")]
    assert members[1]["invite"] == made["id"] and members[1]["key"] == me["key"]
    listed = {i["id"]: i for i in hearth("invite", "--list", "--json", data=a).json()}
    assert (listed[made["id"]]["used"], listed[made["id"]]["state"]) == (1, "used up")
    assert [i["state"] for i in listed.values()].count("revoked") == 1
    assert "alice" in hearth("workspace", "members", data=a).stdout


def test_a_personal_code_admits_its_person_alone_with_no_one_online(
        hearth: Hearth, tmp_path: Path):
    a, b, c = tmp_path / "a", tmp_path / "b", tmp_path / "c"
    hearth("init", "--nick", "alice", data=a)
    key = hearth("identity", "show", data=b).line
    assert hearth("identity", "show", data=b).line == key  # made once, then the same
    code = hearth("invite", "--for", key, data=a).line
    hearth("identity", "show", data=c)
    assert "another person's key" in hearth.fails("join-workspace", code, data=c)
    assert not replica_path(c).exists()
    hearth("join-workspace", code, "--nick", "bob", data=b)
    assert "no workspace" not in hearth("whoami", data=b).stdout
    members = hearth("workspace", "members", "--json", data=a).json()
    assert members[1]["key"] == key and members[1]["invite"] is None
    assert "cannot invite that key" in hearth.fails("invite", "--for", "ab" * 32, data=a)


# export / import ------------------------------------------------------------------------------

def test_export_then_import_brings_the_messages(hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    for n in range(3):
        hearth("post", "general", f"exported {n}", data=a)
    hearth("topic", "general", "plans", data=a)
    bundle = tmp_path / "a.bundle"
    written = hearth("export", bundle, data=a).line
    count = int(written.split()[0])
    assert count > 0 and bundle.exists()
    assert "already exists" in hearth.fails("export", bundle, data=a)

    counts = hearth("import", bundle, "--json", data=b).json()
    assert counts["added"] == count and counts["rejected"] == 0
    assert [f"exported {n}" for n in range(3)] == texts(hearth, b)
    assert hearth("state", "general", "--json", data=b).json()["topic"] == "plans"
    again = hearth("import", bundle, "--json", data=b).json()
    assert again["added"] == 0 and again["duplicate"] == count


def test_import_of_garbage_or_another_workspaces_bundle_is_refused(
        hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    other = outsider(hearth, tmp_path, "from elsewhere")
    foreign = tmp_path / "other.bundle"
    hearth("export", foreign, data=other)
    garbage = tmp_path / "garbage.bundle"
    garbage.write_bytes(os.urandom(4096))
    cbor_but_not_a_bundle = tmp_path / "map.bundle"
    cbor_but_not_a_bundle.write_bytes(b"\xa1\x64kind\x63foo")
    before = digest(b)

    assert "another workspace" in hearth.fails("import", foreign, data=b)
    assert "not a Hearth bundle" in hearth.fails("import", garbage, data=b)
    assert "not a Hearth bundle" in hearth.fails("import", cbor_but_not_a_bundle, data=b)
    assert "cannot read" in hearth.fails("import", tmp_path / "missing.bundle", data=b)
    assert digest(b) == before
    assert "from elsewhere" not in texts(hearth, b)


# peers ------------------------------------------------------------------------------------------

def _synced_with(hearth: Hearth, data: Path, address: str) -> dict | None:
    return next((r for r in hearth("peers", "--json", data=data).json()
                 if r["address"] == address and r["last_sync"]), None)


def test_peers_lists_a_peer_serve_synced_with(hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    assert hearth("peers", "--json", data=b).json() == []
    with serving(hearth, a) as serve_a, serving(hearth, b, "--peer", serve_a.address) as serve_b:
        record = wait_until(lambda: _synced_with(hearth, b, serve_a.address),
                            what="b's peer list to show its sync with a")
        assert record["key"] and record["last_seen"] and record["last_sync_ms"] is not None
        assert serve_b.terminate() == 0
        assert serve_a.terminate() == 0
    text = hearth("peers", data=b).stdout
    assert serve_a.address in text and "last sync never" not in text


def test_peers_lists_a_peer_after_sync_once(hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    with serving(hearth, a) as serve:
        hearth("sync", "--peer", serve.address, "--once", data=b)
        assert serve.terminate() == 0
    record = _synced_with(hearth, b, serve.address)
    assert record is not None, hearth("peers", "--json", data=b).stdout
    me_a = hearth("whoami", "--json", data=a).json()
    assert record["key"] == me_a["key"] and record["last_seen"]


# Stopping -----------------------------------------------------------------------------------------

def test_sigterm_stops_serve_cleanly_and_leaves_an_intact_replica(
        hearth: Hearth, tmp_path: Path):
    a, b = member_folders(tmp_path)
    with serving(hearth, a) as serve_a, serving(hearth, b, "--peer", serve_a.address) as serve_b:
        # A post written beside a running node reaches the other node.
        hearth("post", "general", "while serving", data=a)
        wait_until(lambda: "while serving" in texts(hearth, b), what="the post to reach b")
        wait_until(lambda: digest(a) == digest(b), what="the replicas to converge")
        codes = serve_a.terminate(), serve_b.terminate()
        errors = serve_a.stderr + serve_b.stderr
        told = serve_a.out.read_text() + serve_b.out.read_text()
    assert codes == (0, 0), errors
    assert "Traceback" not in errors
    assert "shutting down" in told  # the sessions were ended, not dropped
    for data in (a, b):
        with Replica(replica_path(data)) as replica:
            assert replica.integrity_check() == "ok"
        assert not (data / "node.lock").exists() or (data / "node.lock").read_text() == ""
    assert "while serving" in texts(hearth, b)
