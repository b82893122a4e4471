"""The Qt side of the Node facade: Node events become signals on the GUI thread, and work runs
on the Node's thread with its result delivered back by signal. Nothing here waits."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from PySide6.QtCore import QObject, Signal, Slot

from app.node import Node, NodeError, NodeEvent


class NodeBridge(QObject):
    """Lives on the GUI thread. Signals emitted from the Node's thread are queued to it."""

    objectsAdded = Signal(list)  # ids of newly stored objects
    peersChanged = Signal(int)  # number of connected peers
    synced = Signal(dict)
    failed = Signal(str)  # a background call failed; the message is for a person
    _finished = Signal(object, object, object)  # (done, failed, future), on the GUI thread

    def __init__(self, node: Node, parent: QObject | None = None):
        super().__init__(parent)
        self.node = node
        self._finished.connect(self._deliver)
        self._unsubscribe = node.subscribe(self._on_node_event)

    def _on_node_event(self, event: NodeEvent) -> None:  # the Node's thread
        if event.kind == "objects":
            self.objectsAdded.emit(list(event.detail["ids"]))
        elif event.kind == "peers":
            self.peersChanged.emit(int(event.detail["online"]))
        elif event.kind == "synced":
            self.synced.emit(dict(event.detail))

    def run(self, fn: Callable[..., Any], *args: Any,
            done: Callable[[Any], None] | None = None,
            failed: Callable[[str], None] | None = None) -> None:
        """Run fn(*args) on the Node's thread; later, on the GUI thread, `done(result)` or
        `failed(message)` (default: the `failed` signal, which the window shows)."""
        try:
            future = self.node.submit(fn, *args)
        except NodeError:  # the node stopped (the window is closing): nothing to do
            return
        future.add_done_callback(lambda f: self._finished.emit(done, failed, f))

    @Slot(object, object, object)
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
        self._unsubscribe()
