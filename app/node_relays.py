"""A Node's relays (`node.relays`; docs/relay.md): the sync service's RelayLink started with the
Node, the files moved through the relays (those attached here shared, those this computer
downloads by itself fetched) once a relay is reached and every FILES_INTERVAL_S, and a file
asked for while no LAN peer is connected fetched from them. Everything runs on the Node's
thread."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sync.relay_client import RelayState

from . import relays
from .durations import ago
from .errors import NodeError
from .events import FileProgressed
from .records import FileProgress

if TYPE_CHECKING:
    from .node import Node

log = logging.getLogger(__name__)

FILES_INTERVAL_S = 60.0  # how often files are shared with and fetched from the relays
FILES_TIMEOUT_S = 30.0
PREPARE_DELAY_S = 3.0  # after the start: this computer's side of a relay round, worked out once
FETCH_WAIT_S = 60.0  # a file asked for is asked of the relays again until this passes ...
RETRY_S = 1.0  # ... this often


@dataclass(frozen=True)
class Reach:
    """Who this computer reaches now: members on the LAN, members heard only through a relay,
    and the relays with how each is doing."""

    lan: frozenset[bytes]
    relayed: frozenset[bytes]
    relays: tuple[RelayState, ...]

    @property
    def online(self) -> frozenset[bytes]:
        return self.lan | self.relayed


class NodeRelays:
    def __init__(self, node: Node):
        self.node = node
        self._moving = asyncio.Lock()  # one turn of moving files at a time

    async def start(self) -> None:
        service = self.node.service
        if service.retired:
            return
        link = relays.link_for(self.node.workspace, on_objects=service.relaying.objects,
                               on_signal=service.relaying.signal)
        await service.relaying.start(link)
        if relays.dialled(self.node.workspace):
            asyncio.get_running_loop().call_later(PREPARE_DELAY_S, self._prepare)
        service.spawn(self._files_loop())

    def _prepare(self) -> None:
        link = self.node.service.relaying.link
        if link is not None and not self.node.service.stopped:
            try:
                link.prepare()
            except Exception:  # the first round works it out then
                log.exception("preparing the relay rounds failed")

    @property
    def connected(self) -> bool:
        return self.node.service.relaying.connected

    def reach(self) -> Reach:
        service = self.node.service
        lan = frozenset(service.lan_online())
        return Reach(lan, frozenset(service.relaying.online() - lan),
                     tuple(service.relaying.states()))

    def fetch(self, list_id: bytes, size: int, ended: Callable[[BaseException | None], None]
              ) -> None:
        """Fetch one file from the relays (no LAN peer is connected), telling its progress as
        FileProgressed events; `ended(error)`. A file whose poster is still sharing it (its
        message came first) is asked for again until FETCH_WAIT_S pass."""
        node = self.node
        have = 0  # bytes of the file here, as last told

        def report(now: int) -> None:
            nonlocal have
            have = now
            self._told(list_id, have, size)

        async def run() -> None:
            deadline = time.monotonic() + FETCH_WAIT_S
            link = node.service.relaying.link
            try:
                while link is not None:
                    if await relays.fetch_file(node.workspace, link, list_id, size,
                                               timeout=FILES_TIMEOUT_S, progress=report):
                        self._told(list_id, size, size, done=True)
                        ended(None)
                        return
                    if time.monotonic() >= deadline or not self.connected:
                        break
                    await node.service.pause(RETRY_S)
            except Exception as exc:
                log.exception("fetching a file through the relays failed")
                self._told(list_id, have, size, error=str(exc))
                ended(exc)
                return
            error = NodeError("no peer or relay has the whole file")
            self._told(list_id, have, size, error=str(error))
            ended(error)

        node.service.spawn(run())

    def _told(self, list_id: bytes, have: int, size: int, done: bool = False,
              error: str | None = None) -> None:
        """How a file fetched from the relays goes, as the window hears of a peer's."""
        self.node.emit(FileProgressed(FileProgress(list_id, have, size, done, error)))

    def share_now(self) -> None:
        """A file was attached here: its chunks go to the relays soon."""
        if self.connected and not self._moving.locked():
            self.node.service.spawn(self._move())

    async def _files_loop(self) -> None:
        service = self.node.service
        while not service.stopped:
            if self.connected:
                await self._move()
                await service.pause(FILES_INTERVAL_S)
            else:
                await service.pause(1.0)

    async def _move(self) -> None:
        link = self.node.service.relaying.link
        if link is None:
            return
        node = self.node
        async with self._moving:
            try:
                # Files to fetch by themselves come from the relays only while no LAN peer is
                # connected: otherwise the fetcher takes them from the peers, as it reports.
                await relays.move_files(node.workspace, link, timeout=FILES_TIMEOUT_S,
                                        fetch=not node.service.lan_online(),
                                        progress=self._told)
            except Exception:  # a full disk, say: the next turn tries again
                log.exception("moving files through the relays failed")


def peer_status(reach: Reach) -> str:
    """The status bar's words for who is reached: "2 peers connected (1 via relay)"."""
    count = len(reach.online)
    if not count:
        relayed = any(state.connected for state in reach.relays)
        return "no peers connected" + (" (relay reached)" if relayed else "")
    words = f"{count} peer{'s' if count != 1 else ''} connected"
    if reach.relayed and not reach.lan:
        return f"{words} via relay"
    return f"{words} ({len(reach.relayed)} via relay)" if reach.relayed else words


def relay_line(state: RelayState, now: float | None = None) -> str:
    """One relay as the peers dialog and the status bar's tooltip show it."""
    if state.connected:
        when = time.time() if now is None else now
        how = "connected" + (f", synced {ago(state.last_sync, when)}" if state.last_sync
                             else ", syncing")
    elif state.error:
        how = state.error
    else:
        how = "connecting"
    return f"relay {state.address.hostport} · {how}"
