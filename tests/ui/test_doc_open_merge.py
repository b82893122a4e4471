"""A merge into a branch that others have open (issue #29, item 1), over two real Nodes with
their windows offscreen.

ada and bob, both editors, have "Meeting notes" open on main. ada forks draft and changes line
4 there; bob changes the same line on main; the draft is merged into main with each of the
three resolutions, from ada's window (the merge dialog) or from `hearth doc merge --prefer`
while both windows show main. Afterwards each editor reads exactly what the branch stores,
bob's next keystrokes land where he typed them, and no commit exists that nobody typed: the
only commits that change the text are the ones typed, the write on draft and the merge.
"""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402

from app.documents import on_document  # noqa: E402
from tests.app.conftest import InProcessHearth  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.document_pane import DocumentPane, utf16_offset  # noqa: E402

from .test_doc_review_window import click, make_editor, open_branch  # noqa: E402

NOTES = "Meeting notes\n1. agenda\n2. budget\n3. hiring\n4. x\n5. next steps\n"
DRAFT_LINE, MAIN_LINE = "4. y (draft by ada)", "4. z (main by bob)"
# ada's draft also changes lines bob left alone, so whichever side line 4 takes, the merge
# reaches bob's editor as several edits, each moved by the ones before it.
DRAFT_ALSO = (("1. agenda", "1. agenda and dates"), ("5. next steps", "5. next steps: ship"))


def drafted(text: str) -> str:
    for old, new in DRAFT_ALSO:
        text = text.replace(old, new)
    return text


# Typing as a person does: the editor's own cursor, then the pause's commit ----------------------

def type_over(pane: DocumentPane, old: str, new: str) -> None:
    """Select `old` in the editor and type `new` over it."""
    text = pane.editor.toPlainText()
    at = text.index(old)
    cursor = pane.editor.textCursor()
    cursor.setPosition(utf16_offset(text, at))
    cursor.setPosition(utf16_offset(text, at + len(old)), cursor.MoveMode.KeepAnchor)
    pane.editor.setTextCursor(cursor)
    cursor.insertText(new)


def type_at(pane: DocumentPane, position: int, new: str) -> None:
    """Put the cursor at codepoint `position` and type `new`, then commit."""
    text = pane.editor.toPlainText()
    cursor = pane.editor.textCursor()
    cursor.setPosition(utf16_offset(text, position))
    pane.editor.setTextCursor(cursor)
    cursor.insertText(new)
    pane.commit_now()


def select(pane: DocumentPane, words: str) -> None:
    """Select `words` in the editor, as a person would with the mouse."""
    text = pane.editor.toPlainText()
    at = text.index(words)
    cursor = pane.editor.textCursor()
    cursor.setPosition(utf16_offset(text, at))
    cursor.setPosition(utf16_offset(text, at + len(words)), cursor.MoveMode.KeepAnchor)
    pane.editor.setTextCursor(cursor)


def selected(pane: DocumentPane) -> str:
    return pane.editor.textCursor().selectedText()


# What the nodes hold --------------------------------------------------------------------------

def stored(node, doc: bytes, branch: str = "main") -> str:
    return result(node.facade.run(on_document(doc, lambda docs, d: d.text(d.heads(branch)))))


def heads(node, doc: bytes, branch: str = "main") -> set[str]:
    return next(set(b.heads) for b in result(node.facade.run(on_document(doc, lambda docs, d: d.branches())))
                if b.name == branch)


def changes(node, doc: bytes, branch: str = "main") -> list[tuple[bytes, str]]:
    """(author, kind) of each commit on `branch` that changed the text (oldest first): an
    edit someone typed or wrote, a merge, a restore. Commits that change nothing (a fork's
    copy, one joining two heads) are left out."""
    out = []
    for commit in result(node.facade.run(on_document(doc, lambda docs, d: d.history(branch)))):
        diff = result(node.facade.run(on_document(
            doc, lambda docs, d, commit=commit: docs.diff(d, list(commit.parents), [commit.id]))))
        if diff.old_text != diff.new_text:
            out.append((commit.author, commit.kind))
    return out


def commits(node, doc: bytes, branch: str = "main") -> list[tuple[bytes, str]]:
    """(author, kind) of every commit on `branch`, oldest first."""
    return [(c.author, c.kind) for c in result(node.facade.run(on_document(doc, lambda docs, d: d.history(branch))))]


def in_step(pane: DocumentPane, nodes, doc: bytes, branch: str = "main") -> bool:
    """Both nodes hold the same heads of `branch`, and `pane` shows its text at them with
    nothing of its own waiting."""
    node_a, node_b = nodes
    try:
        now = heads(node_a, doc, branch)
        if heads(node_b, doc, branch) != now:
            return False
        text = stored(node_a, doc, branch)
    except Exception:  # not arrived yet
        return False
    return (pane.branch == branch and pane.in_step() and set(pane.seen) == now
            and pane.editor.toPlainText() == text)


def settle(qtbot, panes: list[DocumentPane], nodes, doc: bytes, branch: str = "main") -> None:
    """Wait until every pane is in step with `branch` as both nodes hold it; then make every
    pane look again (the path that once wrote back what the pane had mangled) and wait again."""
    qtbot.waitUntil(lambda: all(in_step(p, nodes, doc, branch) for p in panes), timeout=WAIT_MS)
    for pane in panes:
        with qtbot.waitSignal(pane.changed, timeout=WAIT_MS):
            pane.reload()
    qtbot.waitUntil(lambda: all(in_step(p, nodes, doc, branch) for p in panes), timeout=WAIT_MS)


def meeting_notes(qtbot, pair, window, window_b) -> bytes:
    """ada's "Meeting notes" (NOTES), bob an editor, both windows showing main."""
    node_a = pair[0]
    doc = bytes.fromhex(result(node_a.facade.run(lambda ws: ws.documents.new("Meeting notes").id)))
    result(node_a.facade.run(on_document(doc, lambda docs, d: docs.write(d, NOTES))))
    make_editor(qtbot, pair, doc)
    for win in (window, window_b):
        open_branch(qtbot, win, doc, "main")
    panes = [window.document_pane, window_b.document_pane]
    qtbot.waitUntil(lambda: all(p.writable and p.editor.toPlainText() == NOTES for p in panes),
                    timeout=WAIT_MS)
    return doc


def line_4(choice: str) -> str:
    """Line 4 as the merge leaves it."""
    if choice == "theirs":
        return DRAFT_LINE + "\n"
    if choice == "ours":
        return MAIN_LINE + "\n"
    return f"<<<<<<< main\n{MAIN_LINE}\n=======\n{DRAFT_LINE}\n>>>>>>> draft\n"


def bob_types_ok(qtbot, nodes, doc: bytes, bob: DocumentPane, panes, before) -> None:
    """bob types " ok" at the end of the first line 4 he sees: it lands there, and it is the
    one commit that changes the text."""
    text = bob.editor.toPlainText()
    end = text.index("\n", text.index("4. "))
    expected = text[:end] + " ok" + text[end:]
    type_at(bob, end, " ok")
    qtbot.waitUntil(lambda: stored(nodes[0], doc) == expected, timeout=WAIT_MS)
    settle(qtbot, panes, nodes, doc)
    for pane in panes:
        assert pane.editor.toPlainText() == expected
    assert changes(nodes[0], doc) == [*before, (nodes[1].key, "edit")]


@pytest.mark.parametrize("choice", ["theirs", "ours", "both"])
def test_a_merge_from_the_window_reaches_an_open_editor_whole(qtbot, pair, window, window_b,
                                                              choice):
    node_a, node_b = pair
    doc = meeting_notes(qtbot, pair, window, window_b)
    ada, bob = window.document_pane, window_b.document_pane
    ada.fork("draft")
    qtbot.waitUntil(lambda: ada.branch == "draft" and ada.merge_button.isEnabled()
                    and ada.editor.toPlainText() == NOTES, timeout=WAIT_MS)
    for old, new in (*DRAFT_ALSO, ("4. x", DRAFT_LINE)):
        type_over(ada, old, new)
    ada.commit_now()  # as the pause after typing does
    qtbot.waitUntil(lambda: stored(node_a, doc, "draft")
                    == drafted(NOTES).replace("4. x", DRAFT_LINE), timeout=WAIT_MS)
    type_over(bob, "4. x", MAIN_LINE)
    bob.commit_now()
    qtbot.waitUntil(lambda: stored(node_a, doc) == NOTES.replace("4. x", MAIN_LINE),
                    timeout=WAIT_MS)
    settle(qtbot, [bob], pair, doc)
    before = changes(node_a, doc)
    assert before == [(node_a.key, "edit"), (node_b.key, "edit")]
    before_commits = commits(node_a, doc)

    select(bob, "3. hiring")  # what bob has selected stays selected through the merge
    click(qtbot, ada.merge_button)
    dialog = ada.merge_dialog
    qtbot.waitUntil(lambda: dialog.preview is not None
                    and dialog.preview.target_heads and len(dialog.choices) == 1,
                    timeout=WAIT_MS)
    dialog.choose(0, choice)
    click(qtbot, dialog.merge_button)
    merged = drafted(NOTES).replace("4. x\n", line_4(choice))
    qtbot.waitUntil(lambda: stored(node_a, doc) == merged, timeout=WAIT_MS)
    settle(qtbot, [ada, bob], pair, doc)
    for pane in (ada, bob):
        assert pane.editor.toPlainText() == merged == stored(node_b, doc)
    assert selected(bob) == "3. hiring"
    # The merge's commits are all there is since: nobody's editor wrote anything back.
    made = commits(node_a, doc)[len(before_commits):]
    assert made and set(made) == {(node_a.key, "merge")}
    assert commits(node_b, doc) == before_commits + made
    bob_types_ok(qtbot, pair, doc, bob, [ada, bob], before + changes(node_a, doc)[len(before):])


@pytest.mark.parametrize("choice", ["theirs", "ours", "both"])
def test_a_merge_from_the_command_line_reaches_both_open_editors(qtbot, tmp_path, pair,
                                                                 window, window_b, choice):
    node_a, node_b = pair
    doc = meeting_notes(qtbot, pair, window, window_b)
    ada, bob = window.document_pane, window_b.document_pane
    hearth = InProcessHearth(tmp_path / "elsewhere")
    data = tmp_path / "a"  # ada's data folder, as her running window has it (the pair fixture)
    hearth("doc", "fork", doc.hex(), "--from", "main", "--name", "draft", data=data)
    hearth("doc", "write", doc.hex(), "--branch", "draft", "--text",
           drafted(NOTES).replace("4. x", DRAFT_LINE), data=data)
    type_over(bob, "4. x", MAIN_LINE)
    bob.commit_now()
    qtbot.waitUntil(lambda: stored(node_a, doc) == NOTES.replace("4. x", MAIN_LINE),
                    timeout=WAIT_MS)
    settle(qtbot, [ada, bob], pair, doc)
    before = changes(node_a, doc)
    assert before == [(node_a.key, "edit"), (node_b.key, "edit")]
    before_commits = commits(node_a, doc)

    select(bob, "3. hiring")  # what each has selected stays selected through the merge
    select(ada, "next")
    run = hearth("doc", "merge", doc.hex(), "--from", "draft", "--into", "main", "--prefer",
                 choice, data=data)
    assert run.returncode == 0
    merged = drafted(NOTES).replace("4. x\n", line_4(choice))
    assert stored(node_a, doc) == merged
    settle(qtbot, [ada, bob], pair, doc)
    for pane in (ada, bob):
        assert pane.editor.toPlainText() == merged == stored(node_b, doc)
    assert (selected(bob), selected(ada)) == ("3. hiring", "next")
    # The merge's commits are all there is since: nobody's editor wrote anything back.
    made = commits(node_a, doc)[len(before_commits):]
    assert made and set(made) == {(node_a.key, "merge")}
    assert commits(node_b, doc) == before_commits + made
    bob_types_ok(qtbot, pair, doc, bob, [ada, bob], before + changes(node_a, doc)[len(before):])


def test_ctrl_z_after_a_change_from_another_member_undoes_my_edit_not_theirs(
        qtbot, pair, window, window_b):
    """Qt's own undo took back the last change made to the editor, which may be another
    member's commit or a merge; the pane then committed that as my typing. Ctrl+Z is the
    document's undo: my last edit goes, theirs stays, and nothing else is committed."""
    node_a, node_b = pair
    doc = meeting_notes(qtbot, pair, window, window_b)
    ada = window.document_pane
    type_over(ada, "2. budget", "2. budget (ada)")
    ada.commit_now()
    mine = NOTES.replace("2. budget", "2. budget (ada)")
    qtbot.waitUntil(lambda: stored(node_b, doc) == mine, timeout=WAIT_MS)
    result(node_b.facade.run(on_document(doc, lambda docs, d: docs.write(d, mine.replace("3. hiring", "3. hiring (bob)")))))
    theirs = mine.replace("3. hiring", "3. hiring (bob)")
    settle(qtbot, [ada, window_b.document_pane], pair, doc)
    assert ada.editor.toPlainText() == theirs
    before = commits(node_a, doc)

    qtbot.keyClick(ada.editor, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    undone = NOTES.replace("3. hiring", "3. hiring (bob)")
    qtbot.waitUntil(lambda: stored(node_a, doc) == undone, timeout=WAIT_MS)
    settle(qtbot, [ada, window_b.document_pane], pair, doc)
    assert ada.editor.toPlainText() == undone == window_b.document_pane.editor.toPlainText()
    assert len(commits(node_a, doc)) == len(before) + 1  # the undo, and nothing else
