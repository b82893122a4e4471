"""The Qt side of the Node facade: Node events become signals on the GUI thread, and work runs
on the Node's thread with its result delivered back by signal. Nothing here waits.

Results and events cross threads through a queue that the GUI thread drains on a short timer.
Emitting PySide signals from the Node's (non-Qt) thread crashed the interpreter under load
("deallocating None": a reference-count error inside the binding), so no other thread ever
touches Qt.
"""

from __future__ import annotations

import queue
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from app.node import Node, NodeError, NodeEvent

POLL_MS = 10  # how often the GUI thread takes in results and events


class NodeBridge(QObject):
    """Lives on the GUI thread; everything it emits is emitted there."""

    objectsAdded = Signal(list)  # ids of newly stored objects
    peersChanged = Signal(int)  # number of connected peers
    synced = Signal(dict)
    delivered = Signal()  # node.pending() changed: messages no peer had have reached one
    failed = Signal(str)  # a background call failed; the message is for a person

    def __init__(self, node: Node, parent: QObject | None = None):
        super().__init__(parent)
        self.node = node
        self._inbox: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._poll = QTimer(self, interval=POLL_MS)
        self._poll.timeout.connect(self._drain)
        self._poll.start()
        self._unsubscribe = node.subscribe(self._on_node_event)

    def _post(self, action: Callable[[], None]) -> None:  # any thread; no Qt call here
        self._inbox.put(action)

    @Slot()
    def _drain(self) -> None:  # the GUI thread
        while True:
            try:
                action = self._inbox.get_nowait()
            except queue.Empty:
                return
            action()

    def _on_node_event(self, event: NodeEvent) -> None:  # the Node's thread
        if event.kind == "objects":
            ids = list(event.detail["ids"])
            self._post(lambda: self.objectsAdded.emit(ids))
        elif event.kind == "peers":
            online = int(event.detail["online"])
            self._post(lambda: self.peersChanged.emit(online))
        elif event.kind == "delivered":
            self._post(self.delivered.emit)
        elif event.kind == "synced":
            detail = dict(event.detail)
            self._post(lambda: self.synced.emit(detail))

    def run(self, fn: Callable[..., Any], *args: Any,
            done: Callable[[Any], None] | None = None,
            failed: Callable[[str], None] | None = None) -> None:
        """Run fn(*args) on the Node's thread; later, on the GUI thread, `done(result)` or
        `failed(message)` (default: the `failed` signal, which the window shows)."""
        try:
            future = self.node.submit(fn, *args)
        except NodeError:  # the node stopped (the window is closing): nothing to do
            return
        future.add_done_callback(lambda f: self._post(lambda: self._deliver(done, failed, f)))

    def _deliver(self, done: Callable[[Any], None] | None,
                 failed: Callable[[str], None] | None, future: Future) -> None:
        try:
            result = future.result()
        except Exception as exc:  # shown to the person, never a crash of the window
            (failed or self.failed.emit)(str(exc))
            return
        if done is not None:
            done(result)

    def close(self) -> None:
        self._poll.stop()
        self._unsubscribe()
