"""How the main window follows its Node: what stored objects changed (the bridge's Changes)
updates only the parts that show it, and a burst of them is gathered into one update every
UPDATE_MS; "syncing…" while others' objects arrive; connected peers; this computer's removal.

Messages arriving in the channel shown cost one read of it (and the read mark that follows
the new rows); arriving elsewhere, one read of the channel list with its unread counts. Owned
by the window (`window.updates`)."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from app import _text
from app.events import ObjectsStored, Removed, Synced
from app.node_relays import Reach, peer_status, relay_line

from . import conversation_target
from .bridge import Changes

if TYPE_CHECKING:
    from .main_window import MainWindow

UPDATE_MS = 30  # changes that come within this are shown together
QUIET_MS = 1000  # "syncing…" until objects stop arriving for this long


class WindowUpdates(QObject):
    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window
        self._waiting: Changes | None = None
        self._update = QTimer(self, singleShot=True, interval=UPDATE_MS)
        self._update.timeout.connect(self._apply)
        self.last_synced: str | None = None
        self.quiet = QTimer(self, singleShot=True, interval=QUIET_MS)
        self.quiet.timeout.connect(self._sync_quiet)
        bridge = window.bridge
        bridge.changed.connect(self._changed)
        bridge.objectsStored.connect(self._stored)
        bridge.peersChanged.connect(lambda _: self.ask_online())
        bridge.synced.connect(self._synced)
        bridge.removed.connect(self._removed)
        bridge.keptChanged.connect(lambda _: window.kept.load())

    # What changed ------------------------------------------------------------------------------

    def _changed(self, changes: Changes) -> None:
        if self._waiting is None:
            self._waiting = changes
        else:
            self._waiting.merge(changes)
        if not self._update.isActive():
            self._update.start()

    def _apply(self) -> None:
        changes, self._waiting = self._waiting, None
        if changes is None:
            return
        w = self.window
        shown = conversation_target.shown(w)
        private = w.private.channel_id if w.private.is_open else None
        # What the window marks read as it shows it: arrivals there change no unread count.
        read = None if not w.isVisible() else w.channel if shown.kind == "channel" \
            else private if shown.kind in ("private", "dm") else None
        names = changes.nicknames
        # Who is in, whose objects count and what their names are: every list reads again.
        again = names or changes.membership
        if again or changes.arrived_in(w.messages.channel) or changes.changed(w.messages.channel):
            w.messages.reload()
        if private is not None and (again or changes.arrived_in(private)
                                    or changes.changed(private)):  # a key: readable now
            w.private.model.reload()
        if not w.thread_pane.isHidden() and (again or changes.arrived_in(w.thread_pane.channel)):
            w.thread_pane.reload()
        if changes.arrived_elsewhere(read) or changes.channels or changes.membership:
            w.channels.refresh()
        if again or any(isinstance(c.channel, bytes) for c in changes.channels):
            w.private.refresh()
        if again or changes.changed(w.channel):
            w._load_state()
        if names:
            w._load_nicknames()
        if changes.membership:
            w.bridge.then(w.facade.run(lambda ws: ws.is_admin()), done=w._admin_known)
            if w.workspaces.unnamed:  # a joined workspace: its name comes with its genesis
                w.workspaces.load()
        self._documents(changes)

    def _documents(self, changes: Changes) -> None:
        w = self.window
        if any(branch is None for _, branch in changes.documents):  # titles, new documents
            w.documents.load()
        if w.documents.showing() and (changes.membership or any(
                doc == w.document_pane.doc_id for doc, _ in changes.documents)):
            w.document_pane.reload()

    # Sync status -------------------------------------------------------------------------------

    def _stored(self, stored: ObjectsStored) -> None:
        pending = self.window.facade.pending()
        if any(i not in pending for i in stored.ids[:50]):  # others' objects arriving
            self.window.sync_state.setText("syncing…")
            self.quiet.start()

    def _synced(self, _: Synced) -> None:
        self.ask_online()
        self.last_synced = datetime.now().strftime("%H:%M:%S")
        if not self.quiet.isActive():
            self._sync_quiet()

    def _sync_quiet(self) -> None:
        state = self.window.sync_state
        if state.text() == "syncing…":  # what arrived is in: we are in step again
            self.last_synced = datetime.now().strftime("%H:%M:%S")
        state.setText(f"last synced {self.last_synced}" if self.last_synced else "idle")

    def ask_online(self) -> None:
        self.window.bridge.then(self.window.facade.reach(), done=self._online)

    def _online(self, reach: Reach) -> None:
        w = self.window
        online = set(reach.online)
        changed = online != w._online
        w._online = online
        w.peer_status.setText(peer_status(reach))
        w.peer_status.setToolTip("\n".join(relay_line(state) for state in reach.relays))
        if changed:  # the member pane marks who is connected
            w._load_state()

    # This computer's removal -------------------------------------------------------------------

    def check_removal(self) -> None:
        """Ask whether this computer's key was removed (at the start; later the Node says so
        with a Removed event)."""
        if self.window.removed_banner.isHidden():
            self.window.bridge.then(self.window.facade.removal(), self._show_removal)

    def _removed(self, _: Removed) -> None:
        self.check_removal()

    def _show_removal(self, removal) -> None:
        w = self.window
        if removal is None or not w.removed_banner.isHidden():
            return
        who = _text.line(removal.nick) if removal.nick else removal.by.hex()[:8]
        when = datetime.fromtimestamp(removal.at_ms / 1000).strftime("%Y-%m-%d %H:%M")
        why = f": {_text.line(removal.reason)}" if removal.reason else " (no reason given)"
        w.removed_banner.setText(
            f"You were removed from this workspace by {who} ({removal.by.hex()[:8]}) on "
            f"{when}{why}. What is here stays readable; you can no longer post.")
        w.removed_banner.show()
        for widget in (w.attach_button, w.emoji_button):
            widget.setEnabled(False)
        w.composer.close_for_good("You were removed from this workspace")
