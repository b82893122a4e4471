"""The relays a workspace syncs through (relay/; docs/ARCHITECTURE.md "Relays").

An admin names a relay in a signed `workspace/relay` object in the workspace stream (host,
port, the relay's static key, `active`), so every member learns it by sync; taking it back is
the same kind with `active` false (app.relay_list reads which are named now).

`link_for` makes the RelayLink a Node or `hearth relay sync` runs; `move_files` and
`fetch_file` move attached files through it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from core.relay_knock import KnockError, open_knock, seal_answer
from core.workspace_kinds import RELAY_KEY_SIZE
from storage import Replica
from sync.peers import AddressError, parse_address
from sync.relay_client import RelayAddress, RelayLink, RelayState

from . import preferences
from .activity import record_usage
from .paths import write_atomic
from .relay_list import KIND, Relay, relays
from .workspace import WorkspaceError

if TYPE_CHECKING:
    from .workspace import Workspace

RELAYS_FILE = "relays-from-code.json"  # in the workspace folder: what a code named
log = logging.getLogger(__name__)
FETCH_BATCH = 64  # chunks asked of the relays at once (16 MiB of 256 KiB chunks)


def named(ws: Workspace) -> list[Relay]:
    """The relays `ws` names now (`hearth relay list`, Settings > Relays)."""
    return relays(ws.replica)


def parse_key(text: str) -> bytes:
    """A relay's key as `hearth relay serve` prints it: 64 hex digits."""
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        key = b""
    if len(key) != RELAY_KEY_SIZE:
        raise WorkspaceError(f"a relay's key is {RELAY_KEY_SIZE * 2} hex digits, as "
                             "`hearth relay serve` prints it")
    return key


def _must_be_admin(ws: Workspace) -> None:
    if not ws.replica.is_admin(ws.key):
        raise WorkspaceError("only admins name the workspace's relays")


def add_relay(ws: Workspace, address: str, key: str) -> Relay:
    """Name the relay at `address` (HOST:PORT) with static key `key` (hex) for everyone."""
    _must_be_admin(ws)
    try:
        host, port = parse_address(address)
    except AddressError as exc:
        raise WorkspaceError(str(exc)) from None
    relay_key = parse_key(key)
    obj = ws.publish(KIND, ws.id, {"host": host, "port": port, "key": relay_key,
                                   "active": True})
    record_usage(ws.paths.data, "relay_changed", clock=ws.clock, added=True)
    return Relay(host, port, relay_key, ws.key, obj.ts)


def remove_relay(ws: Workspace, which: str) -> Relay:
    """Take back a relay, named by its key (hex, or a unique prefix) or its HOST:PORT."""
    _must_be_admin(ws)
    text = which.strip().lower()
    found = [r for r in relays(ws.replica)
             if r.key.hex().startswith(text) or r.hostport.lower() == text
             or f"{r.host}:{r.port}".lower() == text]
    if len(found) != 1:
        raise WorkspaceError(f"no relay {which!r} is named in this workspace (see `hearth relay "
                             "list`)" if not found else f"{which!r} names several relays: "
                             "give more of the key")
    relay = found[0]
    ws.publish(KIND, ws.id, {"host": relay.host, "port": relay.port, "key": relay.key,
                             "active": False})
    record_usage(ws.paths.data, "relay_changed", clock=ws.clock, added=False)
    return relay


def link_relays(replica: Replica) -> list[RelayAddress]:
    """The relays the workspace's objects name."""
    return [relay.address for relay in relays(replica)]


def dialled(ws: Workspace) -> list[RelayAddress]:
    """What a node's RelayLink dials (its `relays` callable): the relays the workspace names,
    or, while it names none here yet (a newcomer who has not synced), those its code named."""
    return link_relays(ws.replica) or from_code(ws.paths.workspace_dir)


def remember_from_code(folder: Path, addresses: list[RelayAddress]) -> None:
    """Keep the relays an invite or personal code named, for `dialled` (RELAYS_FILE)."""
    if addresses:
        write_atomic(folder / RELAYS_FILE, json.dumps(
            [{"host": a.host, "port": a.port, "key": a.key.hex()} for a in addresses]).encode())


def from_code(folder: Path) -> list[RelayAddress]:
    try:
        rows = json.loads((folder / RELAYS_FILE).read_text())
        return [RelayAddress(str(r["host"]), int(r["port"]), parse_key(r["key"])) for r in rows]
    except (OSError, ValueError, TypeError, KeyError, WorkspaceError):
        return []


def registration(replica: Replica, me: bytes) -> tuple[bytes, ...] | None:
    """RelayLink's `registration`: on an admin's computer, the admins (the space's owners)."""
    admins = replica.admins()
    return tuple(sorted(admins)) if me in admins else None


HANDOVER_KINDS = frozenset({"workspace/key", "member/remove"})
MAX_HANDOVER_EPOCHS = 8  # older epochs a registration leaves a handover for


def handovers(ws: Workspace) -> list[tuple[int, bytes, list[bytes]]]:
    """RelayLink's `handovers` (an admin's): for each older epoch whose secret is held here,
    the seals of every later epoch and the removals, which a member who missed the rotations
    needs to come to the newest (each seal opens for its recipient alone)."""
    held = ws.members.secrets()
    if len(held) < 2:
        return []
    objects = ws.replica.membership.objects(HANDOVER_KINDS)
    newest = max(held)
    return [(epoch, held[epoch], [o.raw for o in objects if o.type == "member/remove"
                                  or o.body["epoch"] > epoch])
            for epoch in sorted(held)[-MAX_HANDOVER_EPOCHS - 1:] if epoch < newest]


def answer_knock(ws: Workspace, tag: bytes, blob: bytes) -> bytes | None:
    """RelayLink's `on_knock`: a newcomer with the code of an invite this workspace holds is
    admitted as a join session would admit them (app.membership.admit), and answered with the
    newest epoch's secret sealed to their key, or why not; None for a knock that is not for
    an invite of ours (another member answers, or nobody)."""
    join = ws.members.join_key_for(tag)
    if join is None:
        return None
    try:
        key = open_knock(join, tag, blob)
    except KnockError:
        return None
    reason = ws.members.admit(key, tag)
    if reason is not None:
        return seal_answer(join, key, 0, None, reason)
    log.info("admitted %s with an invite, through a relay", key.hex()[:8])
    epoch, secret = ws.members.newest_secret()
    return seal_answer(join, key, epoch, secret)


def link_for(ws: Workspace, addresses: Callable[[], list[RelayAddress]] | None = None,
             on_objects: Callable[[list[bytes]], None] | None = None,
             on_signal: Callable[[bytes, bytes], None] | None = None,
             secrets: Callable[[], tuple[int, bytes] | None] | None = None) -> RelayLink:
    """The RelayLink a Node owns for `ws`: the relays its workspace objects name (or
    `addresses`), its newest epoch's secret (or `secrets`: a newcomer's, from a member's
    answer), the one ingest path (or `on_objects`); on an admin's computer it registers the
    space and moves it to each new epoch."""
    replica = ws.replica

    def ingest(raws: list[bytes]) -> None:
        replica.ingest(raws)

    def newest() -> tuple[int, bytes] | None:
        try:
            return ws.members.newest_secret()
        except WorkspaceError:  # joining: the secret has not arrived yet
            return None

    return RelayLink(replica, ws.identity, secrets or newest, on_objects or ingest,
                     relays=addresses or (lambda: dialled(ws)),
                     registration=lambda: registration(replica, ws.key), on_signal=on_signal,
                     handovers=lambda: handovers(ws),
                     on_knock=lambda tag, blob: answer_knock(ws, tag, blob))


async def move_files(ws: Workspace, link: RelayLink, *, timeout: float = 30.0,
                     fetch: bool = True,
                     progress: Callable[[bytes, int, int, bool], None] | None = None
                     ) -> tuple[int, int]:
    """Share the chunks of files attached here that the connected relays lack, and (`fetch`)
    fetch the files this computer would download by itself (the auto-download preference), as
    from a peer: (chunks sent, files completed). `progress(list, have, size, done)` is told
    how each fetched file goes, so a window shows it as one fetched from a peer."""
    mine: list[bytes] = []
    for state in ws.replica.files.all():
        if state.mine and state.complete:
            mine += [state.list, *(ws.files.chunk_ids(state.list, state.size) or [])]
    sent = await link.share_chunks(mine, ws.files.chunks.read, timeout) if mine else 0
    completed = 0
    limit = preferences.load(ws.paths.data).auto_download_mb << 20
    for wanted in ws.files.wanted(limit) if fetch else ():
        report = None if progress is None else (
            lambda have, w=wanted: progress(w.list, have, w.size, False))
        done = await fetch_file(ws, link, wanted.list, wanted.size, timeout=timeout,
                                progress=report)
        if done and progress is not None:
            progress(wanted.list, wanted.size, wanted.size, True)
        completed += done
    return sent, completed


async def fetch_file(ws: Workspace, link: RelayLink, list_id: bytes, size: int, *,
                     timeout: float = 30.0,
                     progress: Callable[[int], None] | None = None) -> bool:
    """Fetch one file's chunks (its list first) from the connected relays; whether it is
    complete here now. `progress(have)`: bytes of the file here, after each batch."""
    if not ws.files.chunks.has(list_id):
        for cid, data in (await link.fetch_chunks([list_id], timeout)).items():
            ws.files.chunks.put(cid, data)
    ids = ws.files.chunk_ids(list_id, size)
    if ids is None:
        return False
    for start in range(0, len(ids), FETCH_BATCH):
        missing = ws.files.chunks.missing(ids[start:start + FETCH_BATCH])
        for cid, data in (await link.fetch_chunks(missing, timeout)).items():
            ws.files.chunks.put(cid, data)
        if progress is not None:
            held = len(ids) - len(ws.files.chunks.missing(ids))
            progress(min(size, size * held // max(1, len(ids))))
    return bool(ws.files.complete(list_id, size))


def sync_once(ws: Workspace, addresses: list[RelayAddress] | None = None, *,
              timeout: float = 30.0) -> list[RelayState]:
    """One round with each relay (the workspace's, or `addresses`): upload what each lacks,
    download and ingest what this replica lacks, then move attached files (`move_files`);
    how each went (a refusal or an unreachable relay ends its wait early). A refusal that
    handed over a newer epoch's secret (this computer missed a rotation) is followed by a
    round under the new epoch."""
    wanted = addresses if addresses is not None else dialled(ws)
    if not wanted:
        raise WorkspaceError("no relays: an admin adds one with `hearth relay add HOST:PORT KEY`")

    async def run() -> list[RelayState]:
        link = link_for(ws, lambda: wanted)
        start = time.time()
        await link.start()
        try:
            deadline = time.monotonic() + timeout
            pending = set(wanted)
            while pending and time.monotonic() < deadline:
                for address in list(pending):
                    state = link.states.get(address)
                    if state is not None and (state.last_sync or 0) > start or (
                            state is not None and state.error and not state.connected):
                        pending.discard(address)
                if pending:
                    await asyncio.sleep(0.05)
            await move_files(ws, link, timeout=timeout)
            return [link.states.get(a) or RelayState(a, error="timed out") for a in wanted]
        finally:
            await link.close()

    def epoch() -> int | None:
        held = ws.members.secrets()
        return max(held) if held else None

    before = epoch()
    states = asyncio.run(run())
    if epoch() != before and any(not state.last_sync for state in states):
        states = asyncio.run(run())  # the relay handed over the new epoch's seals
    return states
