"""Replay the automerge-paper editing trace (259,778 single-character edits) through
Document.commit, one commit per 50 transactions; in the same run replay the same edits into a
bare pycrdt Text. Reports seconds, peak memory, stored and envelope bytes per commit, and the
ratios. Targets: <= 1.5x the bare time; envelope <= 300 bytes per commit; stored bytes <= 6x
the bare document's encoded size."""

from __future__ import annotations

import gzip
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pycrdt  # noqa: E402

from bench._common import DATA, Target, options, report  # noqa: E402
from bench._doc_trace_gen import patch  # noqa: E402
from core.documents import Document  # noqa: E402
from core.identity import Identity  # noqa: E402

PER_COMMIT = 50
TINY_TXNS = 2_000


def load_trace(txns: int | None = None) -> dict:
    """The trace; its first `txns` only, with the text they leave as endContent, if given."""
    with gzip.open(DATA / "automerge-paper.json.gz") as f:
        trace = json.load(f)
    if txns is None:
        return trace
    cut = {**trace, "txns": trace["txns"][:txns]}
    return {**cut, "endContent": bare(groups(cut))[2]}


def groups(trace: dict) -> list[list[tuple[int, int, str]]]:
    txns = trace["txns"]
    return [[tuple(p) for t in txns[i:i + PER_COMMIT] for p in t["patches"]]
            for i in range(0, len(txns), PER_COMMIT)]


def bare(batches) -> tuple[float, int, str]:
    start = time.perf_counter()
    doc = pycrdt.Doc()
    text = doc.get("text", type=pycrdt.Text)
    for batch in batches:
        patch(text, batch)
    elapsed = time.perf_counter() - start
    return elapsed, len(doc.get_update()), str(text)


def hearth(batches, *, undo: bool = False) -> tuple[float, Document, str]:
    me = Identity.generate()
    start = time.perf_counter()
    doc = Document.create(me, "automerge-paper", clock=lambda: 1_700_000_000_000, undo=undo)
    heads = doc.heads()
    for batch in batches:
        heads = [doc.commit(me, batch, heads)]
    elapsed = time.perf_counter() - start
    return elapsed, doc, doc.text(heads)


def main() -> None:
    trace = load_trace(TINY_TXNS if options(__doc__).tiny else None)
    batches = groups(trace)
    # Times first, untraced: tracemalloc slows whatever allocates more Python objects.
    bare_s, bare_bytes, bare_text = bare(batches)
    hearth_s, doc, text = hearth(batches)
    undo_s, _, undo_text = hearth(batches, undo=True)  # as the editor runs: undo tracked
    assert bare_text == trace["endContent"], "bare replay diverged"
    assert text == undo_text == trace["endContent"], "Document replay diverged"
    tracemalloc.start()
    bare(batches)
    bare_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.reset_peak()
    hearth(batches)
    hearth_peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    commits = [o for o in doc.objects() if o.type == "doc/commit"]
    stored = sum(len(o.raw) for o in doc.objects())
    # Envelope: everything in a commit object but the encrypted Yjs update it carries.
    payload = sum(len(o.body["box"]) for o in commits)
    envelope = (sum(len(o.raw) for o in commits) - payload) / len(commits)
    report("doc_trace", {
        "edits": sum(len(b) for b in batches), "commits": len(commits),
        "final_characters": len(text),
        "seconds": round(hearth_s, 3), "bare_seconds": round(bare_s, 3),
        "time_ratio": round(hearth_s / bare_s, 3),
        "seconds_with_undo_tracking": round(undo_s, 3),
        "time_ratio_with_undo_tracking": round(undo_s / bare_s, 3),
        "peak_memory_mb": round(hearth_peak / 2**20, 1),
        "bare_peak_memory_mb": round(bare_peak / 2**20, 1),
        "stored_bytes": stored, "bare_encoded_bytes": bare_bytes,
        "stored_ratio": round(stored / bare_bytes, 2),
        "envelope_bytes_per_commit": round(envelope, 1),
    }, [Target("time_ratio", "<=", 1.5, at_scale=True),
        Target("stored_ratio", "<=", 6, at_scale=True),
        Target("envelope_bytes_per_commit", "<=", 300)])


if __name__ == "__main__":
    main()
