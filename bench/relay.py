"""Syncing through a relay (relay/, sync.relay_client) on loopback, in one process: a member
BEHIND objects behind a SHARED-object workspace catches up through the relay (time; bytes on
the wire as a ratio of the bytes of the objects that moved), a live message from A to B
through the relay (p50/p99 from `offer` to B's ingest; target p99 <= 50 ms), the envelope
overhead (envelope bytes / object bytes; target <= 1.15) and the relay's file per envelope.

Then a crowd: a `hearth relay serve` process holding CROWD_SHARED envelopes, and CROWD members
connected at once, each reconciling (and putting 10 envelopes of its own): the relay's RSS
(target <= 300 MB) and its CPU per member round.

The baseline, in the same run: the same member (a copy of its data folder) catching up in a
direct LAN session with A's node on loopback (`hearth sync --once`); the relay's catch-up as a
ratio of its time and of its bytes. Its time twice: a link that has worked out its side of the
set beforehand, as a running node's has (`warm`, what the target checks: a laptop that wakes),
and a link made for the round (`cold`: the first round after the app starts, which reads every
object once more). Growth: a relay's store holding 10k, 100k and 1M envelopes
and a member 1,000 behind reconciling with it in memory (no sockets): fill rate, the round's
time and the file's bytes per envelope.

Sizes: 100,000 shared objects, 1,000 behind, 200 live messages, 100 members in the crowd over
10,000 envelopes; `--tiny`: 300, 20, 5, 5 and 200, growth at 1k and 3k. Targets (checked at
full size): live p99 <= 50 ms, catch-up <= 1.2x the LAN session's bytes and <= 1.5x its time,
envelope overhead <= 1.15x, relay peak RSS <= 300 MB."""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app import relays  # noqa: E402
from app.membership import session_secrets  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import Target, options, report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from bench._workspaces import two_members  # noqa: E402
from core.encoding import dumps  # noqa: E402
from core.identity import Identity  # noqa: E402
from core.objects import decode_trusted  # noqa: E402
from core.relay_seal import Envelope, EpochKeys, space_id  # noqa: E402
from relay.peer import RelayPeer, Snapshots  # noqa: E402
from relay.server import DB_FILE, RelayServer  # noqa: E402
from relay.store import RelayStore  # noqa: E402
from sync.events import SessionEnded  # noqa: E402
from sync.relay_client import RelayAddress  # noqa: E402
from sync.relay_member import (  # noqa: E402
    Authorized,
    Opened,
    Reconciled,
    Registration,
    RelayMember,
    exchange,
)
from sync.relay_wire import MAX_MESSAGE, relay_public_key  # noqa: E402
from sync.service import SyncService  # noqa: E402

SHARED, BEHIND, LIVE, CROWD, CROWD_SHARED = 100_000, 1_000, 200, 100, 10_000
GROWTH = (10_000, 100_000, 1_000_000)
TINY = {"SHARED": 300, "BEHIND": 20, "LIVE": 5, "CROWD": 5, "CROWD_SHARED": 200,
        "GROWTH": (1_000, 3_000)}
SPACE_GROWTH = bytes(32)
TARGETS = [Target("live_p99_ms", "<=", 50, at_scale=True),
           Target("catch_up_bytes_vs_lan", "<=", 1.2, at_scale=True),
           Target("catch_up_time_vs_lan", "<=", 1.5, at_scale=True),
           Target("envelope_overhead", "<=", 1.15, at_scale=True),
           Target("relay_peak_rss_mb", "<=", 300, at_scale=True)]
TIMEOUT_S = 600.0


async def _round(ws: Workspace, address: RelayAddress, *, warm: bool = False,
                 **kwargs) -> tuple[float, int]:
    """One link's first round: (seconds, bytes both ways). `warm`: the link has worked out its
    side of the set beforehand, as a running node's has (RelayLink.prepare), not timed."""
    link = relays.link_for(ws, lambda: [address], **kwargs)
    if warm:
        link.prepare()
    start, wall = time.monotonic(), time.time()
    await link.start()
    try:
        if not await link.wait_synced(address, wall, TIMEOUT_S):
            raise RuntimeError(f"no round with the relay: {link.states.get(address)}")
        state = link.states[address]
        return time.monotonic() - start, state.bytes_sent + state.bytes_received
    finally:
        await link.close()


async def _live(a: Workspace, b: Workspace, address: RelayAddress) -> list[float]:
    """Per message: seconds from A's offer to the object in B's replica."""
    waiting: dict[bytes, float] = {}
    took: list[float] = []
    arrived = asyncio.Event()

    def ingest(raws: list[bytes]) -> None:
        b.replica.ingest(raws)
        for raw in raws:
            sent = waiting.pop(decode_trusted(raw).id, None)
            if sent is not None:
                took.append(time.perf_counter() - sent)
                arrived.set()
    link_a = relays.link_for(a, lambda: [address])
    link_b = relays.link_for(b, lambda: [address], on_objects=ingest)
    await link_a.start()
    await link_b.start()
    try:
        for link in (link_a, link_b):
            assert await link.wait_synced(address, 0, TIMEOUT_S)
        for n in range(LIVE):
            obj = a.post("general", f"live {n}")
            arrived.clear()
            waiting[obj.id] = time.perf_counter()
            link_a.offer([obj.raw])
            await asyncio.wait_for(arrived.wait(), 10)
    finally:
        await link_a.close()
        await link_b.close()
    return took


async def _lan_round(a: Workspace, b: Workspace) -> tuple[float, int]:
    """The baseline: B's direct session with A's node on loopback, until a round finds nothing
    to move (`hearth sync --once`): (seconds, bytes both ways)."""
    ended: list[SessionEnded] = []
    serving = SyncService(a.replica, a.identity, session_secrets(a.members)[0],
                          host="127.0.0.1", mdns=False, reconcile_interval=None)
    newest, older = session_secrets(b.members)
    dialling = SyncService(b.replica, b.identity, newest, older_secrets=older, mdns=False,
                           reconcile_interval=None,
                           on_event=lambda e: ended.append(e) if isinstance(e, SessionEnded)
                           else None)
    await serving.async_start()
    try:
        start = time.monotonic()
        await dialling.async_sync_once("127.0.0.1", serving.port, timeout=TIMEOUT_S)
        took = time.monotonic() - start
        await dialling.async_stop()
    finally:
        await serving.async_stop()
    return took, sum(e.bytes for e in ended)


async def _bench(a: Workspace, b: Workspace, folder: Path, moved: int,
                 b_warm: Workspace) -> dict:
    server = RelayServer(folder, quota=1 << 40)
    port = await server.start("127.0.0.1", 0)
    address = RelayAddress("127.0.0.1", port, server.key)
    try:
        upload_s, upload_bytes = await _round(a, address)
        catch_up_s, catch_up_bytes = await _round(b, address)
        warm_s, _ = await _round(b_warm, address, warm=True)
        live = await _live(a, b, address)
        envelopes = server.store.space(server.store.spaces()[0].space)
        assert envelopes is not None
        count = envelopes.count
    finally:
        await server.close()
    db = sum(p.stat().st_size for p in folder.iterdir() if p.name.startswith(DB_FILE))
    live_ms = sorted(t * 1000 for t in live)
    return {
        "envelopes": count, "upload_s": round(upload_s, 2),
        "catch_up_ms": round(catch_up_s * 1000, 1),
        "warm_catch_up_ms": round(warm_s * 1000, 1),
        "upload_rate_per_s": round(count / upload_s) if upload_s else None,
        "catch_up_s": round(catch_up_s, 3), "catch_up_bytes": catch_up_bytes,
        "catch_up_bytes_ratio": round(catch_up_bytes / moved, 3) if moved else None,
        "live_p50_ms": round(statistics.median(live_ms), 2),
        "live_p99_ms": round(live_ms[min(len(live_ms) - 1, int(len(live_ms) * 0.99))], 2),
        "relay_bytes_per_envelope": round(db / count, 1) if count else None,
    }


async def _member(address: RelayAddress, keys: EpochKeys, space: bytes,
                  items: dict[bytes, int], envelopes: dict[bytes, Envelope],
                  registration: Registration | None, rounds_done: asyncio.Event,
                  hold: asyncio.Event, n: int = 0) -> None:
    """One simulated member: reconcile once, then stay connected until `hold` is set. Each
    dials from its own loopback address (127.0.1.n), as members on their own computers, so
    the relay's per-address limit counts them apart."""
    member = RelayMember(address.key, keys, space,
                         lambda ids: [envelopes[i] for i in ids if i in envelopes],
                         registration=registration)
    local = (f"127.0.{1 + n // 250}.{1 + n % 250}", 0)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(local_addr=local)) as http, \
            http.ws_connect(
            address.url, max_msg_size=MAX_MESSAGE) as ws:
        async def flush() -> None:
            for data in member.data_to_send():
                await ws.send_bytes(data)
        await flush()
        reader = asyncio.ensure_future(ws.receive())
        while not member.closed:
            done, _ = await asyncio.wait({reader, asyncio.ensure_future(hold.wait())},
                                         return_when=asyncio.FIRST_COMPLETED)
            if reader not in done:
                break
            msg = reader.result()
            if msg.type != aiohttp.WSMsgType.BINARY:
                break
            member.receive(msg.data)
            while (event := member.next_event()) is not None:
                if isinstance(event, Authorized):
                    member.reconcile(items)
                elif isinstance(event, Reconciled):
                    rounds_done.set()
            await flush()
            reader = asyncio.ensure_future(ws.receive())
        reader.cancel()


def _proc_figures(pid: int) -> tuple[float, int]:
    """(CPU seconds, peak RSS bytes) of a process, from /proc."""
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    cpu = (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")
    status = Path(f"/proc/{pid}/status").read_text()
    peak = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM"))
    return cpu, peak * 1024


async def _crowd(address: RelayAddress, pid: int, secret: tuple[int, bytes], workspace: bytes,
                 admin: Identity) -> dict:
    keys = EpochKeys.derive(*secret)
    space = space_id(workspace)
    shared = posts(CROWD_SHARED, workspace=workspace, workers=2)
    envelopes = {e.opaque: e for e in (keys.seal(r, decode_trusted(r).ts) for r in shared)}
    items = {o: e.bucket for o, e in envelopes.items()}
    first, hold = asyncio.Event(), asyncio.Event()
    seed = asyncio.ensure_future(_member(address, keys, space, items, envelopes,
                                         Registration(admin, ()), first, hold))
    await asyncio.wait_for(first.wait(), TIMEOUT_S)
    cpu_before, _ = _proc_figures(pid)
    start = time.monotonic()
    events = [asyncio.Event() for _ in range(CROWD)]
    crowd = []
    for n, done in enumerate(events):
        own = {e.opaque: e for e in (keys.seal(r, decode_trusted(r).ts) for r in
                                     posts(10, workspace=workspace, workers=1,
                                           offset=CROWD_SHARED + n * 10))}
        crowd.append(asyncio.ensure_future(_member(
            address, keys, space, {**items, **{o: e.bucket for o, e in own.items()}},
            {**envelopes, **own}, None, done, hold, n)))
    rounds = asyncio.ensure_future(asyncio.gather(*(e.wait() for e in events)))
    await asyncio.wait([rounds, seed, *crowd], timeout=TIMEOUT_S,
                       return_when=asyncio.FIRST_COMPLETED)
    for task in (seed, *crowd):
        if task.done():  # a member ended before the others' rounds: say why
            raise RuntimeError(f"a member's connection ended: {task.exception()!r}")
    if not rounds.done():
        raise RuntimeError("the crowd's rounds did not finish")
    took = time.monotonic() - start
    cpu_after, peak = _proc_figures(pid)
    hold.set()
    await asyncio.gather(seed, *crowd, return_exceptions=True)
    return {"crowd": CROWD, "crowd_shared": CROWD_SHARED, "crowd_round_s": round(took, 2),
            "relay_peak_rss_mb": round(peak / 2**20, 1),
            "relay_cpu_ms_per_member_round": round((cpu_after - cpu_before) * 1000 / CROWD, 2)}


def crowd(workspace: Workspace) -> dict:
    folder = Path(tempfile.mkdtemp())
    proc = subprocess.Popen([sys.executable, "-m", "app", "relay", "serve", "--host",
                             "127.0.0.1", "--port", "0", "--data", str(folder / "relay")],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().decode().split()[3].rpartition(":")[2])
        key = bytes.fromhex(proc.stdout.readline().decode().split()[1])
        return asyncio.run(_crowd(RelayAddress("127.0.0.1", port, key), proc.pid,
                                  workspace.members.newest_secret(), workspace.id, workspace.identity))
    finally:
        proc.terminate()
        proc.wait(30)
        shutil.rmtree(folder, ignore_errors=True)


def _growth(size: int, behind: int) -> dict:
    """A relay's store holding `size` envelopes of one space, and a member `behind` envelopes
    behind it reconciling with the relay in memory (sync.relay_member against relay.peer, no
    sockets): how filling, the round and the file grow with the relay's size."""
    keys = EpochKeys.derive(0, bytes(32))
    admin = Identity.from_seed(bytes([1]) * 32)
    relay_key = bytes([5]) * 32
    real = {e.opaque: e for e in (keys.seal(r, decode_trusted(r).ts)
                                  for r in posts(behind, workers=1, offset=size))}
    # What both hold: sealed-sized stand-ins (the relay never opens an envelope).
    filler = [Envelope(os.urandom(16), 480_000 + n // 1000, os.urandom(280))
              for n in range(size - behind)]
    with tempfile.TemporaryDirectory() as tmp:
        store = RelayStore(Path(tmp) / DB_FILE, quota=1 << 40)
        store.register(SPACE_GROWTH, keys.token_key, 0, [admin.public_key])
        start = time.perf_counter()
        for n in range(0, len(filler), 20_000):
            store.put(SPACE_GROWTH, filler[n:n + 20_000])
        store.put(SPACE_GROWTH, list(real.values()))
        fill_s = time.perf_counter() - start
        db = sum(p.stat().st_size for p in Path(tmp).iterdir())
        items = {e.opaque: e.bucket for e in filler}
        member = RelayMember(relay_public_key(relay_key), keys, SPACE_GROWTH, lambda ids: [])
        peer = RelayPeer(store, Snapshots(store), relay_key, max_spaces=10)
        start = time.perf_counter()
        opened = 0

        def handle(event: object) -> None:
            nonlocal opened
            if isinstance(event, Authorized):
                member.reconcile(items)
            elif isinstance(event, Opened):
                opened += len(event.raws)
        exchange(member, peer, handle)
        round_s = time.perf_counter() - start
        store.close()
    if opened != behind:
        raise RuntimeError(f"the member opened {opened} of {behind} envelopes")
    return {"envelopes": size, "fill_rate_per_s": round(size / fill_s),
            "round_ms": round(round_s * 1000, 1), "db_bytes_per_envelope": round(db / size, 1)}


def main() -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        pa, pb = two_members(Path(tmp))
        with Workspace.open(pa) as a, Workspace.open(pb) as b:
            a.create_channel("general", public=True)
            corpus = posts(SHARED + BEHIND, workspace=a.id, workers=2)
            a.replica.ingest(corpus)
            b.replica.ingest(corpus[:SHARED])
            b.replica.ingest([row[0] for row in a.replica.conn.execute(
                "SELECT raw FROM objects WHERE type != 'post/text'")])  # both hold them
            moved = sum(len(raw) for raw in corpus[SHARED:])
            keys = EpochKeys.derive(*a.members.newest_secret())
            sample = corpus[:2000]
            sealed = sum(len(dumps([e.opaque, e.bucket, e.box])) for e in
                         (keys.seal(raw, decode_trusted(raw).ts) for raw in sample))
            lan_copy = Path(tmp) / "b-lan"
            shutil.copytree(pb.data, lan_copy)
            with Workspace.open(Paths.resolve(lan_copy, "default")) as b_lan:
                lan_s, lan_bytes = asyncio.run(_lan_round(a, b_lan))
            warm_copy = Path(tmp) / "b-warm"
            shutil.copytree(pb.data, warm_copy)
            with Workspace.open(Paths.resolve(warm_copy, "default")) as b_warm:
                figures = asyncio.run(_bench(a, b, Path(tmp) / "relay", moved, b_warm))
            figures.update(crowd(a))
            figures |= {"lan_catch_up_ms": round(lan_s * 1000, 1), "lan_catch_up_bytes": lan_bytes,
                        "catch_up_time_vs_lan": round(figures["warm_catch_up_ms"] / 1000 / lan_s, 3),
                        "cold_catch_up_time_vs_lan": round(figures["catch_up_s"] / lan_s, 3),
                        "catch_up_bytes_vs_lan": round(figures["catch_up_bytes"] / lan_bytes, 3)}
    figures["growth"] = [_growth(size, min(BEHIND, size // 10)) for size in GROWTH]
    figures = {"shared": SHARED, "behind": BEHIND, "live_messages": LIVE,
               "envelope_overhead": round(sealed / sum(map(len, sample)), 3), **figures}
    report("relay", figures, TARGETS)
    return figures


if __name__ == "__main__":
    if options(__doc__).tiny:
        globals().update(TINY)
    main()
