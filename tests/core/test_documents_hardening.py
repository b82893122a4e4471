"""core.documents against a workspace member who attacks a document (issue #12).

The attacker holds the workspace secret and an identity of their own, so every object they can
sign reaches every replica and is held there. These tests check that such objects cannot make
editors encrypt for the attacker (branch-key injection), that a removed editor's later root
objects and far-future dates do not steer the document, and that junk makes opening no more
than near-linearly slower. Arrival order is shuffled wherever the view could depend on it.
"""

from __future__ import annotations

import os
import random
import sys
from collections.abc import Callable
from pathlib import Path

import nacl.exceptions
import nacl.secret
import pytest

from core.causal import HORIZON_MS
from core.documents import Capability, Document, DocumentError
from core.identity import Identity, seal_to
from core.objects import Object, build
from tests.core.documents_support import (
    ALICE,
    BOB,
    CAROL,
    MALLORY,
    T0_MS,
    counting_clock,
    craft_root,
    main_id,
    new_since,
    root_heads,
)

CORE = str(Path(__file__).resolve().parents[2] / "core")
YEAR_MS = 365 * 24 * 3600 * 1000


def orders(objects: list[Object], count: int = 6) -> list[list[Object]]:
    """`objects` as given, reversed, and shuffled a few times (deterministically)."""
    out = [list(objects), objects[::-1]]
    for seed in range(count - 2):
        shuffled = list(objects)
        random.Random(seed).shuffle(shuffled)
        out.append(shuffled)
    return out


def commit_object(doc: Document, commit: str) -> Object:
    return next(o for o in doc.objects() if o.hex == commit)


def opens_with(key: bytes, commit: Object) -> bool:
    try:
        nacl.secret.SecretBox(key).decrypt(commit.body["box"], commit.body["nonce"])
    except nacl.exceptions.CryptoError:
        return False
    return True


def injected_keys(doc: Document, branch: str, key: bytes, epoch: int,
                  recipients: list[bytes], author: Identity = MALLORY) -> list[Object]:
    """What an attacker signs to have `key` used: it sealed to each editor at a high epoch,
    and that epoch announced."""
    return [craft_root(author, doc, "doc/branch-key",
                       {"branch": bytes.fromhex(branch), "epoch": epoch, "recipient": who,
                        "sealed": seal_to(who, key)})
            for who in recipients] + [
        craft_root(author, doc, "doc/key-refresh", {"branch": bytes.fromhex(branch),
                                                    "epoch": epoch})]


# 2. Branch-key injection ---------------------------------------------------------------------

def test_a_non_editors_sealed_key_is_never_used_to_write() -> None:
    doc = Document.create(ALICE, "injected", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    main = main_id(doc)
    stolen = os.urandom(32)
    junk = injected_keys(doc, main, stolen, 1_000, [ALICE.public_key, BOB.public_key])
    for n, order in enumerate(orders([*doc.objects(), *junk])):
        for who in (ALICE, BOB):
            editor = Document.load(order, identity=who, clock=counting_clock(T0_MS + 100 * n))
            commit = commit_object(editor, editor.commit(who, [(0, 0, "secret ")], [c0]))
            assert commit.body["epoch"] == 0
            assert not opens_with(stolen, commit)
            # Refreshing goes on from the editors' epochs, not from the announced 1000.
            assert editor.refresh_key(who, "main") == 1
            later = commit_object(editor, editor.commit(who, [(0, 0, "more ")],
                                                        [commit.hex]))
            assert later.body["epoch"] == 1 and not opens_with(stolen, later)
            # The attacker, holding the objects and the key, reads nothing new.
            spy = Document.load(editor.objects(), identity=MALLORY,
                                keys=[(bytes.fromhex(main), 1_000, stolen)])
            with pytest.raises(DocumentError):
                spy.text([later.hex])

    # A new editor is given the editors' keys only, so it does not write with the stray one.
    editor = Document.load([*doc.objects(), *junk], identity=ALICE,
                           clock=counting_clock(T0_MS + 900))
    editor.add_editor(ALICE, CAROL.public_key)
    carol = Document.load(editor.objects(), identity=CAROL, clock=counting_clock(T0_MS + 1_000))
    commit = commit_object(carol, carol.commit(CAROL, [(0, 0, "carol ")], [c0]))
    assert commit.body["epoch"] == 0 and not opens_with(stolen, commit)
    assert carol.text([commit.hex]) == "carol base"


def test_a_capability_gives_keys_for_reading_only() -> None:
    doc = Document.create(ALICE, "capability", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    main = bytes.fromhex(main_id(doc))
    stolen = os.urandom(32)
    crafted = Capability(doc.root.id, main, ((1_000, stolen),)).encode()

    editor = Document.load(doc.objects(), identity=ALICE, clock=counting_clock(T0_MS + 100))
    editor.open_capability(Capability.decode(crafted))
    commit = commit_object(editor, editor.commit(ALICE, [(0, 0, "secret ")], [c0]))
    assert commit.body["epoch"] == 0 and not opens_with(stolen, commit)
    assert editor.refresh_key(ALICE, "main") == 1
    # ... also once the stray key is among those kept and handed back at the next open.
    reopened = Document.load(editor.objects(), identity=ALICE, keys=editor.keys(),
                             clock=counting_clock(T0_MS + 200))
    later = commit_object(reopened, reopened.commit(ALICE, [(0, 0, "more ")], [commit.hex]))
    assert later.body["epoch"] == 1 and not opens_with(stolen, later)
    assert reopened.text([later.hex]) == "more secret base"
    # What it shares is still every key it reads with; the reader reads, and only that.
    reader = Document.load(reopened.objects(), identity=CAROL)
    reader.open_capability(Capability.decode(reopened.share("main").encode()))
    assert reader.text([later.hex]) == "more secret base"


@pytest.mark.parametrize("epoch", [-1, True, 1.5, 2**63])
def test_a_capability_with_an_impossible_epoch_is_refused(epoch: object) -> None:
    doc = Document.create(ALICE, "epochs", clock=counting_clock())
    main = bytes.fromhex(main_id(doc))
    text = Capability(doc.root.id, main, ((epoch, os.urandom(32)),)).encode()  # type: ignore
    with pytest.raises(DocumentError, match="damaged"):
        Capability.decode(text)
    with pytest.raises(DocumentError, match="damaged"):
        Capability.decode(Capability(doc.root.id, main, ()).encode())


def test_a_removed_editors_key_from_a_stale_view_is_never_used_to_write() -> None:
    doc = Document.create(ALICE, "stale key", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    base = doc.objects()
    bob = Document.load(base, identity=BOB, clock=counting_clock(T0_MS + 500))
    for _ in range(5):  # his view predates his removal: he is still an editor there
        bob.refresh_key(BOB, "main")
    doc.remove_editor(ALICE, BOB.public_key)
    objects = [*base, *new_since(bob, base), *new_since(doc, base)]
    held = bob.keys()
    bobs_keys = [k for _, e, k in held if e == 5]
    for n, order in enumerate(orders(objects)):
        alice = Document.load(order, identity=ALICE, clock=counting_clock(T0_MS + 1_000 + n))
        commit = commit_object(alice, alice.commit(ALICE, [(0, 0, "after ")], [c0]))
        assert commit.body["epoch"] == 1 and not opens_with(bobs_keys[0], commit)
        with pytest.raises(DocumentError):
            Document.load(alice.objects(), identity=BOB, keys=bob.keys()).text([commit.hex])


# 3. A removed editor keeps writing -----------------------------------------------------------

def test_a_removed_editor_cannot_repoint_main_from_a_stale_view() -> None:
    doc = Document.create(ALICE, "repointed", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    main = main_id(doc)
    base = doc.objects()
    # Bob, in a view from before his removal and with a clock years ahead, makes a branch named
    # main and points the document's main at it.
    bob = Document.load(base, identity=BOB, clock=counting_clock(T0_MS + 10 * YEAR_MS))
    trap = bob.fork(BOB, "main", "main")
    bob.set_main(BOB, trap)
    bob.tag(BOB, "v1", bob.heads(trap)[0])
    doc.remove_editor(ALICE, BOB.public_key)
    objects = [*base, *new_since(bob, base), *new_since(doc, base)]
    for n, order in enumerate(orders(objects)):
        now = T0_MS + 5_000 + n
        alice = Document.load(order, identity=ALICE, clock=counting_clock(now))
        assert main_id(alice) == main
        assert [b.name for b in alice.branches()] == ["main"]
        assert alice.tags() == {}
        commit = commit_object(alice, alice.commit(ALICE, [(0, 0, "after ")], alice.heads()))
        assert commit.stream.hex() == main and commit.ts < now + HORIZON_MS
        assert alice.text(alice.heads()) == "after base"
        spy = Document.load(alice.objects(), identity=BOB, keys=bob.keys())
        with pytest.raises(DocumentError):
            spy.text([commit.hex])
        # His commit made in that view, on the real main, stays (that is by design).
        old = Document.load(base, identity=BOB, clock=counting_clock(T0_MS + 300))
        edit = old.commit(BOB, [(4, 0, "!")], [c0])
        seen = Document.load([*order, *new_since(old, base)], identity=ALICE)
        assert edit in seen.heads()


def test_removal_keeps_what_it_acknowledged_and_nothing_later() -> None:
    doc = Document.create(ALICE, "acknowledged", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    doc.commit(ALICE, [(0, 0, "base")], [])
    bob = Document.load(doc.objects(), identity=BOB, clock=counting_clock(T0_MS + 500))
    draft = bob.fork(BOB, "main", "draft")
    doc.add(bob.objects())  # alice saw the draft before removing bob
    doc.remove_editor(ALICE, BOB.public_key)
    # After his removal, objects naming the latest root state, or (forged) an old one.
    late = craft_root(BOB, doc, "doc/branch", {"name": "late", "source": None, "at": []})
    stale = build(BOB, "doc/main", stream=doc.root.id, body={"branch": bytes.fromhex(draft)},
                  ts=T0_MS + 10_000, links=[o.id for o in bob.objects()
                                            if o.stream == doc.root.id][-1:])
    for order in orders([*doc.objects(), late, stale]):
        alice = Document.load(order, identity=ALICE, clock=counting_clock(T0_MS + 20_000))
        assert [b.name for b in alice.branches()] == ["main", "draft"]
        assert not next(b for b in alice.branches() if b.name == "draft").main
        assert alice.text(alice.heads("draft")) == "base"


def test_far_future_root_objects_neither_win_nor_drag_later_ones_along() -> None:
    doc = Document.create(ALICE, "Title", clock=counting_clock())
    doc.add_editor(ALICE, BOB.public_key)
    c0 = doc.commit(ALICE, [(0, 0, "base")], [])
    main = main_id(doc)
    draft = doc.fork(ALICE, "main", "draft")
    base = doc.objects()
    far = T0_MS + 10 * YEAR_MS
    bob = Document.load(base, identity=BOB, clock=counting_clock(far))  # still an editor
    bob.set_main(BOB, draft)
    bob.tag(BOB, "t", c0)
    future_commit = bob.commit(BOB, [(0, 0, "FUTURE ")], [c0], branch=main)
    future = new_since(bob, base)
    future.append(build(ALICE, "doc/title", stream=doc.root.id, body={"title": "Future title"},
                        ts=far, links=root_heads(doc)))

    for n, order in enumerate(orders([*base, *future])):
        now = T0_MS + 50_000 + n
        alice = Document.load(order, identity=ALICE, clock=counting_clock(now))
        assert main_id(alice) == main and alice.title == "Title" and alice.tags() == {}
        assert alice.heads() == [c0]  # the far-future commit is not built on
        alice.rename(ALICE, "Renamed")
        alice.tag(ALICE, "t", c0)
        commit = alice.commit(ALICE, [(4, 0, "!")], alice.heads())
        made = new_since(alice, [*base, *future])
        assert made and all(o.ts < now + HORIZON_MS for o in made)
        assert not {link for o in made for link in o.links} & {o.id for o in future}
        assert alice.title == "Renamed" and alice.tags() == {"t": c0}
        assert alice.text([commit]) == "base!"
        with pytest.raises(DocumentError, match="future"):
            alice.commit(ALICE, [(0, 0, "x")], [future_commit])
        # Once its time comes, what was dated then is shown.
        then = Document.load(alice.objects(), identity=ALICE, clock=counting_clock(far + 1))
        assert main_id(then) == draft and then.title == "Future title"
        assert future_commit in then.heads(main)


# 12. Junk makes opening near-linear ----------------------------------------------------------

def steps(action: Callable[[], object]) -> int:
    """Lines of core/ run by `action`: a cost that does not depend on the machine."""
    count = 0

    def local(frame, event, arg):  # noqa: ANN001, ANN202
        nonlocal count
        if event == "line":
            count += 1
        return local

    def tracer(frame, event, arg):  # noqa: ANN001, ANN202
        return local if frame.f_code.co_filename.startswith(CORE) else None

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        action()
    finally:
        sys.settrace(previous)
    return count


def junk_document(shape: str, count: int) -> tuple[list[Object], list[tuple[bytes, int, bytes]]]:
    doc = Document.create(ALICE, "junked", clock=counting_clock())
    c0 = doc.commit(ALICE, [(0, 0, "real")], [])
    main = bytes.fromhex(main_id(doc))
    junk: list[Object] = []
    links = root_heads(doc)
    parent = os.urandom(32)  # a parent nobody holds
    for i in range(count):
        ts = T0_MS + 1_000 + i
        body = {"root": [], "epoch": 0, "nonce": os.urandom(24), "box": os.urandom(48)}
        if shape == "commit chain over a missing parent":
            junk.append(build(MALLORY, "doc/commit", stream=main, body=body, ts=ts,
                              links=[parent]))
            parent = junk[-1].id
        elif shape == "commits naming a chain of root objects":
            tag = build(MALLORY, "doc/tag", stream=doc.root.id, ts=ts, links=links,
                        body={"name": f"t{i}", "commit": bytes.fromhex(c0)})
            links = [tag.id]
            junk += [tag, build(MALLORY, "doc/commit", stream=main, ts=ts,
                                links=[bytes.fromhex(c0)], body={**body, "root": links})]
        else:  # a chain of branches
            junk.append(build(MALLORY, "doc/branch", stream=doc.root.id, ts=ts, links=links,
                              body={"name": f"b{i}", "source": None, "at": []}))
            links = [junk[-1].id]
    return [*doc.objects(), *junk], doc.keys()


@pytest.mark.parametrize("shape", ["commit chain over a missing parent",
                                   "commits naming a chain of root objects",
                                   "a chain of branches"])
def test_opening_grows_near_linearly_with_junk(shape: str) -> None:
    def cost(count: int) -> int:
        objects, keys = junk_document(shape, count)

        def open_and_read() -> None:
            doc = Document.load(objects, identity=ALICE, keys=keys,
                                clock=counting_clock(T0_MS + 10**6))
            assert doc.text(doc.heads()) == "real"
            assert [b.name for b in doc.branches()] == ["main"] and doc.tags() == {}
        return steps(open_and_read)

    small, large = cost(150), cost(600)
    # Four times the junk: about four times the steps when linear, sixteen when quadratic.
    assert large < 6 * small, (small, large)
