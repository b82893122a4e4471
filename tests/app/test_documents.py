"""app.documents: the Documents library over a real replica (Workspace.init in tmp_path).

Objects go through Replica.ingest; branch keys and encrypted snapshots stay in the local
replica. Two members of one workspace are made the way people make them (Workspace.init, then
sharing.invite / join_workspace: the `alice` and `bob` fixtures of tests/app/conftest.py);
"sync" between them is done by hand by ingesting every raw object of one replica into the other.
"""

from __future__ import annotations

import contextlib
import itertools
import time
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.documents import Documents, minimal_edits
from app.paths import Paths
from app.workspace import Workspace, WorkspaceError
from core import encoding
from core.documents import DocumentError
from core.documents._commits import Commits
from storage import Replica
from tests.support import FakeClock

MARKER = "ZQX-plaintext-marker-7731"


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    for position, delete, insert in edits:
        assert 0 <= position <= len(text) and 0 <= delete <= len(text) - position
        text = text[:position] + insert + text[position + delete:]
    return text


@contextlib.contextmanager
def opened(paths: Paths) -> Iterator[tuple[Workspace, Documents]]:
    with Workspace.open(paths) as ws:
        yield ws, ws.documents


def copy_objects(src: Paths, dst: Paths) -> None:
    """What sync does, by hand: every object `src` holds goes through `dst`'s ingest."""
    with Replica(src.replica) as source:
        raws = [row[0] for row in source.conn.execute("SELECT raw FROM objects")]
    with Replica(dst.replica) as target:
        results = target.ingest(raws)
    assert not [r for r in results if r.status.value == "rejected"]


def replica_bytes(paths: Paths) -> bytes:
    """The replica's SQLite file and its WAL (and anything else SQLite keeps beside it)."""
    files = sorted(paths.replica.parent.glob(paths.replica.name + "*"))
    assert paths.replica in files
    return b"".join(f.read_bytes() for f in files)


def key_of(paths: Paths) -> str:
    with Workspace.open(paths) as ws:
        return ws.key.hex()


# The library ---------------------------------------------------------------------------------

def test_documents_round_trip_through_the_replica_and_reopen(alice: Paths) -> None:
    with opened(alice) as (_, docs):
        assert docs.all() == []
        doc = docs.new("Plan")
        first = docs.write(doc, "first line 😀\n")
        assert first is not None
        assert docs.write(doc, "first line 😀\n") is None  # unchanged: no commit
        second = docs.write(doc, "first line 😀\nsecond line\n")
        draft = docs.fork(doc, "main", "draft", at=first)
        assert doc.text(doc.heads("draft")) == "first line 😀\n"
        docs.write(doc, "DRAFT first line 😀\n", branch="draft")
        merged = docs.merge(doc, "draft", "main")
        assert doc.text([merged]) == "DRAFT first line 😀\nsecond line\n"
        assert docs.tag(doc, "v1", None, "main") == merged
        assert docs.tag(doc, "v0", first, "main") == first
        docs.write(doc, "only the draft", branch="draft")
        docs.set_main(doc, "draft")
        docs.rename(doc, "Plan v2")
        expected = {
            "title": "Plan v2",
            "branches": [(b.id, b.name, b.heads, b.main) for b in doc.branches()],
            "tags": doc.tags(),
            "main": doc.text(doc.heads("main")),
            "history": [c.id for c in doc.history(draft)],
        }
        assert expected["main"] == "only the draft"
        assert expected["tags"] == {"v0": first, "v1": merged}
        assert [s.title for s in docs.all()] == ["Plan v2"]
        doc_id = doc.id

    with opened(alice) as (_, docs):
        for ref in ("Plan v2", doc_id, doc_id[:8].upper(), bytes.fromhex(doc_id)):
            again = docs.open(ref)
            assert again.title == expected["title"]
            assert [(b.id, b.name, b.heads, b.main) for b in again.branches()] == \
                expected["branches"]
            assert again.tags() == expected["tags"]
            assert again.text(again.heads()) == expected["main"]
            assert [c.id for c in again.history(draft)] == expected["history"]
            assert again.text([second]) == "first line 😀\nsecond line\n"
            main_branch = next(b for b in again.branches() if b.name == "main")
            assert again.text(main_branch.heads) == "DRAFT first line 😀\nsecond line\n"
        # Still writable after reopening, and the next open sees it.
        docs.write(again, "only the draft, continued")
    with opened(alice) as (_, docs):
        assert docs.open(doc_id).text(docs.open(doc_id).heads()) == "only the draft, continued"


def test_finding_documents(alice: Paths) -> None:
    # Each reading of the clock is a new millisecond: the list is oldest first, and three
    # documents made within one millisecond would be ordered by their (random) ids.
    clock = FakeClock(time.time(), tick=0.001)
    with Workspace.open(alice, clock=clock) as ws:
        docs = Documents(ws)
        one = docs.new("Same")
        two = docs.new("Same")
        docs.new("Other")
        assert [s.title for s in docs.all()] == ["Same", "Same", "Other"]
        assert docs.resolve(one.id) == one.root.id
        assert docs.resolve(two.id[:10]) == two.root.id
        assert docs.resolve("Other") != one.root.id
        for bad in ("Same", "missing", "abc", "00" * 32):
            with pytest.raises(WorkspaceError):
                docs.resolve(bad)
        with pytest.raises(WorkspaceError):
            docs.open(bytes(32))
        with pytest.raises(WorkspaceError):
            docs.new("")  # a title is 1 to 256 characters
        assert len(docs.all()) == 3


def test_a_small_change_to_a_long_text_makes_a_small_commit(alice: Paths) -> None:
    long_text = "".join(f"line {n}: the quick brown fox 🦊\n" for n in range(400))
    with opened(alice) as (ws, docs):
        doc = docs.new("long")
        docs.write(doc, long_text)
        big = ws.replica.object(bytes.fromhex(doc.heads()[0]))
        changed = long_text.replace("line 200:", "line 200;")
        small_id = docs.write(doc, changed)
        small = ws.replica.object(bytes.fromhex(small_id))
        assert len(big.raw) > len(long_text.encode())
        assert len(small.raw) < 1024
        assert doc.text(doc.heads()) == changed


def test_tag_without_a_commit_names_the_newest_head(alice: Paths) -> None:
    ticks = itertools.count(1_800_000_000)
    with Workspace.open(alice, clock=lambda: float(next(ticks))) as ws:
        docs = Documents(ws)
        doc_id = docs.new("heads").root.id
        docs.write(docs.open(doc_id), "base")
        for _ in range(64):  # until the newer of two concurrent heads has the smaller id
            one, two = docs.open(doc_id), docs.open(doc_id)
            older = docs.edit(one, [(0, 0, "a")])
            newer = docs.edit(two, [(0, 0, "b")])
            if newer < older:
                break
            docs.write(docs.open(doc_id), "base")  # merge the fork, try again
        doc = docs.open(doc_id)
        assert doc.heads() == [newer, older]
        assert doc.history()[-1].id == newer  # the newest, by time
        assert docs.tag(doc, "latest", None, "main") == newer


def test_reopening_uses_the_encrypted_cache(alice: Paths, monkeypatch) -> None:
    with opened(alice) as (ws, docs):
        doc = docs.new("cached")
        docs.write(doc, "cached text ✓")
        draft = docs.fork(doc, "main", "draft")
        docs.write(doc, "draft text ✓", branch="draft")
        main = next(b.id for b in doc.branches() if b.main)
        heads = {main: doc.heads(main), draft: doc.heads(draft)}
        for branch, branch_heads in heads.items():
            cached = ws.replica.documents.cached_state(bytes.fromhex(branch))
            assert cached is not None
            assert sorted(h.hex() for h in encoding.loads(cached[0])["heads"]) == branch_heads
            assert b"cached text" not in cached[3] and b"draft text" not in cached[3]
        doc_id = doc.root.id

    # Opening from the cache reads the heads without decrypting and replaying a commit.
    with opened(alice) as (_, docs), monkeypatch.context() as patch:
        def refuse(self, commit):
            raise AssertionError("opened by replaying commits although a cache was saved")
        patch.setattr(Commits, "payload", refuse)
        again = docs.open(doc_id)
        assert again.text(again.heads(main)) == "cached text ✓"
        assert again.text(again.heads(draft)) == "draft text ✓"

    # A damaged cache is only a slower open.
    with opened(alice) as (ws, docs):
        heads_blob, epoch, nonce, _ = ws.replica.documents.cached_state(bytes.fromhex(main))
        ws.replica.documents.save_cached_state(bytes.fromhex(main), heads_blob, epoch, nonce,
                                               b"\0" * 40)
    with opened(alice) as (_, docs):
        again = docs.open(doc_id)
        assert again.text(again.heads(main)) == "cached text ✓"
        docs.write(again, "cached text ✓ and more")
    with opened(alice) as (_, docs):
        again = docs.open(doc_id)
        assert again.text(again.heads(main)) == "cached text ✓ and more"


# minimal_edits -------------------------------------------------------------------------------

@pytest.mark.parametrize("old, new, edits", [
    ("", "", []),
    ("same", "same", []),
    ("", "new", [(0, 0, "new")]),
    ("old", "", [(0, 3, "")]),
    ("hello world", "hello World", [(6, 1, "W")]),
    ("abc", "abXc", [(2, 0, "X")]),
    ("a😀b", "a😁b", [(1, 1, "😁")]),
    ("aaaa", "aaaaa", [(4, 0, "a")]),
    ("cafe\u0301", "cafe\u0300", [(4, 1, "\u0300")]),
])
def test_minimal_edits_examples(old: str, new: str, edits: list) -> None:
    assert minimal_edits(old, new) == edits
    assert apply_edits(old, edits) == new


def test_minimal_edits_single_character_change_in_a_long_text() -> None:
    old = "".join(f"{n} 日本語 😀 text\n" for n in range(2000))
    for position in (0, len(old) // 2, len(old) - 1):
        new = old[:position] + "#" + old[position + 1:]
        edits = minimal_edits(old, new)
        assert len(edits) == 1
        at, delete, insert = edits[0]
        assert delete <= 1 and len(insert) <= 1 and at in (position, position + 1)
        assert apply_edits(old, edits) == new


def test_minimal_edits_keeps_untouched_middles() -> None:
    old = "start " + "x" * 500 + " end"
    new = "START " + "x" * 500 + " END"
    edits = minimal_edits(old, new)
    assert apply_edits(old, edits) == new
    assert sum(d for _, d, _ in edits) <= 10 and sum(len(i) for *_, i in edits) <= 10


TEXTS = st.text(st.sampled_from(list("ab \n😀é\u0301漢")), max_size=40)


@settings(max_examples=400, deadline=None)
@given(TEXTS, TEXTS)
def test_minimal_edits_turn_old_into_new(old: str, new: str) -> None:
    edits = minimal_edits(old, new)
    assert apply_edits(old, edits) == new
    assert all(delete or insert for _, delete, insert in edits)
    assert (edits == []) == (old == new)
    # Never more than a full replacement.
    assert sum(d for _, d, _ in edits) <= len(old)
    assert sum(len(i) for *_, i in edits) <= len(new)


# Two members ---------------------------------------------------------------------------------

def test_member_without_the_key_never_stores_the_plaintext(alice: Paths, bob: Paths) -> None:
    with opened(alice) as (ws, docs):
        doc = docs.new("Confidential", private=True)
        docs.write(doc, f"the secret is {MARKER} today")
        docs.fork(doc, "main", "side")
        docs.write(doc, f"side: {MARKER}", branch="side")
        heads = doc.heads()
        doc_id = doc.root.id
        # While it runs (the WAL holds the fresh pages) and after closing, the creator's file
        # holds the text only encrypted: commits and cache are boxes.
        assert MARKER.encode() not in replica_bytes(alice)
    assert MARKER.encode() not in replica_bytes(alice)

    copy_objects(alice, bob)
    with opened(bob) as (ws, docs):
        held = docs.open(doc_id)
        assert held.heads() == heads
        assert [b.name for b in held.branches()] == ["main", "side"]
        assert not any(b.readable for b in held.branches())
        with pytest.raises(DocumentError, match="read key"):
            held.text(held.heads())
        assert {c.kind for c in held.history()} == {"?"}
        with pytest.raises(DocumentError):
            docs.write(held, "bob was here")
        assert MARKER.encode() not in replica_bytes(bob)
    data = replica_bytes(bob)
    assert MARKER.encode() not in data
    assert MARKER.encode("utf-16-le") not in data
    assert doc_id in data  # the member does hold the document's objects


def test_capability_and_editors_across_members(alice: Paths, bob: Paths) -> None:
    with opened(alice) as (_, docs):
        doc = docs.new("Shared", private=True)
        hello = docs.write(doc, "hello")
        docs.fork(doc, "main", "private")
        docs.write(doc, "private notes", branch="private")
        cap = doc.share("main").encode()
        doc_id = doc.id

    # The capability opens main, not the private branch, and gives no right to write.
    with opened(bob) as (_, docs), pytest.raises(WorkspaceError, match="arrives by sync"):
        docs.open_capability(cap)
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        reader = docs.open(doc_id)
        assert reader.text(reader.heads()) == "hello"  # the keys were saved before
        with pytest.raises(DocumentError):
            reader.text(reader.heads("private"))
        with pytest.raises(DocumentError, match="editors"):
            docs.write(reader, "hello from bob")
        with pytest.raises(DocumentError, match="creator"):
            docs.rename(reader, "bob's")
    with opened(bob) as (_, docs):
        opened_by_cap = docs.open_capability(cap)
        assert opened_by_cap.id == doc_id
        assert opened_by_cap.text(opened_by_cap.heads()) == "hello"

    # Made an editor, bob gets every branch key and his edits reach alice.
    with opened(alice) as (_, docs):
        docs.add_editor(docs.open(doc_id), key_of(bob))
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        editor = docs.open(doc_id)
        assert editor.text(editor.heads("private")) == "private notes"
        docs.write(editor, "hello, alice")
        with pytest.raises(DocumentError, match="creator"):
            docs.rename(editor, "bob's")
        with pytest.raises(DocumentError):
            docs.remove_editor(editor, key_of(alice))
    copy_objects(bob, alice)
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        assert doc.text(doc.heads()) == "hello, alice"
        with pytest.raises(WorkspaceError):
            docs.add_editor(doc, "not a key")
        docs.remove_editor(doc, key_of(bob))
        docs.write(doc, "after bob left")
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        removed = docs.open(doc_id)
        with pytest.raises(DocumentError):
            removed.text(removed.heads())
        assert removed.text([hello]) == "hello"  # what he could read before, he still can


def test_a_version_13_replica_drops_its_index_by_stream_and_reads_the_same(
        alice: Paths) -> None:
    """Version 14 finds a document's objects through the item index; a replica written by
    version 13 (with objects_by_stream) loses that index and reads every document alike."""
    with opened(alice) as (ws, docs):
        doc = docs.new("Plan")
        first = docs.write(doc, "one\n")
        docs.fork(doc, "main", "draft", at=first)
        docs.write(doc, "one\ntwo on the draft\n", branch="draft")
        docs.rename(doc, "Plan v2")
        # As version 13 read them, from the objects' own stream column.
        read = ws.replica.conn.execute
        root = doc.root.id
        before = (
            [r[0] for r in read("SELECT raw FROM objects WHERE type = 'doc/root' AND stream = ? "
                                "ORDER BY ts, id", (ws.replica.workspace.id,))],
            [r[0] for r in read("SELECT raw FROM objects WHERE id = ?1 OR stream = ?1 OR stream "
                                "IN (SELECT id FROM objects WHERE stream = ?1 AND type = "
                                "'doc/branch') ORDER BY ts, id", (root,))],
            [r[0] for r in read("SELECT raw FROM objects WHERE stream = ? AND type = "
                                "'doc/title'", (root,))])
    with Replica(alice.replica) as replica:
        replica.conn.execute("CREATE INDEX objects_by_stream ON objects (stream, ts)")
        replica.conn.execute("PRAGMA user_version = 13")
    with opened(alice) as (ws, docs):
        conn = ws.replica.conn
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'objects_by_stream'"
                            ).fetchone() is None
        documents = ws.replica.documents
        assert (documents.roots(), documents.objects(doc.root.id),
                documents.titles(doc.root.id)) == before
        assert len(before[0]) == 1 and len(before[1]) >= 5 and len(before[2]) == 1
        again = docs.open("Plan v2")
        assert again.text(again.heads("draft")) == "one\ntwo on the draft\n"
