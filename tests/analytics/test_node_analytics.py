"""Two opted-in nodes chat, conflict, write and comment; their events reach a real collector (the
`hearth analytics collect` command) with nothing in them that names or quotes anyone, the
conflict is counted once, by the node that merged it, and the Spark report shows it once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from analytics.events import validate
from analytics.recorder import Recorder
from app.documents import Documents
from app.node import Node
from core import kinds
from tests.support import (
    TIMEOUT_S,
    Cluster,
    node_add_peer,
    node_call,
    node_channels,
    node_post,
    node_read,
    two_members,
    wait_until,
)

ROOT = Path(__file__).resolve().parents[2]

NICKS = ("zorro-nick", "quill-nick")
CHANNEL = "project-xylophone"
TEXTS = ("zorro writes: the launch code is swordfish", "quill replies: meet at the pier",
         "zorro merges: agreed, see you there", "quill: after the merge")
DOC_TITLE = "Quarterly Plans Of Zorro"
DOC_TEXT = "Secret agenda paragraph"
DOC_COMMENT = "zorro asks: is the agenda final?"


@pytest.fixture
def collect_command(tmp_path) -> Iterator[tuple[str, Path]]:
    """The real `hearth analytics collect` on a free port."""
    out = tmp_path / "collected"
    proc = subprocess.Popen(
        [sys.executable, "-m", "app", "analytics", "collect", "--port", "0", "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")})
    try:
        line = proc.stdout.readline()
        assert "http://127.0.0.1:" in line, line + proc.stderr.read()
        url = line.split()[line.split().index("on") + 1]
        yield url, out
    finally:
        proc.terminate()
        assert proc.wait(timeout=TIMEOUT_S) == 0


def collected(out: Path) -> list[dict]:
    return [json.loads(line) for path in sorted(out.glob("date=*/*.jsonl"))
            for line in path.read_text().splitlines() if line.strip()]


def texts(node: Node) -> set[str]:
    return {m.text for m in node_read(node, CHANNEL, limit=100)}


def test_two_opted_in_nodes_report_one_conflict_and_nothing_identifying(tmp_path, collect_command,
                                                                         spark, run_report):
    url, out = collect_command
    a, b = two_members(tmp_path, nicks=NICKS, names=("a", "b"))
    for paths in (a, b):
        Recorder(paths.data).enable(url)

    # Started apart (no peer given): b dials a once both have written.
    with Cluster(tmp_path) as cluster:
        node_a = cluster.start(a)
        node_b = cluster.start(b)
        # Apart, both write in the channel: its stream forks.
        node_channels(node_a, CHANNEL)
        node_post(node_a, CHANNEL, TEXTS[0])
        node_channels(node_b, CHANNEL)
        node_post(node_b, CHANNEL, TEXTS[1])

        def write_doc():
            docs = Documents(node_a.workspace)
            document = docs.new(DOC_TITLE)
            docs.write(document, DOC_TEXT)
            docs.comment(document, "agenda", DOC_COMMENT)
            docs.fork(document, "main", "draft")
            docs.merge(document, "draft", "main")
        node_call(node_a, write_doc)

        node_add_peer(node_b, "127.0.0.1", node_a.port)
        wait_until(lambda: {TEXTS[0], TEXTS[1]} <= texts(node_a) and
                   {TEXTS[0], TEXTS[1]} <= texts(node_b), what="the first sync")
        stream = kinds.channel_stream(node_a.workspace.id, CHANNEL)
        assert len(node_a.workspace.replica.heads(stream)) == 2
        node_post(node_a, CHANNEL, TEXTS[2])  # links both heads: the merge
        wait_until(lambda: TEXTS[2] in texts(node_b), what="the merge to reach b")
        node_post(node_b, CHANNEL, TEXTS[3])  # after the merge: one head, no conflict
        wait_until(lambda: TEXTS[3] in texts(node_a), what="b's post to reach a")

        def shipped() -> bool:
            node_a.flush_analytics()
            node_b.flush_analytics()
            events = collected(out)
            return sum(e["event"] == "message_sent" for e in events) == 4
        wait_until(shipped, what="both nodes' events at the collector")
        secrets = [*NICKS, CHANNEL, *TEXTS, DOC_TITLE, DOC_TEXT, DOC_COMMENT, "127.0.0.1",
                   f":{node_a.port}", f":{node_b.port}"]
        for node in (node_a, node_b):
            secrets += [node.key.hex(), node.workspace.id.hex(), node.key.hex()[:32],
                        kinds.channel_stream(node.workspace.id, CHANNEL).hex()[:32]]
        secrets += [d.id for d in node_call(node_a, lambda: node_a.workspace.documents.all())]

    events = collected(out)
    for event in events:
        validate(event)
        line = json.dumps(event)
        for secret in secrets:
            assert secret.lower() not in line.lower(), f"{secret!r} leaked into {line}"

    conflicts = [e for e in events if e["event"] == "conflict"]
    assert [(c["kind"], c["heads"]) for c in conflicts] == [("concurrent_heads", 2)]
    merges = [e for e in events if e["event"] == "convergence"]
    assert len(merges) == 1 and merges[0]["ms"] >= 0
    by_event = {e["event"] for e in events}
    assert {"app_started", "message_sent", "channel_joined", "doc_commit", "doc_fork",
            "doc_merge", "doc_comment"} <= by_event
    # The real collector reads version 3: the comment went with the rest, counted once.
    assert [e["schema"] for e in events if e["event"] == "doc_comment"] == [3]
    assert len({e["pid"] for e in events if e["event"] == "app_started"}) == 2
    # The collector's acknowledgements emptied the spools; what is left was recorded as the
    # nodes stopped (their sync sessions ended then) and goes with the next start.
    for paths in (a, b):
        _, left = Recorder(paths.data).take_batch(100) or (0, [])
        assert {json.loads(line)["event"] for line in left} <= {"sync_session"}

    # The report over what was collected (a cohort of 1: two installs only) shows it once.
    report = run_report("--input", str(out), "--output", str(tmp_path / "report"),
                        "--min-cohort", "1")
    assert report.summary["bad"]["total"] == 0
    table = spark.read.parquet(str(tmp_path / "report" / "tables" / "conflicts"))
    found = [(r["kind"], r["count"]) for r in table.collect()]
    assert found == [("concurrent_heads", 1)]
    html = (tmp_path / "report" / "report.html").read_text()
    assert "concurrent_heads" in html
