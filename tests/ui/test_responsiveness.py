"""The GUI thread never waits for the Node while 10,000 messages arrive by sync: every call it
makes through the facade is answered later (a future's callback), so a large catch-up can
make it busy, never blocked. bench/ui_channel.py measures how long its stalls are; a test
here asserts no time, only that no wait happens."""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from concurrent.futures import Future
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer  # noqa: E402

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from storage import Replica  # noqa: E402
from tests.support import join  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench._corpus import posts  # noqa: E402

MESSAGES = 10_000


def test_gui_thread_is_not_blocked_during_a_large_sync(qtbot, tmp_path, monkeypatch):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    with Replica(b.replica) as replica:
        raws = posts(MESSAGES, channels=1, authors=20, workspace=replica.workspace.id)
        for start in range(0, MESSAGES, 2000):
            replica.ingest(raws[start:start + 2000])
    node_a = Node(a, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    window = MainWindow(node_a)
    qtbot.addWidget(window)
    window.show()
    ticks: list[float] = []
    timer = QTimer(interval=10)
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start()
    waits: list[str] = []
    syncing = [True]  # closing the window at the end may wait (bounded), by design
    result, exception = Future.result, Future.exception

    def watched(method):
        def call(self, timeout=None):
            if syncing[0] and threading.current_thread() is threading.main_thread() \
                    and not self.done():
                waits.append("".join(traceback.format_stack(limit=6)))
            return method(self, timeout)
        return call

    monkeypatch.setattr(Future, "result", watched(result))
    monkeypatch.setattr(Future, "exception", watched(exception))
    node_b = Node(b, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                  peers=[("127.0.0.1", node_a.port)]).start()
    try:
        qtbot.waitUntil(lambda: sum(c.messages for c in window.channels.channels) >= MESSAGES,
                        timeout=120_000)
    finally:
        syncing[0] = False
        timer.stop()
        window.close()
        node_b.stop()
        node_a.stop()
    assert len(ticks) > 10  # the GUI thread's loop ran throughout
    assert waits == [], waits[0]
