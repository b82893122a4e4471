"""Helpers for tests through a relay: a real `hearth relay serve` process, and a member's
RelayLink run until it has finished a round (sync.relay_client)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from app import relays
from app.workspace import Workspace
from sync.relay_client import RelayAddress, RelayLink, RelayState

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
                  prefix: list[str] | None = None, quota: str = "64M") -> Iterator[RelayProcess]:
    """`hearth relay serve` on `port` (0: a free one), its log in the relay's own folder (so a test can
    search every file the relay wrote); stopped (SIGTERM) at the end."""
    folder.mkdir(parents=True, exist_ok=True)
    log = open(folder / LOG_FILE, "wb")  # noqa: SIM115 - the process writes it until the end
    cmd = [*(prefix or []), sys.executable, "-m", "app", "relay", "serve", "--host", host,
           "--port", str(port), "--data", str(folder), "--quota", quota]
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


def link_for(ws: Workspace, addresses: Callable[[], list[RelayAddress]] | None = None,
             on_objects: Callable[[list[bytes]], None] | None = None) -> RelayLink:
    """The RelayLink a Node would own for `ws`: the relays its workspace objects name (or
    `addresses`), its newest epoch's secret, the one ingest path; an admin registers."""
    replica = ws.replica

    def ingest(raws: list[bytes]) -> None:
        replica.ingest(raws)

    return RelayLink(
        replica, ws.identity, ws.newest_secret, on_objects or ingest,
        relays=addresses or (lambda: relays.link_relays(replica)),
        registration=lambda: relays.registration(replica, ws.key))


def sync_through(ws: Workspace, address: RelayAddress, *, timeout: float = 30.0,
                 addresses: Callable[[], list[RelayAddress]] | None = None) -> RelayState:
    """Start `ws`'s link, wait for one finished round with `address` (or its refusal), stop."""
    async def run() -> RelayState:
        link = link_for(ws, addresses)
        start = time.time()
        await link.start()
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                if await link.wait_synced(address, start, 0.2):
                    break
                state = link.states.get(address)
                if state is not None and state.error and "refused" in state.error:
                    break
            return link.states.get(address) or RelayState(address, error="never dialled")
        finally:
            await link.close()
    return asyncio.run(run())


def relay_files_contain(folder: Path, needle: bytes) -> list[str]:
    """The relay's files (database, WAL, log, key, status) that hold `needle`."""
    return [p.name for p in folder.rglob("*") if p.is_file() and needle in p.read_bytes()]
