"""Open a document that a non-editor member has filled with junk (issue #12), at 1k, 4k and 12k
junk objects, from SQLite, and render its text. Two shapes: a chain of commits whose first
parent nobody holds (each naming no root state of its own), and a chain of root-branch objects
with one commit naming each as its root state. Opening should grow near-linearly: the
`per_object_us` figures should stay roughly flat as the count grows."""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from app.documents import Documents  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import Target, options, report  # noqa: E402
from core.documents import Document  # noqa: E402
from core.identity import Identity  # noqa: E402
from core.objects import Object, build  # noqa: E402

COUNTS = (1_000, 4_000, 12_000)
TINY_COUNTS = (50, 200)
FLAT = 2.0  # per_object_us at the largest count, at most this times that at the smallest
RUNS = 3
SLOW_S = 5.0  # a run slower than this is not repeated


def orphan_commits(document: Document, junk: Identity, count: int, ts: int) -> list[Object]:
    main = bytes.fromhex(next(b.id for b in document.branches() if b.main))
    out, parent = [], os.urandom(32)
    for i in range(count):
        obj = build(junk, "doc/commit", stream=main, ts=ts + i, links=[parent],
                    body={"root": [], "epoch": 0, "nonce": os.urandom(24),
                          "box": os.urandom(48)})
        out.append(obj)
        parent = obj.id
    return out


def root_junk(document: Document, junk: Identity, count: int, ts: int) -> list[Object]:
    main = bytes.fromhex(next(b.id for b in document.branches() if b.main))
    commit = bytes.fromhex(document.heads()[0])
    out: list[Object] = []
    links = [o.id for o in document.objects() if o.stream == document.root.id][-1:]
    for i in range(count // 2):
        tag = build(junk, "doc/tag", stream=document.root.id, ts=ts + i, links=links,
                    body={"name": f"junk{i}", "commit": commit})
        links = [tag.id]
        out.append(tag)
        out.append(build(junk, "doc/commit", stream=main, ts=ts + i, links=[commit],
                         body={"root": links, "epoch": 0, "nonce": os.urandom(24),
                               "box": os.urandom(48)}))
    return out


def measure(shape, count: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths.resolve(tmp, "default")
        with Workspace.init(paths, "ada") as ws:
            docs = Documents(ws)
            document = docs.new("junked")
            docs.write(document, "the real text")
            junk = shape(document, Identity.generate(), count, int(ws.clock() * 1000))
            ws.replica.ingest(junk)
            doc_id = document.root.id
        timings = []
        for _ in range(RUNS):
            with Workspace.open(paths) as ws:
                start = time.perf_counter()
                opened = Documents(ws).open(doc_id)
                text = opened.text(opened.heads())
                elapsed = time.perf_counter() - start
            assert text == "the real text"
            timings.append(elapsed)
            if elapsed > SLOW_S:
                break
    best = min(timings)
    return {"junk_objects": count, "open_ms": round(statistics.median(timings) * 1000, 1),
            "per_object_us": round(best / count * 1e6, 1)}


def main() -> None:
    counts = TINY_COUNTS if options(__doc__).tiny else COUNTS
    figures: dict = {
        name: [measure(shape, count) for count in counts]
        for name, shape in (("orphan_commit_chain", orphan_commits),
                            ("root_junk_and_commits_naming_it", root_junk))
    }
    for name in list(figures):
        runs = figures[name]
        figures[f"{name}_growth"] = round(runs[-1]["per_object_us"] / runs[0]["per_object_us"], 2)
    report("doc_junk", figures, [
        Target("orphan_commit_chain_growth", "<=", FLAT, at_scale=True),
        Target("root_junk_and_commits_naming_it_growth", "<=", FLAT, at_scale=True)])


if __name__ == "__main__":
    main()
