"""Query latency on a replica of 1,000,000 messages (50 channels, 200 authors), and on a
private channel of 100,000 sealed messages, in the same run.

Reports p50/p99 ms for: the latest 200 messages of a channel, channel state, channel list and
a full-text search; and bytes on disk per message. Targets: p50 <= 2 ms for the channel page
and state, <= 20 ms for search. The private channel (app/private_conversation.py): the latest
200 messages as `hearth read` and the window read them (`ws.private.read`) and a search over
this computer's index of what it opened (`ws.private.conversation.search`, two words as the
public search takes), after the first read on this computer (private_first_read_ms: it opens
every box); targets p50 <= 5 ms and <= 30 ms. Then a message posted and the page
read again (private_post_then_page_200: signing, storing and the incremental view, no target).

Opening a private channel at a start (private_open, for channels of 1,000, 10,000 and
100,000 sealed messages, each in a copy of its data folder): `first_read_ms`, the first read
on this computer (it opens every box and keeps what the conversation shows, app/
private_kept.py), then `start_ms`, the median of five starts, each a new Workspace opened and
the newest 200 messages read, as `hearth read` does in a new process (the kept page: no box
opened). Its baseline in the same run: public_start_ms, the median of five starts of the
public replica (opened, the newest 200 messages of one of its channels of 20,000 read).
Targets: start_ms <= 1,000 ms at 100,000 and within 10x of the public start at 10,000. And the
window's sidebar at a start (private_sidebar: 5 private channels of 20,000 messages by someone
else, never read: `ws.private.channels()` and `ws.private.unread()`): its time and how many
boxes it opens (at most UNREAD_CAP a channel: 5,000 of the 100,000).
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import app.private  # noqa: E402
from app.private import _box  # noqa: E402
from bench._common import RESULTS, Target, options, report  # noqa: E402
from bench._corpus import WORDS, posts  # noqa: E402
from storage import Replica  # noqa: E402
from storage._schema import SCHEMA_VERSION  # noqa: E402

COUNT = int(os.environ.get("HEARTH_BENCH_MESSAGES", 1_000_000))
PRIVATE_COUNT = int(os.environ.get("HEARTH_BENCH_PRIVATE_MESSAGES", 100_000))
TINY_PRIVATE = 500
OPEN_SIZES = (1_000, 10_000, PRIVATE_COUNT)
TINY_OPEN_SIZES = (100, TINY_PRIVATE)
SIDEBAR = (5, 20_000)  # channels, messages in each
TINY_SIDEBAR = (2, 300)
STARTS = 5
WORKSPACE = bytes(range(32))
TINY_COUNT = 2_000
RUNS = 200


def replica_path(count: int) -> Path:
    """Build the replica once through the real ingest path; later runs reuse the file."""
    path = RESULTS / "cache" / f"queries-{count}-v{SCHEMA_VERSION}.sqlite3"
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".building")
    for stale in path.parent.glob(tmp.name + "*"):
        stale.unlink()
    replica = Replica.create(tmp, WORKSPACE, bytes(32))
    step = 200_000
    for start in range(0, count, step):
        raws = posts(min(step, count - start), workspace=WORKSPACE, offset=start)
        for i in range(0, len(raws), 5_000):
            replica.ingest(raws[i:i + 5_000])
    replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    replica.close()
    tmp.rename(path)
    return path


def timed(fn, runs: int = RUNS) -> dict:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return {"p50_ms": round(statistics.median(samples), 3),
            "p99_ms": round(samples[int(len(samples) * 0.99) - 1], 3)}


def _fill(ws, channel: bytes, count: int, rng: random.Random) -> None:
    """`count` sealed messages by `ws`'s member in its private channel, through ingest."""
    from core.objects import authored

    epoch, key = ws.private.newest_key(channel)
    heads = ws.replica.heads(channel)
    ts = max(ts for _, ts in heads) + 1
    batch = []
    for n in range(count):
        nonce, box = _box(key, {"text": " ".join(rng.choice(WORDS) for _ in range(
            rng.randint(4, 20))) + f" #{n}"})
        obj = authored(ws.identity, "post/sealed", stream=channel, body={
            "channel": channel, "epoch": epoch, "nonce": nonce, "box": box},
            now_ms=ts + n, heads=heads)
        heads = [(obj.id, obj.ts)]
        batch.append(obj.raw)
        if len(batch) == 5_000:
            ws.replica.ingest(batch)
            batch = []
    ws.replica.ingest(batch)


def private_workspace(count: int) -> tuple[Path, bytes]:
    """A workspace whose creator has a private channel of `count` sealed messages, built once
    through the real ingest path: (its data folder, channel)."""
    from app.paths import Paths
    from app.workspace import Workspace

    folder = RESULTS / "cache" / f"queries-private-{count}-v{SCHEMA_VERSION}"
    done = folder / "channel"
    if done.exists():
        return folder, bytes.fromhex(done.read_text())
    if folder.exists():
        shutil.rmtree(folder)
    paths = Paths.resolve(folder, "default")
    Workspace.init(paths, "ada").close()
    with Workspace.open(paths) as ws:
        channel = ws.private.create("bench-private", [])
        _fill(ws, channel, count, random.Random(2))
        ws.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    done.write_text(channel.hex())
    return folder, channel


def sidebar_workspace(channels: int, each: int) -> Path:
    """bob's data folder: `channels` private channels ada made with him, `each` messages of
    hers in every one, none read by him; built once through the real ingest path."""
    from app.workspace import Workspace
    from bench._workspaces import two_members

    root = RESULTS / "cache" / f"queries-sidebar-{channels}x{each}-v{SCHEMA_VERSION}"
    if (root / "done").exists():
        return root / "b"
    if root.exists():
        shutil.rmtree(root)
    ada, bob = two_members(root)
    with Workspace.open(bob) as ws:
        bob_key = ws.key
    rng = random.Random(3)
    with Workspace.open(ada) as ws:
        for n in range(channels):
            _fill(ws, ws.private.create(f"busy-{n}", [bob_key]), each, rng)
        raws = [raw for (raw,) in ws.replica.conn.execute("SELECT raw FROM objects ORDER BY oid")]
    with Workspace.open(bob) as ws:
        for i in range(0, len(raws), 5_000):
            ws.replica.ingest(raws[i:i + 5_000])
        ws.replica.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    (root / "done").touch()
    return root / "b"


def private_open(count: int) -> dict:
    """The first read of a private channel of `count` messages here, then starts (see the
    docstring)."""
    from app.paths import Paths
    from app.workspace import Workspace

    folder, channel = private_workspace(count)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(folder, copy)
        paths = Paths.resolve(copy, "default")
        with Workspace.open(paths) as ws:
            start = time.perf_counter()
            ws.private.read(channel, limit=200)
            first = (time.perf_counter() - start) * 1000
        starts = []
        for _ in range(STARTS):
            start = time.perf_counter()
            with Workspace.open(paths) as ws:
                shown = ws.private.read(channel, limit=200)
                starts.append((time.perf_counter() - start) * 1000)
                assert len(shown) == min(200, count) and not ws.private.conversation._states
    return {"first_read_ms": round(first, 1), "start_ms": round(statistics.median(starts), 1)}


def public_start(path: Path, channel: str) -> float:
    """The median of STARTS starts of the public replica showing a channel's newest page."""
    starts = []
    for _ in range(STARTS):
        start = time.perf_counter()
        with Replica(path) as replica:
            replica.messages(channel, limit=200)
            starts.append((time.perf_counter() - start) * 1000)
    return round(statistics.median(starts), 1)


def private_sidebar(channels: int, each: int) -> dict:
    """The window's sidebar at a start: bob's private channels and their unread counts."""
    from app.paths import Paths
    from app.workspace import Workspace

    folder = sidebar_workspace(channels, each)
    opened = 0
    real = app.private._open_box

    def counting(key: bytes | None, body: dict) -> dict | None:
        nonlocal opened
        opened += 1
        return real(key, body)

    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "b"
        shutil.copytree(folder, copy)
        app.private._open_box = counting
        try:
            start = time.perf_counter()
            with Workspace.open(Paths.resolve(copy, "default")) as ws:
                listed = ws.private.channels()
                unread = ws.private.unread()
                took = (time.perf_counter() - start) * 1000
        finally:
            app.private._open_box = real
    return {"channels": len(listed), "messages": channels * each,
            "unread": sum(count for count, _ in unread.values()),
            "start_ms": round(took, 1), "boxes_opened": opened}


def private_figures(count: int, rng: random.Random) -> dict:
    from app.paths import Paths
    from app.workspace import Workspace

    folder, channel = private_workspace(count)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "data"
        shutil.copytree(folder, copy)  # messages are posted in it: the cache stays as built
        with Workspace.open(Paths.resolve(copy, "default")) as ws:
            start = time.perf_counter()
            shown = ws.private.read(channel, limit=200)
            first = (time.perf_counter() - start) * 1000
            figures = {
                "private_messages": len(ws.private.conversation.state(channel).state.channel),
                "private_first_read_ms": round(first, 1),
                "private_page_200": timed(lambda: ws.private.read(channel, limit=200)),
                "private_search": timed(lambda: ws.private.conversation.search(
                    ((rng.choice(WORDS), False), (rng.choice(WORDS), True)), limit=50)),
                "private_page_size": len(shown),
            }
            # A message arrives (mine here: the same store) and the page is read again, as
            # the window does: only the new post is opened and indexed.
            figures["private_post_then_page_200"] = timed(lambda: (
                ws.private.post(channel, f"{rng.choice(WORDS)} {rng.choice(WORDS)}"),
                ws.private.read(channel, limit=200)), runs=50)
    return figures


def main() -> None:
    tiny = options(__doc__).tiny
    path = replica_path(TINY_COUNT if tiny else COUNT)
    rng = random.Random(1)
    with Replica(path) as replica:
        channels = [c.name for c in replica.channels()]
        messages = sum(c.messages for c in replica.channels())
        figures = {
            "messages": messages,
            "channel_page_200": timed(lambda: replica.messages(rng.choice(channels), limit=200)),
            "channel_state": timed(lambda: replica.channel_state(rng.choice(channels))),
            "channel_list": timed(replica.channels, runs=50),
            "search": timed(lambda: replica.search(f"{rng.choice(WORDS)} {rng.choice(WORDS)}",
                                                   limit=50)),
            "bytes_on_disk_per_message": round(path.stat().st_size / messages, 1),
        }
        figures["public_start_ms"] = public_start(path, channels[0])
    figures.update(private_figures(TINY_PRIVATE if tiny else PRIVATE_COUNT, rng))
    sizes = TINY_OPEN_SIZES if tiny else OPEN_SIZES
    figures["private_open"] = {str(n): private_open(n) for n in sizes}
    figures["private_sidebar"] = private_sidebar(*(TINY_SIDEBAR if tiny else SIDEBAR))
    # At 10,000 (tiny: its largest size).
    beside = figures["private_open"][str(sizes[1])]["start_ms"]
    figures["private_start_vs_public"] = round(beside / figures["public_start_ms"], 2)
    report("queries", figures, [
        Target("messages", ">", 0),
        Target("channel_page_200.p50_ms", "<=", 2, at_scale=True),
        Target("channel_state.p50_ms", "<=", 2, at_scale=True),
        Target("search.p50_ms", "<=", 20, at_scale=True),
        Target("private_messages", ">", 0),
        Target("private_page_size", "==", 200),
        Target("private_page_200.p50_ms", "<=", 5, at_scale=True),
        Target("private_search.p50_ms", "<=", 30, at_scale=True),
        Target("private_post_then_page_200.p50_ms", ">", 0),
        Target(f"private_open.{sizes[-1]}.start_ms", "<=", 1000, at_scale=True),
        Target("private_start_vs_public", "<=", 10, at_scale=True),
        Target("private_sidebar.boxes_opened", "<", SIDEBAR[0] * SIDEBAR[1], at_scale=True)])


if __name__ == "__main__":
    main()
