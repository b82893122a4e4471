"""Settings and peers dialogs. Non-modal; every read and change runs on the Node's thread (a
facade call). Settings opens the Members and Invite people dialogs through the window."""

from __future__ import annotations

import time
from pathlib import Path

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.durations import ago
from app.identity_files import import_identity
from app.node_relays import Reach, relay_line
from app.records import WHAT_IS_COLLECTED, AddressError, AnalyticsStatus, parse_address

from .bridge import NodeBridge
from .data_settings import DataPage
from .notification_settings import NotificationSettings
from .relay_settings import RelaySettings


class SettingsDialog(QDialog):
    saved = Signal(str)  # what was changed, for tests and the status bar
    peersRequested = Signal()
    membersRequested = Signal()  # the Members dialog
    inviteRequested = Signal()  # the Invite people dialog
    leaveRequested = Signal()  # leave this workspace (the window confirms first)
    identityReplaced = Signal()  # the node must restart with the imported identity
    appearanceChanged = Signal(str)  # "system", "light" or "dark", once stored

    def __init__(self, bridge: NodeBridge, parent=None):
        super().__init__(parent, objectName="settingsDialog")
        self.bridge = bridge
        self.facade = facade = bridge.facade
        self.setWindowTitle("Settings")
        info = facade.info
        self.nick = QLineEdit(objectName="nickEdit")
        self.nick.returnPressed.connect(self.save_nick)
        save = QPushButton("Save nickname")
        save.clicked.connect(self.save_nick)
        members = QPushButton("Members…", objectName="openMembers")
        members.clicked.connect(self.membersRequested)
        invite = QPushButton("Invite people…", objectName="openInvite")
        invite.clicked.connect(self.inviteRequested)
        export = QPushButton("Export identity…")
        export.clicked.connect(self._export)
        import_ = QPushButton("Import identity…")
        import_.clicked.connect(self._import)
        peers = QPushButton("Peers and addresses…", objectName="openPeers")
        peers.clicked.connect(self.peersRequested)
        leave = QPushButton("Leave this workspace…", objectName="leaveWorkspace")
        leave.clicked.connect(self.leaveRequested)
        self.analytics = QCheckBox("Share anonymous usage statistics", objectName="analyticsOptIn")
        self.collector = QLineEdit(objectName="analyticsCollector",
                                   placeholderText="collector, e.g. http://stats.example:8080")
        self.analytics_error = QLabel(objectName="analyticsError", wordWrap=True)
        form = QFormLayout()
        nick_row = QHBoxLayout()
        nick_row.addWidget(self.nick)
        nick_row.addWidget(save)
        form.addRow("Nickname", nick_row)
        form.addRow("Your key", QLabel(info.key.hex(), objectName="identityKey"))
        form.addRow("Data folder", QLabel(str(info.data), objectName="dataFolder"))
        form.addRow("Members", row(members, invite, stretch=True))
        form.addRow("Identity", row(export, import_))
        form.addRow("Peers", peers)
        self.appearance = QComboBox(objectName="appearance")
        for label, value in (("Same as the system", "system"), ("Light", "light"),
                             ("Dark", "dark")):
            self.appearance.addItem(label, value)
        self.appearance.activated.connect(
            lambda index: self.set_appearance(self.appearance.itemData(index)))
        form.addRow("Appearance", self.appearance)
        note = QLabel("An invite code holds no secret: a member's computer admits whoever "
                      "brings it while the invite is open, and Members lists who was admitted.",
                      wordWrap=True)
        explained = QLabel(WHAT_IS_COLLECTED + " Off unless you tick the box; unticking deletes "
                           "what is waiting to be sent and asks the collector to delete the rest.",
                           wordWrap=True, objectName="analyticsExplained")
        general = QWidget(objectName="settingsGeneral")
        general_layout = QVBoxLayout(general)
        general_layout.addLayout(form)
        general_layout.addWidget(note)
        general_layout.addWidget(leave)
        general_layout.addStretch(1)
        privacy = QWidget(objectName="settingsPrivacy")
        privacy_layout = QVBoxLayout(privacy)
        privacy_layout.addWidget(self.analytics)
        privacy_layout.addWidget(self.collector)
        privacy_layout.addWidget(explained)
        privacy_layout.addWidget(self.analytics_error)
        privacy_layout.addStretch(1)
        # One page a topic; a feature with settings of its own adds its page here.
        self.pages = QTabWidget(objectName="settingsPages")
        self.pages.addTab(general, "General")
        self.pages.addTab(NotificationSettings(bridge, self), "Notifications")
        self.pages.addTab(privacy, "Privacy")
        self.relays = RelaySettings(bridge)
        self.relays.changed.connect(self.saved)
        self.pages.addTab(self.relays, "Relays")
        self.pages.addTab(DataPage(bridge, parent), "Your data")
        layout = QVBoxLayout(self)
        layout.addWidget(self.pages)
        layout.addWidget(close_buttons(self))
        bridge.then(facade.analytics_status(), done=self._analytics_loaded)
        bridge.then(facade.run(lambda ws: ws.nickname()),
                    done=lambda nick: self.nick.setText(nick or ""))
        bridge.then(facade.appearance(), done=self._appearance_loaded)

    def _appearance_loaded(self, appearance: str) -> None:
        self.appearance.setCurrentIndex(max(0, self.appearance.findData(appearance)))

    def set_appearance(self, appearance: str) -> None:
        self.bridge.then(self.facade.set_appearance(appearance),
                         done=lambda stored: (self.appearanceChanged.emit(stored),
                                              self.saved.emit("appearance")))

    def _analytics_loaded(self, status: AnalyticsStatus) -> None:
        self.analytics.setChecked(status.enabled)
        self.collector.setText(status.collector or "")
        self.analytics.toggled.connect(self.set_analytics)
        self.collector.editingFinished.connect(
            lambda: self.analytics.isChecked() and self.set_analytics(True))

    def set_analytics(self, on: bool) -> None:
        collector = self.collector.text().strip() or None
        self.analytics_error.clear()
        if on:
            self.bridge.then(self.facade.analytics_enable(collector),
                             done=lambda _: self.saved.emit("analytics on"),
                             failed=self.analytics_error.setText)
        else:
            self.bridge.then(self.facade.analytics_disable(),
                             done=lambda _: self.saved.emit("analytics off"),
                             failed=self.analytics_error.setText)

    def save_nick(self) -> None:
        name = self.nick.text().strip()
        self.bridge.then(self.facade.run(lambda ws: ws.nick(name).id),
                         done=lambda _: self.saved.emit("nickname"))

    def export_to(self, path: str, passphrase: str) -> None:
        self.bridge.then(self.facade.run(lambda ws: ws.export_identity(Path(path), passphrase)),
                         done=lambda _: self.saved.emit("identity"))

    def _export(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Export identity", "hearth-identity")
        if not path:
            return
        passphrase, ok = QInputDialog.getText(self, "Passphrase", "Protect it with:",
                                              QLineEdit.EchoMode.Password)
        if ok and passphrase:
            self.export_to(path, passphrase)


    def import_from(self, path: str, passphrase: str) -> None:
        self.bridge.then(self.facade.run(lambda ws: import_identity(ws.paths, Path(path), passphrase,
                                                                replace=True)),
                         done=lambda _: (self.saved.emit("identity imported"),
                                         self.identityReplaced.emit()))

    def _import(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import identity")
        if not path:
            return
        passphrase, ok = QInputDialog.getText(self, "Passphrase", "It was protected with:",
                                              QLineEdit.EchoMode.Password)
        if ok and passphrase:
            self.import_from(path, passphrase)


def close_buttons(dialog: QDialog) -> QDialogButtonBox:
    """A Close button (Escape does the same), for a dialog whose changes apply at once."""
    buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
    buttons.rejected.connect(dialog.close)
    return buttons


def row(*widgets, stretch: bool = False) -> QHBoxLayout:
    """Widgets side by side (at the left, with `stretch`)."""
    row = QHBoxLayout()
    for widget in widgets:
        row.addWidget(widget)
    if stretch:
        row.addStretch(1)
    return row


SOURCES = {"incoming": "connected to us", "mdns": "found on the network",
           "manual": "added by address", "remembered": "remembered"}


class PeersDialog(QDialog):
    added = Signal(str)

    def __init__(self, bridge: NodeBridge, parent=None):
        super().__init__(parent, objectName="peersDialog")
        self.bridge = bridge
        self.setWindowTitle("Peers")
        self.list = QListWidget(objectName="peerList")
        self.address = QLineEdit(objectName="peerAddress")
        self.address.setPlaceholderText("HOST:PORT, where the network blocks discovery")
        self.address.returnPressed.connect(self.add_peer)
        add = QPushButton("Add peer")
        add.clicked.connect(self.add_peer)
        self.error = QLabel(objectName="peerError")
        row = QHBoxLayout()
        row.addWidget(self.address)
        row.addWidget(add)
        layout = QVBoxLayout(self)
        layout.addWidget(self.list)
        layout.addLayout(row)
        layout.addWidget(self.error)
        layout.addWidget(close_buttons(self))
        self.refresh()

    def refresh(self) -> None:
        facade = self.bridge.facade
        self.bridge.then(facade.run(lambda ws: ws.nicknames()), done=lambda names: self.bridge.then(
            facade.peers(), done=lambda records: self.bridge.then(
                facade.reach(), done=lambda reach: self._show(records, names, reach))))

    def _show(self, records: list[dict], names: dict[bytes, str], reach: Reach) -> None:
        """One row per peer: who (once a session proved its key), then where, how it was
        found, and how it stands ("connected", "last seen 3 min ago", "cannot reach: …");
        then one per relay, and the members reached through the relays."""
        self.list.clear()
        now = time.time()
        records = sorted(records, key=lambda r: (not r["connected"], r["address"]))
        for record in records:
            key = bytes.fromhex(record["key"]) if record.get("key") else None
            who = (f"{names.get(key) or 'anonymous'} ({key.hex()[:8]})" if key
                   else "not met yet")
            if record["connected"]:
                state = "connected"
            elif record.get("last_error"):
                state = record["last_error"]
            else:
                state = f"last seen {ago(record.get('last_seen'), now)}"
            found = SOURCES.get(record["source"], record["source"])
            self.list.addItem(f"{'●' if record['connected'] else '○'}  {who}\n"
                              f"     {record['address']} · {found} · {state}")
        for state in reach.relays:
            self.list.addItem(f"{'●' if state.connected else '○'}  "
                              f"{relay_line(state, now).replace(' · ', chr(10) + '     ', 1)}")
        if reach.relayed:
            who = ", ".join(sorted(names.get(key) or key.hex()[:8] for key in reach.relayed))
            self.list.addItem(f"     through the relays: {who}")
        if not records and not reach.relays:
            self.list.addItem("No peers yet. Computers of this workspace on the same network "
                              "are found by themselves; elsewhere, add one by address below.")

    def add_peer(self) -> None:
        try:
            host, port = parse_address(self.address.text())
        except AddressError as exc:
            self.error.setText(str(exc))
            return
        self.error.clear()
        self.bridge.then(self.bridge.facade.add_peer(host, port),
                         done=lambda _: (self.added.emit(f"{host}:{port}"), self.refresh()))
