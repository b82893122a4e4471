"""Open the automerge-paper document (5,196 commits) from SQLite and render its text.
Target <= 200 ms. In the same run: the same open without the cached state (replaying every
update), for comparison."""

from __future__ import annotations

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
from bench.doc_trace import TINY_TXNS, groups, load_trace  # noqa: E402
from core.documents import Document  # noqa: E402

RUNS = 7


def main() -> None:
    trace = load_trace(TINY_TXNS if options(__doc__).tiny else None)
    with tempfile.TemporaryDirectory() as tmp:
        paths = Paths.resolve(tmp, "default")
        with Workspace.init(paths, "ada") as ws:
            docs = Documents(ws)
            document = docs.new("automerge-paper")
            document.track_undo = False  # an import, not typing
            heads = document.heads()
            for batch in groups(trace):
                heads = [document.commit(ws.identity, batch, heads)]
            docs.save(document, cache=["main"])
            doc_id = document.root.id
        timings, cold = [], []
        for _ in range(RUNS):
            with Workspace.open(paths) as ws:
                start = time.perf_counter()
                opened = Documents(ws).open(doc_id)
                text = opened.text(opened.heads())
                timings.append((time.perf_counter() - start) * 1000)
                assert text == trace["endContent"]
        with Workspace.open(paths) as ws:
            replica = ws.replica
            objects = [o for o in Documents(ws).open(doc_id).objects()]
            keys = replica.documents.branch_keys([o.id for o in objects if o.type == "doc/branch"])
            for _ in range(2):
                start = time.perf_counter()
                replay = Document.load(objects, identity=ws.identity, keys=keys)
                assert replay.text(replay.heads()) == trace["endContent"]
                cold.append((time.perf_counter() - start) * 1000)
    report("doc_open", {
        "commits": sum(1 for o in objects if o.type == "doc/commit"),
        "characters": len(trace["endContent"]),
        "open_and_render_ms": {"median": round(statistics.median(timings), 1),
                               "max": round(max(timings), 1)},
        "replay_every_update_ms": round(min(cold), 1),
    }, [Target("open_and_render_ms.median", "<=", 200, at_scale=True)])


if __name__ == "__main__":
    main()
