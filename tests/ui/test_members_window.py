"""The window's member directory and invite dialog over real Nodes, offscreen: who admitted
whom, an admin removing a member (and everyone's dialog listing them under Removed), making,
copying and revoking invites, personal codes, and that no window makes an invite just by being
shown."""

from __future__ import annotations

import os
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QMessageBox, QPushButton  # noqa: E402

from app import joining, sharing  # noqa: E402
from app.invite import Invite  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.records import MemberRecord, RemovalRecord  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.invite_dialog import BAD_KEY, InviteDialog  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.members_dialog import MembersDialog, RemoveDialog, removable, removal  # noqa: E402

DAY_MS = 24 * 3600 * 1000


def names_and_how(dialog: MembersDialog) -> list[str]:
    """Each row without its date (the rows end with ", today" or a day)."""
    return [row.rsplit(", ", 1)[0] for row in dialog.rows()]


def click_revoke(dialog: InviteDialog, row: int, answer: str) -> None:
    dialog.revoke_button(row).click()
    box = dialog.findChild(QMessageBox, "confirmRevoke")
    assert box is not None and box.text() == "Revoke this invite?"
    assert "admits no one from now on" in box.informativeText()
    next(b for b in box.buttons() if b.text() == answer).click()


def ask_to_remove(dialog: MembersDialog, key: bytes) -> RemoveDialog:
    """Click the row's Remove…: the confirmation it opens (window-modal, never blocking)."""
    dialog.remove_button(key).click()
    (box,) = [b for b in dialog.findChildren(RemoveDialog, "confirmRemove") if b.isVisible()]
    return box


def remove_buttons(dialog: MembersDialog) -> list[QPushButton]:
    return [b for b in dialog.findChildren(QPushButton, "removeMember") if b.isVisible()]


def invite_dialogs(win: MainWindow) -> list[InviteDialog]:
    return [d for d in win.findChildren(InviteDialog) if d.isVisible()]


def test_the_member_directory_says_who_admitted_whom_and_follows_new_members(
        qtbot, window, pair, tmp_path):
    node_a, node_b = pair
    dialog = window.show_members()
    assert dialog.windowTitle() == "Members"
    expected = ["ada (you) · Admin · created the workspace",
                "bob · admitted by ada with a personal code"]
    qtbot.waitUntil(lambda: names_and_how(dialog) == expected, timeout=WAIT_MS)
    # True to the records every computer holds: bob came with a code ada made for his key.
    ada, bob = result(node_a.facade.run(lambda ws: ws.members.all()))
    assert (ada.admitted_by, bob.admitted_by, bob.invite) == (None, node_a.key, None)
    assert ada.admin and not bob.admin and bob.key == node_b.key
    assert "2 members" in dialog.count.text()

    # ada makes a personal code for carol's key: carol is a member from then on, shown by her
    # key until her nickname arrives from her computer.
    carol = Paths.resolve(tmp_path / "c", "default")
    key = joining.identity_key(carol)
    code = result(node_a.facade.run(lambda ws: ws.members.invite_for(key)))
    qtbot.waitUntil(lambda: len(dialog.rows()) == 3, timeout=WAIT_MS)
    assert names_and_how(dialog)[2] == f"{key.hex()[:8]} · admitted by ada with a personal code"
    assert "3 members" in dialog.count.text()
    sharing.join_workspace(carol, code, nick="carol")
    node_c = Node(carol, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                  peers=[("127.0.0.1", node_a.port)]).start()
    try:
        qtbot.waitUntil(lambda: names_and_how(dialog)[2:]
                        == ["carol · admitted by ada with a personal code"], timeout=WAIT_MS)
    finally:
        node_c.stop()
    assert names_and_how(dialog)[:2] == expected

    # Invite people… opens the invite dialog.
    dialog.findChild(QPushButton, "invitePeople").click()
    assert len(invite_dialogs(window)) == 1


def test_an_admin_removes_a_member_and_every_dialog_lists_them_under_removed(
        qtbot, window, window_b, pair, node_c):
    node_a, node_b = pair
    adas, bobs = window.show_members(), window_b.show_members()
    three = ["ada · created the workspace", "bob · admitted by ada with a personal code",
             "carol · admitted by ada with a personal code"]
    for dialog, me in ((adas, 0), (bobs, 1)):
        expected = list(three)
        expected[me] = expected[me].replace(" · ", " (you) · ", 1)
        expected[0] = expected[0].replace(" · ", " · Admin · ", 1)
        qtbot.waitUntil(lambda d=dialog, e=expected: names_and_how(d) == e, timeout=WAIT_MS)
    assert adas.removed_rows() == [] and not adas.removed_list.isVisible()

    # Only ada, an admin, is offered Remove…, and never on her own row (she created the
    # workspace, and is herself); bob, a plain member, sees none at all.
    assert adas.admin and not bobs.admin
    assert adas.remove_button(node_a.key) is None
    assert [b.text() for b in (adas.remove_button(node_b.key), adas.remove_button(node_c.key))] \
        == ["Remove…", "Remove…"]
    assert len(remove_buttons(adas)) == 2 and remove_buttons(bobs) == []

    # The confirmation says what removing means; Cancel removes no one.
    box = ask_to_remove(adas, node_c.key)
    assert box.question.text() == "Remove carol from the workspace?"
    said = " ".join(box.explanation.text().split())
    for words in ("carol's computer will be refused from now on",
                  "What they wrote so far stays; anything they write from now on is shown to "
                  "no one", "moves to a new secret, which everyone else's computer receives",
                  "Invites carol made stop working", "This cannot be undone (you can invite "
                  "them again)"):
        assert words in said
    assert box.reason.maxLength() == 256 and box.reason.text() == ""
    box.cancel.click()
    assert not box.isVisible()
    assert len(result(node_a.facade.run(lambda ws: ws.members.all()))) == 3
    assert result(node_a.facade.run(lambda ws: ws.members.removed())) == []

    box = ask_to_remove(adas, node_c.key)
    qtbot.keyClicks(box.reason, "left the project")
    with qtbot.waitSignal(adas.removed, timeout=WAIT_MS):
        box.remove.click()
    # At once on ada's window: carol leaves the members and shows under Removed, with why.
    qtbot.waitUntil(lambda: len(adas.rows()) == 2, timeout=WAIT_MS)
    assert names_and_how(adas) == ["ada (you) · Admin · created the workspace",
                                   "bob · admitted by ada with a personal code"]
    assert adas.removed_rows() == ["carol · removed by ada, today: left the project"]
    assert adas.removed_list.isVisible() and adas.removed_label.text() == "<b>Removed</b> (1)"
    assert "2 members" in adas.count.text() and adas.error.text() == ""
    assert adas.remove_button(node_b.key) is not None

    # The library agrees, on ada's computer and, once it syncs, on bob's; so does his dialog.
    for node in (node_a, node_b):
        qtbot.waitUntil(lambda n=node: [r.key for r in result(n.facade.run(lambda ws: ws.members.removed()))]
                        == [node_c.key], timeout=WAIT_MS)
        (gone,) = result(node.facade.run(lambda ws: ws.members.removed()))
        assert (gone.by, gone.reason, gone.nick) == (node_a.key, "left the project", "carol")
        assert [m.key for m in result(node.facade.run(lambda ws: ws.members.all()))] \
            == [node_a.key, node_b.key]
    qtbot.waitUntil(lambda: bobs.removed_rows()
                    == ["carol · removed by ada, today: left the project"], timeout=WAIT_MS)
    assert names_and_how(bobs) == ["ada · Admin · created the workspace",
                                   "bob (you) · admitted by ada with a personal code"]
    assert "2 members" in bobs.count.text() and remove_buttons(bobs) == []


def test_the_librarys_refusal_to_remove_shows_in_the_dialog(
        qtbot, window, pair, node_c):
    node_a, _ = pair
    dialog = window.show_members()
    qtbot.waitUntil(lambda: names_and_how(dialog)[2:]
                    == ["carol · admitted by ada with a personal code"], timeout=WAIT_MS)
    box = ask_to_remove(dialog, node_c.key)
    # Meanwhile carol is removed another way (the command line, another window): a race.
    result(node_a.facade.remove_member(node_c.key, "spam"))
    qtbot.waitUntil(lambda: dialog.removed_rows() == ["carol · removed by ada, today: spam"],
                    timeout=WAIT_MS)
    assert box.isVisible()  # still asking
    box.remove.click()
    qtbot.waitUntil(lambda: dialog.error.isVisible(), timeout=WAIT_MS)
    assert dialog.error.text() == "Could not remove carol: they are removed already"
    assert [r.reason for r in result(node_a.facade.run(lambda ws: ws.members.removed()))] == ["spam"]
    assert len(dialog.rows()) == 2 and dialog.isVisible()


def test_remove_is_offered_to_admins_only_and_never_on_the_creator_and_a_removal_reads():
    ada, bob, carol = bytes([1]) * 32, bytes([2]) * 32, bytes([3]) * 32
    creator = MemberRecord(ada, 0, admin=True)
    admin = MemberRecord(bob, 0, admitted_by=ada, admin=True)
    member = MemberRecord(carol, 0, admitted_by=ada)
    assert [removable(m, bob, admin=True) for m in (creator, admin, member)] \
        == [False, False, True]  # not the creator, not myself
    assert not removable(member, bob, admin=False)
    names = {ada: "ada"}
    today = int(time.time() * 1000)
    gone = RemovalRecord(carol, bytes(32), ada, today, "")
    assert removal(gone, names) == "removed by ada, today"
    assert removal(RemovalRecord(carol, bytes(32), bob, today, "spam"), names) \
        == f"removed by {bob.hex()[:8]}, today: spam"


def test_the_invite_dialog_makes_a_code_that_admits_once_and_revokes(
        qtbot, window, pair, tmp_path):
    node_a, _ = pair
    dialog = window.show_invite()
    qtbot.waitUntil(lambda: dialog.empty.isVisible(), timeout=WAIT_MS)
    assert dialog.rows() == [] and not dialog.copy.isEnabled()

    # One person, for 24 hours.
    dialog.people.setValue(1)
    dialog.expiry.setCurrentIndex(dialog.expiry.findText("24 hours"))
    asked_at = time.time() * 1000
    with qtbot.waitSignal(dialog.created, timeout=WAIT_MS):
        dialog.create.click()
    code = dialog.code.text()
    invitation = Invite.decode(code)
    assert invitation.workspace == node_a.workspace_id and not invitation.personal
    assert "holds no secret" in dialog.note.text()
    qtbot.waitUntil(lambda: [r[:2] for r in dialog.rows()] == [("open", "used 0 of 1")],
                    timeout=WAIT_MS)
    assert dialog.rows()[0][3].startswith("you, ")
    (made,) = result(node_a.facade.run(lambda ws: ws.members.invites()))
    assert made.uses == 1 and made.creator == node_a.key
    assert asked_at + DAY_MS - 1000 <= made.expires_ms <= time.time() * 1000 + DAY_MS
    dialog.copy.click()
    assert QGuiApplication.clipboard().text() == code

    # carol proves the code to ada's computer, which admits her: the invite is used up.
    carol = Paths.resolve(tmp_path / "c", "default")
    sharing.join_workspace(carol, code, nick="carol", peers=[("127.0.0.1", node_a.port)],
                           mdns=False)
    qtbot.waitUntil(lambda: [r[:2] for r in dialog.rows()] == [("used up", "used 1 of 1")],
                    timeout=WAIT_MS)
    assert dialog.revoke_button(0) is None

    # Any number, never expiring: revoked after asking (Cancel first leaves it open).
    dialog.any_number.setChecked(True)
    assert not dialog.people.isEnabled()
    dialog.expiry.setCurrentIndex(dialog.expiry.findText("never"))
    with qtbot.waitSignal(dialog.created, timeout=WAIT_MS):
        dialog.create.click()
    assert dialog.code.text() != code
    qtbot.waitUntil(lambda: [r[:3] for r in dialog.rows()][:1]
                    == [("open", "used 0 (any number)", "never")], timeout=WAIT_MS)
    click_revoke(dialog, 0, "Cancel")
    assert [i.state(time.time() * 1000) for i in result(node_a.facade.run(lambda ws: ws.members.invites()))] \
        == ["open", "used up"]
    with qtbot.waitSignal(dialog.revoked, timeout=WAIT_MS):
        click_revoke(dialog, 0, "Revoke")
    qtbot.waitUntil(lambda: [r[0] for r in dialog.rows()] == ["revoked", "used up"],
                    timeout=WAIT_MS)
    assert dialog.revoke_button(0) is None and dialog.error.text() == ""
    assert [i.state(time.time() * 1000) for i in result(node_a.facade.run(lambda ws: ws.members.invites()))] \
        == ["revoked", "used up"]


def test_a_member_sees_others_invites_and_the_librarys_refusal_to_revoke_them(
        qtbot, window_b, pair, tmp_path):
    node_a, node_b = pair
    result(node_a.facade.run(lambda ws: ws.members.invite(uses=3, expires_ms=0)[0]))
    dialog = window_b.show_invite()
    qtbot.waitUntil(lambda: [r[:3] for r in dialog.rows()] == [("open", "used 0 of 3", "never")]
                    and dialog.rows()[0][3].startswith("ada, "), timeout=WAIT_MS)
    click_revoke(dialog, 0, "Revoke")
    qtbot.waitUntil(lambda: "only the invite's creator or an admin" in dialog.error.text(),
                    timeout=WAIT_MS)
    assert [i.state(time.time() * 1000) for i in result(node_b.facade.run(lambda ws: ws.members.invites()))] == ["open"]
    assert [r[0] for r in dialog.rows()] == ["open"]

    # A personal code for a key: a typo is refused before anything is made.
    dialog.key.setText("not a key")
    qtbot.keyClick(dialog.key, Qt.Key.Key_Return)
    assert dialog.error.text() == BAD_KEY
    carol = Paths.resolve(tmp_path / "c", "default")
    dialog.key.setText(joining.identity_key(carol).hex())
    with qtbot.waitSignal(dialog.created, timeout=WAIT_MS):
        qtbot.keyClick(dialog.key, Qt.Key.Key_Return)
    assert dialog.error.text() == ""
    assert len(result(node_b.facade.run(lambda ws: ws.members.invites()))) == 1  # Enter made no invite besides
    invitation = Invite.decode(dialog.code.text())
    assert invitation.personal and invitation.workspace == node_b.workspace_id
    assert "admits only the person" in dialog.note.text()
    # It admits carol with nobody online, and bob is the one who admitted her.
    sharing.join_workspace(carol, dialog.code.text(), nick="carol")
    members = window_b.show_members()
    qtbot.waitUntil(lambda: names_and_how(members)[2:]
                    == [f"{joining.identity_key(carol).hex()[:8]} · admitted by bob with a "
                        "personal code"], timeout=WAIT_MS)
    assert names_and_how(members)[1] == "bob (you) · admitted by ada with a personal code"


def test_settings_and_the_first_run_panel_make_no_invite_until_asked(
        qtbot, window, pair):
    node_a, _ = pair
    settings = window.show_settings()
    qtbot.waitUntil(lambda: settings.nick.text() == "ada", timeout=WAIT_MS)
    welcome = MainWindow(node_a, first_run=True)
    qtbot.addWidget(welcome)
    welcome.show()
    qtbot.waitUntil(lambda: welcome.first_run.nick.text() == "ada", timeout=WAIT_MS)

    # Each way to the invite dialog opens it, and none makes an invite.
    settings.findChild(QPushButton, "openInvite").click()
    window.statusBar().findChild(QPushButton, "openInvite").click()
    window.member_pane.findChild(QPushButton, "invitePeople").click()
    welcome.first_run.findChild(QPushButton, "firstRunInvite").click()
    settings.findChild(QPushButton, "openMembers").click()
    window.statusBar().findChild(QPushButton, "openMembers").click()
    assert len(invite_dialogs(window)) == 3 and len(invite_dialogs(welcome)) == 1
    members = [d for d in window.findChildren(MembersDialog) if d.isVisible()]
    assert len(members) == 2
    for dialog in invite_dialogs(window) + invite_dialogs(welcome):
        qtbot.waitUntil(lambda d=dialog: d.empty.isVisible(), timeout=WAIT_MS)
        assert dialog.code.text() == ""
    for dialog in members:
        qtbot.waitUntil(lambda d=dialog: len(d.rows()) == 2, timeout=WAIT_MS)
    assert result(node_a.facade.run(lambda ws: ws.members.invites())) == []
    welcome.close()
