"""Who may read and change a document, as the pane decides it (no display needed) and as its
widgets show it: the visibility badge, Share, Editors…, the creator's visibility toggle, a
reader's Ask to edit, open requests with Accept, and the note someone with no key gets."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QLabel, QPushButton  # noqa: E402

from app.records import BranchInfo, DocumentView, EditRequest  # noqa: E402
from ui.doc_sharing import (  # noqa: E402
    EditorsDialog,
    RequestsBar,
    SharingBar,
    VisibilityBadge,
    editor_rows,
    resolve_member,
    sharing_state,
)

ADA, BOB, CY, EVE = b"\xaa" * 32, b"\xbb" * 32, b"\xcc" * 32, b"\xee" * 32
MAIN = "01" * 32
NAMES = {ADA: "ada", BOB: "bob", CY: "cy"}


def _view(*, visibility="workspace", editors=(ADA,), requests=(), asked=False,
          unreadable=None, readable=True) -> DocumentView:
    branches = [BranchInfo(MAIN, "main", None, (), (), True, readable)]
    return DocumentView("doc", "Plan", "main", branches, [], "", [], {}, NAMES,
                        unreadable=unreadable, writable=False, why_readonly=None,
                        visibility=visibility, editors=tuple(editors), creator=ADA,
                        requests=tuple(requests), asked=asked)


BOB_ASKS = EditRequest("r1", BOB, "bob", 1)
EVE_ASKS = EditRequest("r2", EVE, "eve", 2)  # a nickname the workspace does not know yet


def test_the_creator_shares_manages_editors_toggles_visibility_and_sees_requests():
    state = sharing_state(_view(requests=(BOB_ASKS, EVE_ASKS)), ADA)
    assert state.role == "creator"
    assert (state.badge, state.share, state.editors, state.ask) == ("Workspace", True, True,
                                                                    None)
    assert state.toggle == "Make private"
    assert [r.label for r in state.requests] == ["bob asks to edit", "eve asks to edit"]
    assert [r.key for r in state.requests] == [BOB, EVE]
    assert sharing_state(_view(visibility="private"), ADA).toggle == \
        "Make visible to the workspace"
    assert sharing_state(_view(visibility="private"), ADA).badge == "Private"


def test_another_editor_shares_and_accepts_but_does_not_toggle_visibility():
    state = sharing_state(_view(editors=(ADA, CY), requests=(BOB_ASKS,)), CY)
    assert (state.role, state.share, state.editors, state.toggle, state.ask) == (
        "editor", True, True, None, None)
    assert [r.label for r in state.requests] == ["bob asks to edit"]


def test_a_reader_asks_to_edit_once_and_sees_no_requests_or_sharing():
    state = sharing_state(_view(requests=(BOB_ASKS,)), BOB)
    assert (state.role, state.share, state.editors, state.toggle) == ("reader", False, False,
                                                                      None)
    assert (state.ask, state.asked, state.requests, state.locked_note) == (
        "Ask to edit", False, (), None)
    asked = sharing_state(_view(asked=True), BOB)
    assert (asked.ask, asked.asked) == ("Asked to edit", True)


def test_someone_with_no_key_is_told_why_and_what_to_do():
    private = sharing_state(_view(visibility="private", unreadable="Only its editors can "
                                  "read it.", readable=False), BOB)
    assert (private.role, private.share, private.editors, private.ask) == (
        "locked", False, False, "Ask to edit")
    assert private.badge == "Private"
    assert private.locked_note.startswith("This document is private: only its editors, and "
                                          "whoever they send a share link to, can read it.")
    assert "Open share link…" in private.locked_note
    workspace = sharing_state(_view(unreadable="no key yet", readable=False), BOB)
    assert workspace.locked_note.startswith("Every member can read this document once its "
                                            "key arrives from an editor")
    # An editor whose key has not arrived yet shares nothing it cannot read.
    assert not sharing_state(_view(unreadable="no key", readable=False), ADA).share


def test_a_person_is_named_by_nickname_or_key():
    assert resolve_member("Bob", NAMES) == BOB
    assert resolve_member(f" {CY.hex()} ", NAMES) == CY
    with pytest.raises(ValueError, match="No one here goes by “dan”"):
        resolve_member("dan", NAMES)
    with pytest.raises(ValueError, match="Several people go by “bob”"):
        resolve_member("bob", {**NAMES, EVE: "BOB"})


def test_editors_list_the_creator_first_and_mark_me():
    rows = editor_rows([CY, BOB, ADA], ADA, NAMES, BOB)
    assert [label for _, label in rows] == ["ada (creator)", "bob (you)", "cy"]


# The widgets ------------------------------------------------------------------------------------

def test_the_bar_shows_only_what_the_role_may_do(qtbot):
    bar = SharingBar()
    qtbot.addWidget(bar)
    bar.show()
    bar.show_state(sharing_state(_view(), ADA))
    assert bar.share.isVisible() and bar.editors.isVisible() and bar.toggle.isVisible()
    assert bar.toggle.text() == "Make private" and not bar.ask.isVisible()

    bar.show_state(sharing_state(_view(), BOB))
    assert not (bar.share.isVisible() or bar.editors.isVisible() or bar.toggle.isVisible())
    assert bar.ask.isVisible() and bar.ask.isEnabled() and bar.ask.text() == "Ask to edit"
    bar.show_state(sharing_state(_view(asked=True), BOB))
    assert bar.ask.text() == "Asked to edit" and not bar.ask.isEnabled()


def test_the_badge_shows_a_lock_when_private(qtbot):
    badge = VisibilityBadge()
    qtbot.addWidget(badge)
    badge.show()
    badge.show_visibility("Private", "tip")
    assert badge.text.text() == "Private" and badge.icon.isVisible()
    assert not badge.icon.pixmap().isNull()
    badge.show_visibility("Workspace", "tip")
    assert badge.text.text() == "Workspace" and not badge.icon.isVisible()


def test_a_request_is_accepted_in_one_click(qtbot):
    bar = RequestsBar()
    qtbot.addWidget(bar)
    bar.show_requests(sharing_state(_view(requests=(BOB_ASKS,)), ADA).requests)
    assert not bar.isHidden() and bar.labels() == ["bob asks to edit"]
    (accept,) = bar.findChildren(QPushButton, "acceptRequest")
    assert accept.text() == "Accept"
    with qtbot.waitSignal(bar.accepted, timeout=1000) as accepted:
        accept.click()
    assert accepted.args == [BOB] and not accept.isEnabled()
    bar.show_requests(())
    assert bar.isHidden()


def test_an_editor_who_is_not_the_creator_sees_requests_and_who_can_accept_them(qtbot):
    bar = RequestsBar()
    qtbot.addWidget(bar)
    bar.show_requests(sharing_state(_view(editors=(ADA, CY), requests=(BOB_ASKS,)), CY).requests)
    assert bar.labels() == ["bob asks to edit"]
    assert not bar.findChildren(QPushButton, "acceptRequest")  # it would be refused
    (who,) = bar.findChildren(QLabel, "editRequestAccepter")
    assert who.text() == "ada, its creator, can accept"


def test_the_editors_dialog_names_people_and_says_what_it_cannot_resolve(qtbot):
    dialog = EditorsDialog()
    qtbot.addWidget(dialog)
    dialog.show_editors(_view(editors=(ADA, CY)), ADA)
    dialog.show()
    assert [dialog.list.item(i).text() for i in range(dialog.list.count())] == [
        "ada (creator, you)", "cy"]
    dialog.entry.setText("dan")
    with qtbot.assertNotEmitted(dialog.addRequested):
        dialog.add.click()
    assert dialog.error.isVisible() and dialog.error.text().startswith("No one here goes by")
    dialog.entry.setText("bob")
    with qtbot.waitSignal(dialog.addRequested, timeout=1000) as added:
        dialog.add.click()
    assert added.args == [BOB] and not dialog.error.isVisible()
    dialog.list.setCurrentRow(1)
    with qtbot.waitSignal(dialog.removeRequested, timeout=1000) as removed:
        dialog.remove.click()
    assert removed.args == [CY]
