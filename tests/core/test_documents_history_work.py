"""core.documents: the work of committing does not grow with history. Counted, not timed: how
many commits are asked whether they are visible (what working the heads out from the branch
does for each of its commits) while one commit is made and its heads and text are read, as the
window does after each pause in typing.

Pure: deterministic identity, a counting clock, no display."""

from __future__ import annotations

import hashlib

from core.documents import Document
from core.documents._commits import Commits
from core.documents._states import SHORT_WALK
from core.identity import Identity
from tests.support import FakeClock

T0_MS = 1_700_000_000_000
ALICE = Identity.from_seed(hashlib.blake2b(b"alice", digest_size=32).digest())


def visibility_checks_per_commit(history: int, rounds: int = 5) -> list[int]:
    """Commits asked about while making each of `rounds` commits after `history` of them."""
    doc = Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1))
    heads = doc.heads()
    for _ in range(history):
        heads = [doc.commit(ALICE, [(0, 0, "a")], heads)]
        heads = doc.heads()
    asked = []
    visible = doc.commits.visible

    def counted(commit):
        asked.append(commit.id)
        return visible(commit)

    doc.commits.visible = counted
    out = []
    for n in range(rounds):
        asked.clear()
        heads = [doc.commit(ALICE, [(n, 0, "b")], heads)]
        heads = doc.heads()
        assert doc.text(heads).startswith("b" * (n + 1))
        out.append(len(asked))
    return out


def test_committing_after_a_long_history_asks_about_as_few_commits_as_after_a_short_one():
    short, long = visibility_checks_per_commit(20), visibility_checks_per_commit(400)
    assert long == short
    assert max(long) <= 4  # the parents, the new commit and the heads read back


def payloads_read(doc: Document) -> list[bytes]:
    """From now on, the commits whose payload `doc` opens (decrypts) or reuses."""
    read: list[bytes] = []
    payload = doc.commits.payload
    doc.commits.payload = lambda commit: read.append(commit.id) or payload(commit)
    return read


def typed_with_snapshots(count: int, every: int):
    doc = Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1), undo=False)
    heads, ids, texts, kept = doc.heads(), [], [], []
    for n in range(count):
        heads = [doc.commit(ALICE, [(0, 0, "abcdefg"[n % 7])], heads)]
        ids.append(heads[0])
        texts.append(doc.text(heads))
        if (n + 1) % every == 0:
            kept.append(doc.snapshot("main"))
    return doc, ids, texts, [*kept, doc.snapshot("main")]


def test_reading_an_old_commit_replays_only_the_commits_after_the_snapshot_before_it():
    doc, ids, texts, snapshots = typed_with_snapshots(400, every=50)
    opened = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(), snapshots=snapshots,
                           clock=FakeClock(T0_MS * 2))
    assert opened.text(opened.heads()) == texts[-1]
    read = payloads_read(opened)
    assert opened.text([ids[203]]) == texts[203]  # 4 commits after the snapshot at 200
    assert len(read) == 4
    read.clear()
    assert opened.text([ids[49]]) == texts[49]  # a snapshot's own commit: nothing replayed
    assert read == []
    assert opened.text(opened.heads()) == texts[-1]  # the branch's state stays at its heads
    assert opened.commit(ALICE, [(0, 0, "!")], opened.heads())
    assert opened.text(opened.heads()) == "!" + texts[-1]


def test_snapshots_in_any_order_open_at_the_heads_and_read_old_commits_alike():
    doc, ids, texts, snapshots = typed_with_snapshots(120, every=30)
    for order in (snapshots, snapshots[::-1], snapshots[2:] + snapshots[:2]):
        opened = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(),
                               snapshots=order, clock=FakeClock(T0_MS * 2))
        read = payloads_read(opened)
        assert opened.text(opened.heads()) == texts[-1]
        assert [opened.text([ids[n]]) for n in (0, 29, 30, 77, 118)] == \
            [texts[n] for n in (0, 29, 30, 77, 118)]
        assert len(read) == 1 + 0 + 1 + 18 + 29  # from the nearest snapshot before each


class CountingText:
    """A live state's pycrdt text that counts how often the whole of it is read out."""

    def __init__(self, text):
        self.text, self.reads = text, 0

    def __str__(self) -> str:
        self.reads += 1
        return str(self.text)

    def __getattr__(self, name):
        return getattr(self.text, name)

    def __delitem__(self, key) -> None:
        del self.text[key]


def test_reading_the_text_back_after_each_commit_does_not_read_the_whole_crdt_again():
    doc = Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1), undo=False)
    heads = [doc.commit(ALICE, [(0, 0, "start")], doc.heads())]
    live = doc.states.live[doc.root_branch.branch("main")]
    live.text = CountingText(live.text)
    expected = doc.text(heads)
    for n in range(40):
        insert = "é" if n >= 35 else "x"  # ASCII, then not: both kinds of text stay read
        edit = (n % (len(expected) + 1), 1 if n % 5 == 0 and n < len(expected) else 0, insert)
        heads = [doc.commit(ALICE, [edit], heads)]
        position, delete, insert = edit
        expected = expected[:position] + insert + expected[position + delete:]
        assert doc.text(doc.heads()) == expected
    assert live.text.reads == 0  # the text is kept up to date from the edits instead


def test_opening_a_long_history_asks_about_few_commits_one_by_one(monkeypatch):
    doc = Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1), undo=False)
    heads = doc.heads()
    for _ in range(300):
        heads = [doc.commit(ALICE, [(0, 0, "a")], heads)]
    asked: list[bytes] = []
    visible = Commits.visible
    monkeypatch.setattr(Commits, "visible",
                        lambda self, commit: asked.append(commit.id) or visible(self, commit))
    opened = Document.load(doc.objects(), identity=ALICE, keys=doc.keys(),
                           snapshots=[doc.snapshot("main")], clock=FakeClock(T0_MS * 2))
    assert opened.heads() == heads
    assert opened.text(heads) == "a" * 300
    assert len(asked) <= 4


def test_a_commit_on_an_older_parent_replays_only_from_a_recent_state_kept_in_memory():
    doc = Document.create(ALICE, "notes", clock=FakeClock(T0_MS, tick=1), undo=False)
    heads, made = doc.heads(), []
    for n in range(600):
        heads = [doc.commit(ALICE, [(n, 0, "abcdefg"[n % 7])], heads)]
        made.append(heads[0])
    expected = "".join("abcdefg"[n % 7] for n in range(599))
    read = payloads_read(doc)
    asked = []
    visible = doc.commits.visible
    doc.commits.visible = lambda commit: asked.append(commit.id) or visible(commit)
    side = doc.commit(ALICE, [(0, 0, "z")], [made[-2]])  # someone else's commit came first
    assert doc.text([side]) == "z" + expected
    assert sorted(doc.heads()) == sorted([made[-1], side])
    # The state kept at commit 512 is the start: 87 commits replayed, not 599.
    assert len(read) == 599 - 512
    assert len(asked) < 87 + SHORT_WALK + 20  # those, and a first short look (not 599)
