"""app.documents against a workspace member who attacks a document (issue #12), over real
replicas: the attacker is a member made the way people are made (sharing.invite), who signs
objects with their own identity and puts them in their own replica, or hands an editor a
crafted capability. "Sync" is every raw object of one replica ingested by the other.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator

import nacl.exceptions
import nacl.secret

from app.documents import Documents
from app.paths import Paths
from app.workspace import Workspace
from core.causal import heads as causal_heads
from core.documents import Capability
from core.identity import seal_to
from core.objects import build
from tests.app.test_documents import MARKER, copy_objects, key_of

TEN_YEARS_S = 10 * 365 * 24 * 3600


@contextlib.contextmanager
def opened(paths: Paths, clock: Callable[[], float] = time.time
           ) -> Iterator[tuple[Workspace, Documents]]:
    with Workspace.open(paths, clock=clock) as ws:
        yield ws, ws.documents


def shared_document(alice: Paths, bob: Paths, *, bob_edits: bool = False) -> tuple[str, str]:
    """Alice's document with some text (bob made an editor if `bob_edits`), synced to bob.
    Returns the document's id and its main branch's id."""
    with opened(alice) as (_, docs):
        doc = docs.new("Plans", editing="listed")  # bob a member, not an editor (unless added)
        docs.write(doc, "hello")
        if bob_edits:
            docs.add_editor(doc, key_of(bob))
        doc_id, main = doc.id, next(b.id for b in doc.branches() if b.main)
    copy_objects(alice, bob)
    return doc_id, main


def write_secret(alice: Paths, doc_id: str) -> tuple[str, int]:
    """Alice writes the marker to main; returns the commit and the epoch it was sealed at."""
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        commit = docs.write(doc, f"hello {MARKER}")
        assert commit is not None
        return commit, next(o for o in doc.objects() if o.hex == commit).body["epoch"]


def spy_reads(bob: Paths, doc_id: str, commit: str, keys: list[tuple[bytes, int, bytes]]
              ) -> bool:
    """Whether bob, with the keys he made, can open `commit` once it reached him."""
    with opened(bob) as (_, docs):
        obj = next(o for o in docs.open(doc_id).objects() if o.hex == commit)
    for branch, epoch, key in keys:
        if (branch, epoch) != (obj.stream, obj.body["epoch"]):
            continue
        try:
            plain = nacl.secret.SecretBox(key).decrypt(obj.body["box"], obj.body["nonce"])
        except nacl.exceptions.CryptoError:
            continue
        if MARKER.encode() in plain:
            return True
    return False


def test_a_crafted_capability_opened_by_an_editor_is_for_reading_only(
        alice: Paths, bob: Paths) -> None:
    doc_id, main = shared_document(alice, bob)
    stolen = (bytes.fromhex(main), 10**6, os.urandom(32))
    crafted = Capability(bytes.fromhex(doc_id), stolen[0], (stolen[1:],)).encode()
    with opened(alice) as (_, docs):  # `hearth doc open-cap` on what bob sent
        assert docs.open_capability(crafted).text(docs.open(doc_id).heads()) == "hello"
    commit, epoch = write_secret(alice, doc_id)
    assert epoch == 0
    copy_objects(alice, bob)
    assert not spy_reads(bob, doc_id, commit, [stolen])
    with opened(alice) as (_, docs):
        assert docs.open(doc_id).text([commit]) == f"hello {MARKER}"


def test_a_key_a_member_seals_to_the_editors_is_never_written_with(
        alice: Paths, bob: Paths) -> None:
    doc_id, main = shared_document(alice, bob)
    stolen = (bytes.fromhex(main), 10**6, os.urandom(32))
    with opened(bob) as (ws, docs):
        held = docs.open(doc_id)
        links = sorted(causal_heads(o for o in held.objects() if o.stream == held.root.id))
        injected = [build(ws.identity, "doc/branch-key", stream=held.root.id,
                          ts=int(ws.clock() * 1000), links=links,
                          body={"branch": stolen[0], "epoch": stolen[1],
                                "recipient": held.root.author,
                                "sealed": seal_to(held.root.author, stolen[2])})]
        injected.append(build(ws.identity, "doc/key-refresh", stream=held.root.id,
                              ts=int(ws.clock() * 1000), links=links,
                              body={"branch": stolen[0], "epoch": stolen[1]}))
        ws.replica.ingest(injected)
    copy_objects(bob, alice)
    commit, epoch = write_secret(alice, doc_id)
    assert epoch == 0
    copy_objects(alice, bob)
    assert not spy_reads(bob, doc_id, commit, [stolen])


def test_a_removed_editor_cannot_take_over_main(alice: Paths, bob: Paths) -> None:
    doc_id, main = shared_document(alice, bob, bob_edits=True)
    with opened(alice) as (_, docs):
        docs.remove_editor(docs.open(doc_id), key_of(bob))
    # Bob has not seen his removal; his clock is ten years ahead.
    with opened(bob, clock=lambda: time.time() + TEN_YEARS_S) as (_, docs):
        doc = docs.open(doc_id)
        trap = docs.fork(doc, "main", "main")
        docs.set_main(doc, trap)
        held = doc.keys()
        trap_keys = [k for k in held if k[0] == bytes.fromhex(trap)]
    copy_objects(bob, alice)
    commit, _ = write_secret(alice, doc_id)
    with opened(alice) as (_, docs):
        doc = docs.open(doc_id)
        assert [(b.id, b.main) for b in doc.branches()] == [(main, True)]
        made = next(o for o in doc.objects() if o.hex == commit)
        assert made.stream.hex() == main and made.ts < (time.time() + 3600) * 1000
    copy_objects(alice, bob)
    assert not spy_reads(bob, doc_id, commit, trap_keys)


def test_a_title_dated_in_the_future_waits_for_its_time(alice: Paths) -> None:
    with opened(alice) as (_, docs):
        doc_id = docs.new("Now").id
    with opened(alice, clock=lambda: time.time() + TEN_YEARS_S) as (_, docs):
        docs.rename(docs.open(doc_id), "Later")
        assert [s.title for s in docs.all()] == ["Later"]
    with opened(alice) as (_, docs):
        assert [s.title for s in docs.all()] == ["Now"]
        assert docs.open(doc_id).title == "Now"
