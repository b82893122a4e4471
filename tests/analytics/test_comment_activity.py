"""Comments on documents made on a real Node become schema-3 doc_comment events with nothing
from inside their box (app/activity.py): comments, replies and resolves alike, each with the
branch's daily stream hash."""

from __future__ import annotations

import json

from analytics.events import validate
from analytics.recorder import Recorder
from app.activity import Activity
from app.documents import on_document
from core.identity import Identity
from core.objects import build
from tests.support import TIMEOUT_S, Cluster, create_workspace, node_call

NICK = "zorro-nick"
TITLE = "Quarterly Plans Of Zorro"
QUOTE = "swordfish clause"
TEXT = f"The launch code lives in the {QUOTE} of the plan."
COMMENT = "is this really the code? QZV-comment-8817"
REPLY = "yes, change it before Friday"


def spooled(recorder: Recorder) -> list[str]:
    taken = recorder.take_batch(1000)
    return taken[1] if taken else []


def done(future):
    return future.result(timeout=TIMEOUT_S)


def test_a_comment_made_through_the_facade_is_one_doc_comment_event_with_no_content(tmp_path):
    paths = create_workspace(tmp_path, "a", NICK)
    Recorder(paths.data).enable()
    with Cluster(tmp_path) as cluster:
        node = cluster.start(paths)
        doc = bytes.fromhex(done(node.facade.run(lambda ws: ws.documents.new(TITLE).id)))
        done(node.facade.run(on_document(doc, lambda docs, d: docs.write(d, TEXT))))
        before = len(spooled(Recorder(paths.data)))
        comment = done(node.facade.run(on_document(doc, lambda docs, d: docs.comment(d, QUOTE, COMMENT))))
        after_comment = [json.loads(t) for t in spooled(Recorder(paths.data))][before:]
        reply = done(node.facade.run(on_document(doc, lambda docs, d: docs.reply(d, comment, REPLY))))
        resolve = done(node.facade.run(on_document(doc, lambda docs, d: docs.resolve_comment(d, comment))))
        ws = node.workspace
        branch = node_call(node, lambda: ws.replica.object(bytes.fromhex(comment)).stream)
        secrets = [NICK, TITLE, QUOTE, TEXT, COMMENT, REPLY, comment, reply, resolve,
                   comment[:32], reply[:32], resolve[:32], doc.hex(), doc.hex()[:32],
                   branch.hex()[:32], node.key.hex(), node.key.hex()[:32], ws.id.hex()]

    assert [e["event"] for e in after_comment] == ["doc_comment"]  # one, and nothing else
    texts = spooled(Recorder(paths.data))
    for text in texts:
        for secret in secrets:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {text}"
    events = [validate(json.loads(text)) for text in texts]
    (commit_stream,) = {e["stream"] for e in events if e["event"] == "doc_commit"}
    found = [{k: v for k, v in e.items() if k not in ("ts", "pid")} for e in events
             if e["event"] == "doc_comment"]
    # The comment, the reply and the resolve, alike: the branch's hash of the day, as the
    # branch's commits have it.
    assert found == [{"event": "doc_comment", "schema": 3, "stream": commit_stream}] * 3
    assert found[0] == {k: v for k, v in after_comment[0].items() if k not in ("ts", "pid")}
    assert not [e for e in events if e["event"] in ("conflict", "convergence")]


def test_a_comment_linking_several_heads_counts_once_and_merges_nothing(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.enable()
    heads = {b"\x0a" * 32: ("doc/commit", 1_000), b"\x0b" * 32: ("doc/commit", 1_400)}
    activity = Activity(recorder, lambda ids: [heads[i] for i in ids if i in heads])
    me, branch = Identity.generate(), b"\x06" * 32
    body = {"epoch": 0, "nonce": b"\x01" * 24, "box": b"sealed comment text" * 3}
    activity.created(build(me, "doc/comment", stream=branch, body=body, ts=2_000, links=heads))
    events = [json.loads(text) for text in spooled(recorder)]
    assert [{k: v for k, v in e.items() if k not in ("ts", "pid")} for e in events] == [
        {"event": "doc_comment", "schema": 3, "stream": recorder.hash_id(branch)}]

    recorder.disable()
    activity.created(build(me, "doc/comment", stream=branch, body=body, ts=2_001, links=heads))
    assert spooled(recorder) == []
