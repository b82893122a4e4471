"""An open document takes in what sync brought by reading only the rows stored since it last
looked: its history is not read and decoded again for every call the window makes."""

from __future__ import annotations

from app import documents as documents_module
from app.paths import Paths
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
