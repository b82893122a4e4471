"""core.documents: branch keys, their epochs and refreshes, and capabilities to read one branch."""

from __future__ import annotations

import base64
import hashlib
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.documents import CAP_PREFIX, Capability, Document, DocumentError

from .documents_support import (
    ALICE,
    BOB,
    CAROL,
    T0_MS,
    counting_clock,
    doc_epochs,
    main_id,
    new_since,
)

# Keys and capabilities -----------------------------------------------------------------------

@pytest.fixture
def two_branches() -> tuple[Document, str, str]:
    doc = Document.create(ALICE, "secret", clock=counting_clock())
    doc.commit(ALICE, [(0, 0, "main text")], [])
    draft = doc.fork(ALICE, "main", "draft")
    doc.commit(ALICE, [(0, 0, "draft: ")], doc.heads("draft"), branch="draft")
    return doc, main_id(doc), draft


def test_member_without_the_key_holds_commits_but_cannot_read(two_branches) -> None:
    doc, main, draft = two_branches
    member = Document.load(doc.objects(), identity=CAROL)
    assert member.heads("main") == doc.heads("main")
    assert member.heads("draft") == doc.heads("draft")
    for branch in (main, draft):
        with pytest.raises(DocumentError, match="read key"):
            member.text(member.heads(branch))
        assert {c.kind for c in member.history(branch)} == {"?"}
        with pytest.raises(DocumentError):
            member.share(branch)
        assert member.snapshot(branch) is None
    assert not any(b.readable for b in member.branches())
    assert member.text([]) == ""


def test_editors_receive_every_branch_key(two_branches) -> None:
    doc, main, draft = two_branches
    doc.add_editor(ALICE, BOB.public_key)
    later = doc.fork(ALICE, "draft", "later")
    bob = Document.load(doc.objects(), identity=BOB)
    assert bob.text(bob.heads(main)) == "main text"
    assert bob.text(bob.heads(draft)) == "draft: main text"
    assert bob.text(bob.heads(later)) == "draft: main text"
    assert all(b.readable for b in bob.branches())


def test_capability_opens_one_branch_and_not_another(two_branches) -> None:
    doc, main, draft = two_branches
    cap = doc.share("draft")
    assert (cap.document, cap.branch.hex()) == (doc.root.id, draft)
    text = cap.encode()
    assert text.startswith(CAP_PREFIX) and Capability.decode(text) == cap
    reader = Document.load(doc.objects(), identity=CAROL)
    reader.open_capability(Capability.decode(text))
    assert reader.text(reader.heads("draft")) == "draft: main text"
    with pytest.raises(DocumentError):
        reader.text(reader.heads("main"))
    assert {b.name: b.readable for b in reader.branches()} == {"main": False, "draft": True}
    # Being able to read is not being able to write.
    with pytest.raises(DocumentError):
        reader.commit(CAROL, [(0, 0, "x")], reader.heads("draft"), branch="draft")

    elsewhere = Document.create(ALICE, "other", clock=counting_clock())
    with pytest.raises(DocumentError, match="another document"):
        elsewhere.open_capability(cap)


def test_capability_encoding_round_trip_and_damage(two_branches) -> None:
    doc, _, _ = two_branches
    cap = doc.share("main")
    text = cap.encode()
    # Spaces, line breaks and upper case (a copy from an email) are fine.
    spaced = " ".join(text[i:i + 7] for i in range(0, len(text), 7)).upper()
    assert Capability.decode(spaced[:30] + "\n" + spaced[30:]) == cap
    for cut in range(1, len(text) - len(CAP_PREFIX) + 1):
        with pytest.raises(DocumentError):
            Capability.decode(text[:-cut])
    rng = random.Random(7)
    alphabet = "abcdefghijklmnopqrstuvwxyz234567"
    for i in range(len(CAP_PREFIX), len(text)):
        damaged = text[:i] + rng.choice(alphabet.replace(text[i], "")) + text[i + 1:]
        try:
            decoded = Capability.decode(damaged)
        except DocumentError:
            continue
        # Only the unused bits of the last character can change without damage.
        assert decoded == cap and i == len(text) - 1, damaged
    for garbage in ["", "hearthcap1-", "hearthcap2-" + text[len(CAP_PREFIX):], "not a cap",
                    text + "a", text[:20] + "1" + text[21:], text[:20] + "é" + text[21:]]:
        with pytest.raises(DocumentError):
            Capability.decode(garbage)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=120))
def test_capability_with_a_valid_checksum_but_garbage_inside_is_refused(payload: bytes) -> None:
    data = payload + hashlib.blake2b(payload, digest_size=4).digest()
    text = CAP_PREFIX + base64.b32encode(data).decode().rstrip("=").lower()
    try:
        cap = Capability.decode(text)
    except DocumentError:
        return
    assert len(cap.document) == len(cap.branch) == 32


def test_key_refresh_shuts_old_capabilities_out_of_later_commits() -> None:
    doc = Document.create(ALICE, "refresh", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c1 = doc.commit(ALICE, [(0, 0, "before")], [])
    old = doc.share("main")
    assert doc_epochs(old) == [0]
    assert doc.refresh_key(ALICE, "main") == 1
    c2 = doc.commit(ALICE, [(6, 0, " after")], [c1])

    reader = Document.load(doc.objects(), identity=CAROL)
    reader.open_capability(old)
    assert reader.text([c1]) == "before"
    with pytest.raises(DocumentError):
        reader.text([c2])
    assert [c.kind for c in reader.history()] == ["edit", "?"]

    # An editor got the new key sealed to them; a fresh share carries both epochs.
    bob = Document.load(doc.objects(), identity=BOB)
    assert bob.text([c2]) == "before after"
    new = doc.share("main")
    assert doc_epochs(new) == [0, 1]
    reader.open_capability(Capability.decode(new.encode()))
    assert reader.text([c2]) == "before after"


def test_removed_editor_reads_the_past_but_not_later_commits() -> None:
    doc = Document.create(ALICE, "removed", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c1 = doc.commit(ALICE, [(0, 0, "shared")], [])
    doc.remove_editor(ALICE, BOB.public_key)
    c2 = doc.commit(ALICE, [(6, 0, " private")], [c1])
    bob = Document.load(doc.objects(), identity=BOB)
    assert bob.text([c1]) == "shared"
    with pytest.raises(DocumentError):
        bob.text([c2])
    with pytest.raises(DocumentError):
        bob.commit(BOB, [(0, 0, "x")], [c1])


def test_concurrent_key_refreshes_keep_the_branch_readable() -> None:
    doc = Document.create(ALICE, "refreshes", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    doc.add_editor(ALICE, CAROL.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "hello")], [])
    base = doc.objects()
    alice = Document.load(base, identity=ALICE, clock=counting_clock(T0_MS + 100))
    bob = Document.load(base, identity=BOB, clock=counting_clock(T0_MS + 200))
    alice.refresh_key(ALICE, "main")
    bob.refresh_key(BOB, "main")
    alice.commit(ALICE, [(0, 0, "A")], [c0])
    bob.commit(BOB, [(5, 0, "B")], [c0])
    new = new_since(alice, base) + new_since(bob, base)
    for who in (ALICE, BOB, CAROL):
        for order in (new, new[::-1]):
            seen = Document.load([*base, *order], identity=who)
            assert seen.text(seen.heads()) == "AhelloB"
