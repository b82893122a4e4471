"""core.documents with a long history: commits found by whole id and by prefix (from an index,
not a scan of every object), heads kept up to date as commits are made from parents that are
not the live state, history in causal order, and the text at a commit from the middle of the
history equal to what it was when that commit was made.

Pure: deterministic identities, a counting clock, no display."""

from __future__ import annotations

import hashlib
import random

import pytest

from core.causal import heads as causal_heads
from core.documents import Document, DocumentError
from core.identity import Identity
from tests.support import FakeClock

T0_MS = 1_700_000_000_000
ALICE = Identity.from_seed(hashlib.blake2b(b"alice", digest_size=32).digest())


class CountingObjects(dict):
    """A document's objects that count how often they are walked as a whole."""

    walks = 0

    def items(self):
        CountingObjects.walks += 1
        return super().items()

    def values(self):
        CountingObjects.walks += 1
        return super().values()

    def __iter__(self):
        CountingObjects.walks += 1
        return super().__iter__()


def typed(count: int, *, doc: Document | None = None) -> tuple[Document, list[str], list[str]]:
    """A document with `count` one-character commits in a row: its commit ids and the text
    right after each."""
    doc = doc or Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1))
    heads, ids, texts = doc.heads(), [], []
    for n in range(count):
        text = doc.text(heads)
        heads = [doc.commit(ALICE, [(len(text) if n % 3 else 0, 0, "abc"[n % 3])], heads)]
        ids.append(heads[0])
        texts.append(doc.text(heads))
    return doc, ids, texts


def shared_prefix(ids: list[str], digits: int = 4) -> tuple[str, list[str]] | None:
    seen: dict[str, list[str]] = {}
    for commit in ids:
        seen.setdefault(commit[:digits], []).append(commit)
    for prefix, found in seen.items():
        if len(found) > 1:
            return prefix, found
    return None


def test_a_commit_is_found_by_its_whole_id_and_by_any_unique_prefix():
    doc, ids, _ = typed(60)
    for commit in ids[::7]:
        assert doc.commit_id(commit) == commit
        assert doc.commit_id(commit.upper()) == commit
        assert doc.commit_id(bytes.fromhex(commit).hex()) == commit
        unique = next(n for n in range(4, 65)
                      if sum(1 for other in ids if other.startswith(commit[:n])) == 1)
        assert doc.commit_id(f"  {commit[:unique].upper()} ") == commit
        assert doc.commits.find(bytes.fromhex(commit)).hex == commit


def test_an_ambiguous_prefix_is_refused_with_the_count_and_a_longer_one_is_found():
    doc = Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1))
    ids: list[str] = []
    found = None
    while found is None:  # random nonces: two commits share 4 hex digits after a few hundred
        doc, more, _ = typed(100, doc=doc)
        ids += more
        found = shared_prefix(ids)
        assert len(ids) < 5000
    prefix, clashing = found
    with pytest.raises(DocumentError, match=rf"'{prefix}' matches {len(clashing)} commits; "
                                            "give more of it"):
        doc.commit_id(prefix)
    for commit in clashing:
        longer = next(commit[:n] for n in range(5, 65)
                      if sum(1 for other in ids if other.startswith(commit[:n])) == 1)
        assert doc.commit_id(longer) == commit


def test_too_short_unknown_or_non_hex_prefixes_are_no_commit():
    doc, ids, _ = typed(10)
    for ref in (ids[0][:3], "ffffffffff" if not any(i.startswith("ffffffffff") for i in ids)
                else "0000000000", "zzzz", ""):
        with pytest.raises(DocumentError, match="no commit"):
            doc.commit_id(ref)


def test_commits_that_arrive_after_a_prefix_lookup_are_found_by_prefix_too():
    clock = FakeClock(T0_MS, tick=1)
    doc = Document.create(ALICE, "notes", clock=clock)
    twin = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(), clock=clock)
    _, first, _ = typed(5, doc=doc)
    twin.add(doc.objects())
    assert twin.commit_id(first[2][:12]) == first[2]  # the index is built here
    _, later, _ = typed(5, doc=doc)
    twin.add(doc.objects())
    assert [twin.commit_id(c[:12]) for c in later] == later
    made_here = twin.commit(ALICE, [(0, 0, "z")], twin.heads())
    assert twin.commit_id(made_here[:12]) == made_here


def test_prefix_lookups_do_not_walk_every_object_each_time():
    doc, ids, _ = typed(50)
    doc.held.objects = CountingObjects(doc.held.objects)
    doc.commit_id(ids[0][:10])
    CountingObjects.walks = 0
    heads = doc.heads()
    for n in range(30):
        heads = [doc.commit(ALICE, [(0, 0, "q")], heads)]
        assert doc.commit_id(heads[0][:10]) == heads[0]
        assert doc.commit_id(ids[n][:10]) == ids[n]
    assert CountingObjects.walks == 0


def test_heads_follow_commits_made_from_old_parents_as_a_reload_works_them_out():
    rng = random.Random(15)
    clock = FakeClock(T0_MS, tick=1)
    doc = Document.create(ALICE, "notes", clock=clock)
    made: list[str] = []
    for _ in range(120):
        doc.heads()  # known before each commit, so each commit moves them on
        if made and rng.random() < 0.5:  # concurrent edits: parents that are not the heads
            parents = rng.sample(made, k=min(len(made), rng.choice((1, 1, 2))))
        else:
            parents = doc.heads()
        made.append(doc.commit(ALICE, [(0, 0, "x")], parents))
        commits = [o for o in doc.objects() if o.type == "doc/commit"]
        assert doc.heads() == sorted(c.hex() for c in causal_heads(commits))
    fresh = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(), clock=clock)
    assert fresh.heads() == doc.heads()
    assert fresh.text(fresh.heads()) == doc.text(doc.heads())


def test_history_is_in_causal_order_whatever_the_arrival_order():
    rng = random.Random(7)
    clock = FakeClock(T0_MS, tick=1)
    doc = Document.create(ALICE, "notes", clock=clock)
    made: list[str] = []
    for _ in range(80):
        parents = rng.sample(made, k=1) if made and rng.random() < 0.4 else doc.heads()
        made.append(doc.commit(ALICE, [(0, 0, "y")], parents))
    history = doc.history()
    assert sorted(c.id for c in history) == sorted(made)
    position = {c.id: n for n, c in enumerate(history)}
    assert all(position[p] < position[c.id] for c in history for p in c.parents)
    objects = doc.objects()
    rng.shuffle(objects)
    again = Document.load(objects, identity=ALICE, keys=doc.keys(), clock=clock)
    assert again.history() == history


def test_the_text_at_a_middle_commit_is_the_text_when_it_was_made():
    doc, ids, texts = typed(300)
    middle = len(ids) // 2
    assert doc.text([ids[middle]]) == texts[middle]
    assert doc.text(doc.heads()) == texts[-1]  # the live state is left where it was
    opened = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(),
                           snapshots=[doc.snapshot("main")], clock=FakeClock(T0_MS * 2))
    assert opened.text(opened.heads()) == texts[-1]
    for n in (0, middle, len(ids) - 2):
        assert opened.text([ids[n]]) == texts[n]
