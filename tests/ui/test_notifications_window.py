"""The window's notifications over a real session D-Bus with the test's notification service
(tests/notify_support.py): what bob posts reaches ada's Node, her window raises it there, and
a click on it (ActionInvoked, as the desktop sends) opens the message. Levels set from the
sidebar's menus change the badges, the title and the tray's count as one; the Settings
dialog's Notifications page says how notifications are shown and sets the rest."""

from __future__ import annotations

from PySide6.QtWidgets import QCheckBox, QLabel, QLineEdit, QWidget

from app import notifying
from app.notify_rules import NotifyError
from tests.notify_support import notification_service, session_bus  # noqa: F401
from tests.support import node_call, node_post
from tests.ui.support import WAIT_MS, result
from ui.models import MessageRole


def _away(qtbot, window) -> None:
    """Another window is active: ada is not reading what arrives."""
    elsewhere = QWidget()
    qtbot.addWidget(elsewhere)
    elsewhere.show()
    elsewhere.activateWindow()
    qtbot.waitUntil(lambda: not window.isActiveWindow(), timeout=WAIT_MS)


def _calls(qtbot, service, count: int) -> list:
    """The service's calls once there are `count` (the GUI thread runs meanwhile)."""
    qtbot.waitUntil(lambda: len(service.calls) >= count, timeout=WAIT_MS)
    return service.calls


def _desktop(qtbot, window) -> None:
    qtbot.waitUntil(lambda: window.notifications.route == "desktop", timeout=WAIT_MS)


def test_a_click_on_a_notification_opens_the_message(qtbot, notification_service,  # noqa: F811
                                                     pair, window):
    _desktop(qtbot, window)
    node_call(pair[1], lambda: pair[1].workspace.create_channel("design", public=True))
    node_post(pair[1], "design", "first")
    qtbot.waitUntil(lambda: "design" in [c.name for c in window.channels.channels],
                    timeout=WAIT_MS)
    _away(qtbot, window)
    with qtbot.waitSignal(window.notifications.delivered, timeout=WAIT_MS):
        posted = node_post(pair[1], "design", "ada, the mock-ups are in")
    notified, = _calls(qtbot, notification_service, 1)
    assert (notified.summary, notified.body) == ("bob mentioned you in #design",
                                                 "ada, the mock-ups are in")
    assert window.channel == "general"
    notification_service.click(notified)
    qtbot.waitUntil(lambda: window.channel == "design" and window.message_view.currentIndex()
                    .data(MessageRole) is not None, timeout=WAIT_MS)
    assert window.message_view.currentIndex().data(MessageRole).id == posted


def test_a_click_on_a_reply_opens_its_thread(qtbot, notification_service, pair, window):  # noqa: F811
    _desktop(qtbot, window)
    first = node_post(pair[0], "general", "the plan for friday")
    _away(qtbot, window)
    window.show_channel("nowhere")
    with qtbot.waitSignal(window.notifications.delivered, timeout=WAIT_MS):
        node_call(pair[1], lambda: pair[1].workspace.conversation.reply(first, "ada: agreed"))
    notified, = _calls(qtbot, notification_service, 1)
    assert notified.summary == "bob mentioned you in #general"
    notification_service.click(notified)
    qtbot.waitUntil(lambda: window.channel == "general" and not window.thread_pane.isHidden()
                    and window.thread_pane.root == first, timeout=WAIT_MS)


def test_a_direct_message_notifies_and_a_click_opens_it(qtbot, notification_service,  # noqa: F811
                                                        pair, window):
    _desktop(qtbot, window)
    _away(qtbot, window)
    ada = pair[0].key
    with qtbot.waitSignal(window.notifications.delivered, timeout=WAIT_MS):
        node_call(pair[1], lambda: pair[1].workspace.private.direct_message(ada, "psst, lunch?"))
    notified, = _calls(qtbot, notification_service, 1)
    assert (notified.summary, notified.body) == ("bob (direct message)", "psst, lunch?")
    notification_service.click(notified)
    qtbot.waitUntil(lambda: window.private.current is not None and window.private.current.dm,
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.private.view.currentIndex().isValid(), timeout=WAIT_MS)
    assert window.private.view.currentIndex().data(MessageRole).text == "psst, lunch?"


def test_muted_from_the_menu_the_badges_title_and_tray_count_as_one(qtbot, pair, window):
    node_call(pair[1], lambda: pair[1].workspace.create_channel("random", public=True))
    node_post(pair[1], "random", "one")
    node_post(pair[1], "random", "two")
    qtbot.waitUntil(lambda: window.channels.unread.get("random") == (2, False),
                    timeout=WAIT_MS)
    assert window.windowTitle().startswith("(2) ")
    menu = window.channel_menu("random").findChild(QWidget, "notificationsMenu")
    mute = next(a for a in menu.actions() if a.text() == "Nothing (mute)")
    mute.trigger()
    qtbot.waitUntil(lambda: window.channels.unread.get("random") == (0, False), timeout=WAIT_MS)
    assert not window.windowTitle().startswith("(")
    row = next(r for r in range(window.channels.rowCount())
               if window.channels.index(r).data() .startswith("# random"))
    assert window.channels.index(row).data() == "# random"
    node_post(pair[1], "random", "ada: this one is for you")
    qtbot.waitUntil(lambda: window.channels.index(row).data() == "# random  (@)",
                    timeout=WAIT_MS)
    assert not window.windowTitle().startswith("(")
    if window.notifications.tray is not None:
        assert window.notifications.tray.toolTip() == "Hearth"
    listed = result(pair[0].facade.run(lambda ws: notifying.level_of(ws, "random")))
    assert listed.level == "none" and listed.own


def test_the_settings_page_says_how_and_sets_keywords(qtbot, notification_service,  # noqa: F811
                                                      pair, window):
    _desktop(qtbot, window)
    dialog = window.show_settings()
    page = dialog.findChild(QWidget, "settingsNotifications")
    assert page is not None and dialog.pages.indexOf(page) >= 0
    route = page.findChild(QLabel, "notifyRoute")
    qtbot.waitUntil(lambda: "desktop's notification service" in route.text(), timeout=WAIT_MS)
    show_text = page.findChild(QCheckBox, "notifyShowText")
    qtbot.waitUntil(lambda: show_text.receivers("2toggled(bool)") > 0, timeout=WAIT_MS)
    keywords = page.findChild(QLineEdit, "notifyKeywords")
    keywords.setText("release, On call")
    with qtbot.waitSignal(page.saved, timeout=WAIT_MS):
        keywords.editingFinished.emit()
    held = result(pair[0].facade.run(notifying.settings))
    assert held.keywords == ("release", "On call")
    _away(qtbot, window)
    node_post(pair[1], "general", "the release is out")
    notified, = _calls(qtbot, notification_service, 1)
    assert notified.summary == "bob in #general"
    with qtbot.waitSignal(page.saved, timeout=WAIT_MS):
        show_text.setChecked(False)
    assert not result(pair[0].facade.run(notifying.settings)).show_text


def test_no_service_falls_back_and_says_so(qtbot, session_bus, pair, window):  # noqa: F811
    qtbot.waitUntil(lambda: window.notifications.route in ("tray", "status"), timeout=WAIT_MS)
    dialog = window.show_settings()
    route = dialog.findChild(QLabel, "notifyRoute")
    qtbot.waitUntil(lambda: "No notification service answers" in route.text(), timeout=WAIT_MS)
    _away(qtbot, window)
    with qtbot.waitSignal(window.notifications.notified, timeout=WAIT_MS):
        node_post(pair[1], "general", "ada?")
    if window.notifications.route == "status":
        assert window.statusBar().currentMessage() == "bob mentioned you in #general: ada?"


def test_a_level_for_a_typo_is_refused(pair):
    try:
        result(pair[0].facade.run(lambda ws: notifying.set_level(ws, "genral", "none")))
    except Exception as exc:  # a WorkspaceError, told to the person
        assert "no channel, private channel or direct messages named 'genral'" in str(exc)
    else:
        raise AssertionError("a typo became a setting")
    try:
        result(pair[0].facade.run(lambda ws: notifying.set_level(ws, "general", "loud")))
    except NotifyError as exc:
        assert "a level is one of" in str(exc)
    else:
        raise AssertionError("a level that does not exist was stored")


def test_sidebar_title_tray_and_hearth_channels_count_the_same(qtbot, pair, window, capsys):
    """Every kind of conversation unread at once, one muted with a mention: the sidebar's
    badges, the window's title, the tray's tooltip and `hearth channels` say the same."""
    import json

    from app import cli

    bob = pair[1]
    window.show_channel("nowhere")  # no conversation with news is being read
    node_call(bob, lambda: bob.workspace.create_channel("random", public=True))
    for text in ("one", "two", "ada: three"):
        node_post(bob, "random", text)
    node_post(bob, "general", "hello")
    ada = pair[0].key
    launch = node_call(bob, lambda: bob.workspace.private.create("launch", [ada]))
    node_call(bob, lambda: bob.workspace.private.post(launch, "friday?"))
    node_call(bob, lambda: bob.workspace.private.direct_message(ada, "psst"))
    node_call(bob, lambda: bob.workspace.private.direct_message(ada, "lunch?"))
    qtbot.waitUntil(lambda: "random" in window.channels.unread, timeout=WAIT_MS)  # known here
    window.notification_menus.set("random", "none")
    qtbot.waitUntil(lambda: window.channels.unread.get("random") == (0, True)
                    and sum(c for c, _ in window.channels.private_unread.values()) == 3,
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.channels.unread.get("general") == (1, False),
                    timeout=WAIT_MS)
    shown = {window.channels.index(r).data() for r in range(window.channels.rowCount())}
    assert {"# general  (1)", "# random  (@)"} <= shown
    qtbot.waitUntil(lambda: sorted(window.sidebar.unread_shown().values()) == [
        "bob  (2)", "launch  (1)"], timeout=WAIT_MS)
    assert window.windowTitle().startswith("(4) ")
    if window.notifications.tray is not None:
        assert window.notifications.tray.toolTip() == "Hearth: 4 unread"
    capsys.readouterr()
    assert cli.main(["channels", "--json", "--data", str(pair[0].paths.data)]) == 0
    rows = {row["name"]: (row["unread"], row["mention"], row["muted"])
            for row in json.loads(capsys.readouterr().out)}
    assert rows == {"general": (1, False, False), "random": (0, True, True),
                    "launch": (1, False, False), "bob": (2, False, False)}
    assert sum(unread for unread, _, _ in rows.values()) == 4


def test_a_muted_private_channel_is_dimmed_and_shows_only_a_mention(qtbot, pair, window):
    """Muted from its menu, a private channel's row in the sidebar is dimmed like a muted
    channel's, its count goes, and a mention of me still marks it."""
    from ui.sidebar import MutedRole, PrivateRole

    bob = pair[1]
    ada = pair[0].key
    window.show_channel("nowhere")
    launch = node_call(bob, lambda: bob.workspace.private.create("launch", [ada]))
    node_call(bob, lambda: bob.workspace.private.post(launch, "friday?"))
    qtbot.waitUntil(lambda: window.sidebar.unread_shown().get(launch) == "launch  (1)",
                    timeout=WAIT_MS)

    def row():
        rows = window.sidebar.private_list
        return next(rows.item(i) for i in range(rows.count())
                    if rows.item(i).data(PrivateRole) == launch)

    assert not row().data(MutedRole)
    window.notification_menus.set(launch, "none")
    qtbot.waitUntil(lambda: bool(row().data(MutedRole))
                    and window.sidebar.unread_shown().get(launch) == "launch", timeout=WAIT_MS)
    node_call(bob, lambda: bob.workspace.private.post(launch, "@ada are you in?"))
    qtbot.waitUntil(lambda: window.sidebar.unread_shown().get(launch) == "launch  (@)",
                    timeout=WAIT_MS)
    window.notification_menus.set(launch, None)  # back to the default: shown as before
    qtbot.waitUntil(lambda: not row().data(MutedRole), timeout=WAIT_MS)
