"""What the document tests share: deterministic identities, a counting clock (a FakeClock that
ticks at every reading), and commits and root-branch objects built by hand (those the API
refuses to make), encrypted with the branch key the way commits are."""

from __future__ import annotations

import hashlib
import os

import nacl.secret
import pycrdt

from core import encoding
from core.causal import heads as causal_heads
from core.documents import Capability, Document
from core.identity import Identity
from core.objects import Object, build
from tests.support import FakeClock

T0_MS = 1_700_000_000_000


def ident(name: str) -> Identity:
    return Identity.from_seed(hashlib.blake2b(name.encode(), digest_size=32).digest())


ALICE, BOB, CAROL, MALLORY = ident("alice"), ident("bob"), ident("carol"), ident("mallory")


def counting_clock(start: int = T0_MS) -> FakeClock:
    """Milliseconds that move forward by one at every reading."""
    return FakeClock(start, tick=1)


def new_since(doc: Document, before: list[Object]) -> list[Object]:
    known = {o.id for o in before}
    return [o for o in doc.objects() if o.id not in known]


def root_heads(doc: Document) -> list[bytes]:
    return sorted(causal_heads(o for o in doc.objects() if o.stream == doc.root.id))


def branch_key(doc: Document, branch: str, epoch: int = 0) -> bytes:
    held = doc.keys()  # (branch id, epoch, key) triples
    return {(b.hex(), e): k for b, e, k in held}[(branch, epoch)]


def yjs_insert(doc: Document, branch: str, text: str) -> bytes:
    """A Yjs update, from a client of its own, that inserts `text` at the start of the branch's
    state at its heads (that state read from `Document.snapshot`, the public way out)."""
    snapshot = doc.snapshot(branch)
    assert snapshot is not None
    _, _, epoch, nonce, box = snapshot
    ydoc = pycrdt.Doc()
    ydoc.apply_update(nacl.secret.SecretBox(branch_key(doc, branch, epoch)).decrypt(box, nonce))
    before = ydoc.get_state()
    ydoc.get("text", type=pycrdt.Text).insert(0, text)
    return ydoc.get_update(before)


def craft_commit(author: Identity, doc: Document, branch: str, parents: list[str], text: str,
                 *, epoch: int = 0, root: list[bytes] | None = None,
                 ts: int = T0_MS + 10_000) -> Object:
    """A doc/commit built by hand (no editor check) on the branch's heads, inserting `text` at
    the start, sealed with the branch key of `epoch`."""
    assert sorted(parents) == doc.heads(branch)
    nonce = os.urandom(nacl.secret.SecretBox.NONCE_SIZE)
    box = nacl.secret.SecretBox(branch_key(doc, branch, epoch)).encrypt(
        encoding.dumps({"u": yjs_insert(doc, branch, text)}), nonce).ciphertext
    return build(author, "doc/commit", stream=bytes.fromhex(branch),
                 body={"root": root_heads(doc) if root is None else root, "epoch": epoch,
                       "nonce": nonce, "box": box},
                 ts=ts, links=[bytes.fromhex(p) for p in parents])


def craft_root(author: Identity, doc: Document, kind: str, body: dict) -> Object:
    return build(author, kind, stream=doc.root.id, body=body, ts=T0_MS + 10_000,
                 links=root_heads(doc))


def apply_str(text: str, edits: list[tuple[int, int, str]]) -> str:
    for position, delete, insert in edits:
        text = text[:position] + insert + text[position + delete:]
    return text


def doc_epochs(cap: Capability) -> list[int]:
    return [epoch for epoch, _ in cap.keys]


def main_id(doc: Document) -> str:
    return next(b.id for b in doc.branches() if b.main)
