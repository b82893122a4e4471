"""core.documents: branches of Yjs text whose state is a function of the set of objects held.

Pure: documents are built in memory with deterministic identities and a counting clock (a
tests.support.FakeClock that ticks at every reading), then their objects are loaded into fresh
`Document`s in every arrival order. Commits and root-branch objects that the API refuses to make
(a non-editor's commit, a non-creator's title) are built by hand with core.objects.build,
encrypted with the branch key the way commits are.
"""

from __future__ import annotations

import itertools
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import encoding
from core.documents import Document, DocumentError
from core.documents._commits import Commits
from core.errors import InvalidObject

from .documents_support import (
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    T0_MS,
    apply_str,
    counting_clock,
    craft_commit,
    craft_root,
    main_id,
    new_since,
)

# Convergence ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def concurrent() -> dict:
    """A base commit, then four commits on exactly that parent: alice twice from the same
    instance, alice from a second instance loaded from the same objects, and bob."""
    clock = counting_clock()
    doc = Document.create(ALICE, "concurrent", clock=clock)
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "base text")], [])
    base = doc.objects()
    first = doc.commit(ALICE, [(0, 0, "<a1>")], [c0])
    second = doc.commit(ALICE, [(0, 0, "<a2>")], [c0])  # same instance, same parents again
    twin = Document.load(base, identity=ALICE, clock=clock)
    third = twin.commit(ALICE, [(0, 0, "<a3>")], [c0])
    other = Document.load(base, identity=BOB, clock=clock)
    bob = other.commit(BOB, [(0, 5, ""), (4, 0, "<b>")], [c0])  # "text<b>"
    new = new_since(doc, base) + new_since(twin, base) + new_since(other, base)
    assert len(new) == 4 and all(o.type == "doc/commit" for o in new)
    return {"base": base, "new": new, "c0": c0, "commits": sorted([first, second, third, bob]),
            "keys": doc.keys()}


def _check_concurrent_text(text: str) -> None:
    for piece in ("<a1>", "<a2>", "<a3>"):
        assert text.count(piece) == 1, text
    assert text.endswith("text<b>"), text
    assert "base" not in text


def test_concurrent_commits_converge_in_every_arrival_order(concurrent: dict) -> None:
    texts = set()
    for order in itertools.permutations(concurrent["new"]):
        doc = Document.load([*concurrent["base"], *order], identity=ALICE)
        assert doc.heads() == concurrent["commits"]
        assert doc.text([concurrent["c0"]]) == "base text"
        texts.add(doc.text(doc.heads()))
    assert len(texts) == 1, texts
    _check_concurrent_text(texts.pop())


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_concurrent_commits_converge_when_every_object_is_shuffled(concurrent: dict,
                                                                  data: st.DataObject) -> None:
    reference = Document.load([*concurrent["base"], *concurrent["new"]], identity=ALICE)
    expected = reference.text(reference.heads())
    objects = data.draw(st.permutations([*concurrent["base"], *concurrent["new"]]))
    # Reading by keys alone (no identity) gives the same as unsealing them as an editor.
    doc = Document.load(objects, keys=concurrent["keys"])
    assert doc.heads() == concurrent["commits"]
    assert doc.text(doc.heads()) == expected


def test_next_commit_on_every_head_merges_the_fork(concurrent: dict) -> None:
    doc = Document.load([*concurrent["base"], *concurrent["new"]], identity=BOB,
                        clock=counting_clock())
    before = doc.text(doc.heads())
    merge = doc.commit(BOB, [(len(before), 0, "!")], doc.heads())
    assert doc.heads() == [merge]
    assert doc.text([merge]) == before + "!"
    assert sorted(doc.history()[-1].parents) == concurrent["commits"]
    following = doc.commit(BOB, [(0, 0, "#")], [merge])
    new = new_since(doc, concurrent["base"])
    assert len(new) == 6
    for order in itertools.permutations(new):
        fresh = Document.load([*concurrent["base"], *order], identity=ALICE)
        assert fresh.heads() == [following]
        assert fresh.text(fresh.heads()) == "#" + before + "!"
        assert fresh.text([merge]) == before + "!"


def test_same_instance_commits_on_old_parents_again_and_again() -> None:
    """Re-using one instance from an older state must never reuse a Yjs client's clock."""
    doc = Document.create(ALICE, "again", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "0")], [])
    made = [doc.commit(ALICE, [(1, 0, str(n))], [c0]) for n in range(1, 5)]
    after = doc.commit(ALICE, [(0, 0, "x")], [made[0]])  # back onto one branch of the fork
    fresh = Document.load(doc.objects(), identity=ALICE)
    assert fresh.heads() == sorted([*made[1:], after])
    text = fresh.text(fresh.heads())
    assert sorted(text) == sorted("0x1234") and text.startswith("x0")
    assert doc.text(doc.heads()) == text


# Positions in codepoints ---------------------------------------------------------------------

UNICODE_CASES = {
    "insert after an emoji": ("a😀b", [(2, 0, "X")]),
    "delete an emoji": ("a😀b😀c", [(1, 1, "")]),
    "replace an emoji with an emoji": ("😀😀😀", [(1, 1, "🎉")]),
    "delete a CJK character": ("日本語テキスト", [(1, 1, "")]),
    "insert among CJK": ("漢字かな", [(2, 0, "と")]),
    "insert between a letter and its combining mark": ("cafe\u0301!", [(4, 0, "X")]),
    "delete only the combining mark": ("e\u0301e\u0300", [(1, 1, "")]),
    "zwj family sequence is five codepoints": ("👩\u200d👩\u200d👧 hi", [(0, 5, "F")]),
    "several edits in one commit": ("αβγ😀δ", [(0, 1, "A"), (3, 1, ""), (3, 0, "🙂🙂"),
                                                 (6, 0, "漢")]),
    "flag (two regional indicators)": ("x🇫🇷y", [(2, 0, "|")]),
}


@pytest.mark.parametrize("initial, edits", UNICODE_CASES.values(), ids=UNICODE_CASES.keys())
def test_unicode_edits_land_at_codepoints(initial: str, edits: list) -> None:
    doc = Document.create(ALICE, "unicode", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, initial)], [])
    c1 = doc.commit(ALICE, edits, [c0])
    expected = apply_str(initial, edits)
    assert doc.text([c1]) == expected
    # Replay from the objects (another computer) gives the same codepoints.
    fresh = Document.load(doc.objects(), identity=ALICE)
    assert fresh.text([c1]) == expected
    assert fresh.text([c0]) == initial
    # And an edit continuing from the replayed state lands where codepoints say.
    c2 = fresh.commit(ALICE, [(len(expected), 0, "🏁"), (1, 0, "·")], [c1])
    assert fresh.text([c2]) == apply_str(expected, [(len(expected), 0, "🏁"), (1, 0, "·")])


def test_ascii_text_becoming_unicode_and_back() -> None:
    """The ASCII fast path and the codepoint mirror hand over correctly in both directions."""
    doc = Document.create(ALICE, "mixed", clock=counting_clock())
    steps = [[(0, 0, "plain ascii")], [(5, 0, "😀")], [(0, 0, "ab")], [(7, 1, "")],
             [(3, 0, "é")], [(0, 14, "")], [(0, 0, "back to ascii")], [(4, 2, "ZZ")]]
    text, heads = "", []
    for edits in steps:
        heads = [doc.commit(ALICE, edits, heads)]
        text = apply_str(text, edits)
        assert doc.text(heads) == text
    assert Document.load(doc.objects(), identity=ALICE).text(heads) == text


SAFE_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=6)
SPICY_TEXT = st.text(st.sampled_from(list("ab é😀漢\u0301\u200d🇫")), max_size=5)


@st.composite
def edit_sequences(draw: st.DrawFn) -> list[list[tuple[int, int, str]]]:
    commits, length = [], 0
    for _ in range(draw(st.integers(1, 6))):
        edits = []
        for _ in range(draw(st.integers(0, 3))):
            position = draw(st.integers(0, length))
            delete = draw(st.integers(0, length - position))
            insert = draw(st.one_of(SAFE_TEXT, SPICY_TEXT))
            edits.append((position, delete, insert))
            length += len(insert) - delete
        commits.append(edits)
    return commits


@settings(max_examples=150, deadline=None)
@given(edit_sequences())
def test_random_edit_sequences_match_python_strings(commits: list) -> None:
    doc = Document.create(ALICE, "random", clock=counting_clock())
    expected, heads, states = "", [], []
    for edits in commits:
        heads = [doc.commit(ALICE, edits, heads)]
        expected = apply_str(expected, edits)
        states.append((heads, expected))
        assert doc.text(heads) == expected
    fresh = Document.load(doc.objects(), identity=ALICE)
    for at, text in reversed(states):  # every older state too, from a replay
        assert fresh.text(at) == text


def test_edit_outside_the_text_is_refused() -> None:
    doc = Document.create(ALICE, "bounds", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "😀😀")], [])
    for bad in [(3, 0, "x"), (1, 2, ""), (-1, 0, "x"), (0, -1, "")]:
        with pytest.raises(DocumentError):
            doc.commit(ALICE, [bad], [c0])
    assert doc.heads() == [c0]
    assert doc.text([c0]) == "😀😀"


def test_refused_commit_leaves_no_trace() -> None:
    doc = Document.create(ALICE, "atomic", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "hello")], [])
    with pytest.raises(DocumentError):
        doc.commit(ALICE, [(0, 0, "abc"), (100, 0, "x")], [c0])
    assert doc.heads() == [c0]
    assert doc.text([c0]) == "hello"
    c1 = doc.commit(ALICE, [(5, 0, "!")], [c0])
    assert doc.text([c1]) == Document.load(doc.objects(), identity=ALICE).text([c1])


def test_an_oversized_commit_is_either_made_or_leaves_no_trace() -> None:
    doc = Document.create(ALICE, "big paste", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "small")], [])
    paste = "z" * 70_000
    try:
        made = doc.commit(ALICE, [(5, 0, paste)], [c0])
    except (DocumentError, InvalidObject):
        assert doc.heads() == [c0]
        assert doc.text([c0]) == "small"
    else:
        assert Document.load(doc.objects(), identity=ALICE).text([made]) == "small" + paste


def test_forking_a_document_larger_than_one_object() -> None:
    doc = Document.create(ALICE, "big", clock=counting_clock())
    c1 = doc.commit(ALICE, [(0, 0, "x" * 40_000)], [])
    c2 = doc.commit(ALICE, [(40_000, 0, "y" * 40_000)], [c1])
    draft = doc.fork(ALICE, "main", "draft")
    assert doc.text(doc.heads(draft)) == doc.text([c2])
    assert Document.load(doc.objects(), identity=ALICE).text(doc.heads(draft)) == \
        "x" * 40_000 + "y" * 40_000


# Forks, merges, tags, main -------------------------------------------------------------------

@pytest.fixture
def history_doc() -> tuple[Document, list[str]]:
    doc = Document.create(ALICE, "branches", clock=counting_clock())
    c1 = doc.commit(ALICE, [(0, 0, "alpha")], [])
    c2 = doc.commit(ALICE, [(5, 0, " beta")], [c1])
    c3 = doc.commit(ALICE, [(10, 0, " gamma")], [c2])
    return doc, [c1, c2, c3]


def test_fork_at_an_older_commit_then_merge(history_doc) -> None:
    doc, (c1, c2, c3) = history_doc
    main = main_id(doc)
    draft = doc.fork(ALICE, "main", "draft", at=[c1])
    assert doc.text(doc.heads("draft")) == "alpha"
    assert doc.text(doc.heads(draft)) == "alpha"
    info = {b.name: b for b in doc.branches()}
    assert info["draft"].id == draft and info["draft"].source == main
    assert info["draft"].at == (c1,) and not info["draft"].main and info["main"].main
    assert [c.kind for c in doc.history("draft")] == ["snapshot"]
    assert doc.heads("main") == [c3]  # forking does not touch the source

    d1 = doc.commit(ALICE, [(0, 0, "ZERO ")], doc.heads("draft"), branch="draft")
    m1 = doc.commit(ALICE, [(16, 0, " delta")], doc.heads("main"))
    assert doc.text([d1]) == "ZERO alpha"
    assert doc.text([m1]) == "alpha beta gamma delta"

    merged = doc.review.merge(ALICE, "draft", "main")
    assert doc.heads("main") == [merged]
    assert doc.text([merged]) == "ZERO alpha beta gamma delta"
    last = doc.history("main")[-1]
    assert (last.id, last.kind, last.merged, last.parents) == (merged, "merge", (d1,), (m1,))
    assert doc.text(doc.heads("draft")) == "ZERO alpha"  # the source is unchanged

    # Merging again after more work on both sides brings only what is new.
    doc.commit(ALICE, [(5, 0, "!")], doc.heads("draft"), branch="draft")
    back = doc.review.merge(ALICE, "main", "draft")
    assert doc.text([back]) == "ZERO !alpha beta gamma delta"
    again = doc.review.merge(ALICE, "draft", "main")
    assert doc.text([again]) == "ZERO !alpha beta gamma delta"

    # Another computer replays the same from the objects alone.
    fresh = Document.load(doc.objects(), identity=ALICE)
    assert fresh.text(fresh.heads("main")) == doc.text(doc.heads("main"))
    assert fresh.text(fresh.heads("draft")) == "ZERO !alpha beta gamma delta"
    assert fresh.text([c2]) == "alpha beta"
    assert [b.name for b in fresh.branches()] == ["main", "draft"]

    with pytest.raises(DocumentError, match="itself"):
        doc.review.merge(ALICE, "draft", "draft")
    with pytest.raises(DocumentError):
        doc.fork(ALICE, "draft", "bad", at=[c2])  # c2 is not a commit of draft
    with pytest.raises(DocumentError):
        doc.text([c3, d1])  # commits of two branches
    with pytest.raises(DocumentError):
        doc.heads("nonexistent")


def test_tags_move_and_the_latest_wins(history_doc) -> None:
    doc, (c1, c2, c3) = history_doc
    doc.tag(ALICE, "v1", c1)
    doc.tag(ALICE, "wip", c3)
    assert doc.tags() == {"v1": c1, "wip": c3}
    doc.tag(ALICE, "v1", c2)
    assert doc.tags() == {"v1": c2, "wip": c3}
    assert doc.text([doc.tags()["v1"]]) == "alpha beta"
    with pytest.raises(DocumentError):
        doc.tag(ALICE, "ghost", "00" * 32)


def test_concurrent_tag_moves_agree_in_every_order(history_doc) -> None:
    doc, (c1, c2, c3) = history_doc
    doc.add_editor(ALICE, BOB.public_key)
    base = doc.objects()
    bob = Document.load(base, identity=BOB, clock=counting_clock(T0_MS + 500))
    bob.tag(BOB, "release", c2)
    doc.tag(ALICE, "release", c3)
    new = new_since(doc, base) + new_since(bob, base)
    winners = {tuple(Document.load([*base, *order]).tags().items())
               for order in itertools.permutations(new)}
    assert len(winners) == 1
    assert dict(winners.pop())["release"] in {c2, c3}


def test_set_main_moves_what_main_resolves_to(history_doc) -> None:
    doc, (c1, _, c3) = history_doc
    old_main = main_id(doc)
    draft = doc.fork(ALICE, "main", "draft", at=[c1])
    d1 = doc.commit(ALICE, [(5, 0, "!")], doc.heads("draft"), branch="draft")
    doc.set_main(ALICE, "draft")
    assert main_id(doc) == draft
    assert doc.heads("main") == doc.heads("draft") == [d1]
    assert doc.text(doc.heads("main")) == "alpha!"
    assert doc.heads(old_main) == [c3]
    # A commit to "main" now lands on draft.
    d2 = doc.commit(ALICE, [(0, 0, ">")], doc.heads("main"), branch="main")
    assert doc.heads(draft) == [d2] and doc.heads(old_main) == [c3]
    fresh = Document.load(doc.objects(), identity=ALICE)
    assert main_id(fresh) == draft and fresh.text(fresh.heads()) == ">alpha!"
    # And back, by id.
    doc.set_main(ALICE, old_main)
    assert doc.heads("main") == [c3] and main_id(doc) == old_main


# Who may do what -----------------------------------------------------------------------------

def test_outsider_cannot_commit_and_a_forged_commit_is_held_but_not_shown() -> None:
    doc = Document.create(ALICE, "guarded", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "clean")], [])
    main = main_id(doc)
    outsider = Document.load(doc.objects(), identity=MALLORY, clock=counting_clock())
    for attempt in (lambda: outsider.commit(MALLORY, [(0, 0, "x")], [c0]),
                    lambda: outsider.fork(MALLORY, "main", "mine"),
                    lambda: outsider.tag(MALLORY, "t", c0),
                    lambda: outsider.set_main(MALLORY, "main"),
                    lambda: outsider.rename(MALLORY, "owned"),
                    lambda: outsider.add_editor(MALLORY, MALLORY.public_key)):
        with pytest.raises(DocumentError):
            attempt()

    forged = craft_commit(MALLORY, doc, main, [c0], "EVIL ")
    control = craft_commit(ALICE, doc, main, [c0], "GOOD ")  # the same, by an editor
    for order in ([forged, control], [control, forged]):
        held = Document.load([*doc.objects(), *order], identity=ALICE)
        assert forged.id in {o.id for o in held.objects()}
        assert held.heads() == [control.hex]
        assert held.text(held.heads()) == "GOOD clean"
        assert forged.hex not in {c.id for c in held.history()}
        with pytest.raises(DocumentError):
            held.text([forged.hex])

    doc.add([forged])
    assert doc.heads() == [c0] and doc.text([c0]) == "clean"
    # Made an editor later: the old forgery named a root state where she was not one.
    doc.add_editor(ALICE, MALLORY.public_key)
    assert doc.heads() == [c0]
    welcome = craft_commit(MALLORY, doc, main, [c0], "HI ")
    doc.add([welcome])
    assert doc.heads() == [welcome.hex] and doc.text(doc.heads()) == "HI clean"


def test_forged_root_objects_by_the_wrong_people_are_ignored() -> None:
    doc = Document.create(ALICE, "Title", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "x")], [])
    forged = [
        craft_root(BOB, doc, "doc/title", {"title": "bob's now"}),  # editor, not creator
        craft_root(BOB, doc, "doc/editors", {"add": [MALLORY.public_key], "remove": []}),
        craft_root(MALLORY, doc, "doc/tag", {"name": "evil", "commit": bytes.fromhex(c0)}),
        craft_root(MALLORY, doc, "doc/main", {"branch": doc.root.id}),
        craft_root(MALLORY, doc, "doc/branch", {"name": "spam", "source": None, "at": []}),
    ]
    main = main_id(doc)
    doc.add(forged)
    assert doc.title == "Title"
    assert doc.editors() == {ALICE.public_key, BOB.public_key}
    assert doc.tags() == {}
    assert main_id(doc) == main and [b.name for b in doc.branches()] == ["main"]
    # The creator's own rename counts.
    doc.rename(ALICE, "Renamed")
    assert doc.title == "Renamed"
    bob = Document.load(doc.objects(), identity=BOB)
    with pytest.raises(DocumentError, match="creator"):
        bob.rename(BOB, "mine")


def test_removing_an_editor_concurrently_with_their_edit() -> None:
    doc = Document.create(ALICE, "removal", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    main = main_id(doc)
    base = doc.objects()
    bob = Document.load(base, identity=BOB, clock=counting_clock(T0_MS + 700))
    edit = bob.commit(BOB, [(4, 0, " bob")], [c0])  # names root heads before the removal
    doc.remove_editor(ALICE, BOB.public_key)
    assert BOB.public_key not in doc.editors()
    removal = new_since(doc, base)
    bob_new = new_since(bob, base)

    results = set()
    for order in ([*bob_new, *removal], [*removal, *bob_new]):
        seen = Document.load([*base, *order], identity=ALICE)
        assert seen.heads() == [edit]
        results.add(seen.text(seen.heads()))
        # An edit by bob naming the root heads after his removal (only a forger makes one:
        # his own Document refuses) is held but not shown.
        late = craft_commit(BOB, seen, main, [edit], "LATE ")
        seen.add([late])
        assert seen.heads() == [edit]
        assert late.id in {o.id for o in seen.objects()}
        with pytest.raises(DocumentError):
            Document.load(seen.objects(), identity=BOB).commit(BOB, [(0, 0, "x")], [edit])
    assert results == {"base bob"}


# Arrival order of ancestors ------------------------------------------------------------------

def test_ancestor_arriving_after_its_descendant_was_read() -> None:
    doc = Document.create(ALICE, "late parent", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "hello")], [])
    doc.tag(ALICE, "t", c0)  # the root changes, so the next commit names its root itself
    c1 = doc.commit(ALICE, [(5, 0, " world")], [c0])
    parent = next(o for o in doc.objects() if o.hex == c0)
    held = Document.load([o for o in doc.objects() if o.hex != c0], identity=ALICE)
    assert held.heads() == [c1]
    held.text([c1])  # read before the parent arrives
    held.add([parent])
    assert held.text([c1]) == "hello world"


# Undo and redo -------------------------------------------------------------------------------

def test_undo_and_redo_touch_only_my_edits() -> None:
    clock = counting_clock()
    alice = Document.create(ALICE, "undo", clock=clock)
    alice.add_editor(ALICE, BOB.public_key)
    c0 = alice.commit(ALICE, [(0, 0, "The cat")], [])
    bob = Document.load(alice.objects(), identity=BOB, clock=clock)
    bob.commit(BOB, [(7, 0, " sat")], [c0])
    alice.commit(ALICE, [(4, 0, "big ")], [c0])  # concurrent with bob's
    alice.add(bob.objects())
    assert alice.text(alice.heads()) == "The big cat sat"

    undo = alice.undo(ALICE)
    assert undo is not None and alice.heads() == [undo]
    assert alice.text([undo]) == "The cat sat"
    redo = alice.redo(ALICE)
    assert redo is not None and alice.text([redo]) == "The big cat sat"
    assert alice.redo(ALICE) is None
    assert alice.text([alice.undo(ALICE)]) == "The cat sat"
    assert alice.text([alice.undo(ALICE)]) == " sat"  # her first edit too; bob's stays
    assert alice.undo(ALICE) is None

    bob.add(alice.objects())
    assert bob.text(bob.heads()) == " sat"
    assert bob.text([bob.undo(BOB)]) == ""
    assert [c.author for c in bob.history()[-1:]] == [BOB.public_key]
    fresh = Document.load(bob.objects(), identity=CAROL, keys=bob.keys())
    assert fresh.text(fresh.heads()) == ""
    assert fresh.text([redo]) == "The big cat sat"


def test_undo_with_nothing_to_undo_and_for_outsiders() -> None:
    doc = Document.create(ALICE, "nothing", clock=counting_clock())
    assert doc.undo(ALICE) is None and doc.redo(ALICE) is None
    with pytest.raises(DocumentError):
        doc.undo(MALLORY)


def test_undo_still_works_after_reading_an_older_version() -> None:
    doc = Document.create(ALICE, "undo history", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "hello")], [])
    doc.commit(ALICE, [(5, 0, " world")], [c0])
    assert doc.text([c0]) == "hello"  # e.g. a history view
    undo = doc.undo(ALICE)
    assert undo is not None and doc.text([undo]) == "hello"


# Snapshots -----------------------------------------------------------------------------------

def test_snapshot_round_trip_and_continuing_to_commit(monkeypatch) -> None:
    clock = counting_clock()
    doc = Document.create(ALICE, "snap", clock=clock)
    c0 = doc.commit(ALICE, [(0, 0, "one 😀 two")], [])
    doc.commit(ALICE, [(3, 0, ",")], [c0])
    draft = doc.fork(ALICE, "main", "draft")
    doc.commit(ALICE, [(0, 0, "D:")], doc.heads("draft"), branch="draft")
    snapshots = [doc.snapshot("main"), doc.snapshot(draft)]
    assert all(s is not None for s in snapshots)
    assert all(b"two" not in s[4] for s in snapshots)  # the state is sealed

    loaded = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(),
                           snapshots=snapshots, clock=clock)
    # With snapshots, reading the heads needs no commit to be decrypted and replayed.
    with monkeypatch.context() as patch:
        def refuse(self, commit):
            raise AssertionError("replayed a commit although a snapshot was given")
        patch.setattr(Commits, "payload", refuse)
        assert loaded.text(loaded.heads("main")) == "one, 😀 two"
        assert loaded.text(loaded.heads("draft")) == "D:one, 😀 two"
    # Continuing from a snapshot makes commits every other replica reads the same.
    m = loaded.commit(ALICE, [(10, 0, "!")], loaded.heads("main"))
    d = loaded.commit(ALICE, [(2, 0, "🙂")], loaded.heads("draft"), branch="draft")
    assert loaded.text([m]) == "one, 😀 two!" and loaded.text([d]) == "D:🙂one, 😀 two"
    concurrent = doc.commit(ALICE, [(0, 0, ">")], doc.heads("main"))
    union = {o.id: o for o in [*loaded.objects(), *doc.objects()]}
    replay = Document.load(union.values(), identity=ALICE)
    assert replay.text([m]) == "one, 😀 two!"
    assert replay.text([d]) == "D:🙂one, 😀 two"
    assert replay.text(replay.heads("main")) == ">one, 😀 two!"
    assert sorted(replay.heads("main")) == sorted([m, concurrent])


def test_damaged_or_foreign_snapshots_are_only_a_slower_open() -> None:
    doc = Document.create(ALICE, "snap", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "kept")], [])
    branch, heads, epoch, nonce, box = doc.snapshot("main")
    flipped = box[:-1] + bytes([box[-1] ^ 1])
    unknown_heads = encoding.dumps([os.urandom(32)])
    for bad in [(branch, heads, epoch, nonce, flipped), (branch, b"\xff", epoch, nonce, box),
                (branch, unknown_heads, epoch, nonce, box), (branch, heads, 9, nonce, box)]:
        loaded = Document.load(doc.objects(), identity=ALICE, snapshots=[bad])
        assert loaded.text(loaded.heads()) == "kept"
        c1 = loaded.commit(ALICE, [(4, 0, "!")], [c0])
        assert loaded.text([c1]) == "kept!"
