"""The window's first run, workspaces, quick switcher, notifications, single instance and
analytics opt-in, over real Nodes offscreen."""

from __future__ import annotations

import os
import subprocess
import sys

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QWidget  # noqa: E402

from app.channel_list import channel_list  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths, workspaces  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import node_call, node_channels, node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.app import Controller  # noqa: E402
from ui.invite_dialog import InviteDialog  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.single_instance import ask_running_to_raise  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def local_node(paths: Paths) -> Node:
    return Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None)


def test_first_run_panel_sets_the_nickname_and_shows_the_invite(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "new", "default")
    Workspace.init(paths, "someone").close()
    with local_node(paths) as node:
        win = MainWindow(node, first_run=True)
        qtbot.addWidget(win)
        win.show()
        panel = win.first_run
        assert panel is not None and panel.isVisible()
        qtbot.waitUntil(lambda: panel.nick.text() == "someone", timeout=WAIT_MS)
        # Inviting is asked for: the panel opens the invite dialog, and made no invite itself.
        qtbot.mouseClick(panel.findChild(QWidget, "firstRunInvite"), Qt.MouseButton.LeftButton)
        dialog = win.findChild(InviteDialog)
        assert dialog is not None and dialog.isVisible()
        qtbot.waitUntil(dialog.empty.isVisible, timeout=WAIT_MS)
        assert result(node.facade.run(lambda ws: ws.members.invites())) == []
        dialog.close()
        # Joining: a member's address, if given, must be HOST:PORT; it goes along.
        joins = []
        panel.joinRequested.connect(lambda *args: joins.append(args))
        panel.code.setText("hearth-some-code")
        panel.address.setText("nowhere")
        qtbot.keyClick(panel.address, Qt.Key.Key_Return)
        assert joins == [] and "HOST:PORT" in panel.error.text()
        panel.address.setText("192.168.1.20:7654")
        qtbot.keyClick(panel.address, Qt.Key.Key_Return)
        assert joins == [("hearth-some-code", "someone", "192.168.1.20:7654")]
        assert panel.error.text() == ""
        panel.nick.setText("grace")
        with qtbot.waitSignal(panel.nicknameSaved, timeout=WAIT_MS):
            panel.save_nick()
        assert result(node.facade.run(lambda ws: ws.nickname())) == "grace"
        qtbot.mouseClick(panel.findChild(QWidget, "dismissFirstRun"), Qt.MouseButton.LeftButton)
        assert not panel.isVisible()
        win.close()


def test_join_by_code_switch_and_leave_a_workspace(qtbot, tmp_path):
    ada = Paths.resolve(tmp_path / "ada", "default")
    with Workspace.init(ada, "ada") as ws:
        ws.post("general", "from ada's workspace")
    mine = Paths.resolve(tmp_path / "me", "default")
    Workspace.init(mine, "me").close()
    ada_node = local_node(ada).start()
    # An invite for one person: ada's computer admits whoever proves the code to it.
    code = result(ada_node.facade.run(lambda ws: ws.members.invite(uses=1, expires_ms=0)[0]))
    address = f"127.0.0.1:{ada_node.port}"
    controller = Controller(mine, lambda p: Node(p, interfaces=["127.0.0.1"], mdns=False,
                                                 reconcile_interval=None,
                                                 peers=[("127.0.0.1", ada_node.port)]))
    try:
        controller.start(controller._make_node(mine).start())
        assert controller.window.first_run is None  # not a first run
        with qtbot.waitSignal(controller.warned, timeout=WAIT_MS) as warned:
            controller.join(code, "grace", "no address")
        assert "address" in warned.args[0] and workspaces(mine.data) == ["default"]
        with qtbot.waitSignal(controller.opened, timeout=WAIT_MS):
            controller.join(code, "grace", address)
            assert not controller.window.isEnabled()  # the work runs off the GUI thread
        joined = controller.paths.workspace
        assert joined.startswith("ws-") and set(workspaces(mine.data)) == {"default", joined}
        assert controller.node.facade.info.folder == joined
        qtbot.waitUntil(lambda: [m.nick for m in result(ada_node.facade.run(lambda ws: ws.members.all()))]
                        == ["ada", "grace"], timeout=WAIT_MS)
        win = controller.window
        assert win.isEnabled()
        qtbot.waitUntil(lambda: "from ada's workspace" in [m.text for m in win.messages.messages],
                        timeout=WAIT_MS)
        # Both listed by their creators' names: two "default"s, told apart by their folders.
        qtbot.waitUntil(lambda: sorted(win.workspace_list.item(i).text()
                                       for i in range(win.workspace_list.count()))
                        == ["default", f"default ({joined})"], timeout=WAIT_MS)

        with qtbot.waitSignal(controller.opened, timeout=WAIT_MS):
            controller.switch("default")
        assert controller.node.facade.info.folder == "default"
        with qtbot.waitSignal(controller.opened, timeout=WAIT_MS):
            controller.switch(joined)
        assert controller.node.facade.info.folder == joined
        with qtbot.waitSignal(controller.opened, timeout=WAIT_MS):
            controller.leave(joined)
        assert workspaces(mine.data) == ["default"]
        assert not (mine.data / "workspaces" / joined).exists()
        assert controller.node.facade.info.folder == "default"

        with qtbot.waitSignal(controller.warned, timeout=WAIT_MS) as warned:
            controller.join("hearth-not-a-code", "")
        assert "invite code" in warned.args[0]
        assert workspaces(mine.data) == ["default"]
        qtbot.waitUntil(lambda: not controller.busy and controller.window.isEnabled(),
                        timeout=WAIT_MS)
    finally:
        controller.window and controller.window.close()
        controller.close()
        ada_node.stop()


def test_a_second_hearth_raises_the_running_window(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "one", "default")
    Workspace.init(paths, "ada").close()
    controller = Controller(paths, local_node)
    try:
        controller.start(local_node(paths).start())
        with qtbot.waitSignal(controller.instance.activated, timeout=WAIT_MS):
            assert ask_running_to_raise(paths.data)
        # The real command: a second `hearth gui` on the folder says so and exits cleanly.
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHONPATH=ROOT)
        with qtbot.waitSignal(controller.instance.activated, timeout=WAIT_MS):
            second = subprocess.run(
                [sys.executable, "-m", "hearth", "gui", "--data", str(paths.data), "--no-mdns"],
                capture_output=True, text=True, timeout=60, env=env, cwd=ROOT)
        assert second.returncode == 0, second.stderr
        assert "already open" in second.stdout
    finally:
        controller.window and controller.window.close()
        controller.close()
    assert not ask_running_to_raise(paths.data)


def test_quick_switcher_jumps_to_a_channel(qtbot, window, ada_node):
    node_channels(ada_node, "design-review")
    window.join_channel("design-review")
    qtbot.waitUntil(lambda: any(c.name == "design-review" for c in window.channels.channels),
                    timeout=WAIT_MS)
    window.show_channel("general")
    qtbot.keyClick(window, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    switcher = window.findChild(QWidget, "quickSwitcher")
    assert switcher is not None and switcher.isVisible()
    qtbot.keyClicks(switcher.filter, "desi rev")
    visible = [switcher.list.item(i).text() for i in range(switcher.list.count())
               if not switcher.list.item(i).isHidden()]
    assert visible == ["# design-review"]
    qtbot.keyClick(switcher.filter, Qt.Key.Key_Return)
    assert window.channel == "design-review"
    assert not switcher.isVisible()


def test_joining_a_channel_this_computer_does_not_know_makes_nothing(
        qtbot, window, ada_node):
    """The window's join takes a channel this computer knows, as `hearth join` does: a typo
    never becomes a channel unless the person, asked "Create it?", says yes (ui/channel_join.py;
    here they say no)."""
    held = node_call(ada_node, lambda: ada_node.workspace.replica.count())
    asked: list[str] = []
    window.joining._ask = lambda title, question: asked.append(question) and False
    window.join_channel("genral")
    qtbot.waitUntil(lambda: bool(asked), timeout=WAIT_MS)
    assert "There is no channel #genral here" in asked[0]
    assert window.channel == "general"
    assert [c.name for c in result(ada_node.facade.run(channel_list)).channels] == ["general"]
    assert node_call(ada_node, lambda: ada_node.workspace.replica.count()) == held


def test_join_and_leave_a_channel_from_the_sidebar(qtbot, window, pair):
    node_channels(pair[1], "random")  # bob made it; ada's computer knows it once it arrives
    qtbot.waitUntil(lambda: any(c.name == "random" for c in window.channels.channels),
                    timeout=WAIT_MS)
    window.join_channel("random")
    qtbot.waitUntil(lambda: window.channel == "random", timeout=WAIT_MS)
    key = pair[0].key

    def members(channel: str):
        return pair[0].facade.run(lambda ws: ws.channel_members(channel))

    qtbot.waitUntil(lambda: any(m.key == key for m in result(members("random"))),
                    timeout=WAIT_MS)
    window.leave_channel("random")
    qtbot.waitUntil(lambda: all(m.key != key for m in result(members("random"))),
                    timeout=WAIT_MS)


def test_a_mention_while_away_notifies_and_badges_the_title(qtbot, window, pair):
    elsewhere = QWidget()
    qtbot.addWidget(elsewhere)
    elsewhere.show()
    elsewhere.activateWindow()
    qtbot.waitUntil(lambda: not window.isActiveWindow(), timeout=WAIT_MS)
    window.show_channel("design")  # general is not being read
    with qtbot.waitSignal(window.notifications.notified, timeout=WAIT_MS) as note:
        node_post(pair[1], "general", "ada, can you look at the release notes?")
    assert note.args[0].title == "bob mentioned you in #general"
    qtbot.waitUntil(lambda: window.windowTitle().startswith("(1) Hearth"), timeout=WAIT_MS)


def test_settings_analytics_checkbox_switches_the_recorder(qtbot, window, ada_node):
    node = ada_node
    dialog = window.show_settings()
    box = dialog.findChild(QWidget, "analyticsOptIn")
    assert box is not None and not box.isChecked()  # off by default
    qtbot.waitUntil(lambda: box.receivers("2toggled(bool)") > 0, timeout=WAIT_MS)
    with qtbot.waitSignal(dialog.saved, timeout=WAIT_MS):
        box.setChecked(True)
    status = result(node.facade.analytics_status())
    assert status.enabled
    result(node.facade.run(lambda ws: ws.post("general", "counted, not read").id))
    spool = status.folder / "spool.sqlite3"
    assert spool.exists()
    with qtbot.waitSignal(dialog.saved, timeout=WAIT_MS):
        box.setChecked(False)
    assert not result(node.facade.analytics_status()).enabled and not spool.exists()
    assert "Never" in dialog.findChild(QWidget, "analyticsExplained").text()


def test_status_bar_shows_sync_state(qtbot, window, pair):
    state = window.findChild(QWidget, "syncState")
    node_post(pair[1], "general", "a message to sync")
    qtbot.waitUntil(lambda: state.text() == "syncing…" or state.text().startswith("last synced"),
                    timeout=WAIT_MS)
    # The connection's first reconciliation finished: once arrivals stop, it says when.
    qtbot.waitUntil(lambda: state.text().startswith("last synced"), timeout=WAIT_MS)
