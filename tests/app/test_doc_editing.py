"""Who can edit a new document (issue #29): everyone in the workspace by default, or only the
people its creator adds; a member who joins later edits, a removed member does not. Real
Workspaces whose objects travel as sync moves them (tests/support.py `share`), and the CLI."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.documents import READ_ONLY, Documents
from app.workspace import Workspace, WorkspaceError
from core.documents import DocumentError
from tests.support import create_workspace, join_member, share


@pytest.fixture
def team(tmp_path: Path):
    alice = create_workspace(tmp_path, "alice", "alice")
    bob = join_member(tmp_path, alice, "bob", "bob")
    carol = join_member(tmp_path, alice, "carol", "carol")
    spaces = [Workspace.open(p) for p in (alice, bob, carol)]
    for ws in spaces:
        share(ws, *[other for other in spaces if other is not ws])
    yield (*spaces, tmp_path, alice)
    for ws in spaces:
        ws.close()


def _write(ws: Workspace, doc: bytes, text: str) -> None:
    docs = Documents(ws)
    docs.write(docs.open(doc), text)


def _text(ws: Workspace, doc: bytes) -> str | None:
    docs = Documents(ws)
    document = docs.open(doc)
    if docs.unreadable(document) is not None:
        return None
    return document.text(document.heads())


def test_members_edit_a_new_document_without_asking(team) -> None:
    a, b, c, *_ = team
    doc = Documents(a).new("Plans")
    assert doc.editing == "workspace"
    _write(a, doc.root.id, "alice")
    share(a, b)
    docs = Documents(b)
    assert docs.read_only(docs.open(doc.root.id)) is None
    _write(b, doc.root.id, "alice and bob")
    share(b, a, c)
    assert _text(a, doc.root.id) == _text(c, doc.root.id) == "alice and bob"


def test_only_the_people_i_add_keeps_members_reading(team) -> None:
    a, b, *_ = team
    doc = Documents(a).new("Pay", editing="listed")
    _write(a, doc.root.id, "figures")
    share(a, b)
    docs = Documents(b)
    held = docs.open(doc.root.id)
    assert docs.read_only(held) == READ_ONLY
    with pytest.raises(DocumentError, match="editors"):
        docs.write(held, "bob")
    with pytest.raises(WorkspaceError, match="private"):
        Documents(a).new("Secret", private=True, editing="workspace")


def test_a_member_who_joins_later_edits(team) -> None:
    a, b, c, root, alice = team
    doc = Documents(a).new("Plans")
    _write(a, doc.root.id, "before dave")
    dave = Workspace.open(join_member(root, alice, "dave", "dave"))
    try:
        share(a, dave)
        _write(dave, doc.root.id, "before dave, and dave")
        share(dave, a)
        assert _text(a, doc.root.id) == "before dave, and dave"
    finally:
        dave.close()


def test_a_removed_member_no_longer_edits_or_reads_what_comes_after(team) -> None:
    a, b, c, *_ = team
    doc = Documents(a).new("Plans")
    _write(a, doc.root.id, "one")
    share(a, b, c)
    _write(c, doc.root.id, "one, carol")  # before her removal: it stays
    share(c, a, b)
    a.members.remove(c.key)
    share(a, b, c)
    assert Documents(c).read_only(Documents(c).open(doc.root.id)) is not None
    _write(b, doc.root.id, "one, carol, after")  # bob writes with the new epoch's key
    share(b, a, c)
    assert _text(a, doc.root.id) == "one, carol, after"
    assert _text(c, doc.root.id) is None  # the newest key is under a secret she lacks
    # What she writes on her own copy now counts nowhere.
    with pytest.raises(DocumentError):
        _write(c, doc.root.id, "carol sneaks in")


def test_the_cli_creates_workspace_editable_by_default_and_only_me_on_request(
        hearth, alice, bob) -> None:
    shared = hearth("doc", "new", "Team", data=alice.data).line
    mine = hearth("doc", "new", "Mine", "--editors", "only-me", data=alice.data).line
    hearth("doc", "write", shared, "--text", "hi", data=alice.data)
    hearth("doc", "write", mine, "--text", "hi", data=alice.data)
    for doc in (shared, mine):
        listed = hearth("doc", "editors", doc, data=alice.data)
        assert listed.stdout.startswith("alice")
    assert "everyone in the workspace" in hearth("doc", "editors", shared, data=alice.data).stderr
    refusal = hearth.fails("doc", "new", "X", "--private", "--editors", "workspace",
                           data=alice.data)
    assert "private" in refusal


def test_a_key_a_member_dated_ahead_before_their_removal_is_not_written_with_after(team) -> None:
    a, b, c, *_ = team
    doc = Documents(a).new("Plans")
    _write(a, doc.root.id, "one")
    share(a, b, c)
    # Carol, before her removal, makes a new key for main dated five days ahead (a modified
    # client may: it is within the horizon), so that it would pass for one made after.
    docs = Documents(c)
    planted = docs.open(doc.root.id)
    now = planted.held.clock()
    planted.held.clock = lambda: now + 5 * 24 * 3600 * 1000
    planted.refresh_key(c.identity, "main")
    docs.save(planted)
    share(c, a, b)
    a.members.remove(c.key)  # alice held carol's key: the removal keeps it
    share(a, b, c)
    _write(b, doc.root.id, "one, and what carol must not read")
    share(b, a, c)
    assert _text(a, doc.root.id) == "one, and what carol must not read"
    assert _text(c, doc.root.id) is None
