"""Settings' Relays page: the relays this workspace syncs through, each with how it is doing,
and for admins adding one (its HOST:PORT and the key `hearth relay serve` printed) or taking
one back; the same library calls as `hearth relay add/remove/list` (app.relays)."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app import relays
from app.node_relays import Reach, relay_line
from app.relay_list import Relay

from .bridge import NodeBridge

NOTE = ("A relay stores and forwards sealed envelopes it cannot read, so members on other "
        "networks sync through it. Run one with `hearth relay serve` on a machine everyone "
        "can reach.")


class RelaySettings(QWidget):
    changed = Signal(str)  # "relay added" / "relay removed", once stored

    def __init__(self, bridge: NodeBridge, parent=None):
        super().__init__(parent, objectName="settingsRelays")
        self.bridge = bridge
        self._admin = False
        self.list = QListWidget(objectName="relayList")
        self.list.itemSelectionChanged.connect(self._selected)
        self.address = QLineEdit(objectName="relayAddress", placeholderText="HOST:PORT")
        self.key = QLineEdit(objectName="relayKey",
                             placeholderText="its key, as `hearth relay serve` printed it")
        self.add = QPushButton("Add relay", objectName="addRelay")
        self.add.clicked.connect(self.add_relay)
        self.remove = QPushButton("Remove", objectName="removeRelay", enabled=False)
        self.remove.clicked.connect(self.remove_relay)
        self.admin_note = QLabel(objectName="relayAdminNote", wordWrap=True)
        self.error = QLabel(objectName="relayError", wordWrap=True)
        fields = QHBoxLayout()
        fields.addWidget(self.address, 1)
        fields.addWidget(self.key, 2)
        fields.addWidget(self.add)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(NOTE, wordWrap=True))
        layout.addWidget(self.list)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.remove)
        layout.addLayout(buttons)
        layout.addLayout(fields)
        layout.addWidget(self.admin_note)
        layout.addWidget(self.error)
        self.refresh()

    def refresh(self) -> None:
        facade = self.bridge.facade
        self.bridge.then(facade.run(lambda ws: (relays.named(ws), ws.is_admin())),
                         done=lambda got: self.bridge.then(
                             facade.reach(), done=lambda reach: self._show(*got, reach)))

    def _show(self, named: list[Relay], admin: bool, reach: Reach) -> None:
        states = {state.address: state for state in reach.relays}
        self.list.clear()
        for relay in named:
            state = states.get(relay.address)
            text = relay_line(state) if state else f"relay {relay.hostport} · not dialled yet"
            item = QListWidgetItem(text)
            item.setData(Qt.ItemDataRole.UserRole, relay.key.hex())
            self.list.addItem(item)
        if not named:
            self.list.addItem("No relays: members sync only with computers on their network.")
        for widget in (self.address, self.key, self.add):
            widget.setEnabled(admin)
        self.admin_note.setText("" if admin else "Only admins add or remove relays.")
        self._admin = admin
        self._selected()

    def _selected(self) -> None:
        item = self.list.currentItem()
        self.remove.setEnabled(self._admin and item is not None
                               and item.data(Qt.ItemDataRole.UserRole) is not None)

    def add_relay(self) -> None:
        address, key = self.address.text().strip(), self.key.text().strip()
        self.error.clear()
        self.bridge.then(self.bridge.facade.run(lambda ws: relays.add_relay(ws, address, key)),
                         done=lambda _: (self.address.clear(), self.key.clear(),
                                         self.changed.emit("relay added"), self.refresh()),
                         failed=self.error.setText)

    def remove_relay(self) -> None:
        item = self.list.currentItem()
        key = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if key is None:
            return
        self.error.clear()
        self.bridge.then(self.bridge.facade.run(lambda ws: relays.remove_relay(ws, key)),
                         done=lambda _: (self.changed.emit("relay removed"), self.refresh()),
                         failed=self.error.setText)
