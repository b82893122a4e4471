"""core.documents visibility and requests to edit (issue #15): who counts, what a forger or a
sniffer gets, and that the result depends on the set of objects held, not their arrival order.

Pure: documents built in memory with deterministic identities and a counting clock (as in
tests/core/test_documents.py); forged objects are made through a Document held by the forger,
the way a modified client would publish them.
"""

from __future__ import annotations

import random

import pytest

from core import encoding
from core.documents import Document, DocumentError
from core.objects import Object
from tests.core.documents_support import ALICE, BOB, CAROL, MALLORY, counting_clock

SECRET = bytes(range(32))
OTHER_SECRET = bytes(range(1, 33))


def reader(objects: list[Object], secret: bytes | None = SECRET, identity=BOB) -> Document:
    return Document.load(objects, identity=identity, secret=secret, clock=counting_clock())


def workspace_doc(text: str = "for the team") -> Document:
    doc = Document.create(ALICE, "Notes", clock=counting_clock(), secret=SECRET)
    doc.commit(ALICE, [(0, 0, text)], [])
    return doc


def test_every_member_reads_a_workspace_document_and_no_one_without_the_secret() -> None:
    doc = workspace_doc()
    assert doc.visibility == "workspace"
    objects = doc.objects()
    assert reader(objects).text(doc.heads()) == "for the team"
    for secret in (None, OTHER_SECRET):  # a sniffer, or another workspace's member
        outsider = reader(objects, secret)
        assert not any(b.readable for b in outsider.branches())
        with pytest.raises(DocumentError, match="read key"):
            outsider.text(doc.heads())
    # The branch key is in no object in the clear.
    [(_, _, key)] = doc.keys()
    assert not any(key in encoding.dumps(o.body) for o in objects)


def test_without_a_secret_or_when_asked_a_new_document_is_private() -> None:
    for doc in (Document.create(ALICE, "A", clock=counting_clock()),
                Document.create(ALICE, "B", clock=counting_clock(), secret=SECRET,
                                private=True)):
        doc.commit(ALICE, [(0, 0, "mine")], [])
        assert doc.visibility == "private"
        assert not any(o.type in ("doc/visibility", "doc/workspace-key") for o in doc.objects())
        with pytest.raises(DocumentError, match="read key"):
            reader(doc.objects()).text(doc.heads())


def test_only_the_creator_changes_visibility() -> None:
    doc = Document.create(ALICE, "Pay", clock=counting_clock(), secret=SECRET, private=True)
    doc.add_editor(ALICE, CAROL.public_key)
    doc.commit(ALICE, [(0, 0, "figures")], [])
    forged = []
    for who in (MALLORY, CAROL):  # a member, and an editor who is not the creator
        held = reader(doc.objects(), identity=who)
        with pytest.raises(DocumentError, match="creator"):
            held.set_visibility(who, "workspace")
        held.root_branch.publish_root(who, "doc/visibility", {"mode": "workspace"})
        forged += held.drain()
    bob = reader(doc.objects() + forged)
    assert bob.visibility == "private"
    assert bob.branches()[0].readable is False


def test_a_workspace_key_counts_only_from_an_editor() -> None:
    doc = Document.create(ALICE, "Pay", clock=counting_clock(), secret=SECRET, private=True)
    doc.commit(ALICE, [(0, 0, "figures")], [])
    # Mallory, a member with a capability for main, publishes its key to the workspace.
    mallory = reader(doc.objects(), identity=MALLORY)
    mallory.open_capability(doc.share("main"))
    assert mallory.text(doc.heads()) == "figures"
    [(branch, epoch, key)] = mallory.keys()
    mallory.branch_keys.publish_workspace_key(MALLORY, branch, epoch, key)
    forged = mallory.drain()
    assert [o.type for o in forged] == ["doc/workspace-key"]
    bob = reader(doc.objects() + forged)
    with pytest.raises(DocumentError, match="read key"):
        bob.text(doc.heads())
    # The same key published by the creator (making it workspace-readable) does count.
    doc.set_visibility(ALICE, "workspace")
    assert reader(doc.objects() + forged).text(doc.heads()) == "figures"


def test_private_again_refreshes_keys_and_publishes_none_to_the_workspace() -> None:
    doc = workspace_doc("before")
    before = doc.heads()
    published = sum(o.type == "doc/workspace-key" for o in doc.objects())
    doc.set_visibility(ALICE, "private")
    after = doc.commit(ALICE, [(6, 0, " and after")], doc.heads())
    assert sum(o.type == "doc/workspace-key" for o in doc.objects()) == published
    bob = reader(doc.objects())
    assert bob.visibility == "private"
    assert bob.text(before) == "before"
    with pytest.raises(DocumentError, match="read key"):
        bob.text([after])
    with pytest.raises(DocumentError, match="already"):
        doc.set_visibility(ALICE, "private")
    with pytest.raises(DocumentError, match="visibility is one of"):
        doc.set_visibility(ALICE, "public")


def test_requests_are_open_until_answered_and_only_the_latest_counts() -> None:
    doc = workspace_doc()
    bob = reader(doc.objects())
    bob.ask_edit(BOB, "please")
    carol = reader(doc.objects(), identity=CAROL)
    carol.ask_edit(CAROL)
    carol.withdraw_request(CAROL)
    with pytest.raises(DocumentError, match="no open request"):
        carol.withdraw_request(CAROL)
    doc.add(bob.drain() + carol.drain())
    assert [(r.author, r.note) for r in doc.requests()] == [(BOB.public_key, "please")]
    doc.add_editor(ALICE, BOB.public_key)
    assert doc.requests() == []
    doc.remove_editor(ALICE, BOB.public_key)
    assert doc.requests() == []  # answered: a removal does not reopen it


def test_what_a_reader_gets_does_not_depend_on_arrival_order() -> None:
    """Carol, made an editor, forks a branch of a workspace document: her workspace key may
    arrive before the change that made her an editor, and counts once it does."""
    doc = workspace_doc("main text")
    doc.add_editor(ALICE, CAROL.public_key)
    carol = reader(doc.objects(), identity=CAROL)
    carol.fork(CAROL, "main", "carol")
    carol.commit(CAROL, [(0, 0, "carol's ")], carol.heads("carol"), branch="carol")
    bob = reader(doc.objects())
    bob.ask_edit(BOB)
    objects = doc.objects() + carol.drain() + bob.drain()
    expected = reader(objects)
    want = (expected.visibility, expected.text(expected.heads("carol")),
            [r.author for r in expected.requests()])
    assert want == ("workspace", "carol's main text", [BOB.public_key])
    for seed in range(8):
        shuffled = list(objects)
        random.Random(seed).shuffle(shuffled)
        root = next(o for o in shuffled if o.type == "doc/root")
        held = reader([root])
        for obj in shuffled:
            held.add([obj])
        assert (held.visibility, held.text(held.heads("carol")),
                [r.author for r in held.requests()]) == want
