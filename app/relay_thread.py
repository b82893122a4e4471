"""A relay (relay.server.RelayServer) run on a thread of its own, for a process that is not a
relay by trade: `hearth screenshot`'s demonstration, tests and benchmarks. `hearth relay serve`
runs one as the process's main loop instead (app.relay_commands)."""

from __future__ import annotations

import asyncio
import threading
from concurrent.futures import Future
from pathlib import Path

from relay.server import RelayServer
from sync.relay_client import RelayAddress

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0


class RelayThread:
    def __init__(self, folder: Path, *, host: str = "127.0.0.1", port: int = 0, **options):
        self.host = host
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="hearth-relay",
                                        daemon=True)
        self._thread.start()
        self.server = self._call(self._start(folder, host, port, options)).result(START_TIMEOUT_S)
        self.port = self.server.port

    @staticmethod
    async def _start(folder: Path, host: str, port: int, options: dict) -> RelayServer:
        server = RelayServer(folder, **options)  # its SQLite store belongs to this thread
        await server.start(host, port)
        return server

    @property
    def address(self) -> RelayAddress:
        return RelayAddress(self.host, self.port, self.server.key)

    def _call(self, coro) -> Future:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def close(self) -> None:
        """Stop serving and end the thread (bounded)."""
        if self._thread.is_alive():
            try:
                self._call(self.server.close()).result(STOP_TIMEOUT_S)
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(STOP_TIMEOUT_S)
                if not self._thread.is_alive():
                    self._loop.close()

    def __enter__(self) -> RelayThread:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
