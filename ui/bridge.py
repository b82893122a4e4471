"""The Qt side of the Node facade: Node events (app/events.py) become signals on the GUI thread,
and the futures the facade's methods return are delivered back to the GUI thread. Nothing here
waits.

Results and events cross threads through a queue that the GUI thread drains on a short timer.
Emitting PySide signals from the Node's (non-Qt) thread crashed the interpreter under load
("deallocating None": a reference-count error inside the binding), so no other thread ever
touches Qt.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from PySide6.QtCore import QObject, QTimer, Signal, Slot

from app.events import (
    Changed,
    ChannelChanged,
    Delivered,
    DocumentChanged,
    FileProgressed,
    HistoryProgressed,
    KeptChanged,
    MembershipChanged,
    MessagesArrived,
    NicknamesChanged,
    NodeEvent,
    ObjectsStored,
    PeerPresence,
    PeerPresenceLeft,
    PeerPrivateTyping,
    PeersChanged,
    PeerTyping,
    Removed,
    Synced,
)
from app.facade import NodeFacade
from app.node import Node, NodeStopped

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


@dataclass
class Changes:
    """What objects stored since the window last heard changed (app.events' Changed events,
    a burst of them gathered into one): per channel the ids arrived, channels whose state
    changed, documents (id, branch), and whether membership or nicknames changed."""

    arrived: list[MessagesArrived] = field(default_factory=list)
    channels: list[ChannelChanged] = field(default_factory=list)
    documents: set[tuple[bytes, str | None]] = field(default_factory=set)
    membership: bool = False
    nicknames: bool = False

    def add(self, event: Changed) -> None:
        match event:
            case MessagesArrived():
                self.arrived.append(event)
            case ChannelChanged():
                self.channels.append(event)
            case DocumentChanged(doc=doc, branch=branch):
                self.documents.add((doc, branch))
            case MembershipChanged():
                self.membership = True
            case NicknamesChanged():
                self.nicknames = True

    def merge(self, later: Changes) -> None:
        self.arrived += later.arrived
        self.channels += later.channels
        self.documents |= later.documents
        self.membership |= later.membership
        self.nicknames |= later.nicknames

    def arrived_in(self, channel: str | bytes | None) -> bool:
        """Whether messages (or edits, reactions, ...) arrived in `channel`."""
        return channel is not None and any(e.names(channel) for e in self.arrived)

    def arrived_elsewhere(self, *shown: str | bytes | None) -> bool:
        """Whether any arrived in a channel other than those `shown`."""
        return any(not any(e.names(channel) for channel in shown if channel is not None)
                   for e in self.arrived)

    def changed(self, channel: str | bytes | None) -> bool:
        """Whether `channel`'s state changed (topic, who is in it, a private one's name)."""
        return channel is not None and any(e.names(channel) for e in self.channels)


class NodeBridge(QObject):
    """Lives on the GUI thread; everything it emits is emitted there. `facade` is all of the
    Node that the window sees. What stored objects changed comes as one `changed` (a Changes)
    per burst: events that come while one waits for the GUI thread join it."""

    objectsStored = Signal(object)  # an app.events.ObjectsStored: new objects, whoever made them
    changed = Signal(object)  # a Changes: what they changed
    membershipChanged = Signal()  # members, admins, roles, invites, policies
    nicknamesChanged = Signal()
    peersChanged = Signal(int)  # number of connected peers
    synced = Signal(object)  # an app.events.Synced: a round with a peer finished
    delivered = Signal()  # facade.pending() changed: messages no peer had have reached one
    typing = Signal(bytes, str)  # a connected peer's key and the channel they are typing in
    privateTyping = Signal(bytes, bytes)  # ... in a private channel (its id) we are both in
    # A connected peer's key, the document they have open (id), its branch, the commits (hex)
    # their selection refers to, and its anchor and position (codepoints of the text there).
    presence = Signal(bytes, bytes, str, list, int, int)
    presenceLeft = Signal(bytes, bytes)  # a peer's key and the document they closed
    fileProgress = Signal(object)  # an attached file being fetched: an app.records.FileProgress
    historyProgress = Signal(object)  # history arriving from peers: an app.records.HistoryProgress
    keptChanged = Signal(object)  # what this computer keeps: an app.records.Kept
    removed = Signal(object)  # an app.events.Removed: this computer's key was removed
    failed = Signal(str)  # a background call failed; the message is for a person

    def __init__(self, node: Node, parent: QObject | None = None):
        super().__init__(parent)
        self.facade: NodeFacade = node.facade
        self._inbox = Inbox(self)
        self._inbox.failed = self.failed.emit
        self._changes: Changes | None = None  # gathered on the Node's thread, not yet handed on
        self._changes_lock = threading.Lock()
        self._unsubscribe = self.facade.subscribe(self._on_node_event)

    def _on_node_event(self, event: NodeEvent) -> None:  # the Node's thread
        post = self._inbox.post
        match event:
            case MessagesArrived() | ChannelChanged() | DocumentChanged() | MembershipChanged() \
                    | NicknamesChanged():
                with self._changes_lock:
                    first = self._changes is None
                    if self._changes is None:
                        self._changes = Changes()
                    self._changes.add(event)
                if first:
                    post(self._hand_on_changes)
            case ObjectsStored():
                post(lambda: self.objectsStored.emit(event))
            case PeersChanged(online=online):
                post(lambda: self.peersChanged.emit(online))
            case Delivered():
                post(self.delivered.emit)
            case Synced():
                post(lambda: self.synced.emit(event))
            case PeerTyping(key=key, channel=channel):
                post(lambda: self.typing.emit(key, channel))
            case PeerPrivateTyping(key=key, channel=private):
                post(lambda: self.privateTyping.emit(key, private))
            case PeerPresence():
                args = (event.key, event.doc, event.branch, [h.hex() for h in event.heads],
                        event.anchor, event.at)
                post(lambda: self.presence.emit(*args))
            case PeerPresenceLeft(key=key, doc=doc):
                post(lambda: self.presenceLeft.emit(key, doc))
            case FileProgressed(progress=progress):
                post(lambda: self.fileProgress.emit(progress))
            case HistoryProgressed(progress=history):
                post(lambda: self.historyProgress.emit(history))
            case KeptChanged(kept=kept):
                post(lambda: self.keptChanged.emit(kept))
            case Removed():
                post(lambda: self.removed.emit(event))

    def _hand_on_changes(self) -> None:  # the GUI thread
        with self._changes_lock:
            changes, self._changes = self._changes, None
        if changes is None:
            return
        self.changed.emit(changes)
        if changes.membership:
            self.membershipChanged.emit()
        if changes.nicknames:
            self.nicknamesChanged.emit()

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
