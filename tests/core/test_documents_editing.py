"""core.documents: documents every member of the workspace edits (issue #29, `doc/editing`).

Pure, as tests/core/test_documents_visibility.py: documents in memory, deterministic
identities, a counting clock; the members are handed in as the app hands in the membership.
"""

from __future__ import annotations

import random

import pytest

from core.documents import Document, DocumentError
from core.errors import InvalidObject
from core.kinds import check_body
from core.objects import Object
from tests.core.documents_support import ALICE, BOB, CAROL, MALLORY, counting_clock

SECRET = bytes(range(32))
NEXT_SECRET = bytes(range(2, 34))
MEMBERS = frozenset({ALICE.public_key, BOB.public_key, CAROL.public_key})


def team_doc() -> Document:
    doc = Document.create(ALICE, "Plan", clock=counting_clock(), secret=SECRET,
                          editing="workspace", members=MEMBERS)
    doc.commit(ALICE, [(0, 0, "plan")], [])
    return doc


def member(objects: list[Object], identity=BOB, members=MEMBERS,
           secrets: tuple[bytes, ...] = (SECRET,)) -> Document:
    return Document.load(objects, identity=identity, secret=secrets[0], secrets=secrets,
                         members=members, clock=counting_clock())


def test_every_member_edits_a_workspace_editable_document_without_asking() -> None:
    doc = team_doc()
    assert doc.editing == "workspace" and doc.visibility == "workspace"
    assert doc.listed_editors() == {ALICE.public_key}
    bob = member(doc.objects())
    assert BOB.public_key in bob.editors()
    bob.commit(BOB, [(4, 0, " A")], bob.heads())
    doc.add(bob.drain())
    assert doc.text(doc.heads()) == "plan A"
    # Bob's fork and its key reach Carol, who was never sealed a key: she writes on it too.
    bob.fork(BOB, "main", "draft")
    carol = member(doc.objects() + bob.drain(), identity=CAROL)
    carol.commit(CAROL, [(0, 0, "B ")], carol.heads("draft"), branch="draft")
    assert carol.text(carol.heads("draft")) == "B plan A"


def test_a_member_who_joins_later_edits_and_a_stranger_does_not_count() -> None:
    doc = team_doc()
    objects = doc.objects()
    # Mallory holds the secret's traffic but is no member: her commit counts for no one.
    mallory = member(objects, identity=MALLORY, members=MEMBERS | {MALLORY.public_key})
    mallory.commit(MALLORY, [(0, 0, "X")], mallory.heads())
    forged = mallory.drain()
    alice = member(objects + forged, identity=ALICE)
    assert alice.text(alice.heads()) == "plan"
    # Once her admission is held (the members handed in), the same commit counts.
    joined = member(objects + forged, identity=ALICE, members=MEMBERS | {MALLORY.public_key})
    assert joined.text(joined.heads()) == "Xplan"


def test_a_listed_document_stays_closed_to_members() -> None:
    doc = Document.create(ALICE, "Mine", clock=counting_clock(), secret=SECRET,
                          members=MEMBERS)
    doc.commit(ALICE, [(0, 0, "mine")], [])
    assert doc.editing == "listed"
    bob = member(doc.objects())
    assert BOB.public_key not in bob.editors()
    with pytest.raises(DocumentError):
        bob.commit(BOB, [(0, 0, "x")], bob.heads())


def test_after_a_removal_new_keys_are_under_the_next_secret_only() -> None:
    doc = team_doc()
    # Carol is removed: a new epoch; Alice refreshes under its secret, without Carol.
    remaining = MEMBERS - {CAROL.public_key}
    alice = member(doc.objects(), identity=ALICE, members=remaining | {CAROL.public_key},
                   secrets=(NEXT_SECRET, SECRET))
    alice.refresh_key(ALICE, "main", without=[CAROL.public_key])
    alice.commit(ALICE, [(4, 0, "!")], alice.heads())
    objects = alice.objects()
    bob = member(objects, secrets=(NEXT_SECRET, SECRET))
    assert bob.text(bob.heads()) == "plan!"
    bob.commit(BOB, [(0, 0, "> ")], bob.heads())  # Bob writes with the new epoch's key
    carol = member(objects + bob.drain(), identity=CAROL)  # only the old secret
    with pytest.raises(DocumentError, match="read key"):
        carol.text(carol.heads())


def test_editing_is_a_kind_of_its_own_and_needs_a_workspace_readable_document() -> None:
    check_body("doc/editing", {"mode": "workspace"})
    with pytest.raises(InvalidObject):
        check_body("doc/editing", {"mode": "everyone"})
    with pytest.raises(DocumentError, match="readable by the workspace"):
        Document.create(ALICE, "P", clock=counting_clock(), secret=SECRET, private=True,
                        editing="workspace")
    with pytest.raises(DocumentError, match="stays readable"):
        team_doc().set_visibility(ALICE, "private")


def test_only_the_creators_editing_counts_and_order_does_not_matter() -> None:
    doc = Document.create(ALICE, "Mine", clock=counting_clock(), secret=SECRET,
                          members=MEMBERS)
    bob = member(doc.objects())
    bob.root_branch.publish_root(BOB, "doc/editing", {"mode": "workspace"})  # a forger's
    objects = doc.objects() + bob.drain()
    texts = set()
    for seed in range(3):
        random.Random(seed).shuffle(objects)
        reader = member(objects, identity=CAROL)
        assert reader.editing == "listed" and CAROL.public_key not in reader.editors()
        texts.add(reader.editors())
    assert len(texts) == 1


def test_a_refresh_goes_above_a_workspace_key_a_removed_member_published() -> None:
    doc = team_doc()
    carol = member(doc.objects(), identity=CAROL)
    branch = next(b.id for b in carol.root_branch.branch_objects())
    stolen = bytes(range(5, 37))
    carol.branch_keys.publish_workspace_key(CAROL, branch, 50, stolen)  # before her removal: kept
    objects = doc.objects() + carol.drain()
    alice = member(objects, identity=ALICE, secrets=(NEXT_SECRET, SECRET))
    assert alice.refresh_key(ALICE, "main", without=[CAROL.public_key]) == 51
    bob = member(alice.objects() + alice.drain(), secrets=(NEXT_SECRET, SECRET))
    bob.commit(BOB, [(0, 0, "new: ")], bob.heads())
    [commit] = [o for o in bob.drain() if o.type == "doc/commit"]
    assert commit.body["epoch"] == 51  # not the key carol knows
