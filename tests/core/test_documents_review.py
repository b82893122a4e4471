"""core.documents reviewing (_review.py): versions across branches, their common past in both
directions, who changed what between two versions, and merges that carry resolution edits.

Pure: documents in memory with deterministic identities and a counting clock; a fresh `Document`
loaded from the objects stands for another member's computer.
"""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.documents import Document, DocumentError
from core.identity import Identity
from tests.support import FakeClock

T0_MS = 1_700_000_000_000


def ident(name: str) -> Identity:
    return Identity.from_seed(hashlib.blake2b(name.encode(), digest_size=32).digest())


ALICE, BOB = ident("alice"), ident("bob")
A, B = ALICE.public_key, BOB.public_key


def two_editors(text: str = "") -> tuple[Document, str | None]:
    """A document alice and bob both edit, its main reading `text` (its commit, if any)."""
    doc = Document.create(ALICE, "Plan", clock=FakeClock(T0_MS, tick=1))
    doc.add_editor(ALICE, B)
    first = doc.commit(ALICE, [(0, 0, text)], doc.heads()) if text else None
    return doc, first


def write(doc: Document, who: Identity, branch: str, position: int, delete: int,
          insert: str) -> str:
    return doc.commit(who, [(position, delete, insert)], doc.heads(branch), branch=branch)


def replayed(doc: Document) -> Document:
    """The same document on another computer: its objects and keys, in no particular order."""
    return Document.load(reversed(doc.objects()), identity=BOB, keys=doc.keys())


# The common past ------------------------------------------------------------------------------

def test_the_common_past_of_two_branches_is_found_in_both_directions():
    doc, first = two_editors("# Roadmap\n")
    doc.fork(ALICE, "main", "alt")
    assert doc.review.merge_base("alt", "main") == [first]
    write(doc, ALICE, "main", 9, 0, " MAIN")
    alt_one = write(doc, BOB, "alt", 0, 0, "> ")
    assert doc.review.merge_base("alt", "main") == [first]
    assert doc.review.version_text(doc.review.merge_base("alt", "main")) == "# Roadmap\n"

    doc.review.merge(ALICE, "alt", "main")  # main took in alt up to alt_one...
    write(doc, BOB, "alt", 0, 0, "!")
    assert doc.review.merge_base("alt", "main") == [alt_one]  # ...so that is where they last met
    back = doc.review.merge(ALICE, "main", "alt")  # and alt took in main: they meet at main's heads
    assert doc.review.merge_base("main", "alt") == doc.heads("main")
    assert doc.review.common(doc.heads("main"), [back]) == doc.heads("main")
    assert doc.review.version_text(doc.heads("main")) == "> # Roadmap MAIN\n"
    # The same from the objects alone, on another computer.
    other = replayed(doc)
    assert other.review.merge_base("main", "alt") == doc.heads("main")
    with pytest.raises(DocumentError, match="itself"):
        doc.review.merge_base("alt", "alt")


def test_a_version_can_span_branches_and_reads_as_their_union():
    doc, _ = two_editors("one\n\ntwo\n")
    doc.fork(ALICE, "main", "alt")
    mine = write(doc, ALICE, "main", 0, 3, "ONE")
    theirs = write(doc, BOB, "alt", 5, 3, "TWO")
    assert doc.review.version_text([mine, theirs]) == "ONE\n\nTWO\n"
    assert doc.review.merged_text("alt", "main") == "ONE\n\nTWO\n"
    assert doc.review.version_text([]) == ""
    assert doc.review.branch_of(theirs) == next(b.id for b in doc.branches() if b.name == "alt")
    with pytest.raises(DocumentError):
        doc.review.version_text(["nonexistent"])


# Who changed what -----------------------------------------------------------------------------

def test_changes_name_who_inserted_and_who_removed_each_run_in_codepoints():
    doc, first = two_editors("héllo 😀 world\n")
    write(doc, BOB, "main", 0, 0, "¡Hola! ")  # bob inserts before
    write(doc, ALICE, "main", 13, 2, "")  # alice removes the emoji and the space after it
    write(doc, BOB, "main", 18, 0, " 🌍")  # bob appends after "world"
    changes = doc.review.changes([first], doc.heads())
    assert changes.text == doc.text(doc.heads()) == "¡Hola! héllo world 🌍\n"
    assert [(r.text, r.author, r.base) for r in changes.runs] == [
        ("¡Hola! ", B, None), ("héllo ", None, 0), ("world", None, 8), (" 🌍", B, None),
        ("\n", None, 13)]
    assert [(r.start, r.end, r.author) for r in changes.removed] == [(6, 8, A)]
    assert "héllo 😀 world\n"[6:8] == "😀 "


def test_text_inserted_and_removed_again_between_two_versions_is_no_change():
    doc, first = two_editors("keep\n")
    write(doc, BOB, "main", 4, 0, " draft")
    write(doc, ALICE, "main", 4, 6, "")  # alice removes bob's words again
    changes = doc.review.changes([first], doc.heads())
    assert [(r.text, r.author) for r in changes.runs] == [("keep\n", None)]
    assert changes.removed == ()


def test_changes_from_the_common_past_to_either_branch():
    doc, first = two_editors("# Roadmap\n")
    doc.fork(ALICE, "main", "alt")
    write(doc, ALICE, "main", 9, 0, " MAIN")
    write(doc, BOB, "alt", 2, 7, "Plan")
    common = doc.review.merge_base("alt", "main")
    ours = doc.review.changes(common, doc.heads("main"))
    theirs = doc.review.changes(common, doc.heads("alt"))
    assert [(r.text, r.author) for r in ours.runs] == [
        ("# Roadmap", None), (" MAIN", A), ("\n", None)]
    assert [(r.text, r.author) for r in theirs.runs] == [
        ("# ", None), ("Plan", B), ("\n", None)]
    assert [(r.start, r.end, r.author) for r in theirs.removed] == [(2, 9, B)]
    # A fork's first commits copy the source's text: they change nothing of their own.
    assert doc.review.changes([first], doc.heads("alt")).runs == theirs.runs
    with pytest.raises(DocumentError, match="not in the past"):
        doc.review.changes(doc.heads("main"), doc.heads("alt"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.booleans(), st.integers(0, 10**6), st.integers(0, 5),
                          st.sampled_from(["", "x", "é", "😀", "ab\n"])),
                min_size=1, max_size=12))
def test_changes_rebuild_both_versions_and_name_only_their_authors(steps):
    doc, first = two_editors("base text é 😀\nline two\n")
    old = doc.text([first])
    for by_bob, at, delete, insert in steps:
        length = len(doc.text(doc.heads()))
        position = at % (length + 1)
        delete = min(delete, length - position)
        if delete or insert:
            write(doc, BOB if by_bob else ALICE, "main", position, delete, insert)
    changes = doc.review.changes([first], doc.heads())
    assert changes.text == doc.text(doc.heads())
    # What stayed plus what was removed is the older text, in place.
    kept = [(r.base, r.text) for r in changes.runs if r.author is None]
    removed = [(r.start, old[r.start:r.end]) for r in changes.removed]
    assert "".join(t for _, t in sorted(kept + removed)) == old
    assert {r.author for r in changes.runs if r.author} | {r.author for r in changes.removed} \
        <= {A, B}


# Merges with resolutions ----------------------------------------------------------------------

def test_a_merge_carries_its_resolution_edits_and_every_replay_reads_the_same():
    doc, _ = two_editors("# Roadmap\n\nsecond\n")
    doc.fork(ALICE, "main", "alt")
    write(doc, ALICE, "main", 9, 0, " MAIN")
    write(doc, BOB, "alt", 9, 0, " ALT")
    merged = doc.review.merged_text("alt", "main")
    assert merged in ("# Roadmap MAIN ALT\n\nsecond\n", "# Roadmap ALT MAIN\n\nsecond\n")
    # The resolution ("theirs"): the first line reads as alt has it.
    line = merged.index("\n")
    commit = doc.review.merge(ALICE, "alt", "main", edits=[(0, line, "# Roadmap ALT")],
                       resolutions=["theirs"])
    assert doc.text([commit]) == "# Roadmap ALT\n\nsecond\n"
    assert doc.heads("main") == [commit]
    assert [c.kind for c in doc.history("main")][-1] == "merge"
    assert doc.review.resolutions(commit) == ["theirs"]
    other = replayed(doc)
    assert other.text(other.heads("main")) == "# Roadmap ALT\n\nsecond\n"
    assert other.review.resolutions(commit) == ["theirs"]
    # Undo is for what I typed, never the resolution: "MAIN" does not come back.
    assert doc.undo(ALICE, "main") is not None
    after = doc.text(doc.heads("main"))
    assert after.startswith("# Roadmap ALT") and "MAIN" not in after


def test_a_merge_whose_edits_do_not_fit_changes_nothing():
    doc, _ = two_editors("one\n")
    doc.fork(ALICE, "main", "alt")
    write(doc, BOB, "alt", 0, 0, "zero ")
    before = (doc.heads("main"), doc.text(doc.heads("main")), len(doc.objects()))
    with pytest.raises(DocumentError, match="outside the text"):
        doc.review.merge(ALICE, "alt", "main", edits=[(100, 1, "")], resolutions=["ours"])
    with pytest.raises(DocumentError, match="resolved by one of"):
        doc.review.merge(ALICE, "alt", "main", resolutions=["mine"])
    assert (doc.heads("main"), doc.text(doc.heads("main")), len(doc.objects())) == before
    commit = doc.review.merge(ALICE, "alt", "main")
    assert doc.text([commit]) == "zero one\n" and doc.review.resolutions(commit) == []



def test_a_merge_too_large_for_one_object_is_a_chain_of_merge_commits():
    doc, _ = two_editors("# Notes\n\nend\n")
    doc.fork(ALICE, "main", "long")
    # A week of work on the branch: far more than one object's worth of changes.
    for n in range(12):
        write(doc, BOB, "long", 8, 0, f"paragraph {n} " + "words " * 2_000 + "\n")
    write(doc, ALICE, "main", 0, 0, "TOP ")
    expected = doc.review.merged_text("long", "main")
    line = expected.index("\n")
    commit = doc.review.merge(ALICE, "long", "main", edits=[(0, line, "# Notes, merged")],
                       resolutions=["both"])
    merges = [c for c in doc.history("main") if c.kind == "merge"]
    assert len(merges) > 1 and merges[-1].id == commit  # cut up, the last one is the merge
    assert all(len(o.raw) < 64 * 1024 for o in doc.objects())
    assert doc.heads("main") == [commit] and doc.review.resolutions(commit) == ["both"]
    text = "# Notes, merged" + expected[line:]
    assert doc.text([commit]) == text
    other = replayed(doc)
    assert other.text(other.heads("main")) == text
