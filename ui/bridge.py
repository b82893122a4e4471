"""The Qt side of the Node facade: Node events become signals on the GUI thread, and the
futures the facade's methods return are delivered back to the GUI thread. Nothing here waits.

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

from app.facade import NodeFacade
from app.node import Node, NodeEvent, NodeStopped

POLL_MS = 10  # how often the GUI thread takes in results and events


class Inbox(QObject):
    """Hands work finished on other threads (the Node's, a worker's) to the GUI thread."""

    def __init__(self, parent: QObject | None = None):
        super().__init__(parent)
        self._queue: queue.SimpleQueue[Callable[[], None]] = queue.SimpleQueue()
        self._poll = QTimer(self, interval=POLL_MS)
        self._poll.timeout.connect(self._drain)
        self._poll.start()
        self.failed: Callable[[str], None] = lambda message: None  # the default for `then`

    def post(self, action: Callable[[], None]) -> None:  # any thread; no Qt call here
        self._queue.put(action)

    @Slot()
    def _drain(self) -> None:  # the GUI thread
        while True:
            try:
                action = self._queue.get_nowait()
            except queue.Empty:
                return
            action()

    def then(self, future: Future, done: Callable[[Any], None] | None = None,
             failed: Callable[[str], None] | None = None) -> None:
        """Later, on the GUI thread: `done(result)`, or `failed(message)` if the work failed
        (default: self.failed). A NodeStopped failure is dropped: the Node is stopping because
        the window closes or switches workspaces, and there is nothing to tell."""
        future.add_done_callback(lambda f: self.post(lambda: self._deliver(done, failed, f)))

    def _deliver(self, done: Callable[[Any], None] | None,
                 failed: Callable[[str], None] | None, future: Future) -> None:
        try:
            result = future.result()
        except NodeStopped:
            return
        except Exception as exc:  # shown to the person, never a crash of the window
            (failed or self.failed)(str(exc))
            return
        if done is not None:
            done(result)

    def close(self) -> None:
        self._poll.stop()


class NodeBridge(QObject):
    """Lives on the GUI thread; everything it emits is emitted there. `facade` is all of the
    Node that the window sees."""

    objectsAdded = Signal(list)  # ids of newly stored objects
    peersChanged = Signal(int)  # number of connected peers
    synced = Signal(dict)
    delivered = Signal()  # facade.pending() changed: messages no peer had have reached one
    typing = Signal(bytes, str)  # a connected peer's key and the channel they are typing in
    # A connected peer's key, the document they have open (id), its branch, the commits (hex)
    # their selection refers to, and its anchor and position (codepoints of the text there).
    presence = Signal(bytes, bytes, str, list, int, int)
    presenceLeft = Signal(bytes, bytes)  # a peer's key and the document they closed
    fileProgress = Signal(object)  # an attached file being fetched: an app.records.FileProgress
    historyProgress = Signal(object)  # history arriving from peers: an app.records.HistoryProgress
    failed = Signal(str)  # a background call failed; the message is for a person

    def __init__(self, node: Node, parent: QObject | None = None):
        super().__init__(parent)
        self.facade: NodeFacade = node.facade
        self._inbox = Inbox(self)
        self._inbox.failed = self.failed.emit
        self._unsubscribe = self.facade.subscribe(self._on_node_event)

    def _on_node_event(self, event: NodeEvent) -> None:  # the Node's thread
        post = self._inbox.post
        if event.kind == "objects":
            ids = list(event.detail["ids"])
            post(lambda: self.objectsAdded.emit(ids))
        elif event.kind == "peers":
            online = int(event.detail["online"])
            post(lambda: self.peersChanged.emit(online))
        elif event.kind == "delivered":
            post(self.delivered.emit)
        elif event.kind == "synced":
            detail = dict(event.detail)
            post(lambda: self.synced.emit(detail))
        elif event.kind == "typing":
            key, channel = bytes(event.detail["key"]), str(event.detail["channel"])
            post(lambda: self.typing.emit(key, channel))
        elif event.kind == "presence":
            detail = event.detail
            args = (bytes(detail["key"]), bytes(detail["doc"]), str(detail["branch"]),
                    [bytes(h).hex() for h in detail["heads"]], int(detail["anchor"]),
                    int(detail["at"]))
            post(lambda: self.presence.emit(*args))
        elif event.kind == "presence-left":
            key, doc = bytes(event.detail["key"]), bytes(event.detail["doc"])
            post(lambda: self.presenceLeft.emit(key, doc))
        elif event.kind == "files":
            progress = event.detail["progress"]
            post(lambda: self.fileProgress.emit(progress))
        elif event.kind == "history":
            history = event.detail["progress"]
            post(lambda: self.historyProgress.emit(history))

    def then(self, future: Future, done: Callable[[Any], None] | None = None,
             failed: Callable[[str], None] | None = None) -> None:
        """Deliver a facade future on the GUI thread: `done(result)`, or `failed(message)`
        (default: the `failed` signal, which the window shows)."""
        self._inbox.then(future, done, failed)

    def close(self) -> None:
        self._inbox.close()
        self._unsubscribe()


class WhileOpen:
    """Mixed into a dialog that deletes itself on closing: `_then` hands a facade future's
    answer to `done` only while the dialog is open (its widgets are gone after), and a failure
    to `failed`, else to the class's `_refused` (None: the bridge's default, the window's
    status line, open or not). `_watch_closing()` in `__init__` starts it."""

    bridge: NodeBridge
    _closed = False
    _refused: Callable[..., None] | None = None

    def _watch_closing(self) -> None:
        self.finished.connect(self._mark_closed)

    def _mark_closed(self, _result: int = 0) -> None:
        self._closed = True

    def _then(self, future: Future, done: Callable[[Any], None],
              failed: Callable[[str], None] | None = None) -> None:
        failed = failed or self._refused
        self.bridge.then(future, done=lambda answer: None if self._closed else done(answer),
                         failed=None if failed is None
                         else lambda message: None if self._closed else failed(message))
