"""Commit cost against history length: the automerge-paper trace replayed through
Document.commit with one commit per transaction (as the window makes them), on one branch, each
commit followed by what the window asks next (the heads, the text there). Reports the median
cost per commit in the 500 commits ending at 1k, 10k, 50k and 150k commits, the cost of
signing plus sealing the same bytes with pynacl in the same run (each commit's bytes right after
it is made, so both see the same load on the machine) and the ratio, and the times to
open the document (from its objects, keys and a snapshot) and to read the text at a commit from
the middle of its history (the document opened with a snapshot at its heads and one every
2,000 commits, as checkpoints). Targets: median at 150k within 1.3x of that at 1k and at most 4x
sign+seal; open and read-at-middle each <= 200 ms.

HEARTH_BENCH_DOC_COMMITS scales it down (default 150000); HEARTH_BENCH_DOC_UNDO=1 tracks undo as
an editor does."""

from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import nacl.secret  # noqa: E402
import nacl.signing  # noqa: E402

from bench._common import Target, options, report  # noqa: E402
from bench.doc_trace import load_trace  # noqa: E402
from core.documents import Document  # noqa: E402
from core.identity import Identity  # noqa: E402

CHECKPOINTS = (1_000, 10_000, 50_000, 150_000)
WINDOW = 500  # commits whose median is reported at each checkpoint
RUNS = 3
CHECKPOINT_EVERY = 2_000  # commits between the snapshots kept for reading older commits
CLOCK = 1_700_000_000_000


def sign_and_seal(raws: list[bytes]) -> list[float]:
    """Seconds to seal (SecretBox) and sign (Ed25519) each of `raws`: the crypto floor."""
    key = nacl.signing.SigningKey.generate()
    box = nacl.secret.SecretBox(os.urandom(nacl.secret.SecretBox.KEY_SIZE))
    out = []
    for raw in raws:
        start = time.perf_counter()
        box.encrypt(raw)
        key.sign(raw)
        out.append(time.perf_counter() - start)
    return out


def timed(action) -> tuple[float, object]:
    start = time.perf_counter()
    value = action()
    return (time.perf_counter() - start) * 1000, value


def main() -> None:
    tiny = options(__doc__).tiny
    total = 1_000 if tiny else int(os.environ.get("HEARTH_BENCH_DOC_COMMITS", CHECKPOINTS[-1]))
    undo = os.environ.get("HEARTH_BENCH_DOC_UNDO") == "1"
    checkpoints = [c for c in CHECKPOINTS if c <= total] or [total]
    if checkpoints[-1] != total:
        checkpoints.append(total)
    txns = load_trace()["txns"]
    me = Identity.generate()
    doc = Document.create(me, "automerge-paper", clock=lambda: CLOCK, undo=undo)
    heads = doc.heads()
    costs: list[float] = []
    floors: list[float] = []  # sign+seal of the commits in the reported windows
    windows = {n for c in checkpoints for n in range(max(0, c - WINDOW), c)}
    ids: list[str] = []
    texts: dict[int, str] = {}  # commit number -> text there, to check reads against
    per_commit: dict[str, dict[str, float]] = {}
    kept = []  # snapshots every CHECKPOINT_EVERY commits
    for n in range(total):
        edits = [tuple(p) for p in txns[n % len(txns)]["patches"]]
        if n >= len(txns):  # past the trace's end: keep editing the text it left
            edits = [(0, 0, "x")]
        start = time.perf_counter()
        commit = doc.commit(me, edits, heads)
        heads = doc.heads()
        text = doc.text(heads)
        costs.append(time.perf_counter() - start)
        ids.append(commit)
        if n in windows:
            floors.extend(sign_and_seal([doc.held.objects[bytes.fromhex(commit)].raw]))
        if n + 1 in checkpoints:
            window = costs[-min(WINDOW, len(costs)):]
            floor = statistics.median(floors[-len(window):])
            median = statistics.median(window)
            per_commit[str(n + 1)] = {"median_ms": round(median * 1000, 4),
                                      "sign_seal_ms": round(floor * 1000, 4),
                                      "ratio_to_sign_seal": round(median / floor, 2)}
        if n + 1 == total // 2:
            texts[n] = text
        if (n + 1) % CHECKPOINT_EVERY == 0:  # untimed: the app's save takes these
            kept.append(doc.snapshot("main"))
    middle = total // 2 - 1

    objects, keys, snapshot = doc.objects(), doc.keys(), doc.snapshot("main")
    opens, reads = [], []
    for _ in range(RUNS):
        ms, opened = timed(lambda: Document.load(objects, identity=me, keys=keys,
                                                 snapshots=[*kept, snapshot],
                                                 clock=lambda: CLOCK))
        more, value = timed(lambda doc=opened: doc.text(doc.heads()))
        assert value == text, "the opened document reads differently"
        opens.append(ms + more)
        ms, value = timed(lambda doc=opened: doc.text([ids[middle]]))
        assert value == texts[middle], "the text at the middle commit differs from the replay"
        reads.append(ms)
    first, last = per_commit[str(checkpoints[0])], per_commit[str(checkpoints[-1])]
    report("doc_history", {
        "commits": total, "undo_tracked": undo, "per_commit": per_commit,
        "growth_last_over_first": round(last["median_ms"] / first["median_ms"], 2),
        "last_ratio_to_sign_seal": last["ratio_to_sign_seal"],
        "open_and_render_ms": round(statistics.median(opens), 1),
        "read_at_middle_commit_ms": round(statistics.median(reads), 1),
        "checkpoint_every": CHECKPOINT_EVERY, "checkpoints": len(kept),
        "checkpoint_bytes": sum(len(c[4]) for c in kept),
    }, [Target("growth_last_over_first", "<=", 1.3, at_scale=True),
        Target("last_ratio_to_sign_seal", "<=", 4, at_scale=True),
        Target("open_and_render_ms", "<=", 200, at_scale=True),
        Target("read_at_middle_commit_ms", "<=", 200, at_scale=True)])


if __name__ == "__main__":
    main()
