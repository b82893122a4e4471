"""What every window test shares: Qt objects are freed on the GUI thread only; the Nodes,
windows and views the tests run over (their helpers are in tests/ui/support.py).

A test's Nodes run threads that allocate a lot, so Python's cycle collector would often run on
one of them; freeing a window or dialog there destroys Qt widgets off the GUI thread, which can
deadlock the interpreter against Qt's locks (a whole CI run once hung this way). The app avoids
it with ui.collector.GuiThreadCollector; the tests do the same by hand: no automatic collection
during a test, and at its end the windows pytest-qt closed are deleted and cycles collected here.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtGui import QDesktopServices

from app import joining, sharing
from app.node import Node
from app.paths import Paths
from app.workspace import Workspace
from tests.support import Cluster, join
from tests.ui.support import Board, UrlCatcher, result
from ui.bridge import NodeBridge
from ui.main_window import MainWindow
from ui.message_view import MessageView
from ui.models import MessageListModel


@pytest.fixture(autouse=True, scope="session")
def emoji_font(qapp) -> None:
    """The app's colour emoji font, as ui.app.application loads it."""
    from ui import emoji_font

    emoji_font.install()


@pytest.fixture(autouse=True)
def collect_on_the_gui_thread() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()
        # What survives stays out of later collections: each test's then walks only what it
        # made (a full walk of the ~100k objects Qt and the app hold took ~0.6 s a test).
        gc.freeze()
        if enabled:
            gc.enable()


@pytest.fixture(autouse=True)
def no_desktop_bus(monkeypatch: pytest.MonkeyPatch) -> None:
    """No window of a test reaches the desktop's own notification service: a test that wants
    one starts a bus of its own (tests/notify_support.py)."""
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/hearth-test-bus")


# Nodes and windows -------------------------------------------------------------------------------


def show(qtbot, win: MainWindow) -> MainWindow:
    qtbot.addWidget(win)
    win.show()
    return win


# The Nodes run in the test's `cluster` (tests/conftest.py), which stops them all at once.


@pytest.fixture
def ada_node(cluster: Cluster, tmp_path: Path) -> Node:
    """Ada's computer alone: her new workspace's Node, with no peer (for what needs no network)."""
    paths = Paths.resolve(tmp_path / "a", "default")
    Workspace.init(paths, "ada").close()
    return cluster.start(paths)


@pytest.fixture
def pair(cluster: Cluster, tmp_path: Path) -> tuple[Node, Node]:
    """(ada's Node, bob's Node): ada made the workspace, bob joined it and dialled her."""
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    node_a = cluster.start(a)
    return node_a, cluster.start(b, peers=[node_a])


@pytest.fixture
def window(qtbot, request: pytest.FixtureRequest) -> Iterator[MainWindow]:
    """Ada's window: over `pair`'s first Node when the test uses `pair` (or a fixture that
    does), else over `ada_node`, alone."""
    if "pair" in request.fixturenames:
        node = request.getfixturevalue("pair")[0]
    else:
        node = request.getfixturevalue("ada_node")
    win = show(qtbot, MainWindow(node))
    yield win
    win.close()


@pytest.fixture
def window_b(qtbot, pair: tuple[Node, Node]) -> Iterator[MainWindow]:
    """The window of the second node: a member, but no editor of what the first creates."""
    win = show(qtbot, MainWindow(pair[1]))
    yield win
    win.close()


@pytest.fixture
def node_c(cluster: Cluster, pair: tuple[Node, Node], tmp_path: Path) -> Node:
    """A third member, carol, admitted by ada with a personal code, syncing with ada."""
    node_a, _ = pair
    carol = Paths.resolve(tmp_path / "c", "default")
    code = result(node_a.facade.run(lambda ws: ws.members.invite_for(joining.identity_key(carol))))
    sharing.join_workspace(carol, code, nick="carol")
    return cluster.start(carol, peers=[node_a])


@pytest.fixture
def bridges(qtbot, pair: tuple[Node, Node]) -> Iterator[list[NodeBridge]]:
    """A NodeBridge over each of `pair`'s Nodes."""
    made = [NodeBridge(node) for node in pair]
    yield made
    for bridge in made:
        bridge.close()


@pytest.fixture
def url_catcher() -> Iterator[UrlCatcher]:
    """The links the app asks the desktop to open, caught instead of opened."""
    catcher = UrlCatcher()
    for scheme in ("http", "https"):
        QDesktopServices.setUrlHandler(scheme, catcher, "capture")
    yield catcher
    for scheme in ("http", "https"):
        QDesktopServices.unsetUrlHandler(scheme)


@pytest.fixture
def board(qtbot, cluster: Cluster, tmp_path: Path) -> Iterator[Board]:
    """A message view (no window) over ada's Node, alone."""
    paths = Paths.resolve(tmp_path / "lone", "default")
    Workspace.init(paths, "ada").close()
    node = cluster.start(paths)
    bridge = NodeBridge(node)
    model = MessageListModel(bridge)
    view = MessageView(model)
    view.resize(560, 640)
    qtbot.addWidget(view)
    view.show()
    yield Board(qtbot, node, model, view)
    view.close()
    bridge.close()
