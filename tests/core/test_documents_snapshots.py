"""What a snapshot records of its branch's heads: a document loaded from the objects it was taken
from takes the heads as recorded (not worked out from every commit again); with anything else
held, or a record that is damaged or from before records existed, the heads are worked out as
always and read the same."""

from __future__ import annotations

import pytest

from core import encoding
from core.documents import Document
from core.documents._commits import Commits
from tests.core.documents_support import ALICE, BOB, counting_clock


def typed(count: int = 30) -> Document:
    doc = Document.create(ALICE, "notes", clock=counting_clock())
    heads = doc.heads()
    for n in range(count):
        heads = [doc.commit(ALICE, [(0, 0, f"{n} ")], heads)]
    return doc


def load(doc: Document, objects, snapshot) -> Document:
    return Document.load(objects, identity=ALICE, keys=doc.keys(), snapshots=[snapshot],
                         clock=counting_clock())


def refuse_working_heads_out(monkeypatch) -> None:
    def refuse(*args):
        raise AssertionError("the heads were worked out from every commit")
    monkeypatch.setattr(Commits, "_all_visible", refuse)


def test_a_snapshot_of_the_objects_held_gives_the_heads_without_a_pass_over_the_commits(
        monkeypatch):
    doc = typed()
    snapshot, objects = doc.snapshot("main"), doc.objects()
    with monkeypatch.context() as patch:
        refuse_working_heads_out(patch)
        opened = load(doc, objects, snapshot)
        assert opened.heads() == doc.heads()
        assert opened.text(opened.heads()) == doc.text(doc.heads())


def test_with_a_commit_more_than_the_snapshot_saw_the_heads_are_worked_out(monkeypatch):
    doc = typed()
    snapshot = doc.snapshot("main")
    doc.add_editor(ALICE, BOB.public_key)  # a root object the snapshot did not see
    later = doc.commit(BOB, [(0, 0, "late ")], doc.heads())
    for objects in (doc.objects(), [o for o in doc.objects() if o.hex != later]):
        with monkeypatch.context() as patch:
            refuse_working_heads_out(patch)
            with pytest.raises(AssertionError, match="worked out"):
                load(doc, objects, snapshot).heads()
        opened = load(doc, objects, snapshot)
        fresh = Document.load(objects, identity=ALICE, keys=doc.keys(), clock=counting_clock())
        assert opened.heads() == fresh.heads()
        assert opened.text(opened.heads()) == fresh.text(fresh.heads())
    assert load(doc, doc.objects(), snapshot).heads() == [later]


@pytest.mark.parametrize("record", [
    b"\xff\x00",  # not CBOR
    encoding.dumps({"heads": "nope"}),
    encoding.dumps({"heads": [], "roots": [[1, 2]], "held": 5}),
    encoding.dumps([b"\x01" * 32]),  # a head not held
])
def test_a_damaged_record_only_makes_opening_slower(record):
    doc = typed(5)
    branch, _, epoch, nonce, box = doc.snapshot("main")
    opened = load(doc, doc.objects(), (branch, record, epoch, nonce, box))
    assert opened.heads() == doc.heads()
    assert opened.text(opened.heads()) == doc.text(doc.heads())


def test_a_record_from_before_records_existed_still_gives_the_state():
    doc = typed(5)
    branch, _, epoch, nonce, box = doc.snapshot("main")
    heads = encoding.dumps(sorted(bytes.fromhex(h) for h in doc.heads()))
    opened = load(doc, doc.objects(), (branch, heads, epoch, nonce, box))
    assert opened.states.live[branch].heads == frozenset(bytes.fromhex(h) for h in doc.heads())
    assert opened.text(opened.heads()) == doc.text(doc.heads())
