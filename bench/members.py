"""Members and invites at 100, 1,000 and 10,000 members (app/membership.py).

For each size: a workspace whose members were admitted with invites (one invite per ten
members) through the real ingest path. Reported, in ms (median of runs):
- `load`: reading and decoding every membership object (the baseline: what any view pays);
- `view`: computing the membership view from them (`view_over_load` is the ratio);
- `members`: the member list a window or `hearth workspace members` shows (view cached);
- `admit`: what a member's node does when a newcomer proves a code in a join session
  (`join_key_for` then `admit`: two signed objects, then the view again);
and how each grows from one size to the next (`growth`: ratio per tenfold). Target: each grows
at most 20x per tenfold (near-linear; a quadratic step would show 100x).
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from app.invite import Invite  # noqa: E402
from app.membership import invite_tag  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import Target, options, report  # noqa: E402
from core.identity import Identity  # noqa: E402
from core.objects import build  # noqa: E402

SIZES = (100, 1_000, 10_000)
TINY_SIZES = (10, 100)
GROWTH = 20  # per tenfold, at most
PER_INVITE = 10
RUNS = 5


def _median_ms(fn, runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 3)


def _workspace(root: Path, size: int) -> tuple[Workspace, list[str]]:
    paths = Paths.resolve(root / f"ws{size}", "default")
    ws = Workspace.init(paths, "ada")
    codes, raws, ts = [], [], ws.replica.now_ms()
    for start in range(0, size - 1, PER_INVITE):
        code, invite_id = ws.members.invite()
        codes.append(code)
        ts = max(ts, ws.replica.object(invite_id).ts)  # admitted after it was made
        for _ in range(start, min(start + PER_INVITE, size - 1)):
            ts += 1
            raws.append(build(ws.identity, "member/admit", stream=ws.id, ts=ts,
                              body={"key": Identity.generate().public_key,
                                    "invite": invite_id}).raw)
    for i in range(0, len(raws), 5_000):
        ws.replica.ingest(raws[i:i + 5_000])
    assert len(ws.members.all()) == size
    return ws, codes


def _measure(ws: Workspace, codes: list[str]) -> dict:
    def cold() -> None:
        ws.members._cache = None
        ws.members.view()

    def admit() -> None:
        tag = invite_tag(Invite.decode(codes[len(codes) // 2]).seed)
        ws.members.join_key_for(tag)
        assert ws.members.admit(Identity.generate().public_key, tag) is None
        ws.members.view()

    load = _median_ms(ws.replica.membership.objects)
    view = _median_ms(cold)
    ws.members.view()
    return {"load_ms": load, "view_ms": view, "view_over_load": round(view / load, 2),
            "members_ms": _median_ms(ws.members.all),
            "admit_ms": _median_ms(admit)}


def main() -> None:
    sizes = TINY_SIZES if options(__doc__).tiny else SIZES
    figures: dict = {}
    with tempfile.TemporaryDirectory() as tmp:
        for size in sizes:
            ws, codes = _workspace(Path(tmp), size)
            try:
                figures[str(size)] = _measure(ws, codes)
            finally:
                ws.close()
    growth = {}
    for small, big in zip(sizes, sizes[1:], strict=False):
        growth[f"{small}->{big}"] = {
            key: round(figures[str(big)][key] / figures[str(small)][key], 1)
            for key in ("load_ms", "view_ms", "members_ms", "admit_ms")}
    largest = f"{sizes[-2]}->{sizes[-1]}"
    report("members", {"sizes": figures, "growth": growth}, [
        Target(f"growth.{largest}.{key}", "<=", GROWTH, at_scale=True)
        for key in ("load_ms", "view_ms", "members_ms", "admit_ms")])


if __name__ == "__main__":
    main()
