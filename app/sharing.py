"""Sharing a workspace: invite codes, joining, one-off syncs and bundle files."""

from __future__ import annotations

import asyncio
import os
import time
from dataclasses import dataclass
from pathlib import Path

from core import kinds
from core.encoding import EncodingError, dumps, loads
from storage import Replica, Status

from .invite import Invite
from .paths import Paths
from .workspace import (
    DEFAULT_CHANNEL,
    Workspace,
    WorkspaceError,
    _write_private,
    load_or_create_identity,
)

BUNDLE_KIND = "hearth/bundle"
MAX_BUNDLE_BYTES = 1 << 30
SYNC_ROUNDS = 4  # a first round moves the differences, the next proves there are none


def invite(paths: Paths) -> Invite:
    with Workspace.open(paths) as ws:
        return Invite(paths.secret.read_bytes(), ws.id, ws.replica.workspace.root)


def join_workspace(paths: Paths, code: str, *, nick: str | None = None) -> bytes:
    """Create this computer's replica of the workspace an invite code names."""
    invitation = Invite.decode(code)
    if paths.replica.exists():
        raise WorkspaceError(f"workspace {paths.workspace!r} already exists in {paths.data}; "
                             "choose another --workspace name")
    if nick is not None:
        kinds.check_name(nick, "nickname", kinds.MAX_NICK)
    identity = load_or_create_identity(paths)
    _write_private(paths.secret, invitation.secret)
    Replica.create(paths.replica, invitation.workspace, invitation.root).close()
    with Workspace(paths, identity, Replica(paths.replica)) as ws:
        if nick:
            ws.nick(nick)
        ws.join(DEFAULT_CHANNEL)
    return invitation.workspace


# One-off sync ---------------------------------------------------------------------------------

class SyncFailed(Exception):
    """`hearth sync --once` could not finish; the message says why, in one line."""


@dataclass
class SyncResult:
    peer_key: bytes
    rounds: int
    objects_sent: int
    objects_received: int
    ms: float


def sync_once(paths: Paths, host: str, port: int, *, timeout: float = 60.0) -> SyncResult:
    """Reconcile with one peer until a round finds nothing to move; remember the peer."""
    from sync.peers import PeerBook

    with Workspace.open(paths) as ws:
        secret = paths.secret.read_bytes()
        result = asyncio.run(_sync_once(ws, secret, host, port, timeout))
    book = PeerBook(paths.workspace_dir / "peers.json")
    peer = book.add(host, port, "manual")
    peer.key = result.peer_key.hex()
    peer.succeeded(time.time())
    peer.last_sync, peer.last_sync_ms = time.time(), round(result.ms, 1)
    peer.stats = {"rounds": result.rounds, "objects_sent": result.objects_sent,
                  "objects_received": result.objects_received}
    book.save()
    return result


async def _sync_once(ws: Workspace, secret: bytes, host: str, port: int,
                     timeout: float) -> SyncResult:
    # Imported here: every other `hearth` command starts faster without aiohttp.
    import aiohttp

    from sync import connection as conn_mod
    from sync.connection import Connection
    from sync.session import ObjectsReceived, ReconcileComplete, Session
    from sync.store import ReplicaStore

    started = time.monotonic()
    session = Session(ReplicaStore(ws.replica), initiator=True, secret=secret,
                      identity=ws.identity, workspace=ws.id, now=time.monotonic(),
                      reconcile_interval=None)
    outcome: dict = {}

    def on_event(connection: Connection, event) -> None:
        if isinstance(event, ObjectsReceived):
            results = ws.replica.ingest(event.raws)
            if any(r.status is Status.REJECTED for r in results):
                session.protocol_error("the peer sent an invalid object")
        elif isinstance(event, ReconcileComplete):
            if event.have == 0 and event.need == 0:
                outcome["done"] = event.round
                session.close("in sync")
            elif event.round >= SYNC_ROUNDS:
                session.close("still differing")
            else:
                session.reconcile(time.monotonic())

    async with aiohttp.ClientSession() as http:
        try:
            websocket = await conn_mod.connect(http, host, port)
        except (TimeoutError, OSError, aiohttp.ClientError) as exc:
            raise SyncFailed(f"cannot reach {host}:{port} ({exc.__class__.__name__}: "
                             f"{exc or 'timed out'})") from None
        connection = Connection(session, websocket, on_event, address=f"{host}:{port}")
        try:
            closed = await asyncio.wait_for(connection.run(), timeout)
        except TimeoutError:
            raise SyncFailed(f"timed out after {timeout:.0f} s syncing with {host}:{port}") from None
    if "done" not in outcome:
        if closed.error and session.peer_key is None:
            raise SyncFailed(f"handshake refused by {host}:{port}: {closed.reason}")
        raise SyncFailed(f"sync with {host}:{port} did not finish: {closed.reason}")
    stats = session.stats
    return SyncResult(session.peer_key, outcome["done"], stats.objects_sent,
                      stats.objects_received,
                      (time.monotonic() - started) * 1000)


# Bundles --------------------------------------------------------------------------------------

def export_bundle(paths: Paths, path: Path, *, channel: str | None = None) -> int:
    """Write the workspace's objects (or one channel's, with what they need) to `path`."""
    if path.exists():
        raise WorkspaceError(f"{path} already exists; choose a new file name")
    with Workspace.open(paths) as ws:
        conn = ws.replica.conn
        if channel is None:
            rows = conn.execute("SELECT id, raw FROM objects ORDER BY ts, id").fetchall()
        else:
            # The channel's stream, plus what makes it readable elsewhere: the workspace
            # stream (genesis, admins, policies) and everyone's nicknames.
            stream = kinds.channel_stream(ws.id, channel)
            if conn.execute("SELECT 1 FROM objects WHERE stream = ? LIMIT 1",
                            (stream,)).fetchone() is None:
                raise WorkspaceError(f"no channel {channel!r} in this replica")
            rows = conn.execute(
                "SELECT id, raw FROM objects WHERE stream IN (?, ?) OR type = 'post/info' "
                "OR id = ? ORDER BY ts, id", (stream, ws.id, ws.id)).fetchall()
        raws = [row[1] for row in rows]
        data = dumps({"kind": BUNDLE_KIND, "v": 1, "workspace": ws.id,
                      "ids": [row[0] for row in rows], "objects": raws})
    tmp = path.with_name(path.name + ".tmp")
    _write_private(tmp, data)
    os.replace(tmp, path)
    return len(raws)


def import_bundle(paths: Paths, path: Path) -> dict[str, int]:
    """Ingest a bundle through the one path of data; returns counts by answer."""
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise WorkspaceError(f"cannot read {path}: {exc.strerror}") from None
    if size > MAX_BUNDLE_BYTES:
        raise WorkspaceError(f"{path} is {size} bytes, larger than a bundle may be")
    try:
        bundle = loads(path.read_bytes())
    except EncodingError:
        raise WorkspaceError(f"{path} is not a Hearth bundle") from None
    if (not isinstance(bundle, dict) or bundle.get("kind") != BUNDLE_KIND
            or not isinstance(bundle.get("objects"), list)
            or not all(isinstance(raw, bytes) for raw in bundle["objects"])):
        raise WorkspaceError(f"{path} is not a Hearth bundle")
    if bundle.get("v") != 1:
        raise WorkspaceError(f"{path} is a bundle of version {bundle.get('v')!r}; "
                             "upgrade Hearth to read it")
    with Workspace.open(paths) as ws:
        if bundle.get("workspace") != ws.id:
            raise WorkspaceError(f"{path} belongs to another workspace")
        counts = {status.value: 0 for status in Status}
        raws = bundle["objects"]
        for start in range(0, len(raws), 5000):
            for result in ws.replica.ingest(raws[start:start + 5000]):
                counts[result.status.value] += 1
    return counts
