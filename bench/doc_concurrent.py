"""A concurrent editing trace replayed through core.documents, one commit per transaction.

The trace (josephg/editing-traces concurrent format: txns with agent, parents, patches;
numAgents; endContent) is made by bench/_doc_trace_gen.py from the automerge-paper trace: 3
authors who fork and merge often (cached in bench/results/cache/). Every txn becomes one
`Document.commit` by its author on `main`, on the commits of its parents: an author's commit
usually builds on commits that are not the branch's latest state (another author committed
meanwhile), and a txn with two or more parents is a merge. The final text must equal
endContent. In the same run the same txns are replayed into bare pycrdt, one document per
author exchanging the Yjs updates the others made (the baseline). Target: the Document replay
<= 4x the bare one.

Reports seconds, the ratio, commits, merges, and the cost per 1,000 txns in the 1,000 ending at
1k, 5k, 10k and 20k txns (and at the end when further on), for both.

HEARTH_BENCH_DOC_TXNS sets the number of the original trace's txns (default 20,000; the trace
has one more, the final merge); HEARTH_BENCH_DOC_BUDGET (seconds, default 600) stops the
Document replay where it got to, whose text is then checked against the bare replay's there;
HEARTH_BENCH_DOC_UNDO=1 tracks undo as an editor does; HEARTH_BENCH_DOC_PROFILE=N prints the
top N functions by cumulative time of the Document replay (under cProfile: slower)."""

from __future__ import annotations

import cProfile
import os
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._common import RESULTS, Target, options, report  # noqa: E402
from bench._doc_trace_gen import Replica, load_or_generate, merges  # noqa: E402
from bench.doc_trace import load_trace  # noqa: E402
from core.documents import Document  # noqa: E402
from core.identity import Identity  # noqa: E402

CHECKPOINTS = (1_000, 5_000, 10_000, 20_000)
PER = 1_000  # txns in each window whose cost is reported
CLOCK = 1_700_000_000_000


def replay_bare(trace: dict) -> tuple[list[float], Replica]:
    """Seconds elapsed after each txn, and the replica: bare pycrdt, one doc per author."""
    txns = [(t["agent"], t["parents"], t["patches"]) for t in trace["txns"]]
    replica = Replica(trace["numAgents"])
    marks = []
    start = time.perf_counter()
    for agent, parents, patches in txns:
        replica.step(agent, parents, patches)
        marks.append(time.perf_counter() - start)
    return marks, replica


def replay_document(trace: dict, *, undo: bool, budget: float,
                    profile: cProfile.Profile | None = None
                    ) -> tuple[list[float], Document, list[str]]:
    """Seconds elapsed after each txn committed (stopping once past `budget`), the document and
    the commit ids, txn by txn."""
    people = [Identity.generate() for _ in range(trace["numAgents"])]
    doc = Document.create(people[0], "doc-concurrent", clock=lambda: CLOCK, undo=undo)
    for person in people[1:]:
        doc.add_editor(people[0], person.public_key)
    txns = [(people[t["agent"]], [tuple(p) for p in t["patches"]], t["parents"])
            for t in trace["txns"]]
    ids: list[str] = []
    marks = []
    if profile is not None:
        profile.enable()
    start = time.perf_counter()
    for person, edits, parents in txns:
        ids.append(doc.commit(person, edits, [ids[p] for p in parents]))
        marks.append(elapsed := time.perf_counter() - start)
        if elapsed > budget:
            break
    if profile is not None:
        profile.disable()
    return marks, doc, ids


def per_thousand(marks: list[float], checkpoints: list[int]) -> dict[str, float]:
    """Milliseconds per 1,000 txns in the PER txns ending at each checkpoint reached."""
    out = {}
    for c in checkpoints:
        if c <= len(marks):
            before = marks[c - PER - 1] if c > PER else 0.0
            out[str(c)] = round((marks[c - 1] - before) * 1000 * 1000 / min(c, PER), 1)
    return out


def main() -> None:
    tiny = options(__doc__).tiny
    count = 300 if tiny else int(os.environ.get("HEARTH_BENCH_DOC_TXNS", CHECKPOINTS[-1]))
    budget = float(os.environ.get("HEARTH_BENCH_DOC_BUDGET", 600))
    undo = os.environ.get("HEARTH_BENCH_DOC_UNDO") == "1"
    top = int(os.environ.get("HEARTH_BENCH_DOC_PROFILE", 0))
    trace = load_or_generate(load_trace()["txns"], count, RESULTS / "cache")
    total = len(trace["txns"])
    checkpoints = [c for c in CHECKPOINTS if c <= total]
    if not checkpoints or total - checkpoints[-1] >= PER:  # 20,001 (the final merge) is 20k's
        checkpoints.append(total)

    bare_marks, replica = replay_bare(trace)
    assert replica.text(trace["txns"][-1]["agent"]) == trace["endContent"], "bare diverged"
    profile = cProfile.Profile() if top else None
    marks, doc, ids = replay_document(trace, undo=undo, budget=budget, profile=profile)
    reached = len(ids)
    text = doc.text([ids[-1]])
    if reached == total:
        assert doc.heads() == [ids[-1]], "the replay did not end with one head"
        assert text == trace["endContent"], "the Document replay diverged from endContent"
    else:  # stopped by the budget: the bare replay up to the same txn is what to match
        _, partial = replay_bare({**trace, "txns": trace["txns"][:reached]})
        assert text == partial.text(trace["txns"][reached - 1]["agent"]), "replay diverged"
    hearth_s, bare_s = marks[-1], bare_marks[reached - 1]
    report("doc_concurrent", {
        "txns": total, "txns_replayed": reached, "finished": reached == total,
        "agents": trace["numAgents"], "merges": merges(trace),
        "merges_replayed": merges({"txns": trace["txns"][:reached]}),
        "commits": sum(1 for o in doc.objects() if o.type == "doc/commit"),
        "final_characters": len(text), "undo_tracked": undo, "profiled": bool(top),
        "seconds": round(hearth_s, 3), "bare_seconds": round(bare_s, 3),
        "time_ratio": round(hearth_s / bare_s, 2),
        "ms_per_1k_txns": per_thousand(marks, checkpoints),
        "bare_ms_per_1k_txns": per_thousand(bare_marks, checkpoints),
    }, [Target("finished", "==", True), Target("time_ratio", "<=", 4, at_scale=True)])
    if profile is not None:
        pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(top)


if __name__ == "__main__":
    main()
