"""Comments on documents (issue #16): `hearth doc comment` and `hearth doc comments`, the library
and the facade, between real members.

The Done-when test runs two real Nodes on 127.0.0.1 that sync by themselves: alice comments with
the command line beside her running Node, bob makes 100 edits before and after the words from
his, and both read the comment on its words. The other command tests run `hearth ... --data
DIR` in this process (tests/app/conftest.py) on members made the way people are made, with
"sync" done by hand where a test needs a second member (tests/app/test_documents.py
`copy_objects`).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from app.doc_comments import find_quote
from app.doc_views import comments_view, document_view
from app.documents import on_document
from app.paths import Paths
from app.workspace import WorkspaceError
from tests.app.test_documents import copy_objects, opened, replica_bytes
from tests.support import start_two_nodes
from tests.sync.nodes import TIMEOUT_S, Cluster, wait_until

from .conftest import Hearth

WORDS = "the brave 😀 words 日本"
MARKER = "QZV-comment-marker-9313"


def data(paths: Paths) -> Path:
    """The data folder `--data` takes for a member's Paths (tests/support.py makes them)."""
    return paths.data


def result(future):
    return future.result(TIMEOUT_S)


def new_doc(hearth: Hearth, folder: Path, text: str, title: str = "Notes") -> str:
    doc = hearth("doc", "new", title, "--editors", "only-me", data=folder).line
    hearth("doc", "write", doc, "--text", text, data=folder)
    return doc


def comments(hearth: Hearth, folder: Path, doc: str, *more: str) -> list[dict]:
    return hearth("doc", "comments", doc, "--json", *more, data=folder).json()


def shown(comment: dict, text: str) -> str | None:
    return None if comment["detached"] else text[comment["start"]:comment["end"]]


# The Done-when test ------------------------------------------------------------------------------

def test_an_anchor_points_at_its_words_after_100_edits_around_them_by_the_other_member(
        hearth: Hearth, tmp_path: Path) -> None:
    with Cluster(tmp_path) as cluster:
        pa, pb = cluster.members(2)
        a, b = start_two_nodes(cluster, pa, pb)
        doc = result(a.facade.run(lambda ws: ws.documents.new("Roadmap").id))
        doc_id = bytes.fromhex(doc)
        result(a.facade.run(on_document(doc_id, lambda docs, d: docs.write(d, f"héllo 😀 {WORDS} and the rest 日本語"))))
        result(a.facade.run(on_document(doc_id, lambda docs, d: docs.add_editor(d, b.key.hex()))))
        comment = hearth("doc", "comment", doc, "--quote", WORDS, "is this right?",
                         data=data(pa)).line

        def bob_sees_it() -> bool:
            try:
                view = result(b.facade.run(on_document(doc_id, lambda docs, d: comments_view(docs, d))))
            except Exception:  # the document has not arrived yet
                return False
            return b.key in view.editors and [c.id for c in view.comments] == [comment]
        wait_until(bob_sees_it, what="bob to read alice's comment and be an editor")

        rng = random.Random(16)
        for n in range(100):  # before the words, then after them, and so on
            text = result(b.facade.run(on_document(doc_id, lambda docs, d: d.text(d.heads("main")))))
            at = text.index(WORDS)
            lo, hi = (0, at) if n % 2 == 0 else (at + len(WORDS), len(text))
            spot = rng.randint(lo, hi)
            if hi > lo and n % 5 == 4:  # a small deletion
                spot = min(spot, hi - 1)
                edited = text[:spot] + text[spot + 1:]
            else:
                edited = text[:spot] + rng.choice(["x", "😀 ", "日本", " é"]) + text[spot:]
            assert result(b.facade.run(on_document(
                doc_id, lambda docs, d, edited=edited: docs.write(d, edited)))) is not None
        final = result(b.facade.run(on_document(doc_id, lambda docs, d: d.text(d.heads("main")))))
        assert final.index(WORDS) > 0 and final != f"héllo 😀 {WORDS} and the rest 日本語"

        wait_until(lambda: result(a.facade.run(on_document(doc_id, lambda docs, d: d.text(d.heads("main"))))) == final,
                   what="alice to read bob's 100 edits")
        [listed] = comments(hearth, data(pa), doc)
        assert (listed["id"], listed["quote"], listed["text"]) == (comment, WORDS,
                                                                    "is this right?")
        assert shown(listed, final) == WORDS
        [at_b] = result(b.facade.run(on_document(doc_id, lambda docs, d: comments_view(docs, d)))).comments
        assert (at_b.start, at_b.end) == (listed["start"], listed["end"])
        assert "is this right?" in hearth("doc", "comments", doc, data=data(pa)).stdout


# The command line --------------------------------------------------------------------------------

def test_comment_reply_resolve_and_list(hearth: Hearth, alice: Paths) -> None:
    folder = data(alice)
    doc = new_doc(hearth, folder, f"intro; {WORDS}; more words; more words")
    comment = hearth("doc", "comment", doc, "--quote", WORDS, "first thought",
                     data=folder).line
    reply = hearth("doc", "comment", doc, "--reply", comment[:10], "second thought",
                   data=folder).line
    hearth("doc", "comment", doc, "--reply", reply, "a reply's id stands for its comment",
           data=folder)
    second = hearth("doc", "comment", doc, "--quote", "more words", "the 2nd one", "--nth", "2",
                    data=folder).line
    [first, other] = comments(hearth, folder, doc)
    text = hearth("doc", "show", doc, "--json", data=folder).json()["text"]
    assert (first["id"], shown(first, text), first["resolved"]) == (comment, WORDS, False)
    assert [r["text"] for r in first["replies"]] == ["second thought",
                                                     "a reply's id stands for its comment"]
    assert first["replies"][0]["id"] == reply
    assert (other["id"], other["start"]) == (second, text.rindex("more words"))

    assert hearth("doc", "comment", doc, "--resolve", comment[:12], data=folder).line == \
        "resolved"
    [first, _] = comments(hearth, folder, doc)
    me = hearth("whoami", "--json", data=folder).json()["key"]
    assert (first["resolved"], first["resolved_by"]) == (True, me)

    listing = hearth("doc", "comments", doc, data=folder).stdout.splitlines()
    assert listing[0].startswith(f"{comment[:12]}  alice  ")
    assert f'on "{WORDS}" (at {first["start"]}-{first["end"]}, resolved by alice)' in listing[0]
    assert listing[1] == "    first thought"
    assert listing[2].startswith(f"  reply {reply[:12]}  alice  ")
    assert listing[3] == "    second thought"

    # Deleting the words detaches the comment; it still says what it was on.
    hearth("doc", "write", doc, "--text", "more words; more words", data=folder)
    [detached, _] = sorted(comments(hearth, folder, doc), key=lambda c: c["id"] != comment)
    assert (detached["detached"], detached["start"], detached["quote"]) == (True, None, WORDS)
    assert "detached: its words were deleted" in hearth("doc", "comments", doc,
                                                        data=folder).stdout


def test_a_branch_has_its_own_comments(hearth: Hearth, alice: Paths) -> None:
    folder = data(alice)
    doc = new_doc(hearth, folder, "shared start")
    hearth("doc", "fork", doc, "--from", "main", "--name", "draft", data=folder)
    hearth("doc", "write", doc, "--branch", "draft", "--text", "shared start, drafted",
           data=folder)
    hearth("doc", "comment", doc, "--branch", "draft", "--quote", "drafted", "on the draft",
           data=folder)
    assert comments(hearth, folder, doc) == []
    [on_draft] = comments(hearth, folder, doc, "--branch", "draft")
    assert (on_draft["text"], on_draft["start"]) == ("on the draft", len("shared start, "))


@pytest.mark.parametrize(("args", "message"), [
    (["--quote", "absent", "x"], "'absent' is not in the text of that branch"),
    (["--quote", "word", "x"], "'word' occurs 2 times; quote more of the words around it"),
    (["--quote", "word", "x", "--nth", "3"], "occurs 2 times, so there is no occurrence 3"),
    (["--quote", "word", "x", "--nth", "0"], "must be a whole number from 1"),
    (["--quote", "and", " "], "a comment needs some text"),
    (["--reply", "abcdef0123", "x"], "no comment 'abcdef0123'"),
    (["--resolve", "ab"], "at least 4 hex digits"),
    ([], "give exactly one of --quote WORDS TEXT, --reply ID TEXT or --resolve ID"),
    (["--resolve", "abcdef0123", "--nth", "1"], "--nth picks an occurrence"),
])
def test_refusals_are_one_line(hearth: Hearth, alice: Paths, args: list[str],
                               message: str) -> None:
    doc = new_doc(hearth, data(alice), "word and word")
    refusal = hearth.fails("doc", "comment", doc, *args, data=data(alice))
    assert message in refusal
    assert comments(hearth, data(alice), doc) == []


def test_what_members_wrote_is_printed_safely(hearth: Hearth, alice: Paths) -> None:
    folder = data(alice)
    doc = new_doc(hearth, folder, "a\x1b[31mred\x1b[0m word")
    hearth("doc", "comment", doc, "--quote", "\x1b[31mred", "fake\nab12cd34ef56  bob  line\x07",
           data=folder)
    out = hearth("doc", "comments", doc, data=folder).stdout
    assert "\x1b" not in out and "\x07" not in out
    assert '"\\x1b[31mred"' in out
    assert "    fake\n    ab12cd34ef56  bob  line\\x07" in out


# Members ------------------------------------------------------------------------------------

def test_a_member_who_reads_comments_and_the_replica_never_holds_the_text_in_the_clear(
        hearth: Hearth, alice: Paths, bob: Paths) -> None:
    doc = new_doc(hearth, data(alice), f"the plan: {WORDS}")
    copy_objects(alice, bob)
    comment = hearth("doc", "comment", doc, "--quote", WORDS, f"bob asks {MARKER}",
                     data=data(bob)).line  # bob reads it, so he may comment; he is no editor
    with pytest.raises(Exception, match="editors"):
        hearth("doc", "write", doc, "--text", "bob was here", data=data(bob))
    copy_objects(bob, alice)
    [seen] = comments(hearth, data(alice), doc)
    assert (seen["id"], seen["text"]) == (comment, f"bob asks {MARKER}")
    bob_key = hearth("whoami", "--json", data=data(bob)).json()["key"]
    assert seen["author"] == bob_key
    for paths in (alice, bob):
        assert MARKER.encode() not in replica_bytes(paths)
    # alice, an editor, resolves bob's comment; bob may not resolve hers.
    mine = hearth("doc", "comment", doc, "--quote", "plan", "alice's", data=data(alice)).line
    hearth("doc", "comment", doc, "--resolve", comment, data=data(alice))
    copy_objects(alice, bob)
    refusal = hearth.fails("doc", "comment", doc, "--resolve", mine, data=data(bob))
    assert "only the comment's author or an editor" in refusal
    assert {c["id"]: c["resolved"] for c in comments(hearth, data(bob), doc)} == {
        comment: True, mine: False}


def test_a_private_documents_comments_need_its_key(hearth: Hearth, alice: Paths,
                                                  bob: Paths) -> None:
    with opened(alice) as (_, docs):
        document = docs.new("Pay", private=True)
        docs.write(document, "the figures")
        docs.comment(document, "figures", f"check {MARKER}")
        doc_id = document.root.id
    copy_objects(alice, bob)
    with opened(bob) as (_, docs):
        held = docs.open(doc_id)
        assert docs.comments(held) == []
        with pytest.raises(Exception, match="read key"):
            docs.comment(held, "figures", "let me in")
    assert MARKER.encode() not in replica_bytes(bob)
    refusal = hearth.fails("doc", "comments", doc_id.hex(), data=data(bob))
    assert "Only its editors can read it" in refusal


# The facade --------------------------------------------------------------------------------------

def test_the_facade_comments_on_a_selection_at_the_heads_the_editor_showed(tmp_path) -> None:
    with Cluster(tmp_path) as cluster:
        [pa] = cluster.members(1)
        a = cluster.start(pa)
        doc = bytes.fromhex(result(a.facade.run(lambda ws: ws.documents.new("Notes").id)))
        result(a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "one two three"))))
        seen = result(a.facade.run(on_document(doc, lambda docs, d: document_view(docs, d)))).heads
        result(a.facade.run(on_document(doc, lambda docs, d: docs.write(d, "zero one two three"))))  # the branch moved on meanwhile
        comment = result(a.facade.run(on_document(doc, lambda docs, d: docs.comment_at(d, 4, 7, "on two", heads=seen))))  # "two" back then
        view = result(a.facade.run(on_document(doc, lambda docs, d: comments_view(docs, d))))
        [info] = view.comments
        assert info.id == comment and view.text[info.start:info.end] == "two"
        assert (view.heads, view.unreadable, view.editors) == (
            result(a.facade.run(on_document(doc, lambda docs, d: document_view(docs, d)))).heads, None, (a.key,))
        result(a.facade.run(on_document(doc, lambda docs, d: docs.reply(d, comment, "yes"))))
        result(a.facade.run(on_document(doc, lambda docs, d: docs.resolve_comment(d, comment))))
        [info] = result(a.facade.run(on_document(doc, lambda docs, d: comments_view(docs, d)))).comments
        assert info.resolved and [r.text for r in info.replies] == ["yes"]


@pytest.mark.parametrize(("text", "quote", "nth", "expected"), [
    ("a b a", "b", None, 2),
    ("a b a", "a", 2, 4),
    ("😀a😀a", "😀a", 2, 2),
])
def test_find_quote(text: str, quote: str, nth: int | None, expected: int) -> None:
    assert find_quote(text, quote, nth) == expected


def test_find_quote_refuses_absent_empty_and_ambiguous() -> None:
    for quote, nth in (("", None), ("z", None), ("a", None), ("a", 3)):
        with pytest.raises(WorkspaceError):
            find_quote("a b a", quote, nth)
