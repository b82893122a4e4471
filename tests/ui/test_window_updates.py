"""The window updates what arriving objects changed, not everything: its facade calls per
arriving message, counted at the one door they go through to the Node's thread (real Nodes,
real Qt offscreen)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import join, node_channels  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

WAIT_MS = 20_000
QUIET_S = 0.6  # no call for this long: the window has done what the arrival asked of it
CALLS_PER_MESSAGE = 2  # issue #30: the channel list with unread counts, the new messages


class FacadeCalls:
    """Counts the calls the GUI thread makes through the Node's one door for facade work
    (Node._submit, which every facade method's future comes from)."""

    DOOR = "_submit"

    def __init__(self, node: Node):
        self.count = 0
        self.last = time.monotonic()
        submit = getattr(node, self.DOOR)

        def counted(fn: Callable[..., Any], *args: Any) -> Future:
            if threading.current_thread() is threading.main_thread():
                self.count += 1
                self.last = time.monotonic()
            return submit(fn, *args)

        setattr(node, self.DOOR, counted)

    def settle(self, qtbot) -> int:
        """Wait until the window stops asking; how many calls it made since the last reset."""
        qtbot.waitUntil(lambda: time.monotonic() - self.last >= QUIET_S, timeout=WAIT_MS)
        return self.count

    def reset(self) -> None:
        self.count = 0
        self.last = time.monotonic()


@pytest.fixture
def watched(qtbot, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    node_a = Node(a, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    node_b = Node(b, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                  peers=[("127.0.0.1", node_a.port)]).start()
    node_channels(node_b, "design")
    window = MainWindow(node_a)
    qtbot.addWidget(window)
    window.show()
    calls = FacadeCalls(node_a)
    qtbot.waitUntil(lambda: "design" in [c.name for c in window.channels.channels]
                    and node_b.key in window._online, timeout=WAIT_MS)
    calls.settle(qtbot)
    yield window, node_b, calls
    window.close()
    node_b.stop()
    node_a.stop()


def posted(node: Node, channel: str, text: str) -> None:
    node.facade.run(lambda ws: ws.post(channel, text).id).result(WAIT_MS / 1000)


def texts(window: MainWindow) -> list[str]:
    return [m.text for m in window.messages.messages]


def test_a_message_in_the_channel_shown_costs_its_read_and_its_read_mark(qtbot, watched):
    window, bob, calls = watched
    for n in range(3):
        calls.reset()
        posted(bob, "general", f"hello {n}")
        qtbot.waitUntil(lambda n=n: f"hello {n}" in texts(window), timeout=WAIT_MS)
        assert calls.settle(qtbot) <= CALLS_PER_MESSAGE
    assert window.channels.unread["general"][0] == 0  # read as it arrived, and so listed


def test_a_message_elsewhere_costs_one_read_of_the_channel_list(qtbot, watched):
    window, bob, calls = watched
    shown = texts(window)
    for n in range(1, 4):
        calls.reset()
        posted(bob, "design", f"over there {n}")
        qtbot.waitUntil(lambda n=n: window.channels.unread["design"][0] == n, timeout=WAIT_MS)
        assert calls.settle(qtbot) <= CALLS_PER_MESSAGE
    assert texts(window) == shown


def test_a_burst_of_arrivals_is_shown_in_few_updates(qtbot, watched):
    window, bob, calls = watched
    calls.reset()
    burst = 40

    def post_all() -> None:
        futures = [bob.facade.run(lambda ws, n=n: ws.post("general" if n % 2 else "design",
                                                          f"burst {n}").id)
                   for n in range(burst)]
        for future in futures:
            future.result(WAIT_MS / 1000)

    post_all()
    qtbot.waitUntil(lambda: f"burst {burst - 1}" in texts(window)
                    and window.channels.unread["design"][0] == burst // 2, timeout=WAIT_MS)
    made = calls.settle(qtbot)
    print(f"{made} facade calls for {burst} messages arriving")
    assert made <= burst  # one update for several: without, 3 calls for 2 messages
