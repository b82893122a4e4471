"""Who can open a document (issue #15): workspace-readable or private, asking to edit, and
restoring a version, between two real members of one workspace.

Library tests: alice and bob are made the way people are (Workspace.init, then an invite: the
`alice` and `bob` fixtures of tests/app/conftest.py) and "sync" is every raw object of one
replica through the other's ingest (tests/app/test_documents.py `copy_objects`). The facade test
runs two real Nodes on 127.0.0.1 that sync by themselves, and reads what the window reads
(`DocumentView`).
"""

from __future__ import annotations

import pytest

from app.doc_views import document_view, edit_requests
from app.documents import ALREADY, KEY_NOT_HERE, ONLY_EDITORS, READ_ONLY, on_document
from app.paths import Paths
from app.workspace import WorkspaceError
from core.documents import DocumentError
from core.objects import decode_trusted
from storage import Replica
from tests.app.test_documents import MARKER, copy_objects, key_of, opened, replica_bytes
from tests.support import start_two_nodes
from tests.sync.nodes import TIMEOUT_S, Cluster, wait_until

LATER = "QZV-after-private-marker-4418"


# Visibility ------------------------------------------------------------------------------------

def test_a_member_reads_a_workspace_document_after_sync_without_a_capability(
        alice: Paths, bob: Paths) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Team notes", editing="listed")
        assert doc.visibility == "workspace"
        first = docs.write(doc, "for everyone 😀")
        docs.fork(doc, "main", "side")  # a branch made later is published to the workspace too
        docs.write(doc, "side notes", branch="side")
        doc_id = doc.root.id
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert held.visibility == "workspace"
        assert all(b.readable for b in held.branches())
        assert held.text(held.heads()) == "for everyone 😀"
        assert held.text(held.heads("side")) == "side notes"
        assert held.text([first]) == "for everyone 😀"
        assert docs.unreadable(held) is None
        assert docs.read_only(held) == READ_ONLY  # reading is not editing
        with pytest.raises(DocumentError, match="editors"):
            docs.write(held, "bob was here")
        with pytest.raises(DocumentError, match="creator"):
            docs.set_visibility(held, "private")
    with opened(bob) as (_, docs):  # the keys were kept: it reads after reopening too
        reopened = docs.open(doc_id)
        assert reopened.text(reopened.heads()) == "for everyone 😀"


def test_a_private_document_stays_unreadable_to_a_member_and_leaves_no_plaintext(
        alice: Paths, bob: Paths) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Salaries", private=True)
        assert doc.visibility == "private"
        docs.write(doc, f"the figure is {MARKER}")
        doc_id = doc.root.id
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert held.visibility == "private"
        assert not any(b.readable for b in held.branches())
        assert docs.unreadable(held) == ONLY_EDITORS
        with pytest.raises(DocumentError, match="read key"):
            held.text(held.heads())
        assert MARKER.encode() not in replica_bytes(bob)
    data = replica_bytes(bob)
    assert doc_id in data and MARKER.encode() not in data
    assert MARKER.encode("utf-16-le") not in data


def test_making_a_document_private_closes_later_commits_and_workspace_opens_them_again(
        alice: Paths, bob: Paths) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Roadmap", editing="listed")
        before = docs.write(doc, "open plans")
        doc_id = doc.root.id
    copy_objects(alice, bob)
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        with pytest.raises(DocumentError, match="already"):
            docs.set_visibility(doc, "workspace")
        docs.set_visibility(doc, "private")
        after = docs.write(doc, f"closed plans {LATER}")
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert held.visibility == "private"
        assert held.text([before]) == "open plans"  # what was readable stays readable
        with pytest.raises(DocumentError, match="read key"):
            held.text([after])
        assert docs.unreadable(held) == ONLY_EDITORS
    assert LATER.encode() not in replica_bytes(bob)

    with opened(alice) as (_, docs):
        docs.set_visibility(docs.open(doc_id), "workspace")
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert held.visibility == "workspace"
        assert held.text([after]) == f"closed plans {LATER}"


def test_a_workspace_document_whose_key_has_not_arrived_says_so(alice: Paths,
                                                                 bob: Paths) -> None:
    """The member holds the document but not yet its workspace key: the reason says that,
    not "only its editors can read it"; the key arriving opens it."""
    with opened(alice) as (_, docs):
        doc = docs.new("Soon", editing="listed")
        docs.write(doc, "hello")
        doc_id = doc.root.id
    with Replica(alice.replica) as source:
        raws = [row[0] for row in source.conn.execute("SELECT raw FROM objects")]
    keys = [raw for raw in raws if decode_trusted(raw).type == "doc/workspace-key"]
    assert keys
    with Replica(bob.replica) as target:
        target.ingest([raw for raw in raws if raw not in keys])
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert docs.unreadable(held) == KEY_NOT_HERE
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.current(doc_id)
        assert docs.unreadable(held) is None and held.text(held.heads()) == "hello"


# Asking to edit -------------------------------------------------------------------------------

def test_ask_edit_accept_and_the_new_editors_commit_counts(alice: Paths, bob: Paths) -> None:
    bob_key = key_of(bob)
    with opened(alice) as (_, docs):
        doc = docs.new("Minutes", editing="listed")
        docs.write(doc, "agenda")
        doc_id = doc.root.id
        with pytest.raises(DocumentError, match="editor"):
            docs.ask_edit(doc)  # the creator is an editor already
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert not docs.asked(held)
        docs.ask_edit(held, "I take the notes")
        assert docs.asked(held)
        with pytest.raises(DocumentError, match="asked already"):
            docs.ask_edit(held)
        with pytest.raises(DocumentError, match="creator"):
            docs.accept(held, bob_key)
    copy_objects(bob, alice)
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        [request] = docs.requests(doc)
        assert (request.author.hex(), request.note) == (bob_key, "I take the notes")
        with pytest.raises(WorkspaceError, match="no open request"):
            docs.accept(doc, key_of(alice))
        docs.accept(doc, bob_key)
        assert docs.requests(doc) == []
        assert bytes.fromhex(bob_key) in doc.editors()
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        editor = docs.open(doc_id)
        assert not docs.asked(editor) and docs.read_only(editor) is None
        bobs = docs.write(editor, "agenda, notes by bob")
    copy_objects(bob, alice)
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        assert doc.heads() == [bobs]
        assert doc.text(doc.heads()) == "agenda, notes by bob"
        assert doc.history()[-1].author.hex() == bob_key
        # Removed again, bob's old (answered) request does not come back.
        docs.remove_editor(doc, bob_key)
        assert docs.requests(doc) == []


def test_a_withdrawn_request_is_not_listed(alice: Paths, bob: Paths) -> None:
    with opened(alice) as (_, docs):
        doc_id = docs.new("Drafts", editing="listed").root.id
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        docs.ask_edit(held)
        docs.withdraw_request(held)
        assert not docs.asked(held)
    copy_objects(bob, alice)
    with opened(alice) as (_, docs):
        assert docs.requests(docs.open(doc_id)) == []


# Restoring a version --------------------------------------------------------------------------

def test_restore_makes_the_branch_read_as_it_did_and_keeps_history(alice: Paths) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Essay", editing="listed")
        first = docs.write(doc, "one 😀\ntwo\n")
        docs.write(doc, "one 😀\ntwo\nthree\n")
        docs.write(doc, "ONE\nthree\n")
        before = [c.id for c in doc.history()]
        restored = docs.restore(doc, first[:12])
        assert doc.heads() == [restored]
        assert doc.text(doc.heads()) == "one 😀\ntwo\n"
        history = doc.history()
        assert [c.id for c in history[:-1]] == before  # nothing rewritten
        assert (history[-1].id, history[-1].kind) == (restored, "restore")
        assert history[-1].restores == first  # the history says which version it brought back
        with pytest.raises(WorkspaceError, match=ALREADY):
            docs.restore(doc, first)
        doc_id = doc.root.id
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        assert doc.text(doc.heads()) == "one 😀\ntwo\n"


def test_restore_on_another_branch_and_only_by_editors(alice: Paths, bob: Paths) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Spec", editing="listed")
        first = docs.write(doc, "v1")
        docs.fork(doc, "main", "draft")
        docs.write(doc, "v1 draft", branch="draft")
        docs.write(doc, "v2")
        docs.restore(doc, first, "draft")
        assert doc.text(doc.heads("draft")) == "v1"
        assert doc.text(doc.heads()) == "v2"
        doc_id = doc.root.id
    copy_objects(alice, bob)
    with opened(bob) as (_, docs), pytest.raises(DocumentError, match="editors"):
        docs.restore(docs.open(doc_id), first)


# Through the facade, between two running Nodes -------------------------------------------------

def result(future):
    return future.result(TIMEOUT_S)


def test_the_view_shows_visibility_editors_requests_and_accepting_lets_them_edit(
        tmp_path) -> None:
    with Cluster(tmp_path) as cluster:
        pa, pb = cluster.members(2)
        a, b = start_two_nodes(cluster, pa, pb)
        workspace_doc = bytes.fromhex(result(a.facade.run(lambda ws: ws.documents.new("Plan", editing="listed").id)))
        private_doc = bytes.fromhex(result(a.facade.run(lambda ws: ws.documents.new("Pay", private=True).id)))
        first = result(a.facade.run(on_document(workspace_doc, lambda docs, d: docs.write(d, "plan text"))))
        result(a.facade.run(on_document(private_doc, lambda docs, d: docs.write(d, f"pay {MARKER}"))))

        def text_at_b() -> str | None:
            if workspace_doc.hex() not in {s.id for s in result(b.facade.run(lambda ws: ws.documents.all()))}:
                return None
            return result(b.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d)))).text or None
        wait_until(text_at_b, what="bob to read the workspace document")
        view = result(b.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d))))
        assert (view.visibility, view.editors, view.creator) == ("workspace", (a.key,), a.key)
        assert (view.writable, view.why_readonly, view.asked) == (False, READ_ONLY, False)
        assert view.requests == ()  # requests are for editors to act on

        wait_until(lambda: any(s.id == private_doc.hex()
                               for s in result(b.facade.run(lambda ws: ws.documents.all()))),
                   what="the private document to reach bob")
        closed = result(b.facade.run(on_document(private_doc, lambda docs, d: document_view(docs, d))))
        assert (closed.visibility, closed.text, closed.unreadable) == ("private", "",
                                                                        ONLY_EDITORS)

        result(b.facade.run(on_document(workspace_doc, lambda docs, d: docs.ask_edit(d))))
        assert result(b.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d)))).asked
        wait_until(lambda: result(a.facade.run(on_document(workspace_doc, lambda docs, d: list(edit_requests(d, docs.ws.nicknames()))))),
                   what="alice to see bob's request")
        [request] = result(a.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d)))).requests
        assert (request.key, request.nick) == (b.key, "bob")
        result(a.facade.run(on_document(workspace_doc, lambda docs, d: docs.accept(d, docs.ws.resolve_person("bob").hex()))))
        assert result(a.facade.run(on_document(workspace_doc, lambda docs, d: list(edit_requests(d, docs.ws.nicknames()))))) == []

        wait_until(lambda: result(b.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d)))).writable,
                   what="bob to become an editor")
        mine = result(b.facade.run(on_document(workspace_doc, lambda docs, d: docs.write(d, "plan text, and bob's"))))
        wait_until(lambda: result(a.facade.run(on_document(workspace_doc, lambda docs, d: d.text(d.heads("main")))))
                   == "plan text, and bob's", what="alice to read bob's commit")
        assert mine in result(a.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d)))).heads

        restored = result(a.facade.run(on_document(workspace_doc, lambda docs, d: docs.restore(d, first[:16]))))
        view = result(a.facade.run(on_document(workspace_doc, lambda docs, d: document_view(docs, d))))
        assert (view.text, view.heads) == ("plan text", [restored])
        assert (view.history[-1].id, view.history[-1].kind) == (restored, "restore")
