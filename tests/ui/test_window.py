"""The window over real Nodes, offscreen (pytest-qt): what a person sees and does."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QPushButton  # noqa: E402

from app.node import Node  # noqa: E402
from tests.support import node_channels, node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts, type_and_send  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402


def test_sending_through_the_composer_stores_and_shows_it(qtbot, window, ada_node):
    type_and_send(qtbot, window, "hello from the window")
    qtbot.waitUntil(lambda: "hello from the window" in texts(window), timeout=WAIT_MS)
    assert window.composer.toPlainText() == ""
    stored = [m.text for m in result(ada_node.facade.run(lambda ws: ws.read("general")))]
    assert "hello from the window" in stored


def test_shift_enter_makes_a_new_line_instead_of_sending(qtbot, window):
    window.composer.setPlainText("first line")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert "first line" in window.composer.toPlainText()
    assert "\n" in window.composer.toPlainText()
    assert "first line" not in texts(window)


def test_a_message_from_another_node_appears(qtbot, window, pair):
    node_post(pair[1], "general", "hi ada, from bob's computer")
    qtbot.waitUntil(lambda: "hi ada, from bob's computer" in texts(window), timeout=WAIT_MS)


def test_slash_commands(qtbot, window, ada_node):
    type_and_send(qtbot, window, "/topic Plans for the week")
    qtbot.waitUntil(lambda: window.topic_bar.text() == "Plans for the week", timeout=WAIT_MS)
    type_and_send(qtbot, window, "/nick ada lovelace")
    qtbot.waitUntil(lambda: result(ada_node.facade.run(lambda ws: ws.nickname())) == "ada lovelace",
                    timeout=WAIT_MS)
    type_and_send(qtbot, window, "/me waves")
    qtbot.waitUntil(lambda: "/me waves" in texts(window), timeout=WAIT_MS)
    row = texts(window).index("/me waves")
    assert "* ada lovelace waves" in window.messages.index(row).data()
    type_and_send(qtbot, window, "/delete")
    qtbot.waitUntil(lambda: "/me waves" not in texts(window), timeout=WAIT_MS)
    # /join takes a channel this computer knows; /create makes one.
    type_and_send(qtbot, window, "/join random")
    qtbot.waitUntil(lambda: "no channel #random here; to make it: /create random"
                    in window.statusBar().currentMessage(), timeout=WAIT_MS)
    assert window.channel == "general"
    assert "random" not in [c.name for c in window.channels.channels]
    type_and_send(qtbot, window, "/create random")
    qtbot.waitUntil(lambda: window.channel == "random", timeout=WAIT_MS)
    type_and_send(qtbot, window, "/bogus")
    qtbot.waitUntil(lambda: "unknown command" in window.statusBar().currentMessage(),
                    timeout=WAIT_MS)


def test_switching_channels_updates_topic_and_members(qtbot, window, pair):
    node_channels(pair[1], "design")
    result(pair[1].facade.run(lambda ws: ws.topic("design", "Sketches and mockups").id))
    node_post(pair[1], "design", "first sketch")
    qtbot.waitUntil(lambda: any(c.name == "design" for c in window.channels.channels),
                    timeout=WAIT_MS)
    row = [c.name for c in window.channels.channels].index("design")
    window.channel_list.clicked.emit(window.channels.index(row))
    qtbot.waitUntil(lambda: window.topic_bar.text() == "Sketches and mockups",
                    timeout=WAIT_MS)
    qtbot.waitUntil(lambda: texts(window) == ["first sketch"], timeout=WAIT_MS)
    qtbot.waitUntil(lambda: window.member_list.count() == 1
                    and "bob" in window.member_list.item(0).text(), timeout=WAIT_MS)


def test_search_finds_and_jumps(qtbot, window, pair):
    node_channels(pair[1], "design")
    node_post(pair[1], "design", "the quarterly roadmap draft")
    qtbot.waitUntil(lambda: any(c.name == "design" for c in window.channels.channels),
                    timeout=WAIT_MS)
    node_post(pair[1], "general", "roadmap talk elsewhere")
    qtbot.waitUntil(lambda: "roadmap talk elsewhere" in texts(window), timeout=WAIT_MS)
    panel = window.search_results
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        qtbot.keyClicks(window.search_box, "roadmap")  # no Enter: it searches as one types
    assert window.reading.currentWidget() is panel and panel.isVisible()
    assert panel.count_label.text() == "2 messages in 2 channels"
    # Grouped by channel under a heading each, newest first; the matched word is marked.
    shown = [panel.list.item(i).text() for i in range(panel.list.count())]
    assert shown.index("#general") < shown.index("#design")
    assert len(panel.rows()) == 2
    # A filter narrows it to one channel.
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        window.search_box.setText("roadmap in:#design")
        qtbot.keyClick(window.search_box, Qt.Key.Key_Return)
    assert panel.count_label.text() == "1 message in 1 channel"
    # Enter again (the box unchanged) opens the selected result: its channel, the message.
    qtbot.keyClick(window.search_box, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: window.channel == "design"
                    and window.message_view.currentIndex().isValid(), timeout=WAIT_MS)
    assert window.reading.currentWidget() is window.message_view
    assert window.message_view.currentIndex().data(Qt.ItemDataRole.UserRole).text == \
        "the quarterly roadmap draft"
    # A bad filter says why, in one line, in the panel.
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        window.search_box.setText("roadmap after:soon")
        qtbot.keyClick(window.search_box, Qt.Key.Key_Return)
    assert "after: wants a date like" in panel.count_label.text() + panel.hint_label.text()


def test_peer_status_shows_the_connected_peer(qtbot, window, pair):
    qtbot.waitUntil(lambda: window.peer_status.text() == "1 peer connected", timeout=WAIT_MS)


def test_screenshot_command_renders_the_views(tmp_path):
    import subprocess
    import sys

    out = tmp_path / "shots"
    result = subprocess.run([sys.executable, "-m", "hearth", "screenshot", "--out", str(out)],
                            cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
                            capture_output=True, text=True, timeout=120,
                            env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert result.returncode == 0, result.stderr
    shots = sorted(p.name for p in out.glob("*.png"))
    assert shots == sorted([  # one a line, so branches that add pictures merge cleanly
        "attachment.png",
        "channel-dark.png",
        "channel.png",
        "doc-comments.png",
        "doc-diff.png",
        "doc-merge-conflict.png",
        "documents.png",
        "empty-channel.png",
        "invite.png",
        "members.png",
        "peers.png",
        "private-channel.png",
        "private-thread.png",
        "search.png",
        "settings-data.png",
        "settings-notifications.png",
        "settings-privacy.png",
        "settings-relays.png",
        "settings.png",
        "slack-import.png",
        "syncing-history.png",
        "thread.png",
        "welcome.png",
    ])
    from PySide6.QtGui import QColor, QImage

    lightness = {}
    for name in shots:
        image = QImage(str(out / name))
        assert image.width() >= 300 and image.height() >= 150, name
        samples = [image.pixel(x, y) for x in range(0, image.width(), 7)
                   for y in range(0, image.height(), 7)]
        assert len(set(samples)) > 8, f"{name} looks blank"
        lightness[name] = sum(QColor(p).lightness() for p in samples) / len(samples)
    assert lightness["channel-dark.png"] < 80 < 180 < lightness["channel.png"], lightness


def unread_of(win: MainWindow, name: str) -> tuple[int, bool]:
    return win.channels.unread.get(name, (0, False))


def test_unread_counts_rise_clear_and_survive_a_restart(qtbot, tmp_path, pair):
    node_a, node_b = pair
    win = MainWindow(node_a)
    qtbot.addWidget(win)
    win.show()
    node_channels(node_b, "design")
    node_post(node_b, "design", "first")
    node_post(node_b, "design", "second, for ada")
    qtbot.waitUntil(lambda: unread_of(win, "design") == (2, True), timeout=WAIT_MS)
    assert win.windowTitle() == "(2) Hearth: default"
    row = [c.name for c in win.channels.channels].index("design")
    assert "(@ 2)" in win.channels.index(row).data()
    node_post(node_b, "general", "while ada reads general")
    qtbot.waitUntil(lambda: "while ada reads general" in texts(win), timeout=WAIT_MS)
    # The open channel counts as read.
    qtbot.waitUntil(lambda: unread_of(win, "general") == (0, False), timeout=WAIT_MS)
    win.close()
    # Restart: a new Node and window on the same data folder; the counts were stored.
    node_a.stop()
    restarted = Node(node_a.paths, interfaces=["127.0.0.1"], mdns=False,
                     reconcile_interval=None).start()
    try:
        again = MainWindow(restarted)
        qtbot.addWidget(again)
        again.show()
        qtbot.waitUntil(lambda: unread_of(again, "design") == (2, True), timeout=WAIT_MS)
        again.show_channel("design")
        qtbot.waitUntil(lambda: unread_of(again, "design") == (0, False), timeout=WAIT_MS)
        qtbot.waitUntil(lambda: again.windowTitle() == "Hearth: default", timeout=WAIT_MS)
        again.close()
    finally:
        restarted.stop()


def test_settings_change_the_nickname(qtbot, window, pair):
    dialog = window.show_settings()
    assert dialog.objectName() == "settingsDialog"
    qtbot.waitUntil(lambda: dialog.nick.text() == "ada", timeout=WAIT_MS)
    with qtbot.waitSignal(dialog.saved, timeout=WAIT_MS):
        dialog.nick.setText("ada l.")
        dialog.save_nick()
    assert result(pair[0].facade.run(lambda ws: ws.nickname())) == "ada l."
    qtbot.waitUntil(lambda: result(pair[1].facade.run(lambda ws: ws.nickname(pair[0].key))) == "ada l.",
                    timeout=WAIT_MS)
    # A Close button, as every dialog whose changes apply at once has (issue #29).
    close = next(b for b in dialog.findChildren(QPushButton) if b.text().replace("&", "")
                 == "Close")
    qtbot.mouseClick(close, Qt.MouseButton.LeftButton)
    assert not dialog.isVisible()


def test_peers_dialog_lists_peers_and_adds_one_by_address(qtbot, window, pair):
    qtbot.waitUntil(lambda: window.peer_status.text() == "1 peer connected", timeout=WAIT_MS)
    dialog = window.show_peers()
    dialog.address.setText("not an address")
    dialog.add_peer()
    assert "HOST:PORT" in dialog.error.text()
    with qtbot.waitSignal(dialog.added, timeout=WAIT_MS):
        dialog.address.setText("127.0.0.1:9")
        dialog.add_peer()
    assert any(r["address"] == "127.0.0.1:9" and not r["connected"]
               for r in result(pair[0].facade.peers()))
    qtbot.waitUntil(lambda: any("127.0.0.1:9" in dialog.list.item(i).text()
                                for i in range(dialog.list.count())), timeout=WAIT_MS)

    def rows() -> list[str]:
        return [dialog.list.item(i).text() for i in range(dialog.list.count())]

    # bob dialled ada: listed by name, connected, first; the added address says why it is not.
    bob = f"bob ({pair[1].key.hex()[:8]})"
    qtbot.waitUntil(lambda: rows()[0].startswith(f"●  {bob}")
                    and "connected to us · connected" in rows()[0], timeout=WAIT_MS)
    refused = "127.0.0.1:9 · added by address · cannot reach: connection refused"
    qtbot.waitUntil(lambda: any(refused in row for row in rows()) or dialog.refresh(),
                    timeout=WAIT_MS)
