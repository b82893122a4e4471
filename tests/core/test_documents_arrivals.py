"""Commits arriving at an open document, in any batches and order: heads and text follow the set
held (as a document loaded from the same objects reads), while only commits arrive heads move
by them instead of being worked out from the whole branch, and a forged commit that arrives
before the commit it links to never hides that commit."""

from __future__ import annotations

import random

from core.documents import Document
from tests.core.test_documents import ALICE, BOB, MALLORY, counting_clock, craft_commit, main_id


def concurrent_history(rounds: int = 12) -> tuple[Document, list]:
    """Alice and Bob editing at once: each commits on the heads they last saw."""
    doc = Document.create(ALICE, "together", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    start = len(doc.objects())
    seen = {ALICE: doc.heads(), BOB: doc.heads()}
    rng = random.Random(7)
    for n in range(rounds):
        for person in (ALICE, BOB):
            if rng.random() < 0.4:
                seen[person] = doc.heads()  # caught up with the other
            at = len(doc.text(seen[person])) if seen[person] else 0
            seen[person] = [doc.commit(person, [(rng.randint(0, at), 0, f"{n}")],
                                       seen[person])]
    objects = doc.objects()
    return doc, [objects[:start], objects[start:]]


def reads(doc: Document) -> tuple[list[str], str]:
    return doc.heads(), doc.text(doc.heads())


def test_commits_arriving_in_any_batches_read_as_a_document_loaded_from_them():
    doc, (base, commits) = concurrent_history()
    for seed in range(6):
        rng = random.Random(seed)
        order = commits[:]
        rng.shuffle(order)
        held = Document.load(base, identity=BOB, keys=doc.keys(), clock=counting_clock())
        reads(held)  # heads known before commits arrive: the case where they move by them
        so_far = list(base)
        while order:
            size = rng.randint(1, 4)
            batch, order = order[:size], order[size:]
            so_far.extend(batch)
            held.add(batch)
            fresh = Document.load(so_far, identity=BOB, keys=doc.keys(),
                                  clock=counting_clock())
            assert reads(held) == reads(fresh)
    assert reads(held) == reads(doc)


def test_a_forged_commit_arriving_before_its_parent_does_not_hide_the_parent():
    doc = Document.create(ALICE, "guarded", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "clean")], [])
    held = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(), clock=counting_clock())
    c1 = doc.commit(ALICE, [(5, 0, " and more")], [c0])
    forged = craft_commit(MALLORY, doc, main_id(doc), [c1], "EVIL ")
    assert held.heads() == [c0]
    held.add([forged])  # Mallory relays her child of c1 before c1 itself
    assert held.heads() == [c0]
    held.add([o for o in doc.objects() if o.hex == c1])
    assert held.heads() == [c1]
    assert held.text(held.heads()) == "clean and more"
