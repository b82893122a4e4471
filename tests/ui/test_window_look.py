"""The window's frame, read as a person reads it: the header (#channel, the topic and who may
edit it), the workspace's name, the highlighted place, the member pane, the empty states, light
and dark, and type that stays whole at twice the scale. Real Nodes on 127.0.0.1, offscreen."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from app import preferences  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from core.policy import Policy  # noqa: E402
from tests.support import node_call, node_channels  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui import theme  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def visible(win: MainWindow, name: str) -> list[QWidget]:
    return [w for w in win.findChildren(QWidget, name) if w.isVisible()]


@pytest.fixture
def alone(qtbot, tmp_path):
    """A window on a workspace made with `init --name`, with no peer anywhere."""
    paths = Paths.resolve(tmp_path / "alone", "default")
    with Workspace.init(paths, "ada", name="Rocket Lab") as ws:
        ws.topic("general", "Launch window planning")
        ws.post("general", "T minus ten days")
    node = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    win = MainWindow(node)
    qtbot.addWidget(win)
    win.show()
    yield win, node
    win.close()
    node.stop()


def test_the_header_names_the_channel_and_a_click_edits_its_topic(qtbot, alone):
    win, node = alone
    header = win.findChild(QWidget, "channelHeader")
    topic = win.findChild(QWidget, "topicLabel")
    qtbot.waitUntil(lambda: header.text() == "#general"
                    and topic.text() == "Launch window planning", timeout=WAIT_MS)
    qtbot.waitUntil(lambda: win.header.editable, timeout=WAIT_MS)
    assert not win.topic_bar.isVisible()
    qtbot.mouseClick(topic, Qt.MouseButton.LeftButton)
    assert win.topic_bar.isVisible() and not topic.isVisible()
    win.topic_bar.setText("Launch moved to Friday")
    qtbot.keyClick(win.topic_bar, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: topic.isVisible() and topic.text() == "Launch moved to Friday",
                    timeout=WAIT_MS)
    assert result(node.facade.run(lambda ws: ws.state("general"))).topic == "Launch moved to Friday"


def test_a_member_the_policies_deny_cannot_open_the_topic_editor(qtbot, alone):
    win, node = alone
    deny = Policy("deny", frozenset({node.key.hex()}), frozenset({"post/topic"}),
                  frozenset({"append"}))
    topic = win.findChild(QWidget, "topicLabel")
    qtbot.waitUntil(lambda: topic.text() == "Launch window planning", timeout=WAIT_MS)
    node_call(node, lambda: node.workspace.set_policies("general", [deny]))
    # (My own earlier topic is hidden too: what the policy denies never counts.)
    qtbot.waitUntil(lambda: topic.text() == "" and not win.header.editable, timeout=WAIT_MS)
    qtbot.mouseClick(topic, Qt.MouseButton.LeftButton)
    assert not win.topic_bar.isVisible()
    # A channel with no topic offers "Add a topic" only to those who may set one.
    with qtbot.waitSignal(win.topicShown, check_params_cb=lambda c: c == "quiet",
                          timeout=WAIT_MS):
        node_channels(node, "quiet")
        win.join_channel("quiet")
    assert win.header.editable and topic.text() == "Add a topic"


def test_the_sidebar_shows_the_workspaces_real_name_and_highlights_where_i_am(qtbot, alone):
    win, node = alone
    name = win.findChild(QWidget, "workspaceName")
    assert name.text() == "Rocket Lab"
    assert win.windowTitle() == "Hearth: Rocket Lab"
    node_channels(node, "design")
    win.join_channel("design")
    qtbot.waitUntil(lambda: [c.name for c in win.channels.channels] == ["design", "general"]
                    and win.channel == "design", timeout=WAIT_MS)

    def highlighted() -> list[str]:
        return [i.data(Qt.ItemDataRole.UserRole) for i in win.channel_list.selectedIndexes()]

    qtbot.waitUntil(lambda: highlighted() == ["design"], timeout=WAIT_MS)
    win.show_channel("general")
    assert highlighted() == ["general"]
    # A document open: it is the one highlighted, and no channel is.
    win.new_document("Flight plan")
    qtbot.waitUntil(lambda: win.document_list.count() == 1
                    and win.document_list.item(0).isSelected(), timeout=WAIT_MS)
    assert highlighted() == []
    assert win.findChild(QWidget, "channelHeader").text() == "Flight plan"
    win.show_channel("general")
    assert highlighted() == ["general"] and not win.document_list.item(0).isSelected()


def test_the_member_pane_has_a_heading_collapses_and_hides_beside_documents(
        qtbot, window, pair):
    node_a, node_b = pair
    result(node_b.facade.run(lambda ws: ws.join("general").id))
    result(node_a.facade.run(lambda ws: ws.join("general").id))
    pane = window.member_pane
    heading = window.findChild(QWidget, "memberHeading")
    qtbot.waitUntil(lambda: heading.text().startswith("Members · 2")
                    and window.member_list.count() == 2, timeout=WAIT_MS)
    assert pane.isVisible() and window.member_list.isVisible()

    def row_of(key: bytes):
        return next(window.member_list.item(i) for i in range(window.member_list.count())
                    if window.member_list.item(i).data(Qt.ItemDataRole.UserRole) == key)

    qtbot.waitUntil(lambda: row_of(node_b.key).text() == "bob  ●", timeout=WAIT_MS)
    assert row_of(node_a.key).text() == "ada (you)  ●"
    assert not row_of(node_b.key).icon().isNull()  # the avatar
    assert "(2 online)" in heading.text()
    node_b.stop()  # bob's computer goes away: he is offline, and said so
    qtbot.waitUntil(lambda: row_of(node_b.key).text() == "bob  ○"
                    and "(1 online)" in heading.text(), timeout=WAIT_MS)
    qtbot.mouseClick(heading, Qt.MouseButton.LeftButton)
    assert not window.member_list.isVisible() and heading.isVisible()
    qtbot.mouseClick(heading, Qt.MouseButton.LeftButton)
    assert window.member_list.isVisible()
    window.new_document("Minutes")
    qtbot.waitUntil(lambda: window.pages.currentWidget() is window.document_pane,
                    timeout=WAIT_MS)
    assert not pane.isVisible()
    window.show_channel("general")
    assert pane.isVisible()
    qtbot.mouseClick(window.findChild(QWidget, "membersToggle"), Qt.MouseButton.LeftButton)
    assert not pane.isVisible()
    window.show_channel("general")  # stays hidden until asked for again
    assert not pane.isVisible()


def test_empty_states_say_what_to_do_and_leave_when_things_arrive(qtbot, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    Workspace.init(a, "ada").close()
    node = Node(a, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    other = None
    win = MainWindow(node)
    qtbot.addWidget(win)
    win.show()
    try:
        def shown_text() -> str:
            return " ".join(label.text() for box in visible(win, "emptyState")
                            for label in box.findChildren(QWidget)
                            if hasattr(label, "text") and label.isVisible())

        qtbot.waitUntil(lambda: "No documents yet" in shown_text()
                        and "Looking for people on your network" in shown_text(),
                        timeout=WAIT_MS)
        assert win.document_list.isHidden()
        win.new_document("Agenda")
        qtbot.waitUntil(lambda: "No documents yet" not in shown_text()
                        and win.document_list.count() == 1, timeout=WAIT_MS)
        # A peer connects: nobody is being looked for any more.
        from tests.support import join

        b = Paths.resolve(tmp_path / "b", "default")
        join(a, b, nick="bob")
        other = Node(b, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                     peers=[("127.0.0.1", node.port)]).start()
        win.show_channel("general")
        qtbot.waitUntil(lambda: "Looking for people" not in shown_text(), timeout=WAIT_MS)
        assert win.peer_status.text() == "1 peer connected"
    finally:
        win.close()
        if other is not None:
            other.stop()
        node.stop()


def test_settings_switch_to_dark_restyles_the_window_and_is_kept(qtbot, alone):
    win, node = alone
    app = QApplication.instance()
    before = app.palette()
    try:
        dialog = win.show_settings()
        box = dialog.findChild(QWidget, "appearance")
        qtbot.waitUntil(lambda: box.currentData() == "system", timeout=WAIT_MS)
        with qtbot.waitSignal(dialog.appearanceChanged, timeout=WAIT_MS):
            box.setCurrentIndex(box.findData("dark"))
            box.activated.emit(box.currentIndex())
        assert preferences.load(node.paths.data).appearance == "dark"
        # The window's own panes follow, not only the widgets that inherit the palette.
        for name in ("sidebar", "header", "memberPane"):
            pane = win.findChild(QWidget, name)
            image = pane.grab().toImage()
            assert image.pixelColor(3, image.height() - 3).lightness() < 80, name
        assert app.palette().color(app.palette().ColorRole.Base).lightness() < 80
        dialog.close()
    finally:
        theme.apply(app, "light")
        app.setPalette(before)


def test_a_bad_preferences_file_reads_as_the_defaults(tmp_path):
    (tmp_path / "preferences.json").write_text("{not json")
    assert preferences.load(tmp_path).appearance == "system"
    (tmp_path / "preferences.json").write_text('{"appearance": "purple"}')
    assert preferences.load(tmp_path).appearance == "system"
    with pytest.raises(preferences.PreferenceError):
        preferences.save(tmp_path, appearance="purple")
    assert preferences.save(tmp_path, appearance="dark").appearance == "dark"
    assert preferences.load(tmp_path).appearance == "dark"


SCALED = """
import sys
from PySide6.QtWidgets import QApplication, QLabel, QWidget
from app.node import Node
from app.paths import Paths
from app.workspace import Workspace
from ui import theme
from ui.main_window import MainWindow

app = QApplication([])
theme.apply(app, "light")
paths = Paths.resolve(sys.argv[1], "default")
with Workspace.init(paths, "ada", name="A workspace with a long name") as ws:
    ws.topic("general", "Readable at any scale")
    ws.post("general", "hello")
node = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
win = MainWindow(node)
win.resize(1000, 640)
win.show()
deadline = __import__("time").monotonic() + 20
while not win.messages.messages or win.findChild(QWidget, "topicLabel").text() == "":
    app.processEvents()
    assert __import__("time").monotonic() < deadline, "the window did not load"
app.processEvents()
cut = [label.objectName() or label.text() for label in win.findChildren(QLabel)
       if label.isVisible() and label.text() and not label.wordWrap()
       and label.objectName() not in ("topicLabel", "workspaceName")
       and label.width() < label.sizeHint().width()]
print("ratio", win.devicePixelRatio())
print("cut", cut)
node.stop()
"""


def test_nothing_is_cut_at_twice_the_scale(tmp_path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", QT_SCALE_FACTOR="2", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", SCALED, str(tmp_path / "data")], env=env,
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "ratio 2.0" in done.stdout
    assert "cut []" in done.stdout, done.stdout


def test_ctrl_k_lists_the_places_i_visited_latest_first_and_matches_fuzzily(qtbot, alone):
    from ui.switcher import KeyRole

    win, node = alone
    node_channels(node, "design", "random", "zebra")
    win.channels.refresh()
    qtbot.waitUntil(lambda: len(win.channels.channels) == 4, timeout=WAIT_MS)
    win.show_channel("zebra")
    win.show_channel("design")
    win.show_channel("general")
    qtbot.keyClick(win, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    switcher = win.findChild(QWidget, "quickSwitcher")
    assert switcher is not None and switcher.isVisible()

    def rows() -> list[tuple[str, str]]:
        return [switcher.list.item(i).data(KeyRole) for i in range(switcher.list.count())
                if not switcher.list.item(i).isHidden()]

    assert rows()[:4] == [("channel", "general"), ("channel", "design"),
                          ("channel", "zebra"), ("channel", "random")]
    qtbot.keyClicks(switcher.filter, "zbr")
    assert rows()[0] == ("channel", "zebra")
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Return)
    assert win.channel == "zebra"
