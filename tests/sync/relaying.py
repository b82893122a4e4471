"""Helpers for tests through a relay: a real `hearth relay serve` process, and a member's
RelayLink run until it has finished a round (sync.relay_client)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from app import relays
from app.workspace import Workspace
from sync.relay_client import RelayAddress, RelayState

ROOT = Path(__file__).resolve().parents[2]
LOG_FILE = "relay.log"


@dataclass
class RelayProcess:
    proc: subprocess.Popen
    folder: Path
    host: str
    port: int
    key: bytes

    @property
    def address(self) -> RelayAddress:
        return RelayAddress(self.host, self.port, self.key)


@contextlib.contextmanager
def relay_process(folder: Path, *, host: str = "127.0.0.1", port: int = 0,
                  prefix: list[str] | None = None, quota: str = "64M",
                  hostile: Path | None = None) -> Iterator[RelayProcess]:
    """`hearth relay serve` on `port` (0: a free one), its log in the relay's own folder (so a test can
    search every file the relay wrote); stopped (SIGTERM) at the end. `hostile`: a file of
    envelopes for tests/sync/hostile_relay.py, run instead, to replay."""
    folder.mkdir(parents=True, exist_ok=True)
    log = open(folder / LOG_FILE, "wb")  # noqa: SIM115 - the process writes it until the end
    cmd = [*(prefix or []), sys.executable, "-m", "app", "relay", "serve", "--host", host,
           "--port", str(port), "--data", str(folder), "--quota", quota]
    if hostile is not None:  # tests/sync/hostile_relay.py, with the envelopes it replays
        cmd = [*(prefix or []), sys.executable, "-m", "tests.sync.hostile_relay", "--host",
               host, "--port", str(port), "--data", str(folder), "--extra", str(hostile)]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=log,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    timer = threading.Timer(30.0, proc.kill)  # a relay that never prints its key
    timer.start()
    try:
        assert proc.stdout is not None
        listening = proc.stdout.readline().decode().split()
        key_line = proc.stdout.readline().decode().split()
        timer.cancel()
        assert listening[:3] == ["relay", "listening", "on"], listening
        assert key_line[0] == "key", key_line
        port = int(listening[3].rpartition(":")[2])
        yield RelayProcess(proc, folder, host, port, bytes.fromhex(key_line[1]))
    finally:
        timer.cancel()
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def sync_through(ws: Workspace, address: RelayAddress, *, timeout: float = 30.0,
                 addresses: Callable[[], list[RelayAddress]] | None = None) -> RelayState:
    """One round of `ws` with `address` (dialled among the workspace's relays, or
    `addresses`): how it went."""
    states = relays.sync_once(ws, addresses() if addresses else None, timeout=timeout)
    return next(state for state in states if state.address == address)


def relay_files_contain(folder: Path, needle: bytes) -> list[str]:
    """The relay's files (database, WAL, log, key, status) that hold `needle`."""
    return [p.name for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]
