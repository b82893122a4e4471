"""History arriving and channels kept on this computer, in the window (issue #20), over real
Nodes on 127.0.0.1, offscreen: the history bar follows "history" events delivered the way the
sync service delivers them (its `on_event`, on the Node's thread, through the Node's own
handler) and hides when it is over; "Loading older messages…" shows above a channel whose
history is still arriving; a channel's menu stops keeping it (facade.run(keeping.kept) says so, the
sidebar dims it, its page says so) and "Keep it" keeps it again, fetching what it missed."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QGuiApplication  # noqa: E402

from app import keeping
from app.node import Node  # noqa: E402
from core import kinds  # noqa: E402
from sync.events import HistoryFetch  # noqa: E402
from tests.support import node_call, node_channels, node_post, node_service  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts  # noqa: E402
from ui.history_bar import LOADING_OLDER  # noqa: E402
from ui.kept_channels import KEEP_ACTION, NOT_KEPT  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402


def arriving(node: Node, here: int, total: int, *channels: str) -> None:
    """The sync service says history is arriving (`channels` still fetching), as it does."""
    workspace = node.info.workspace_id
    pending = frozenset(kinds.channel_stream(workspace, name) for name in channels)
    event = HistoryFetch(here=here, total=total, pending=pending, done=False)
    node_call(node, node_service(node).on_event, event)


def over(node: Node, here: int) -> None:
    event = HistoryFetch(here=here, total=here, pending=frozenset(), done=True)
    node_call(node, node_service(node).on_event, event)


def deliver(qtbot, win: MainWindow, send, *args) -> None:
    """Send a "history" event and wait for the window's bridge to hand it on."""
    with qtbot.waitSignal(win.bridge.historyProgress, timeout=WAIT_MS):
        send(*args)


def row(win: MainWindow, name: str):
    return win.channels.index([c.name for c in win.channels.channels].index(name))


def dimmed(win: MainWindow, name: str) -> bool:
    brush = row(win, name).data(Qt.ItemDataRole.ForegroundRole)
    return brush is not None and \
        brush.color() == QGuiApplication.palette().placeholderText().color()


def keep_action(win: MainWindow, name: str):
    menu = win.channel_menu(name)
    return next(a for a in menu.actions() if a.text() == KEEP_ACTION)


def listed(qtbot, win: MainWindow, name: str) -> None:
    qtbot.waitUntil(lambda: any(c.name == name for c in win.channels.channels),
                    timeout=WAIT_MS)


def top(widget) -> int:
    return widget.mapTo(widget.window(), QPoint(0, 0)).y()


def test_the_history_bar_follows_the_nodes_events_and_hides_when_it_is_over(
        qtbot, window, pair):
    node_a, _ = pair
    qtbot.waitUntil(lambda: window.peer_status.text() == "1 peer connected", timeout=WAIT_MS)
    bar = window.history_bar
    assert not bar.isVisible()
    deliver(qtbot, window, arriving, node_a, 412_000, 1_000_000, "general")
    assert bar.isVisible()
    assert bar.label.text() == "Syncing history: 412,000 of 1,000,000"
    assert bar.bar.value() * 1000 // bar.bar.maximum() == 412
    assert top(bar) < top(window.message_view)  # over the messages, under the header
    deliver(qtbot, window, arriving, node_a, 1_250_300, 12_000_000, "general")
    assert bar.label.text() == "Syncing history: 1,250,300 of 12,000,000"
    assert node_a.facade.history().here == 1_250_300
    deliver(qtbot, window, over, node_a, 12_000_000)
    assert not bar.isVisible()
    assert node_a.facade.history() is None


def test_a_window_opened_while_history_arrives_shows_it_at_once(qtbot, pair):
    node_a, _ = pair
    arriving(node_a, 7_000, 20_500, "general")
    win = MainWindow(node_a)
    qtbot.addWidget(win)
    win.show()
    assert win.history_bar.isVisible()
    assert win.history_bar.label.text() == "Syncing history: 7,000 of 20,500"
    assert win.loading_older.isVisible()
    deliver(qtbot, win, over, node_a, 20_500)
    assert not win.history_bar.isVisible() and not win.loading_older.isVisible()
    win.close()


def test_loading_older_messages_shows_in_a_channel_whose_history_is_arriving(
        qtbot, window, pair):
    node_a, node_b = pair
    node_channels(node_b, "Design")
    node_post(node_b, "Design", "the newest sketch")
    listed(qtbot, window, "Design")
    deliver(qtbot, window, arriving, node_a, 10, 500, "design")  # names compare case-folded
    note = window.loading_older
    assert not note.isVisible()  # #general has all its history
    window.show_channel("Design")
    assert note.isVisible() and note.text() == LOADING_OLDER
    assert top(note) < top(window.message_view)  # at the top of the message list
    window.show_channel("general")
    assert not note.isVisible()
    window.show_channel("Design")
    deliver(qtbot, window, arriving, node_a, 400, 500, "general")  # design's history is in
    assert not note.isVisible()
    deliver(qtbot, window, arriving, node_a, 450, 500, "general", "Design")
    assert note.isVisible()
    deliver(qtbot, window, over, node_a, 500)
    assert not note.isVisible()


def test_the_shown_channel_is_fetched_first(qtbot, window, pair):
    node_a, node_b = pair
    node_channels(node_b, "design")
    node_post(node_b, "design", "a sketch")
    listed(qtbot, window, "design")
    stream = kinds.channel_stream(node_a.info.workspace_id, "design")

    def focus() -> bytes | None:
        return node_call(node_a, lambda: node_service(node_a)._focus)

    window.show_channel("design")
    qtbot.waitUntil(lambda: focus() == stream, timeout=WAIT_MS)
    doc = result(node_a.facade.run(lambda ws: ws.documents.new("Notes").id))
    window.open_document(doc)  # no channel is shown
    qtbot.waitUntil(lambda: focus() is None, timeout=WAIT_MS)
    window.show_channel("design")
    qtbot.waitUntil(lambda: focus() == stream, timeout=WAIT_MS)


def test_a_channel_not_kept_is_dimmed_and_says_so_until_kept_again(
        qtbot, window, pair):
    node_a, node_b = pair
    node_channels(node_b, "design")
    node_post(node_b, "design", "a sketch")
    listed(qtbot, window, "design")
    action = keep_action(window, "design")
    assert action.isCheckable() and action.isChecked()
    assert not dimmed(window, "design")
    action.trigger()  # unchecked: stop keeping it
    qtbot.waitUntil(lambda: dimmed(window, "design"), timeout=WAIT_MS)
    kept = result(node_a.facade.run(keeping.kept))
    assert not kept.all and "design" not in kept.channels and "general" in kept.channels
    assert not dimmed(window, "general")
    assert "Not kept on this computer" in row(window, "design").data(
        Qt.ItemDataRole.ToolTipRole)
    assert not keep_action(window, "design").isChecked()
    assert keep_action(window, "general").isChecked()
    assert not window.not_kept.isVisible()  # #general is shown, and kept
    window.show_channel("design")
    assert window.not_kept.isVisible() and window.not_kept.label.text() == NOT_KEPT
    assert "a sketch" in [m.text for m in result(node_a.facade.run(lambda ws: ws.read("design")))]
    qtbot.waitUntil(lambda: texts(window) == ["a sketch"], timeout=WAIT_MS)  # held ones show
    qtbot.mouseClick(window.not_kept.keep_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not dimmed(window, "design"), timeout=WAIT_MS)
    assert not window.not_kept.isVisible()
    assert "design" in result(node_a.facade.run(keeping.kept)).channels
    assert keep_action(window, "design").isChecked()
    # Unchecked and checked again from the menu.
    keep_action(window, "design").trigger()
    qtbot.waitUntil(lambda: window.not_kept.isVisible(), timeout=WAIT_MS)
    keep_action(window, "design").trigger()
    qtbot.waitUntil(lambda: not window.not_kept.isVisible() and not dimmed(window, "design"),
                    timeout=WAIT_MS)


def test_a_computer_keeping_only_some_channels_fetches_the_rest_once_kept(
        qtbot, window_b, pair):
    node_a, node_b = pair
    node_channels(node_a, "design")
    node_post(node_a, "design", "first sketch")
    listed(qtbot, window_b, "design")
    keep_action(window_b, "design").trigger()
    qtbot.waitUntil(lambda: dimmed(window_b, "design"), timeout=WAIT_MS)
    # Once a's node has bob's next post it has heard, before it, that bob's computer no
    # longer keeps #design (frames of one session arrive in order).
    node_post(node_b, "general", "i keep general only")
    qtbot.waitUntil(lambda: "i keep general only" in
                    [m.text for m in result(node_a.facade.run(lambda ws: ws.read("general")))], timeout=WAIT_MS)
    node_post(node_a, "design", "second sketch, not fetched by bob")
    node_post(node_a, "general", "after it, in general")
    qtbot.waitUntil(lambda: "after it, in general" in texts(window_b), timeout=WAIT_MS)
    held = [m.text for m in result(node_b.facade.run(lambda ws: ws.read("design")))]
    assert held == ["first sketch"]
    window_b.show_channel("design")
    assert window_b.not_kept.isVisible()
    qtbot.mouseClick(window_b.not_kept.keep_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: texts(window_b) == ["first sketch",
                                                "second sketch, not fetched by bob"],
                    timeout=WAIT_MS)
    assert not window_b.not_kept.isVisible() and not dimmed(window_b, "design")
