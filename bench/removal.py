"""Removing a member: what it costs the admin's node, and what sync costs after it.

A workspace of 50 members with 10 workspace-readable documents the admin edits and 10 private
channels of 10 members each, the member to remove in all of them; that member wrote 1,000,
10,000 or 100,000 posts (their removal lists every id the admin holds, so
the cost grows with their history). Reported, in ms:
- `remove_ms`: `ws.members.remove` whole: the removal, the kept lists, the new epoch's
  secret sealed to the 49 others, new keys for the documents' branches, and a new key for
  each private channel sealed to its 9 remaining members;
- `baseline_ms`, measured in the same run: sealing, signing and storing 49 secrets in one
  batch (what a rotation cannot do without); `remove_over_baseline` is the ratio;
- `view_ms`: the membership view computed afresh afterwards (every node does it once);
and, with two Nodes on 127.0.0.1, a `hearth sync --once` that finds nothing to move, before and
after the rotation (`sync_before_ms`, `sync_after_ms`, their ratio): sessions under the new
epoch cost what they did. Targets: `sync_after_over_before` <= 1.5, and `remove_ms` growing
at most 20x per tenfold of history (near-linear).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from app import joining, sharing  # noqa: E402
from app.documents import Documents  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import Target, options, report  # noqa: E402
from core import kinds  # noqa: E402
from core.identity import Identity, seal_to  # noqa: E402
from core.membership import secret_check  # noqa: E402
from core.objects import build  # noqa: E402

MEMBERS = 50
DOCUMENTS = 10
PRIVATE_CHANNELS = 10
PER_CHANNEL = 10
HISTORIES = (1_000, 10_000, 100_000)
TINY_HISTORIES = (20, 200)
SYNC_RUNS = 5


def _workspace(root: Path, history: int) -> tuple[Paths, Paths, bytes]:
    """The admin's data folder, a second member's (who syncs), and the key of the member to
    remove, whose `history` posts the admin holds."""
    admin = Paths.resolve(root / "admin", "default")
    other = Paths.resolve(root / "other", "default")
    with Workspace.init(admin, "ada") as ws:
        docs = Documents(ws)
        for n in range(DOCUMENTS):
            docs.write(docs.new(f"Document {n}"), f"text {n}")
    sharing.join_workspace(other, sharing.invite_for(admin, joining.identity_key(other)),
                           nick="bob")
    leaving = Identity.generate()
    with Workspace.open(admin) as ws:
        others = [Identity.generate().public_key for _ in range(MEMBERS - 3)]
        for key in others:
            ws.members.invite_for(key)
        ws.members.invite_for(leaving.public_key)
        for n in range(PRIVATE_CHANNELS):
            members = [leaving.public_key, *others[n:n + PER_CHANNEL - 2]]
            channel = ws.private.create(f"private-{n}", members)
            ws.private.post(channel, f"hello {n}")
        stream = kinds.channel_stream(ws.id, "general")
        ts = ws.replica.now_ms()
        for start in range(0, history, 5_000):
            ws.replica.ingest([build(leaving, "post/text", stream=stream, ts=ts + n,
                                     body={"channel": "general", "text": f"post {n}"}).raw
                               for n in range(start, min(start + 5_000, history))])
        assert len(ws.members.all()) == MEMBERS
    return admin, other, leaving.public_key


def _baseline_ms(ws: Workspace) -> float:
    """What a rotation cannot do without: 49 secrets sealed, signed and stored in one batch
    (signed by a stranger, so that they count for nothing and change no view)."""
    stranger, secret = Identity.generate(), os.urandom(32)
    members = list(ws.members.view().members)[:MEMBERS - 1]
    started = time.perf_counter()
    ws.replica.ingest([build(stranger, "workspace/key", stream=ws.id, ts=ws.replica.now_ms(),
                             body={"epoch": 1, "check": secret_check(secret), "recipient": m,
                                   "sealed": seal_to(m, secret)}) for m in members])
    return (time.perf_counter() - started) * 1000


def _sync_ms(other: Paths, port: int) -> float:
    times = []
    for _ in range(SYNC_RUNS):
        started = time.perf_counter()
        sharing.sync_once(other, "127.0.0.1", port)
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 1)


def _measure(root: Path, history: int) -> dict:
    admin, other, leaving = _workspace(root, history)
    node = Node(admin, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    try:
        sharing.sync_once(other, "127.0.0.1", node.port)  # bob holds everything
        before = _sync_ms(other, node.port)
        figures = node.run(lambda ws: _remove(ws, leaving)).result(60)
        sharing.sync_once(other, "127.0.0.1", node.port)  # bob takes in the new epoch
        after = _sync_ms(other, node.port)
    finally:
        node.stop()
    return figures | {"sync_before_ms": before, "sync_after_ms": after,
                      "sync_after_over_before": round(after / before, 2)}


def _remove(ws: Workspace, leaving: bytes) -> dict:
    baseline = _baseline_ms(ws)
    started = time.perf_counter()
    ws.members.remove(leaving, "benchmark")
    remove = (time.perf_counter() - started) * 1000
    ws.members._cache = None
    started = time.perf_counter()
    view = ws.members.view()
    view_ms = (time.perf_counter() - started) * 1000
    assert leaving in view.removed and view.epoch == 1
    assert all(ws.private.view(c.id).epoch == 1 for c in ws.private.channels())
    return {"remove_ms": round(remove, 1), "baseline_ms": round(baseline, 1),
            "remove_over_baseline": round(remove / baseline, 2), "view_ms": round(view_ms, 1)}


def main() -> None:
    histories = TINY_HISTORIES if options(__doc__).tiny else HISTORIES
    figures = {}
    for history in histories:
        with tempfile.TemporaryDirectory() as tmp:
            figures[str(history)] = _measure(Path(tmp), history)
    growth = {f"{small}->{big}": round(figures[str(big)]["remove_ms"]
                                       / figures[str(small)]["remove_ms"], 1)
              for small, big in zip(histories, histories[1:], strict=False)}
    largest = str(histories[-1])
    report("removal", {"members": MEMBERS, "documents": DOCUMENTS,
                       "private_channels": PRIVATE_CHANNELS,
                       "removed_members_posts": figures, "remove_growth": growth}, [
        Target(f"removed_members_posts.{largest}.sync_after_over_before", "<=", 1.5,
               at_scale=True),
        Target(f"remove_growth.{histories[-2]}->{largest}", "<=", 20, at_scale=True)])


if __name__ == "__main__":
    main()
