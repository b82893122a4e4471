"""Moderation in the window, over real Nodes on 127.0.0.1: ada (the workspace's creator, so
an admin, who moderates every channel) hides bob's message from its menu and still sees it,
dimmed under "Hidden by a moderator", while carol (a plain member) no longer does; ada shows
it again from its row's menu or from the moderation log, blocks bob and unblocks him; bob,
who moderates nothing, is offered no Hide. And how a log entry reads (Qt-free)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("pytestqt")
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QRect, Qt  # noqa: E402
from PySide6.QtGui import QPalette  # noqa: E402
from PySide6.QtWidgets import QMessageBox  # noqa: E402

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.records import Message, ModAction  # noqa: E402
from tests.support import join  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts  # noqa: E402
from ui import _rows, models, theme  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.moderation import ModerationLogDialog, ReasonDialog, describe  # noqa: E402

CHANNEL = "general"
ADA, BOB, POST = bytes([1]) * 32, bytes([2]) * 32, bytes([3]) * 32


@pytest.fixture
def carol(tmp_path, pair):
    """A third member, carol, who moderates nothing, syncing with ada."""
    paths = Paths.resolve(tmp_path / "c", "default")
    join(pair[0].paths, paths, nick="carol")
    node = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                peers=[("127.0.0.1", pair[0].port)]).start()
    yield node
    node.stop()


def shown(win) -> list[tuple[str, bool]]:
    """The rows of the window's message list: each one's text, and whether it is marked
    hidden; by text (two posts of one millisecond are in the order of their ids)."""
    return sorted((m.text, m.hidden) for m in win.messages.messages)


def row_of(win, text: str) -> int:
    return next(n for n, m in enumerate(win.messages.messages) if m.text.startswith(text))


def ink(win, rect: QRect) -> int:
    """How far the most inked pixel of `rect` in the message list is from the list's Base."""
    view = win.message_view
    image = view.viewport().grab().toImage()
    base = view.palette().color(QPalette.ColorRole.Base)
    most = 0
    for y in range(rect.top(), rect.bottom() + 1):
        for x in range(rect.left(), min(rect.right(), image.width() - 1) + 1):
            pixel = image.pixelColor(x, y)
            most = max(most, abs(pixel.red() - base.red()) + abs(pixel.green() - base.green())
                       + abs(pixel.blue() - base.blue()))
    return most


def menu_texts(menu) -> list[str]:
    return [action.text() for action in menu.actions() if not action.isSeparator()]


def menu_of(win, text: str):
    return win.message_view.context_menu(win.messages.index(row_of(win, text)))


def trigger(menu, text: str) -> None:
    next(a for a in menu.actions() if a.text() == text).trigger()


def give_reason(qtbot, parent, reason: str) -> None:
    dialog = parent.findChild(ReasonDialog, "moderationReason")
    assert dialog is not None and dialog.isVisible()
    assert not dialog.ok.isEnabled()  # no reason yet
    qtbot.keyClicks(dialog.reason, reason)
    assert dialog.ok.isEnabled()
    dialog.ok.click()


def test_a_moderator_hides_a_message_and_shows_it_again_from_the_log(qtbot, window, pair):
    ada, bob = pair
    result(ada.facade.run(lambda ws: ws.post(CHANNEL, "welcome, everyone").id))
    spam = result(bob.facade.run(lambda ws: ws.post(CHANNEL, "cheap watches here").id))
    qtbot.waitUntil(lambda: shown(window) == [("cheap watches here", False),
                                              ("welcome, everyone", False)], timeout=WAIT_MS)
    moderation = window.actions.moderation
    qtbot.waitUntil(lambda: moderation.moderates(CHANNEL), timeout=WAIT_MS)  # an admin
    assert menu_texts(menu_of(window, "cheap")) == [
        "Copy text", "Reply in thread", "Add reaction…", "Hide for everyone…", "Block bob…",
        "Moderation log…", "Delete"]
    assert "Hide for everyone…" not in menu_texts(menu_of(window, "welcome"))  # mine

    trigger(menu_of(window, "cheap"), "Hide for everyone…")
    give_reason(qtbot, window, "advertising")
    qtbot.waitUntil(lambda: shown(window) == [("cheap watches here", True),
                                              ("welcome, everyone", False)], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: [m.text for m in result(bob.facade.run(lambda ws: ws.read(CHANNEL)))] ==
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
    qtbot.waitUntil(lambda: shown(window) == [("cheap watches here", False),
                                              ("welcome, everyone", False)], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: log.entries.count() == 2, timeout=WAIT_MS)
    assert "ada showed again a post" in log.entries.item(1).text()
    assert result(ada.facade.run(lambda ws: ws.moderation.log(CHANNEL))).actions[-1].target == spam
    log.close()


def test_a_moderator_sees_a_hidden_post_marked_and_shows_it_again_from_its_row(
        qtbot, window, pair, carol):
    ada, bob = pair
    carols = MainWindow(carol)
    qtbot.addWidget(carols)
    carols.show()
    try:
        result(ada.facade.run(lambda ws: ws.post(CHANNEL, "welcome, everyone").id))
        posted = result(bob.facade.run(lambda ws: ws.post(CHANNEL, "cheap watches here").id))
        both = [("cheap watches here", False), ("welcome, everyone", False)]
        view, model = window.message_view, window.messages
        qtbot.waitUntil(lambda: shown(window) == both and shown(carols) == both,
                        timeout=WAIT_MS)
        result(ada.facade.run(lambda ws: ws.conversation.react(posted, "👍").id))
        qtbot.waitUntil(lambda: bool(model.messages[row_of(window, "cheap")].reactions),
                        timeout=WAIT_MS)
        qtbot.waitUntil(lambda: window.actions.moderation.moderates(CHANNEL)
                        and view.is_admin(), timeout=WAIT_MS)
        spam = model.index(row_of(window, "cheap"))
        plain_ink = ink(window, view.delegate.parts(spam).body)
        chip = view.delegate.parts(spam).chips[0][0].center()
        assert view.delegate.target_at(spam, chip) == ("reaction", "👍")

        trigger(menu_of(window, "cheap"), "Hide for everyone…")
        give_reason(qtbot, window, "advertising")
        # Ada, an admin, still sees it, marked; carol, who moderates nothing, does not.
        qtbot.waitUntil(lambda: shown(window) == [("cheap watches here", True),
                                                  ("welcome, everyone", False)],
                        timeout=WAIT_MS)
        qtbot.waitUntil(lambda: shown(carols) == [("welcome, everyone", False)],
                        timeout=WAIT_MS)
        spam, welcome = model.index(row_of(window, "cheap")), model.index(row_of(window, "wel"))
        assert spam.data(models.HiddenRole) and not welcome.data(models.HiddenRole)
        assert "\nHidden by a moderator\ncheap watches here" in spam.data()  # read aloud
        assert "only the channel's moderators see it" in spam.data(Qt.ItemDataRole.ToolTipRole)
        qtbot.waitUntil(lambda: view.delegate.parts(spam) is not None
                        and view.delegate.parts(spam).hidden is not None, timeout=WAIT_MS)
        # Drawn: the note above the text, and the text dimmed, in light and dark palettes.
        palette = view.palette()
        for dark in (False, True):
            view.setPalette(theme.palette(dark))
            parts, mine = view.delegate.parts(spam), view.delegate.parts(welcome)
            assert parts.hidden.bottom() < parts.body.top()
            assert parts.hidden.left() == parts.body.left()
            assert ink(window, parts.hidden) > 60  # the note is drawn
            assert ink(window, parts.body) < 0.75 * ink(window, mine.body)
        view.setPalette(palette)
        assert view.delegate.parts(welcome).hidden is None
        # Its reactions do not act on a click (only links would), and its menu is for
        # reviewing it.
        assert view.delegate.target_at(spam, view.delegate.parts(spam).chips[0][0].center()) \
            is None
        assert menu_texts(view.context_menu(spam)) == [
            "Copy text", "Show again…", "Block bob…", "Moderation log…", "Delete"]

        trigger(view.context_menu(spam), "Show again…")
        give_reason(qtbot, window, "a joke after all")
        qtbot.waitUntil(lambda: shown(window) == both and shown(carols) == both,
                        timeout=WAIT_MS)
        spam = model.index(row_of(window, "cheap"))
        assert not spam.data(models.HiddenRole)
        assert "Hidden by a moderator" not in spam.data()
        qtbot.waitUntil(lambda: view.delegate.parts(spam) is not None
                        and view.delegate.parts(spam).hidden is None, timeout=WAIT_MS)
        assert ink(window, view.delegate.parts(spam).body) == plain_ink
        assert view.delegate.target_at(spam, view.delegate.parts(spam).chips[0][0].center()) \
            == ("reaction", "👍")
        assert "Hide for everyone…" in menu_texts(view.context_menu(spam))
    finally:
        carols.close()


def test_blocking_hides_everything_of_theirs_until_unblocked(qtbot, window, pair):
    ada, bob = pair
    result(bob.facade.run(lambda ws: ws.post(CHANNEL, "first from bob").id))
    result(ada.facade.run(lambda ws: ws.post(CHANNEL, "from ada").id))
    qtbot.waitUntil(lambda: shown(window) == [("first from bob", False), ("from ada", False)],
                    timeout=WAIT_MS)
    trigger(menu_of(window, "first from bob"), "Block bob…")
    box = window.findChild(QMessageBox, "confirmBlock")
    assert box is not None and box.text() == "Block bob?"
    assert "this computer only" in box.informativeText()
    next(b for b in box.buttons() if b.text() == "Block").click()
    qtbot.waitUntil(lambda: texts(window) == ["from ada"], timeout=WAIT_MS)
    assert [b.key for b in result(ada.facade.run(lambda ws: ws.moderation.blocked()))] == [bob.key]

    log = window.actions.moderation.show_log(CHANNEL)
    qtbot.waitUntil(lambda: log.blocked.count() == 1 and "bob" in log.blocked.item(0).text(),
                    timeout=WAIT_MS)
    log.blocked.setCurrentRow(0)
    log.unblock.click()
    qtbot.waitUntil(lambda: shown(window) == [("first from bob", False), ("from ada", False)],
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: log.blocked.count() == 0, timeout=WAIT_MS)
    log.close()


def test_a_member_is_offered_no_hide_and_the_member_pane_has_its_entries(qtbot, window, pair):
    ada, bob = pair
    result(ada.facade.run(lambda ws: ws.post(CHANNEL, "from ada").id))
    result(bob.facade.run(lambda ws: ws.post(CHANNEL, "from bob").id))
    bobs = MainWindow(bob)
    qtbot.addWidget(bobs)
    bobs.show()
    try:
        qtbot.waitUntil(lambda: shown(bobs) == [("from ada", False), ("from bob", False)],
                        timeout=WAIT_MS)
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
    qtbot.waitUntil(lambda: shown(window) == [("from ada", False), ("from bob", True)],
                    timeout=WAIT_MS)  # ada moderates: she still sees them, marked
    assert [m.text for m in result(bob.facade.run(lambda ws: ws.read(CHANNEL)))] == ["from ada"]


def test_a_hidden_post_offers_no_conversation():
    post = Message(POST, CHANNEL, BOB, "bob", 0, "cheap watches")
    assert _rows.converses(post)
    assert not _rows.converses(Message(POST, CHANNEL, BOB, "bob", 0, "cheap", hidden=True))


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
