"""An open document takes in what sync brought by reading only the rows stored since it last
looked: its history is not read and decoded again for every call the window makes."""

from __future__ import annotations

from app import documents as documents_module
from app.paths import Paths
from core.objects import decode_trusted
from storage import Replica
from tests.app.test_documents import copy_objects, opened


def test_refreshing_an_open_document_decodes_only_what_arrived(alice: Paths, bob: Paths,
                                                                monkeypatch) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Minutes")
        for n in range(30):
            docs.write(doc, f"line {n}\n" * (n + 1))
        doc_id = doc.root.id
    copy_objects(alice, bob)

    decoded = []
    real = documents_module.decode_trusted

    def counting(raw: bytes):
        decoded.append(raw)
        return real(raw)

    monkeypatch.setattr(documents_module, "decode_trusted", counting)
    with opened(bob) as (_, bob_docs):
        held = bob_docs.current(doc_id)
        opened_with = len(decoded)
        assert opened_with > 30  # opening reads the whole document once
        assert held.text(held.heads()) == "line 29\n" * 30

        decoded.clear()
        assert bob_docs.current(doc_id) is held
        assert decoded == []  # nothing arrived: nothing read

        with opened(alice) as (_, docs):
            docs.write(docs.open(doc_id), "line 30\n" * 31)
        decoded.clear()
        copy_objects(alice, bob)  # sync brings Alice's new commit
        held = bob_docs.current(doc_id)
        assert len(decoded) == 1  # her one commit, not the history again
        assert held.text(held.heads()) == "line 30\n" * 31


def test_a_branch_whose_commits_arrived_before_it_is_read_whole(alice: Paths, bob: Paths) -> None:
    """Sync may store a new branch's commits before its doc/branch object; until that arrives
    they are no document's, so the rows read since then are not enough."""

    def copy(keep) -> None:
        with Replica(alice.replica) as source:
            raws = [row[0] for row in source.conn.execute("SELECT raw FROM objects")]
        with Replica(bob.replica) as target:
            target.ingest([r for r in raws if keep(decode_trusted(r))])

    with opened(alice) as (_, docs):
        doc = docs.new("Plan")
        docs.write(doc, "hello\n")
        doc_id = doc.root.id
    copy(lambda o: True)
    with opened(bob) as (_, bob_docs):
        held = bob_docs.current(doc_id)
        with opened(alice) as (_, docs):
            mine = docs.open(doc_id)
            docs.fork(mine, "main", "draft")
            docs.write(mine, "hello draft\n", branch="draft")
            docs.write(mine, "hello\nmain again\n")  # a later row of the document
        copy(lambda o: o.type == "doc/commit")  # the draft's commits before the draft itself
        held = bob_docs.current(doc_id)
        copy(lambda o: True)
        held = bob_docs.current(doc_id)
        assert held.text(held.heads("draft")) == "hello draft\n"
        assert held.text(held.heads()) == "hello\nmain again\n"
