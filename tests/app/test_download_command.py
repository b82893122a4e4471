"""`hearth download` (app/download_commands.py) against real Nodes on 127.0.0.1: with no Node
on the data folder it runs one of its own; beside a running Node it asks that Node."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from app import preferences
from app.cli import main
from tests.support import LOCAL, TIMEOUT_S, Cluster, node_call, wait_online, wait_until

MB = 1 << 20


@pytest.fixture
def cluster(tmp_path):
    with Cluster(tmp_path) as c:
        yield c


def _shared_file(cluster, tmp_path, size=3 * MB):
    pa, pb = cluster.members(2)
    preferences.save(pb.data, auto_download_mb=0)
    a = cluster.start(pa)
    data = os.urandom(size)
    (tmp_path / "report.pdf").write_bytes(data)
    mid = node_call(a, lambda: a.workspace.files.attach("general", [tmp_path / "report.pdf"]).id)
    return a, pb, mid, hashlib.sha256(data).hexdigest()


def _args(pb, mid, out, *more):
    return ["download", mid.hex()[:16], "--out", str(out), "--data", str(pb.data),
            "--workspace", pb.workspace, *more]


def test_download_without_a_running_node_fetches_then_saves(cluster, tmp_path, capsys):
    a, pb, mid, digest = _shared_file(cluster, tmp_path)
    b = cluster.start(pb, peers=[a])  # only to get the message over; then stopped
    wait_online(a, b)
    wait_until(lambda: node_call(b, lambda: b.workspace.replica.has(mid)),
               what="the message to arrive")
    b.stop()

    code = main(_args(pb, mid, tmp_path / "out", "--no-mdns", "--peer", f"{LOCAL}:{a.port}",
                      "--timeout", str(TIMEOUT_S)))

    assert code == 0
    saved = capsys.readouterr().out.strip()
    assert saved.endswith("report.pdf")
    assert hashlib.sha256(Path(saved).read_bytes()).hexdigest() == digest


def test_download_beside_a_running_node_asks_it(cluster, tmp_path, capsys):
    a, pb, mid, digest = _shared_file(cluster, tmp_path)
    b = cluster.start(pb, peers=[a])
    wait_online(a, b)
    wait_until(lambda: node_call(b, lambda: b.workspace.replica.has(mid)),
               what="the message to arrive")

    assert main(_args(pb, mid, tmp_path / "out")) == 0
    saved = capsys.readouterr().out.strip()
    assert hashlib.sha256(Path(saved).read_bytes()).hexdigest() == digest
    # Saved again: the file is complete here, so nothing is fetched, and the name is not reused.
    assert main(_args(pb, mid, tmp_path / "out")) == 0
    assert capsys.readouterr().out.strip().endswith("report (1).pdf")


def test_a_message_without_that_file_is_refused_in_one_line(cluster, tmp_path, capsys):
    a, pb, mid, _ = _shared_file(cluster, tmp_path)
    b = cluster.start(pb, peers=[a])
    wait_until(lambda: node_call(b, lambda: b.workspace.replica.has(mid)),
               what="the message to arrive")
    assert main(_args(pb, mid, tmp_path / "out", "--index", "2")) == 2
    err = capsys.readouterr().err
    assert err.startswith("hearth: ") and len(err.strip().splitlines()) == 1
