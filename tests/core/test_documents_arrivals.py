"""Commits arriving at an open document, in any batches and order: heads and text follow the set
held (as a document loaded from the same objects reads), while only commits arrive heads move
by them instead of being worked out from the whole branch, and a forged commit that arrives
before the commit it links to never hides that commit."""

from __future__ import annotations

import os
import random

import nacl.secret

from core import encoding
from core.documents import Document
from core.objects import build
from tests.core.documents_support import (
    ALICE,
    BOB,
    MALLORY,
    T0_MS,
    branch_key,
    counting_clock,
    craft_commit,
    main_id,
    yjs_insert,
)


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


def test_a_parent_arriving_after_its_child_on_a_document_opened_from_a_snapshot():
    doc = Document.create(ALICE, "t", clock=counting_clock())
    first = doc.commit(ALICE, [(0, 0, "one ")], [])
    second = doc.commit(ALICE, [(4, 0, "two ")], [first])
    doc.rename(ALICE, "t2")  # the next commit names its root itself: visible without its parent
    third = doc.commit(ALICE, [(8, 0, "three")], [second])
    by_id = {o.hex: o for o in doc.objects()}
    base = [o for o in doc.objects() if o.hex not in (second, third)]
    snapshot = Document.load(base, identity=BOB, keys=doc.keys()).snapshot("main")
    held = Document.load(base, identity=BOB, keys=doc.keys(), snapshots=[snapshot],
                         clock=counting_clock())
    assert held.heads() == [first]  # taken from the snapshot's record
    held.add([by_id[third]])  # the child first: sync's order is any
    held.add([by_id[second]])
    assert held.heads() == [third]
    assert held.text(held.heads()) == "one two three"


def test_a_commit_whose_first_parent_is_on_another_branch_never_counts():
    doc = Document.create(ALICE, "t", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    alt = doc.fork(ALICE, "main", "alt")
    on_main = doc.commit(ALICE, [(0, 0, "main ")], [c0])
    nonce = os.urandom(24)
    box = nacl.secret.SecretBox(branch_key(doc, alt)).encrypt(
        encoding.dumps({"u": yjs_insert(doc, alt, "X")}), nonce).ciphertext
    crafted = build(ALICE, "doc/commit", stream=bytes.fromhex(alt),
                    body={"root": [], "epoch": 0, "nonce": nonce, "box": box},
                    ts=T0_MS + 10_000, links=[bytes.fromhex(on_main)])
    everything = [*doc.objects(), crafted]
    for late in (on_main, crafted.hex):  # whichever arrives last
        held = Document.load([o for o in everything if o.hex != late], identity=BOB,
                             keys=doc.keys(), clock=counting_clock())
        held.heads(alt)
        held.add([o for o in everything if o.hex == late])
        assert crafted.hex not in held.heads(alt)
        assert held.text(held.heads(alt)) == "base"


def test_a_root_object_arriving_late_brings_the_commits_it_makes_count_into_kept_states():
    doc = Document.create(ALICE, "t", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    before = {o.id for o in doc.objects()}
    doc.add_editor(ALICE, BOB.public_key)
    added = [o for o in doc.objects() if o.id not in before and o.type == "doc/editors"]
    bobs = doc.commit(BOB, [(4, 0, " bob")], [c0])  # names a root where Bob is an editor
    doc.rename(ALICE, "t2")
    doc.commit(ALICE, [(0, 0, "alice ")], [bobs, c0])
    held = Document.load([o for o in doc.objects() if o not in added], identity=ALICE,
                         keys=doc.keys(), clock=counting_clock())
    assert held.text(held.heads()) == "alice base"  # Bob's commit does not count yet
    held.add(added)
    assert held.text(held.heads()) == "alice base bob" == doc.text(doc.heads())
