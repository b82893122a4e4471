"""The window never tells a lie (issue #29): what it shows names the conversation shown, its
unread marks come from the facade's counts for every kind of conversation, and the header
offers a topic only where there is one. Over real Nodes, offscreen."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QImage  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from app.channel_list import channel_list  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.sidebar import PrivateRole  # noqa: E402


def on_screen(widget: QWidget) -> QImage:
    """What the window's backing store holds where `widget` is: what the screen shows."""
    QApplication.sendPostedEvents()
    QApplication.processEvents()
    top = widget.window()
    origin = widget.mapTo(top, QPoint(0, 0))
    shot = top.screen().grabWindow(top.winId(), origin.x(), origin.y(), widget.width(),
                                   widget.height())
    return shot.toImage().convertToFormat(QImage.Format.Format_RGB32)


def fresh_paint(widget: QWidget) -> QImage:
    """`widget` painted now from its current state (its properties as they are)."""
    return widget.grab().toImage().convertToFormat(QImage.Format.Format_RGB32)


def shows_what_it_says(widget: QWidget) -> bool:
    return on_screen(widget) == fresh_paint(widget)


def test_the_composer_under_general_names_general_as_painted(qtbot, window, pair):
    node_a, node_b = pair
    dm = result(node_a.facade.run(lambda ws: ws.private.create("", [node_b.key], dm=True)))
    launch = result(node_a.facade.run(lambda ws: ws.private.create("launch", [node_b.key])))
    window.private.open(dm)
    qtbot.waitUntil(lambda: window.private.channel_id == dm, timeout=WAIT_MS)
    assert shows_what_it_says(window.composer.viewport())
    window.private.open(launch)
    qtbot.waitUntil(lambda: window.private.channel_id == launch, timeout=WAIT_MS)
    assert shows_what_it_says(window.composer.viewport())
    window.show_channel("general")
    assert window.composer.placeholderText().startswith("Message #general")
    assert shows_what_it_says(window.composer.viewport())


def settle(qtbot, win: MainWindow, hops: int = 4) -> None:
    """Wait until every chain of up to `hops` facade calls the window began has been answered:
    the Node runs calls in order and the bridge hands answers back in order, so `hops` chained
    round trips begun now end after them."""
    done: list[bool] = []

    def hop(left: int) -> None:
        if left == 0:
            done.append(True)
        else:
            win.bridge.then(win.facade.run(lambda ws: ws.is_admin()), done=lambda _: hop(left - 1))
    hop(hops)
    qtbot.waitUntil(lambda: bool(done), timeout=WAIT_MS)


def selected_in_sidebar(win: MainWindow) -> list[str]:
    """Every sidebar item drawn as selected (the Mentions button when checked)."""
    side = win.sidebar
    out = [f"#{i.data(Qt.ItemDataRole.UserRole)}"
           for i in win.channel_list.selectionModel().selectedIndexes()]
    out += [f"private:{item.text()}" for rows in (side.private_list, side.dm_list)
            for item in rows.selectedItems()]
    out += [f"document:{item.text()}" for item in win.document_list.selectedItems()]
    return out + (["Mentions"] if side.mentions.isChecked() else [])


def private_rows(win: MainWindow) -> dict[bytes, str]:
    """What each private channel's and direct messages' row in the sidebar reads."""
    side = win.sidebar
    return {rows.item(i).data(PrivateRole): rows.item(i).text()
            for rows in (side.private_list, side.dm_list) for i in range(rows.count())}


def title_count(win: MainWindow) -> int:
    title = win.windowTitle()
    return int(title[1:title.index(")")]) if title.startswith("(") else 0


def test_unread_direct_messages_and_private_channels_show_and_count(
        qtbot, window, pair):
    node_a, node_b = pair
    launch = result(node_b.facade.run(lambda ws: ws.private.create("launch", [node_a.key])))
    result(node_b.facade.run(lambda ws: ws.private.post(launch, "@ada the date moved").id))
    result(node_b.facade.run(lambda ws: ws.private.direct_message(node_a.key, "lunch?").id))
    dm = result(node_b.facade.run(lambda ws: ws.private.dm_channel(node_a.key)))
    qtbot.waitUntil(lambda: result(node_a.facade.run(channel_list)).private_unread == {
        launch: (1, True), dm: (1, False)}, timeout=WAIT_MS)
    window._reload()
    qtbot.waitUntil(lambda: private_rows(window) == {
        launch: "launch  (@ 1)", dm: "bob  (1)"}, timeout=WAIT_MS)
    rows = [window.sidebar.private_list.item(0), window.sidebar.dm_list.item(0)]
    assert all(item.font().bold() for item in rows)
    settle(qtbot, window)
    assert title_count(window) == result(node_a.facade.run(channel_list)).total_unread == 2

    # Reading the direct messages reads them: their badge goes, the title counts one.
    window.private.open(dm)
    qtbot.waitUntil(lambda: private_rows(window)[dm] == "bob", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: title_count(window) == 1, timeout=WAIT_MS)
    assert not window.sidebar.dm_list.item(0).font().bold()
    assert result(node_a.facade.run(channel_list)).private_unread == {launch: (1, True), dm: (0, False)}


def test_mentions_is_no_channel_and_alone_selected(qtbot, window, pair):
    node_a, _ = pair
    result(node_a.facade.run(lambda ws: ws.topic("general", "the general topic").id))
    window._reload()
    qtbot.waitUntil(lambda: window.header.topic == "the general topic", timeout=WAIT_MS)
    assert window.header.editable and selected_in_sidebar(window) == ["#general"]

    window.sidebar.mentions.click()
    window._reload()
    settle(qtbot, window)
    assert window.header.title.text() == "Mentions"
    assert not window.header.editable and window.header.topic_label.isHidden()
    assert selected_in_sidebar(window) == ["Mentions"]
    window.header.edit_topic()
    assert not window.header.topic_bar.isVisible()
    window.header.topicEdited.emit("typed under Mentions")  # as if a topic were entered
    settle(qtbot, window)
    assert result(node_a.facade.run(lambda ws: ws.state("general"))).topic == "the general topic"

    # Search results are no channel either, and no sidebar item stands for them.
    window.header.searchRequested.emit("anything")
    settle(qtbot, window)
    assert window.header.title.text() == "Search" and not window.header.editable
    assert selected_in_sidebar(window) == []
    window.show_channel("general")
    settle(qtbot, window)
    assert window.header.editable and selected_in_sidebar(window) == ["#general"]


def test_joining_a_channel_by_name_asks_then_creates_it(qtbot, window, pair):
    node_a, _ = pair
    asked: list[str] = []
    window.joining._ask = lambda title, question: asked.append(question) or True
    window.join_channel("#planning")
    qtbot.waitUntil(lambda: window.channel == "planning"
                    and "planning" in [c.name for c in window.channels.channels],
                    timeout=WAIT_MS)
    assert asked and "There is no channel #planning here" in asked[0]
    assert window.header.title.text() == "#planning"
    assert "planning" in [c.name for c in result(node_a.facade.run(channel_list)).channels]


def test_a_private_channels_name_is_refused_in_the_status_bar(qtbot, window, pair):
    node_a, node_b = pair
    result(node_a.facade.run(lambda ws: ws.private.create("launch", [node_b.key])))
    window.joining._ask = lambda title, question: True
    window.join_channel("launch")
    qtbot.waitUntil(lambda: bool(window.statusBar().currentMessage()), timeout=WAIT_MS)
    assert "launch" not in [c.name for c in result(node_a.facade.run(channel_list)).channels]
    assert window.channel == "general"


def test_mentions_over_direct_messages_stays_named_mentions_after_a_send(
        qtbot, window, pair):
    """Found by the model-based test: a message sent from the composer under Mentions (it goes
    to the direct messages behind, as the composer says) re-read the private channel's state,
    and the header then read "bob" over the Mentions results."""
    node_a, node_b = pair
    dm = result(node_a.facade.run(lambda ws: ws.private.create("", [node_b.key], dm=True)))
    window.private.open(dm)
    qtbot.waitUntil(lambda: window.private.channel_id == dm, timeout=WAIT_MS)
    window.sidebar.mentions.click()
    assert window.composer.placeholderText().startswith("Message bob ")
    window.composer.setPlainText("sent from under Mentions")
    qtbot.keyClick(window.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "sent from under Mentions" in
                    [m.text for m in result(node_a.facade.run(lambda ws: ws.private.read(dm)))], timeout=WAIT_MS)
    window._reload()
    settle(qtbot, window)
    assert window.header.title.text() == "Mentions" and not window.header.offers_topic
    assert selected_in_sidebar(window) == ["Mentions"]
