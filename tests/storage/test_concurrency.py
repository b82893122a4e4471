"""Several processes on one replica at once (docs/ARCHITECTURE.md "Storage": WAL and a busy timeout, so
a `hearth` command can write while the window or `hearth serve` runs on the same data)."""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.paths import Paths
from app.workspace import Workspace
from core import kinds
from core.identity import Identity
from core.objects import build
from storage import Replica

ROOT = Path(__file__).resolve().parents[2]
POSTS = 300  # per writer
LINE_TIMEOUT_S = 60
EXIT_TIMEOUT_S = 120

# A writer through the library: open the workspace, say so, wait for "go", post, say "done".
POSTER = """
import sys
from app.paths import Paths
from app.workspace import Workspace
data, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Workspace.open(Paths.resolve(data, "default")) as ws:
    print("ready", flush=True)
    sys.stdin.readline()
    for n in range(count):
        ws.post("general", f"{tag} message {n:04d}")
print("done", flush=True)
"""

# A writer through ingest: batches of pre-built objects, some of them offered by both writers.
INGESTER = """
import pickle, sys
from storage import Replica
path, data = sys.argv[1], sys.argv[2]
with open(data, "rb") as f:
    batches = pickle.load(f)
with Replica(path) as replica:
    print("ready", flush=True)
    sys.stdin.readline()
    for batch in batches:
        assert all(r.status != "rejected" for r in replica.ingest(batch))
print("done", flush=True)
"""


class Writer:
    def __init__(self, script: str, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", script, *args], cwd=ROOT, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr = ""
        threading.Thread(target=self._out, daemon=True).start()
        self._err = threading.Thread(target=self._errors, daemon=True)
        self._err.start()

    def _out(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def _errors(self) -> None:
        assert self.proc.stderr is not None
        self.stderr = self.proc.stderr.read()

    def expect(self, line: str) -> None:
        try:
            got = self.lines.get(timeout=LINE_TIMEOUT_S)
        except queue.Empty:
            got = f"nothing for {LINE_TIMEOUT_S} s"
        if got != line:
            self.proc.kill()
            self._err.join()
            pytest.fail(f"expected {line!r} from a writer, got {got!r}: {self.stderr}")

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.close()

    def running(self) -> bool:
        return self.proc.poll() is None

    def finish(self) -> None:
        self.expect("done")
        self.proc.wait(timeout=EXIT_TIMEOUT_S)
        self._err.join()
        assert self.proc.returncode == 0, self.stderr
        assert self.stderr == "", self.stderr


def _run_together(writers: list[Writer], path: Path) -> list[int]:
    """Start the writers at once; read the replica meanwhile; return the counts seen."""
    for writer in writers:
        writer.expect("ready")
    for writer in writers:
        writer.go()
    seen = []
    with Replica(path) as reader:
        while any(w.running() for w in writers):
            messages = reader.messages("general", limit=10_000)
            assert len({m.id for m in messages}) == len(messages)
            seen.append(len(messages))
            info = {c.name: c.messages for c in reader.channels()}
            assert info.get("general", 0) >= len(messages)
    for writer in writers:
        writer.finish()
    assert seen == sorted(seen), "a reader saw messages disappear"
    return seen


def test_two_processes_post_through_the_library_at_once(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path, "default")
    Workspace.init(paths, "alice").close()
    writers = [Writer(POSTER, str(tmp_path), tag, str(POSTS)) for tag in ("left", "right")]
    _run_together(writers, paths.replica)

    expected = {f"{tag} message {n:04d}" for tag in ("left", "right") for n in range(POSTS)}
    with Replica(paths.replica) as replica:
        assert replica.integrity_check() == "ok"
        rows = replica.conn.execute("SELECT text, COUNT(*) FROM messages GROUP BY text")
        counts = dict(rows.fetchall())
        assert set(counts) == expected
        assert set(counts.values()) == {1}
        messages = replica.messages("general", limit=10_000)
        assert len(messages) == 2 * POSTS
        assert {m.text for m in messages} == expected
        assert [(c.name, c.messages) for c in replica.channels()] == [("general", 2 * POSTS)]
        # Each writer's own posts stay in the order it wrote them.
        for tag in ("left", "right"):
            mine = [m.text for m in messages if m.text.startswith(tag)]
            assert mine == sorted(mine)
        assert len(replica.search("right message", limit=10_000)) == POSTS


def test_two_processes_ingest_overlapping_batches_at_once(tmp_path: Path) -> None:
    alice = Identity.generate()
    genesis = build(alice, "workspace/genesis", stream=kinds.GENESIS_STREAM,
                    body={"name": "together", "nonce": os.urandom(16)}, ts=1_000)
    stream = kinds.channel_stream(genesis.id, "general")
    batches = [[build(alice, "post/text", stream=stream, ts=2_000 + 100 * b + i,
                      body={"channel": "general", "text": f"batch {b} post {i}"}).raw
                for i in range(100)] for b in range(30)]
    path = tmp_path / "replica.sqlite3"
    with Replica.create(path, genesis.id, alice.public_key) as replica:
        replica.ingest([genesis])
    # Batches 10-19 are offered by both writers, in opposite orders.
    files = []
    for name, part in (("a", batches[:20]), ("b", batches[10:][::-1])):
        files.append(tmp_path / f"{name}.pickle")
        files[-1].write_bytes(pickle.dumps(part))
    writers = [Writer(INGESTER, str(path), str(file)) for file in files]
    _run_together(writers, path)

    with Replica(path) as replica:
        assert replica.integrity_check() == "ok"
        assert replica.count() == 1 + 30 * 100
        texts = [row[0] for row in replica.conn.execute("SELECT text FROM messages")]
        assert len(texts) == len(set(texts)) == 30 * 100
        assert [(c.name, c.messages) for c in replica.channels()] == [("general", 3000)]
        assert replica.conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0] == 3000


def _hearth(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
    return subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, stdin=subprocess.DEVNULL, timeout=EXIT_TIMEOUT_S)


def test_cli_post_while_another_process_holds_a_read_transaction(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path, "default")
    Workspace.init(paths, "alice").close()
    # This process holds the replica open, in the middle of a read transaction.
    holder = sqlite3.connect(paths.replica, isolation_level=None)
    try:
        holder.execute("BEGIN")
        before = holder.execute("SELECT COUNT(*) FROM messages").fetchone()[0]
        run = _hearth("post", "general", "written meanwhile", "--data", str(tmp_path))
        assert run.returncode == 0, run.stderr
        assert run.stderr == ""
        post_id = run.stdout.strip()
        assert len(bytes.fromhex(post_id)) == 32
        # The reader's snapshot is stable; once it ends, the new post is there.
        assert holder.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == before
        holder.execute("COMMIT")
        assert holder.execute("SELECT COUNT(*) FROM messages").fetchone()[0] == before + 1
    finally:
        holder.close()
    # And a second read through the CLI sees it, while the library holds a reader open too.
    with Replica(paths.replica) as replica:
        messages = replica.messages("general")
        run = _hearth("read", "general", "--json", "--data", str(tmp_path))
        assert run.returncode == 0, run.stderr
    assert [m.id.hex() for m in messages] == [post_id]
    assert post_id in run.stdout


def test_cli_post_waits_for_another_process_write_transaction(tmp_path: Path) -> None:
    paths = Paths.resolve(tmp_path, "default")
    Workspace.init(paths, "alice").close()
    holder = sqlite3.connect(paths.replica, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")  # the write lock, as another writer's ingest holds it
        proc = subprocess.Popen(
            [sys.executable, "-m", "app", "post", "general", "after the lock",
             "--data", str(tmp_path)], cwd=ROOT, text=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        # While the lock is held the post cannot commit: it waits (busy timeout) instead of
        # failing. Release the lock after a moment well inside that timeout.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=1.0)
        waited = proc.poll() is None
        holder.execute("COMMIT")
        stdout, stderr = proc.communicate(timeout=EXIT_TIMEOUT_S)
    finally:
        holder.close()
    assert waited, f"the post ended while another process held the write lock: {stderr}"
    assert proc.returncode == 0, stderr
    assert stderr == ""
    with Replica(paths.replica) as replica:
        assert [m.text for m in replica.messages("general")] == ["after the lock"]
        assert replica.messages("general")[0].id.hex() == stdout.strip()
