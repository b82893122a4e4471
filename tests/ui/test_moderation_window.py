"""Moderation in the window, over two real Nodes on 127.0.0.1: ada (the workspace's creator, so
an admin, who moderates every channel) hides bob's message from its menu, reads the moderation
log and shows it again from there, blocks bob and unblocks him; bob, who moderates nothing, is
offered no Hide. And how a log entry reads (Qt-free)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pytestqt")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QMenu, QMessageBox  # noqa: E402

from app.records import ModAction  # noqa: E402
from tests.ui.test_window import WAIT_MS, pair, result, texts, window  # noqa: E402, F401
from ui.main_window import MainWindow  # noqa: E402
from ui.moderation import ModerationLogDialog, ReasonDialog, describe  # noqa: E402

CHANNEL = "general"
ADA, BOB, POST = bytes([1]) * 32, bytes([2]) * 32, bytes([3]) * 32


def menu_texts(menu) -> list[str]:
    return [action.text() for action in menu.actions() if not action.isSeparator()]


def menu_of(win, text: str):
    model = win.messages
    row = next(n for n, m in enumerate(model.messages) if m.text.startswith(text))
    return win.message_view.context_menu(model.index(row))


def trigger(menu, text: str) -> None:
    next(a for a in menu.actions() if a.text() == text).trigger()


def give_reason(qtbot, parent, reason: str) -> None:
    dialog = parent.findChild(ReasonDialog, "moderationReason")
    assert dialog is not None and dialog.isVisible()
    assert not dialog.ok.isEnabled()  # no reason yet
    qtbot.keyClicks(dialog.reason, reason)
    assert dialog.ok.isEnabled()
    dialog.ok.click()


def test_a_moderator_hides_a_message_and_shows_it_again_from_the_log(qtbot, window, pair):  # noqa: F811
    ada, bob = pair
    result(ada.facade.post(CHANNEL, "welcome, everyone"))
    spam = result(bob.facade.post(CHANNEL, "cheap watches here"))
    qtbot.waitUntil(lambda: texts(window) == ["welcome, everyone", "cheap watches here"],
                    timeout=WAIT_MS)
    moderation = window.actions.moderation
    qtbot.waitUntil(lambda: moderation.moderates(CHANNEL), timeout=WAIT_MS)  # an admin
    assert menu_texts(menu_of(window, "cheap")) == [
        "Copy text", "Reply in thread", "Add reaction…", "Hide for everyone…", "Block bob…",
        "Moderation log…", "Delete"]
    assert "Hide for everyone…" not in menu_texts(menu_of(window, "welcome"))  # mine

    trigger(menu_of(window, "cheap"), "Hide for everyone…")
    give_reason(qtbot, window, "advertising")
    qtbot.waitUntil(lambda: texts(window) == ["welcome, everyone"], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: [m.text for m in result(bob.facade.read(CHANNEL))] ==
                    ["welcome, everyone"], timeout=WAIT_MS)  # hidden on bob's computer too

    trigger(menu_of(window, "welcome"), "Moderation log…")
    log = window.findChild(ModerationLogDialog, "moderationLog")
    assert log is not None and log.isVisible()
    qtbot.waitUntil(lambda: log.entries.count() == 1, timeout=WAIT_MS)
    entry = log.entries.item(0).text()
    assert "ada hid a post “cheap watches here” in #general: advertising" in entry
    assert not log.show_again.isEnabled()  # nothing chosen yet
    log.entries.setCurrentRow(0)
    qtbot.waitUntil(log.show_again.isEnabled, timeout=WAIT_MS)
    log.show_again.click()
    give_reason(qtbot, log, "a joke after all")
    qtbot.waitUntil(lambda: texts(window) == ["welcome, everyone", "cheap watches here"],
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: log.entries.count() == 2, timeout=WAIT_MS)
    assert "ada showed again a post" in log.entries.item(1).text()
    assert result(ada.facade.mod_log(CHANNEL)).actions[-1].target == spam
    log.close()

    # A hidden message, as a moderator's read marks it, offers Show again instead of Hide.
    result(ada.facade.mod_hide(CHANNEL, spam, "advertising after all"))
    qtbot.waitUntil(lambda: texts(window) == ["welcome, everyone"], timeout=WAIT_MS)
    [hidden] = [m for m in result(ada.facade.read(CHANNEL, hidden=True)) if m.hidden]
    menu = QMenu()
    moderation.add_to_menu(menu, hidden, "bob")
    assert menu_texts(menu) == ["Show again…", "Block bob…", "Moderation log…"]
    trigger(menu, "Show again…")
    give_reason(qtbot, window, "fine")
    qtbot.waitUntil(lambda: texts(window) == ["welcome, everyone", "cheap watches here"],
                    timeout=WAIT_MS)


def test_blocking_hides_everything_of_theirs_until_unblocked(qtbot, window, pair):  # noqa: F811
    ada, bob = pair
    result(bob.facade.post(CHANNEL, "first from bob"))
    result(ada.facade.post(CHANNEL, "from ada"))
    qtbot.waitUntil(lambda: texts(window) == ["first from bob", "from ada"], timeout=WAIT_MS)
    trigger(menu_of(window, "first from bob"), "Block bob…")
    box = window.findChild(QMessageBox, "confirmBlock")
    assert box is not None and box.text() == "Block bob?"
    assert "this computer only" in box.informativeText()
    next(b for b in box.buttons() if b.text() == "Block").click()
    qtbot.waitUntil(lambda: texts(window) == ["from ada"], timeout=WAIT_MS)
    assert [b.key for b in result(ada.facade.blocked())] == [bob.key]

    log = window.actions.moderation.show_log(CHANNEL)
    qtbot.waitUntil(lambda: log.blocked.count() == 1 and "bob" in log.blocked.item(0).text(),
                    timeout=WAIT_MS)
    log.blocked.setCurrentRow(0)
    log.unblock.click()
    qtbot.waitUntil(lambda: texts(window) == ["first from bob", "from ada"], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: log.blocked.count() == 0, timeout=WAIT_MS)
    log.close()


def test_a_member_is_offered_no_hide_and_the_member_pane_has_its_entries(qtbot, window, pair):  # noqa: F811
    ada, bob = pair
    result(ada.facade.post(CHANNEL, "from ada"))
    result(bob.facade.post(CHANNEL, "from bob"))
    bobs = MainWindow(bob)
    qtbot.addWidget(bobs)
    bobs.show()
    try:
        qtbot.waitUntil(lambda: texts(bobs) == ["from ada", "from bob"], timeout=WAIT_MS)
        qtbot.waitUntil(lambda: CHANNEL in bobs.actions.moderation._moderated, timeout=WAIT_MS)
        assert menu_texts(menu_of(bobs, "from ada")) == [
            "Copy text", "Reply in thread", "Add reaction…", "Block ada…", "Moderation log…"]
    finally:
        bobs.close()

    # The member pane's menu, given ModerationActions' entries (the window's wiring).
    moderation = window.actions.moderation
    moderation.watch_members(window.member_pane, lambda: window.channel)
    qtbot.waitUntil(lambda: window.member_list.count() == 2 and moderation.moderates(CHANNEL),
                    timeout=WAIT_MS)
    items = {window.member_list.item(n).data(0x0100): window.member_list.item(n)
             for n in range(window.member_list.count())}
    assert window.member_pane.context_menu(items[ada.key]) is None  # nothing for myself
    menu = window.member_pane.context_menu(items[bob.key])
    assert menu_texts(menu) == ["Hide bob's posts in #general…", "Block bob…"]
    trigger(menu, "Hide bob's posts in #general…")
    give_reason(qtbot, window, "flooding")
    qtbot.waitUntil(lambda: texts(window) == ["from ada"], timeout=WAIT_MS)


def test_a_log_entry_reads_as_a_sentence():
    names = {ADA: "ada", BOB: "bob"}
    hide = ModAction(POST, "general", "hide", ADA, 0, POST, "spam", True, True)
    assert describe(hide, names, {POST: "buy\nnow " + "x" * 80}) == \
        f"ada hid a post “buy now {'x' * 51}…” in #general: spam"
    member = ModAction(POST, "general", "unhide", BOB, 0, ADA, "calm now", False, False)
    assert describe(member, names) == \
        "bob showed again ada's posts in #general: calm now  (no longer counts)"
    role = ModAction(POST, "dev", "moderator", ADA, 0, bytes(32), "", True, False)
    assert describe(role, names) == "ada made 00000000 a moderator of #dev"
    gone = ModAction(POST, "dev", "none", ADA, 0, BOB, "left", True, False)
    assert describe(gone, names) == "ada took bob's moderator role in #dev away: left"
