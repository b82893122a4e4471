"""A hostile relay as a process of its own, for tests in network namespaces:
`python -m tests.sync.hostile_relay --data DIR --host H --port P [--extra FILE]` serves as
`hearth relay serve` does (and prints its address and key the same way), but drops every
third envelope it hands out and replays others: duplicates, and the envelopes in FILE (a CBOR
list of [opaque, bucket, box]: what a test sealed under a member's key, the worst a relay
could hold)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from pathlib import Path

from core.encoding import loads
from core.relay_seal import Envelope
from relay.server import DB_FILE, RelayServer
from relay.store import RelayStore


class HostileStore(RelayStore):
    extra: list[Envelope] = []
    handed = 0

    def get(self, space: bytes, opaques: list[bytes]) -> list[Envelope]:
        out = []
        for env in super().get(space, opaques):
            self.handed += 1
            if self.handed % 3:
                out.append(env)
        return out + self.extra + out[:2]


def hostile_server(folder: Path, extra: list[Envelope]) -> RelayServer:
    """A RelayServer whose store is a HostileStore (in `folder`)."""
    server = RelayServer(folder)
    hostile = HostileStore(folder / DB_FILE)
    hostile.extra = extra
    server.store.close()
    server.store = hostile
    server._snapshots.__init__(hostile)  # type: ignore[misc]
    return server


async def _serve(folder: Path, host: str, port: int, extra: list[Envelope]) -> None:
    server = hostile_server(folder, extra)
    port = await server.start(host, port)
    print(f"relay listening on {host}:{port}", flush=True)
    print(f"key {server.key.hex()}", flush=True)
    stop = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError):
            asyncio.get_running_loop().add_signal_handler(signum, stop.set)
    try:
        await stop.wait()
    finally:
        await server.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--extra")
    args = parser.parse_args()
    extra = [Envelope(*e) for e in loads(Path(args.extra).read_bytes())] if args.extra else []
    Path(args.data).mkdir(parents=True, exist_ok=True)
    asyncio.run(_serve(Path(args.data), args.host, args.port, extra))


if __name__ == "__main__":
    main()
