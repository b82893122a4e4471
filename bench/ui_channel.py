"""The window on a channel of 100,000 messages, offscreen: ms to the first paint of the
message list with the newest page in it (target <= 100 ms), ms to scroll to the top through lazy
loading, peak RSS of the window's process (target <= 300 MB), and the longest GUI-thread stall (a
10 ms timer) while 10,000 messages arrive by sync (target <= 50 ms).

The replicas are filled by child processes (`--fill`), so the peak RSS is the window's own:
Qt, the Node, and every message row once scrolled to the top."""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import subprocess  # noqa: E402

from PySide6.QtCore import QEvent, QEventLoop, QObject, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app import sharing  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from bench._common import report  # noqa: E402
from bench._corpus import posts  # noqa: E402
from storage import Replica  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402

CHANNEL_MESSAGES = int(os.environ.get("HEARTH_BENCH_UI_MESSAGES", 100_000))
SYNC_MESSAGES = 10_000
TIMEOUT_S = 300


def wait(app: QApplication, condition) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError("timed out")
        app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)


def fill(paths: Paths, count: int, offset: int = 0) -> None:
    with Replica(paths.replica) as replica:
        raws = posts(count, channels=1, authors=50, workspace=replica.workspace.id,
                     offset=offset)
        for start in range(0, count, 5000):
            replica.ingest(raws[start:start + 5000])


def fill_in_child(paths: Paths, count: int, offset: int = 0) -> None:
    subprocess.run([sys.executable, __file__, "--fill", str(paths.data), paths.workspace,
                    str(count), str(offset)], check=True)


class FirstPaint(QObject):
    """Notes when the message list's viewport has first painted with rows in its model."""

    def __init__(self, window: MainWindow):
        super().__init__()
        self.window = window
        self.at: float | None = None
        self._seen = False
        window.message_view.viewport().installEventFilter(self)

    def eventFilter(self, watched, event) -> bool:
        if event.type() == QEvent.Type.Paint and not self._seen and \
                self.window.messages.rowCount() > 0:
            self._seen = True
            QTimer.singleShot(0, self._painted)  # runs once this paint is done
        return False

    def _painted(self) -> None:
        self.at = time.perf_counter()


def main() -> None:
    if sys.argv[1:2] == ["--fill"]:
        data, workspace, count, offset = sys.argv[2:6]
        fill(Paths.resolve(data, workspace), int(count), int(offset))
        return
    app = QApplication([])
    with tempfile.TemporaryDirectory() as tmp:
        a = Paths.resolve(Path(tmp) / "a", "default")
        b = Paths.resolve(Path(tmp) / "b", "default")
        Workspace.init(a, "ada").close()
        sharing.join_workspace(b, sharing.invite(a).encode(), nick="bob")
        fill_in_child(a, CHANNEL_MESSAGES)
        node_a = Node(a, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
        try:
            start = time.perf_counter()
            window = MainWindow(node_a)
            painted = FirstPaint(window)
            window.show()
            window.show_channel("channel-0")
            wait(app, lambda: painted.at is not None)
            first_page_ms = (painted.at - start) * 1000
            start = time.perf_counter()
            while window.messages.canFetchMore() or window.messages._loading:
                if window.messages.canFetchMore():
                    window.messages.fetchMore()
                app.processEvents(QEventLoop.ProcessEventsFlag.AllEvents, 5)
            scroll_s = time.perf_counter() - start
            loaded = len(window.messages.messages)
            window.show_channel("general")

            fill_in_child(b, SYNC_MESSAGES, offset=CHANNEL_MESSAGES)
            ticks: list[float] = []
            timer = QTimer(interval=10)
            timer.timeout.connect(lambda: ticks.append(time.monotonic()))
            timer.start()
            node_b = Node(b, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                          peers=[("127.0.0.1", node_a.port)]).start()
            try:
                target = CHANNEL_MESSAGES + SYNC_MESSAGES
                wait(app, lambda: sum(c.messages for c in window.channels.channels) >= target)
            finally:
                timer.stop()
                node_b.stop()
            stalls = [(y - x) * 1000 for x, y in zip(ticks, ticks[1:], strict=False)]
            window.close()
        finally:
            node_a.stop()
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    report("ui_channel", {
        "channel_messages": CHANNEL_MESSAGES,
        "first_page_ms": round(first_page_ms, 1), "target_first_page_ms": 100,
        "scroll_to_top_s": round(scroll_s, 2), "messages_loaded": loaded,
        "peak_rss_mb": round(peak_mb, 1), "target_peak_rss_mb": 300,
        "sync_messages": SYNC_MESSAGES,
        "longest_gui_stall_ms": round(max(stalls), 1), "target_stall_ms": 50,
    })


if __name__ == "__main__":
    main()
