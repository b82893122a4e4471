"""Typing in a private channel, in the window, over real Nodes offscreen (issue #32): ada types
in the composer of a private channel she is in with bob; bob's window open on it says "ada is
typing…", on #general it says nothing; carol, a member of the workspace outside the channel,
is never sent it (her Node passes on ada's public typing sent after it, and nothing private)."""

from __future__ import annotations

import os
import threading

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.events import NodeEvent, PeerPrivateTyping, PeerTyping  # noqa: E402
from app.node import Node  # noqa: E402
from tests.support import node_call  # noqa: E402
from tests.ui.support import WAIT_MS  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

DOTS = "\N{HORIZONTAL ELLIPSIS}"


class Heard:
    """The typing events a Node passes on (public and private), on its thread."""

    def __init__(self, node: Node):
        self.events: list[NodeEvent] = []
        self._lock = threading.Lock()
        node.subscribe(self._on_event)

    def _on_event(self, event: NodeEvent) -> None:
        if isinstance(event, PeerTyping | PeerPrivateTyping):
            with self._lock:
                self.events.append(event)

    def seen(self) -> list[NodeEvent]:
        with self._lock:
            return list(self.events)


def type_some(qtbot, win: MainWindow, text: str) -> None:
    win.composer.setFocus()
    qtbot.keyClicks(win.composer, text)


def test_ada_typing_in_a_private_channel_shows_to_bob_there_only(
        qtbot, window, window_b, pair, node_c):
    node_a, node_b = pair
    room = node_call(node_a, lambda: node_a.workspace.private.create("plans", [node_b.key]))
    qtbot.waitUntil(lambda: node_call(node_c, lambda: len(
        node_c.workspace.replica.private.objects(room)) >= 3), timeout=WAIT_MS)
    heard_c = Heard(node_c)

    # bob's window opens the channel once his sidebar lists it; ada's too.
    window_b.private.refresh()
    qtbot.waitUntil(lambda: any(c.id == room for c in window_b.private.channels),
                    timeout=WAIT_MS)
    window_b.private.open(room)
    qtbot.waitUntil(lambda: window_b.private.channel_id == room, timeout=WAIT_MS)
    window.private.refresh()
    qtbot.waitUntil(lambda: any(c.id == room for c in window.private.channels),
                    timeout=WAIT_MS)
    window.private.open(room)
    qtbot.waitUntil(lambda: window.private.channel_id == room, timeout=WAIT_MS)
    assert window_b.typing_label.text() == ""

    type_some(qtbot, window, "shall we")
    qtbot.waitUntil(lambda: window_b.typing_label.text() == f"ada is typing{DOTS}",
                    timeout=WAIT_MS)
    assert window.typing_label.text() == ""  # never my own

    # On #general bob's window shows nothing of it, though ada's typing there still arrives.
    window_b.show_channel("general")
    assert window_b.typing_label.text() == ""
    arrived: list[bytes] = []
    window_b.bridge.privateTyping.connect(lambda key, channel: arrived.append(channel))
    qtbot.waitUntil(lambda: (node_a.typing_private(room), bool(arrived))[1], timeout=WAIT_MS)
    assert arrived[-1] == room and window_b.typing_label.text() == ""

    # carol: ada's public typing, sent after her private typing on the same ordered session,
    # arrives; nothing private ever did.
    node_a.typing("general")
    qtbot.waitUntil(lambda: bool(heard_c.seen()), timeout=WAIT_MS)
    assert [(e.key, e.channel) for e in heard_c.seen()] == [(node_a.key, "general")]
    assert not any(isinstance(e, PeerPrivateTyping) for e in heard_c.seen())

    # Back on the channel: ada's next frame (after the send interval) shows again there.
    window_b.private.open(room)
    qtbot.waitUntil(lambda: window_b.private.channel_id == room, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: (type_some(qtbot, window, "x"),
                             window_b.typing_label.text() == f"ada is typing{DOTS}")[1],
                    timeout=WAIT_MS)
