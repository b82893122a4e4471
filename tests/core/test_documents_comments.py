"""core.documents comments (issue #16): anchors that follow their words through others' edits
(on text with emoji and CJK, where pycrdt's own sticky indices count wrongly), detached comments,
replies and resolving, who counts, what the envelope hides, and that the result depends on the
set of objects held, not their arrival order.

Pure: documents built in memory with deterministic identities and a counting clock (as in
tests/core/test_documents.py); forged objects are made through a Document held by the forger
(`_seal_comment`, skipping the checks of `resolve`), the way a modified client would publish
them.
"""

from __future__ import annotations

import os
import random

import nacl.secret
import pycrdt
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import encoding
from core.causal import HORIZON_MS
from core.documents import Document, DocumentError
from core.documents._comments import _ascii_update, _Units, _varuint
from core.objects import Object, build
from tests.core.documents_support import (
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    T0_MS,
    branch_key,
    counting_clock,
    main_id,
    root_heads,
)
from tests.support import FakeClock

SECRET = bytes(range(32))
WORDS = "brave 😀 new 日本 words"
MARKER = "QZV-comment-marker-5521"


def reader(objects: list[Object], identity=BOB, clock=None) -> Document:
    return Document.load(objects, identity=identity, secret=SECRET,
                         clock=clock or counting_clock(T0_MS + 1_000_000))


def shared(text: str = f"héllo 😀 {WORDS} and the rest 日本語") -> Document:
    """A workspace-readable document by alice with bob as a second editor."""
    doc = Document.create(ALICE, "Notes", clock=counting_clock(), secret=SECRET)
    doc.add_editor(ALICE, BOB.public_key)
    doc.commit(ALICE, [(0, 0, text)], [])
    return doc


def on_words(doc: Document, words: str = WORDS, text: str = "nice") -> str:
    start = doc.text(doc.heads()).index(words)
    return doc.comments.add(ALICE, "main", start, start + len(words), text)


def place(doc: Document, comment: str) -> tuple[int | None, int | None]:
    [found] = [c for c in doc.comments.on() if c.id == comment]
    return found.start, found.end


def words_at(doc: Document, comment: str) -> str | None:
    start, end = place(doc, comment)
    return None if start is None else doc.text(doc.heads())[start:end]


def edit_around(doc: Document, who, rng: random.Random, words: str, count: int) -> None:
    """`count` commits by `who`, each inserting or deleting a little before or after `words`
    (never touching them), with emoji and CJK among what is typed."""
    for n in range(count):
        text = doc.text(doc.heads())
        start = text.index(words)
        before = n % 2 == 0
        lo, hi = (0, start) if before else (start + len(words), len(text))
        if hi > lo and rng.random() < 0.3:
            at = rng.randrange(lo, hi)
            edit = (at, min(rng.randint(1, 3), hi - at), "")
        else:
            insert = "".join(rng.choice("ab 😀日é\n") for _ in range(rng.randint(1, 4)))
            edit = (rng.randint(lo, hi), 0, insert)
        doc.commit(who, [edit], doc.heads())


# Anchors -------------------------------------------------------------------------------------

def test_an_anchor_follows_its_words_through_another_members_edits_before_and_after() -> None:
    doc = shared()
    before = doc.text(doc.heads())
    comment = on_words(doc)
    bob = reader(doc.objects())
    edit_around(bob, BOB, random.Random(7), WORDS, 100)
    doc.add(bob.objects())
    assert doc.text(doc.heads()) == bob.text(bob.heads())
    assert doc.text(doc.heads()).index(WORDS) != before.index(WORDS)
    for holder in (doc, bob, reader(doc.objects(), identity=CAROL)):
        assert words_at(holder, comment) == WORDS
    [info] = doc.comments.on()
    assert (info.quote, info.text, info.author, info.detached) == (WORDS, "nice",
                                                                   ALICE.public_key, False)


def test_an_anchor_follows_its_words_through_concurrent_edits_merged_later() -> None:
    doc = shared()
    comment = on_words(doc)
    bob = reader(doc.objects())
    rng = random.Random(11)
    edit_around(doc, ALICE, rng, WORDS, 20)  # both edit at once, neither seeing the other
    edit_around(bob, BOB, rng, WORDS, 20)
    doc.add(bob.objects())
    bob.add(doc.objects())
    assert len(doc.heads()) == 2
    assert words_at(doc, comment) == words_at(bob, comment) == WORDS


def test_text_typed_inside_joins_the_range_and_at_its_edges_stays_outside() -> None:
    doc = shared()
    comment = on_words(doc)
    start, end = place(doc, comment)
    doc.commit(ALICE, [(end, 0, "»"), (start, 0, "«")], doc.heads())
    assert words_at(doc, comment) == WORDS
    inside = start + 1 + WORDS.index("new")
    doc.commit(ALICE, [(inside, 0, "shiny 😺 ")], doc.heads())
    assert words_at(doc, comment) == WORDS.replace("new", "shiny 😺 new")


def test_deleting_every_word_detaches_the_comment_and_deleting_some_shrinks_it() -> None:
    doc = shared()
    comment = on_words(doc)
    start, end = place(doc, comment)
    doc.commit(ALICE, [(start, len("brave "), "")], doc.heads())
    assert words_at(doc, comment) == WORDS[len("brave "):]
    start, end = place(doc, comment)
    doc.commit(ALICE, [(start, end - start, "")], doc.heads())
    [info] = doc.comments.on()
    assert info.detached and (info.start, info.end) == (None, None)
    assert info.quote == WORDS  # still says what it was on
    doc.commit(ALICE, [(0, 0, WORDS)], doc.heads())  # the same words typed again are others
    assert doc.comments.on()[0].detached


def test_comments_list_in_the_order_of_the_text_detached_last() -> None:
    doc = shared("one two three four")
    three, one, two = (on_words(doc, w) for w in ("three", "one", "two"))
    doc.commit(ALICE, [(doc.text(doc.heads()).index("two"), 3, "")], doc.heads())
    assert [c.id for c in doc.comments.on()] == [one, three, two]


def test_a_comment_at_older_heads_anchors_on_the_text_it_saw() -> None:
    doc = shared("alpha beta")
    old = doc.heads()
    doc.commit(ALICE, [(0, 0, "gamma ")], doc.heads())
    comment = doc.comments.add(ALICE, "main", 0, 5, "on alpha", heads=old)  # "alpha" back then
    assert words_at(doc, comment) == "alpha"


def test_refused_comments() -> None:
    doc = shared("some text")
    with pytest.raises(DocumentError, match="1 or more characters"):
        doc.comments.add(ALICE, "main", 3, 3, "empty range")
    with pytest.raises(DocumentError, match="1 or more characters"):
        doc.comments.add(ALICE, "main", 0, 99, "beyond")
    with pytest.raises(DocumentError, match="some text"):
        doc.comments.add(ALICE, "main", 0, 4, "  ")
    with pytest.raises(DocumentError, match="4096"):
        doc.comments.add(ALICE, "main", 0, 4, "x" * 4097)
    empty = Document.create(ALICE, "Empty", clock=counting_clock(), secret=SECRET)
    with pytest.raises(DocumentError, match="no text"):
        empty.comments.add(ALICE, "main", 0, 1, "nothing here")
    with pytest.raises(DocumentError, match="no comment"):
        doc.comments.reply(ALICE, "abcdef12", "to nothing")


# Who may comment, reply and resolve ------------------------------------------------------------

def test_a_reader_comments_and_replies_and_the_envelope_hides_what_it_says() -> None:
    doc = shared()
    carol = reader(doc.objects(), identity=CAROL)  # a member who is no editor
    start = carol.text(carol.heads()).index("rest")
    comment = carol.comments.add(CAROL, "main", start, start + 4, f"typo? {MARKER}")
    doc.drain()
    with pytest.raises(DocumentError, match="no comment"):
        doc.comments.reply(ALICE, comment[:10], "not here yet")
    doc.add(carol.drain())
    doc.comments.reply(ALICE, comment[:10], "fixed")  # a prefix names it
    made = doc.drain()
    assert [o.type for o in made] == ["doc/comment"]
    for obj in [*carol.objects(), *made]:
        assert MARKER.encode() not in obj.raw and b"rest" not in obj.raw
    carol.add(made)
    [info] = carol.comments.on()
    assert info.author == CAROL.public_key and info.text == f"typo? {MARKER}"
    assert [(r.author, r.text) for r in info.replies] == [(ALICE.public_key, "fixed")]


def test_without_the_branch_key_there_is_no_commenting_and_nothing_to_see() -> None:
    doc = Document.create(ALICE, "Pay", clock=counting_clock(), secret=SECRET, private=True)
    doc.commit(ALICE, [(0, 0, "figures")], [])
    on_words(doc, "figures")
    outsider = reader(doc.objects(), identity=MALLORY)
    with pytest.raises(DocumentError, match="read key"):
        outsider.comments.add(MALLORY, "main", 0, 3, "let me in")
    assert outsider.comments.on() == []
    assert len(doc.comments.on()) == 1


def test_only_the_author_or_an_editor_resolves() -> None:
    doc = shared()
    carol = reader(doc.objects(), identity=CAROL)
    start = carol.text(carol.heads()).index("rest")
    mine = carol.comments.add(CAROL, "main", start, start + 4, "carol's")
    alices = on_words(doc)
    doc.add(carol.drain())
    carol.add(doc.drain())
    with pytest.raises(DocumentError, match="author or an editor"):
        carol.comments.resolve(CAROL, alices)
    # A modified client publishes it anyway: it does not count.
    carol.comments._seal(CAROL, bytes.fromhex(carol.comments.on()[0].branch), None,
                        {"resolve": bytes.fromhex(alices), "root": []})
    carol.comments.resolve(CAROL, mine)  # her own
    bob = reader(doc.objects())
    bob.add(carol.drain())
    resolved = {c.id: c.resolved_by for c in bob.comments.on()}
    assert resolved == {alices: None, mine: CAROL.public_key}
    bob.comments.resolve(BOB, alices)  # an editor resolves anyone's
    assert all(c.resolved for c in bob.comments.on())
    with pytest.raises(DocumentError, match="resolved already"):
        bob.comments.resolve(BOB, alices)


def test_a_removed_editors_resolve_in_a_view_from_before_the_removal_does_not_count() -> None:
    doc = shared()
    comment = on_words(doc)
    bob = reader(doc.objects())
    stale = bob.root_branch.heads()  # bob's view, in which he is an editor
    doc.remove_editor(ALICE, BOB.public_key)  # a workspace document: bob still reads it
    bob.add(doc.objects())
    branch = bytes.fromhex(doc.comments.on()[0].branch)
    bob.comments._seal(BOB, branch, None, {"resolve": bytes.fromhex(comment), "root": stale})
    doc.add(bob.drain())
    assert not doc.comments.on()[0].resolved


def test_a_readers_comment_with_a_key_a_refresh_replaced_counts_only_from_before_it() -> None:
    clock = counting_clock()  # one time for both
    doc = Document.create(ALICE, "Plan", clock=clock, secret=SECRET, private=True)
    doc.commit(ALICE, [(0, 0, "the plan so far")], [])
    carol = reader(doc.objects(), identity=CAROL, clock=clock)
    carol.open_capability(doc.share("main"))  # epoch 0 only
    early = carol.comments.add(CAROL, "main", 4, 8, "before the refresh")
    doc.add(carol.drain())
    doc.refresh_key(ALICE, "main")
    carol.add(doc.objects())
    late = carol.comments.add(CAROL, "main", 4, 8, "after it, with the old key")
    doc.add(carol.drain())
    assert [c.id for c in doc.comments.on()] == [early]
    assert late not in [c.id for c in carol.comments.on()]


# The set, not the order ------------------------------------------------------------------------

def test_comments_replies_and_resolves_do_not_depend_on_arrival_order() -> None:
    doc = shared()
    comment = on_words(doc)
    bob = reader(doc.objects())
    edit_around(bob, BOB, random.Random(3), WORDS, 10)
    bob.comments.reply(BOB, comment, "a reply")
    bob.comments.resolve(BOB, comment)
    carol = reader(bob.objects(), identity=CAROL)
    carol.comments.reply(CAROL, comment, "too late")
    everything = [*bob.objects(), *carol.drain()]
    expected = reader(everything, identity=CAROL).comments.on()
    assert expected[0].resolved and len(expected[0].replies) == 2
    rng = random.Random(5)
    for _ in range(5):
        shuffled = everything[:]
        rng.shuffle(shuffled)
        held = reader([doc.root], identity=CAROL)
        held.add(shuffled[: len(shuffled) // 2])
        held.add(shuffled[len(shuffled) // 2:])
        assert held.comments.on() == expected


def test_a_comment_dated_beyond_the_horizon_shows_when_its_time_comes() -> None:
    doc = shared()
    clock = FakeClock(T0_MS + 10 * HORIZON_MS)
    future = Document.load(doc.objects(), identity=CAROL, secret=SECRET, clock=clock)
    start = future.text(future.heads()).index("rest")
    future.comments.add(CAROL, "main", start, start + 4, "from the future")
    now = FakeClock(T0_MS + 1_000_000)
    held = Document.load([*doc.objects(), *future.drain()], identity=ALICE, secret=SECRET,
                         clock=now)
    assert held.comments.on() == []
    now.now = clock.now
    assert [c.text for c in held.comments.on()] == ["from the future"]


def test_junk_in_a_box_is_ignored() -> None:
    doc = shared()
    comment = on_words(doc)
    bob = reader(doc.objects())
    branch = bytes.fromhex(bob.comments.on()[0].branch)
    junk_anchor = {"start": b"\x00\x07\x01\x00", "end": b"\x00\x07\x02\x41", "quote": "x",
                   "text": "on an unknown client's characters"}
    for payload in (junk_anchor, {"start": b"\xff", "end": b"", "quote": 1, "text": "x"},
                    {"reply": b"short", "text": "x"}, {"what": "else"}, ["not a map"]):
        bob.comments._seal(BOB, branch, None, payload)  # type: ignore[arg-type]
    undecodable = build(BOB, "doc/comment", stream=branch, ts=T0_MS + 5,
                        body={"epoch": 0, "nonce": bytes(24), "box": b"not a box"})
    doc.add([*bob.drain(), undecodable])
    listed = doc.comments.on()
    assert [c.id for c in listed if not c.detached] == [comment]
    assert [c.text for c in listed if c.detached] == ["on an unknown client's characters"]


# Units and the scratch copy --------------------------------------------------------------------

@pytest.mark.parametrize("text", ["", "ascii", "é日本", "😀a😀😀b", "a\U0010ffffz"])
def test_units_between_codepoints_and_utf16(text: str) -> None:
    units = _Units(text)
    for position in range(len(text) + 1):
        offset = len(text[:position].encode("utf-16-le")) // 2
        assert units.utf16(position) == offset
        assert units.codepoint(offset) == position


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 2), st.booleans(), st.integers(0, 10**6),
                          st.text("ab é😀日\n", min_size=1, max_size=5)), max_size=60))
def test_the_scratch_copy_has_the_same_items_with_a_byte_per_utf16_unit(steps: list) -> None:
    docs = [pycrdt.Doc(client_id=n + 1) for n in range(3)]
    texts = [d.get("text", type=pycrdt.Text) for d in docs]
    for who, delete, where, insert in steps:
        text = str(texts[who])
        at = where % (len(text) + 1)
        start = len(text[:at].encode())
        if delete and at < len(text):
            del texts[who][start:len(text[:at + 1].encode())]
        else:
            texts[who].insert(start, insert)
        other = docs[(who + 1) % 3]
        other.apply_update(docs[who].get_update(other.get_state()))
    update = docs[0].get_update()
    scratch = pycrdt.Doc()
    scratch.apply_update(_ascii_update(update))
    real = str(texts[0])
    assert str(scratch.get("text", type=pycrdt.Text)) == "x" * (
        len(real.encode("utf-16-le")) // 2)


def test_an_anchor_on_a_character_no_text_holds_is_detached_not_a_crash() -> None:
    """An editor's update can carry garbage-collected structs; a comment anchored on one passes
    every check but pycrdt panics placing it. It is shown detached, and the others still show."""
    evil_client = 123456
    doc = Document.create(ALICE, "t", clock=counting_clock())
    doc.commit(ALICE, [(0, 0, "hello world")], [])
    main = main_id(doc)
    doc.comments.add(ALICE, "main", 0, 5, "an honest comment")

    def seal(payload: dict) -> tuple[bytes, bytes]:
        nonce = os.urandom(24)
        return nonce, nacl.secret.SecretBox(branch_key(doc, main)).encrypt(
            encoding.dumps(payload), nonce).ciphertext

    # a Yjs v1 update of one GC struct of length 10 at (evil_client, 0), no delete set
    gc = b"\x01\x01" + _varuint(evil_client) + b"\x00\x00\x0a\x00"
    nonce, box = seal({"u": gc})
    evil = build(ALICE, "doc/commit", stream=bytes.fromhex(main),
                 body={"root": root_heads(doc), "epoch": 0, "nonce": nonce, "box": box},
                 ts=T0_MS + 10_000, links=[bytes.fromhex(h) for h in doc.heads()])
    doc.add([evil])

    def anchor(assoc: int) -> bytes:
        return b"\x00" + _varuint(evil_client) + b"\x03" + bytes([assoc])

    nonce, box = seal({"start": anchor(0x00), "end": anchor(0x41), "quote": "x",
                       "text": "boom"})
    doc.add([build(BOB, "doc/comment", stream=bytes.fromhex(main),
                   body={"epoch": 0, "nonce": nonce, "box": box}, ts=T0_MS + 20_000,
                   links=[evil.id])])
    reader = Document.load(doc.objects(), identity=BOB, keys=doc.keys(), clock=counting_clock())
    shown = {c.text: (c.start, c.end, c.detached) for c in reader.comments.on()}
    assert shown == {"an honest comment": (0, 5, False), "boom": (None, None, True)}
