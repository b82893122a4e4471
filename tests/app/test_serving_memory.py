"""A member cannot make a node hold much memory by opening many sessions (issue #28, item 4):
64 sessions, each asking for 8 x 2,048 objects and never reading an answer, took a node from 73
MB to 735 MB. The node here is a real `hearth serve` process; its resident memory is read from
/proc while 64 sessions (half under the member's own key, half under fresh identities, from 8
addresses) ask and never read."""

from __future__ import annotations

import asyncio
import random
import time
from pathlib import Path

from core.identity import Identity
from sync.service import MAX_SESSIONS_PER_KEY
from tests.support import make_members
from tests.sync.serving import close, fill, hello, raw_peer

from .test_sync_cli import serving

SESSIONS = 64
ADDRESSES = 8
WANTS = 8
WANT_IDS = 2048
POSTS = 3000
POST_BYTES = 3800  # ~11 MB of posts: more than a session may queue (8 MiB)
MAX_GROWTH_MB = 150
WATCH_S = 8.0  # how long the node's memory is watched once every session has asked
POLL_S = 0.1


def _rss_mb(pid: int, field: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} for process {pid}")


async def _ask_and_never_read(port: int, secret: bytes, workspace: bytes, member: Identity,
                              ids: list[bytes]) -> tuple[list, int]:
    peers, served = [], 0
    for n in range(SESSIONS):
        who = member if n % 2 == 0 else Identity.generate()
        peer = await raw_peer(port, secret=secret, workspace=workspace, identity=who,
                              source=f"127.0.{50 + n % ADDRESSES}.1")
        peers.append(peer)
        await hello(peer)  # then the node's interest (served) or its bye (refused)
        await peer.pump(lambda p=peer: p.session.closed or p.session.rounds.peer_interest is not None)
        if peer.session.closed:
            continue
        served += 1
        for _ in range(WANTS):
            peer.session.send_frame({"t": "want", "ids": random.sample(ids, WANT_IDS)})
        await peer.flush()  # and never read again
    return peers, served


def test_a_member_with_64_sessions_that_never_read_cannot_grow_a_node_by_150_mb(
        hearth, tmp_path):
    pa, pb = make_members(tmp_path, 2)
    ids = fill(pa, POSTS, size=POST_BYTES)
    secret = pa.secret.read_bytes()
    member = Identity.load(pb.identity)
    from storage import Replica

    with Replica(pa.replica) as replica:
        workspace = replica.workspace.id
    with serving(hearth, pa.data) as node:
        pid = node.proc.pid
        before = _rss_mb(pid)

        async def attack() -> tuple[float, int]:
            peers, served = await _ask_and_never_read(node.port, secret, workspace, member, ids)
            peak, deadline = before, time.monotonic() + WATCH_S
            try:
                while time.monotonic() < deadline and peak - before <= MAX_GROWTH_MB:
                    peak = max(peak, _rss_mb(pid))
                    await asyncio.sleep(POLL_S)  # a measurement over time: no event to await
            finally:
                for peer in peers:
                    await close(peer)
            return peak, served

        peak, served = asyncio.run(attack())
    print(f"node RSS {before:.0f} MB before, {peak:.0f} MB at most with {SESSIONS} sessions "
          f"asking ({served} served)")
    assert 1 <= served <= MAX_SESSIONS_PER_KEY  # the member, within its key's limit
    assert peak - before <= MAX_GROWTH_MB, (before, peak, served)
