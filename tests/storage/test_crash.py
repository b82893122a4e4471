"""Crash safety: a writer killed with SIGKILL at random moments never leaves a damaged replica
or a half-stored batch (docs/ARCHITECTURE.md "Storage"; "Conventions": nothing half-written)."""

from __future__ import annotations

import contextlib
import os
import pickle
import queue
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from core import kinds
from core.identity import Identity
from core.objects import build
from storage import Replica

ROOT = Path(__file__).resolve().parents[2]
BATCHES = 20
BATCH_SIZE = 2000  # objects per batch: 1 topic + 1999 text posts
ROUNDS = 12
CHANNEL = "crash"
LINE_TIMEOUT_S = 60  # the child prints a line at least this often, or something is wrong
ORPHAN_TIMEOUT_S = 10  # how long a helper may outlive the killed writer

# The child: open the replica, then ingest the batches one after the other, round and round,
# starting at the batch named on the command line, saying so after each one.
CHILD = """
import pickle, sys
from storage import Replica
path, data, start = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(data, "rb") as f:
    batches = pickle.load(f)
replica = Replica(path)
print("ready", flush=True)
n = start
while True:
    results = replica.ingest(batches[n % len(batches)])
    assert all(r.status != "rejected" for r in results), results
    print("ingested", n % len(batches), flush=True)
    n += 1
"""


def _tag(batch: int) -> str:
    return f"crash-batch-{batch:03d}"


def _build(workdir: Path) -> tuple[Path, Path]:
    """A replica with its genesis, and a file of BATCHES batches of signed objects."""
    alice, bob = Identity.generate(), Identity.generate()
    genesis = build(alice, "workspace/genesis", stream=kinds.GENESIS_STREAM,
                    body={"name": "crash", "nonce": os.urandom(16)}, ts=1_000)
    stream = kinds.channel_stream(genesis.id, CHANNEL)
    batches = []
    ts = 2_000
    for b in range(BATCHES):
        topic = build(alice, "post/topic", stream=stream, ts=ts,
                      body={"channel": CHANNEL, "topic": _tag(b)})
        objects = [topic]
        for i in range(BATCH_SIZE - 1):
            ts += 1
            # Two authors, each object linking to the one before it: one head per batch.
            obj = build(bob if i % 2 else alice, "post/text", stream=stream, ts=ts,
                        links=[objects[-1].id],
                        body={"channel": CHANNEL, "text": f"{_tag(b)} item {i:04d} payload"})
            objects.append(obj)
        batches.append([obj.raw for obj in objects])
    data = workdir / "batches.pickle"
    data.write_bytes(pickle.dumps(batches))
    path = workdir / "replica.sqlite3"
    with Replica.create(path, genesis.id, alice.public_key) as replica:
        replica.ingest([genesis])
    return path, data


def _live_in_group(pgid: int) -> list[int]:
    """Processes of process group `pgid` that still run (zombies do not count: nobody may
    reap the orphans here, PID 1 of a container often does not)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        state, pgrp = fields[0], int(fields[2])
        if pgrp == pgid and state not in ("Z", "X"):
            pids.append(int(entry.name))
    return pids


class Child:
    """The writer process (in a process group of its own, with whatever helpers it starts),
    its stdout lines delivered through a queue."""

    def __init__(self, path: Path, data: Path, start: int):
        self.proc = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(path), str(data), str(start)], cwd=ROOT,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.lines: queue.Queue[str | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def next_line(self) -> str:
        try:
            line = self.lines.get(timeout=LINE_TIMEOUT_S)
        except queue.Empty:
            self.kill()
            pytest.fail(f"the writer said nothing for {LINE_TIMEOUT_S} s")
        if line is None:
            self.proc.wait()
            stderr = self.proc.stderr.read() if self.proc.stderr else ""
            pytest.fail(f"the writer exited ({self.proc.returncode}) by itself: {stderr}")
        return line

    def kill(self) -> bool:
        """SIGKILL the writer; True if it was still running (so the kill cut it short).

        Only the writer is killed, as a crash would; the helper processes it started (the
        signature checker) must notice and end by themselves, leaving nothing behind.
        """
        alive = self.proc.poll() is None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        if alive:
            assert self.proc.returncode == -signal.SIGKILL
        deadline = time.monotonic() + ORPHAN_TIMEOUT_S
        while (left := _live_in_group(self.proc.pid)) and time.monotonic() < deadline:
            time.sleep(0.02)  # poll: the helpers see end-of-file on their input and exit
        if left:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._reader.join(LINE_TIMEOUT_S)
        if self.proc.stderr:
            self.proc.stderr.close()
        assert not left, f"processes the killed writer started still run: {left}"
        return alive


def _check(path: Path) -> dict[int, int]:
    """Open the replica after a crash: it is sound, and every batch is all there or absent."""
    with Replica(path) as replica:
        assert replica.integrity_check() == "ok"
        conn = replica.conn
        texts = dict(conn.execute(
            "SELECT substr(text, 1, 15), COUNT(*) FROM messages GROUP BY 1").fetchall())
        topics = dict(conn.execute(
            "SELECT value, COUNT(*) FROM state WHERE kind = 'topic' GROUP BY 1").fetchall())
        counts = {}
        for b in range(BATCHES):
            count = texts.pop(_tag(b), 0) + topics.pop(_tag(b), 0)
            assert count in (0, BATCH_SIZE), f"batch {b} is half-stored: {count} objects"
            counts[b] = count
        assert not texts and not topics, (texts, topics)
        stored = sum(counts.values())
        # The objects and every view agree with one another.
        assert replica.count() == 1 + stored
        fts = conn.execute("SELECT COUNT(*) FROM messages_fts").fetchone()[0]
        assert fts == stored - stored // BATCH_SIZE
        channels = replica.channels()
        if stored:
            assert [(c.name, c.messages) for c in channels] == [
                (CHANNEL, stored - stored // BATCH_SIZE)]
            # Each batch is one chain (topic, then posts linking back): one head per batch.
            heads = replica.heads(kinds.channel_stream(replica.workspace.id, CHANNEL))
            assert len(heads) == stored // BATCH_SIZE
        else:
            assert channels == []
        return counts


@pytest.mark.slow
def test_sigkill_during_ingest_never_damages_the_replica(tmp_path: Path) -> None:
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    path, data = _build(tmp_path)
    counts = _check(path)
    cut_short = 0
    for round_no in range(ROUNDS):
        missing = [b for b, count in counts.items() if not count]
        start = rng.choice(missing) if missing else rng.randrange(BATCHES)
        child = Child(path, data, start)
        assert child.next_line() == "ready"
        # Sometimes strike during the first batch, sometimes a little later.
        for _ in range(rng.choice([0, 0, 1, 2])):
            assert child.next_line().startswith("ingested")
        time.sleep(rng.uniform(0.0, 0.25))  # the random moment of the crash
        cut_short += child.kill()
        counts = _check(path)
        print(f"seed {seed} round {round_no}: start {start}, "
              f"{sum(1 for c in counts.values() if c)} of {BATCHES} batches stored")
    assert cut_short == ROUNDS, "the writer stopped before it was killed"

    # A last writer that is left to finish stores every batch, whatever the crashes left.
    child = Child(path, data, 0)
    assert child.next_line() == "ready"
    done = {int(child.next_line().split()[1]) for _ in range(BATCHES)}
    child.kill()
    assert done == set(range(BATCHES))
    assert all(count == BATCH_SIZE for count in _check(path).values())
