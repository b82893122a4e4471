"""Reviewing documents: a diff with authors, and a merge's conflict detection, through the library
the window and `hearth doc` call (app/documents.py over a real replica, app/review.py).

Diff: a 100,000-character document (words in lines of about 70 characters), tagged; then two
editors make 300 small commits at random places (inserting, removing or replacing a few words,
each editor several commits in a row). Times `Documents.diff(tag, main)` on the document as
opened from the replica (cold: the first diff after opening; warm: the median of the next
ones), of which the text diff alone (diff-match-patch) and who made each change (core's replay).

Merge: the same kind of document is forked; each editor makes 1,000 such commits, one on main,
the other on the fork. Times `Documents.merge_preview` (the common past, both texts, the CRDT's
merged text, the conflicting regions and each side's authors) cold and warm, of which the
conflict detection alone (app/review.regions over the four texts), then merges with
`--prefer theirs`, checks that a fresh replay of the objects reads the same text, and reports
the merge commit's size.

Unalike: the text diff of two 240,000-character texts with little in common (a branch replaced
wholesale), which diff-match-patch does in about quadratic time: bounded by
app/unified_diff.DIFF_TIME_LIMIT_S (it took minutes without a limit, on the Node's thread).

Targets: the diff and the conflict detection each <= 500 ms.
HEARTH_BENCH_REVIEW_CHARS and HEARTH_BENCH_REVIEW_COMMITS scale it (defaults 100000, 1000).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app import review, unified_diff  # noqa: E402
from app.documents import Documents  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import Target, options, report  # noqa: E402
from core.documents import Document  # noqa: E402
from core.identity import Identity  # noqa: E402

CHARS = int(os.environ.get("HEARTH_BENCH_REVIEW_CHARS", 100_000))
MERGE_COMMITS = int(os.environ.get("HEARTH_BENCH_REVIEW_COMMITS", 1_000))
DIFF_COMMITS = 300
UNALIKE_CHARS = 240_000
RUN = 5  # commits an editor makes in a row before the other's turn (diff part)
WARM_RUNS = 5
TARGET_MS = 500
WORDS = ("the", "plan", "for", "spring", "is", "to", "ship", "editor", "and", "merge",
         "review", "first", "then", "comments", "presence", "markdown", "whatever", "people",
         "using", "it", "ask", "most")


def text_of(rng: random.Random, chars: int) -> str:
    lines, size = [], 0
    while size < chars:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 14)))
        lines.append(line)
        size += len(line) + 1
        if rng.random() < 0.15:
            lines.append("")
            size += 1
    return ("\n".join(lines) + "\n")[:chars]


def random_edit(rng: random.Random, length: int) -> tuple[int, int, str]:
    position = rng.randint(0, length)
    roll = rng.random()
    if roll < 0.6 or length - position < 12:
        return position, 0, rng.choice(WORDS) + " "
    if roll < 0.8:
        return position, rng.randint(1, 10), ""
    return position, rng.randint(1, 10), rng.choice(WORDS)


def edit(rng: random.Random, document: Document, who: Identity, branch: str) -> None:
    heads = document.heads(branch)
    length = len(document.text(heads))
    document.commit(who, [random_edit(rng, length)], heads, branch=branch)


def timed(action) -> tuple[float, object]:
    start = time.perf_counter()
    value = action()
    return (time.perf_counter() - start) * 1000, value


def cold_and_warm(action) -> tuple[float, float, object]:
    cold, value = timed(action)
    warm = statistics.median(timed(action)[0] for _ in range(WARM_RUNS))
    return round(cold, 1), round(warm, 1), value


def setup(folder: Path) -> tuple[Workspace, Documents, Identity]:
    paths = Paths.resolve(folder, "bench")
    ws = Workspace.init(paths, "alice")
    docs = Documents(ws)
    return ws, docs, Identity.generate()


def written(docs: Documents, bob: Identity, rng: random.Random, title: str) -> Document:
    document = docs.new(title)
    docs.add_editor(document, bob.public_key.hex())
    docs.write(document, text_of(rng, CHARS))
    return document


def bench_diff(docs: Documents, bob: Identity, rng: random.Random) -> dict:
    document = written(docs, bob, rng, "diff")
    docs.tag(document, "v1", None, "main")
    alice = docs.ws.identity
    for n in range(DIFF_COMMITS):
        edit(rng, document, alice if (n // RUN) % 2 == 0 else bob, "main")
    docs.save(document, cache=["main"])
    opened = docs.open(document.root.id)
    cold, warm, found = cold_and_warm(lambda: docs.diff(opened, "v1", "main"))
    old, new = opened.text([opened.tags()["v1"]]), opened.text(opened.heads())
    assert found.new_text == new and found.old_text == old
    assert "".join(s.text for s in found.segments if s.op != "-") == new
    assert "".join(s.text for s in found.segments if s.op != "+") == old
    assert set(found.authors) == {alice.public_key, bob.public_key}
    text_ms = statistics.median(timed(lambda: review.diff(old, new))[0] for _ in range(WARM_RUNS))
    common = opened.review.common([opened.tags()["v1"]], opened.heads())
    authors_ms = statistics.median(
        timed(lambda: opened.review.changes(common, opened.heads()))[0] for _ in range(WARM_RUNS))
    return {"chars": len(new), "commits_between": DIFF_COMMITS, "hunks": len(found.hunks),
            "diff_cold_ms": cold, "diff_ms": warm, "text_diff_ms": round(text_ms, 1),
            "authors_ms": round(authors_ms, 1)}


def bench_merge(docs: Documents, bob: Identity, rng: random.Random) -> dict:
    document = written(docs, bob, rng, "merge")
    docs.fork(document, "main", "alt")
    for _ in range(MERGE_COMMITS):
        edit(rng, document, docs.ws.identity, "main")
    for _ in range(MERGE_COMMITS):
        edit(rng, document, bob, "alt")
    docs.save(document, cache=["main", "alt"])
    opened = docs.open(document.root.id)
    cold, warm, preview = cold_and_warm(lambda: docs.merge_preview(opened, "alt", "main"))
    base = opened.review.version_text(opened.review.merge_base("alt", "main"))
    ours, theirs = opened.text(opened.heads("main")), opened.text(opened.heads("alt"))
    merged = opened.review.merged_text("alt", "main")
    detect = statistics.median(timed(lambda: review.regions(base, ours, theirs, merged))[0]
                               for _ in range(WARM_RUNS))
    made = docs.merged(opened, "alt", "main", prefer="theirs")
    expected = preview.text(["theirs"] * len(preview.conflicts))
    assert opened.text([made.commit]) == expected
    fresh = Document.load(opened.objects(), identity=docs.ws.identity,
                          keys=opened.keys())
    assert fresh.text(fresh.heads("main")) == expected, "a replay reads another merge"
    size = len(opened.held.objects[bytes.fromhex(made.commit)].raw)
    return {"chars": len(ours), "commits_per_branch": MERGE_COMMITS,
            "conflicts": len(preview.conflicts), "regions": len(preview.regions),
            "detection_ms": round(detect, 1), "preview_cold_ms": cold, "preview_ms": warm,
            "merge_commit_bytes": size}


def bench_unalike(rng: random.Random) -> dict:
    def text() -> str:
        return "".join(rng.choice("abcdefgh \n") for _ in range(UNALIKE_CHARS))
    old, new = text(), text()
    start = time.perf_counter()
    lines = unified_diff.unified(old, new, "old", "new")
    diffed = review.diff(old, new)
    ms = (time.perf_counter() - start) * 1000
    return {"chars": len(old), "unified_lines": len(lines), "hunks": len(diffed.hunks),
            "diff_ms": round(ms, 1),
            "time_limit_s": unified_diff.DIFF_TIME_LIMIT_S}


def main() -> None:
    global CHARS, MERGE_COMMITS, DIFF_COMMITS, UNALIKE_CHARS
    if options(__doc__).tiny:
        CHARS, MERGE_COMMITS, DIFF_COMMITS, UNALIKE_CHARS = 5_000, 30, 30, 5_000
    rng = random.Random(16)
    with tempfile.TemporaryDirectory() as folder:
        ws, docs, bob = setup(Path(folder))
        with ws:
            diff = bench_diff(docs, bob, rng)
            merge = bench_merge(docs, bob, rng)
    unalike = bench_unalike(rng)
    # Unalike texts: the unified listing and the diff are each bounded by the time limit.
    bound_ms = 3 * review.DIFF_TIME_LIMIT_S * 1000
    report("doc_review", {"diff": diff, "merge": merge, "unalike": unalike}, [
        Target("diff.diff_ms", "<=", TARGET_MS, at_scale=True),
        Target("merge.detection_ms", "<=", TARGET_MS, at_scale=True),
        Target("unalike.diff_ms", "<=", bound_ms, at_scale=True)])


if __name__ == "__main__":
    main()
