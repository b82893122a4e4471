"""The dialogs of private channels (issue #18): "New private channel…" (a name, and the
workspace's members to let in) and the member picker behind "Add people…" and "Message
someone…". Both list ws.members.all() (everyone admitted, by nickname, lookalikes
told apart as in the member pane); neither reads the replica. The library's refusals (a name
it does not take, say) are shown in the dialog, which stays open."""

from __future__ import annotations

from collections.abc import Collection

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.records import MemberRecord

from . import _rows
from .avatars import avatar
from .bridge import NodeBridge, WhileOpen

AVATAR = 20  # px, before the device pixel ratio
KeyRole = Qt.ItemDataRole.UserRole
NameRole = Qt.ItemDataRole.UserRole + 1
PRIVATE_NOTE = ("Only the people in it can read its name and messages: they are encrypted for "
                "them. Its creator (or an admin) can add or take people out later.")


class MemberChecklist(QListWidget):
    """The workspace's members but me (and those in `exclude`), each with a box to tick (or,
    with `single`, one to select)."""

    def __init__(self, *, single: bool = False, parent: QWidget | None = None):
        super().__init__(parent, objectName="memberChoices")
        self.single = single
        self.setIconSize(QSize(AVATAR, AVATAR))
        self.setSelectionMode(QListWidget.SelectionMode.SingleSelection if single
                              else QListWidget.SelectionMode.NoSelection)

    def set_members(self, members: list[MemberRecord], me: bytes,
                    exclude: Collection[bytes] = ()) -> None:
        names = _rows.member_names((m.key, m.nick) for m in members)
        self.clear()
        ratio = self.devicePixelRatioF()
        for member in members:
            if member.key == me or member.key in exclude:
                continue
            name = names[member.key] if member.nick else member.key.hex()[:8]
            item = QListWidgetItem(QIcon(avatar(member.key, AVATAR, ratio)), name)
            item.setData(KeyRole, member.key)
            item.setData(NameRole, name)
            item.setToolTip(f"key {member.key.hex()}")
            if not self.single:
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(Qt.CheckState.Unchecked)
            self.addItem(item)

    def names(self) -> list[str]:
        return [self.item(i).data(NameRole) for i in range(self.count())]

    def tick(self, name: str, ticked: bool = True) -> None:
        """Tick (or select) the member shown as `name`."""
        for i in range(self.count()):
            item = self.item(i)
            if item.data(NameRole) == name:
                if self.single:
                    self.setCurrentItem(item)
                else:
                    item.setCheckState(Qt.CheckState.Checked if ticked
                                       else Qt.CheckState.Unchecked)

    def chosen(self) -> list[tuple[bytes, str]]:
        """(key, name) of each member ticked (or the one selected), in the list's order."""
        items = [self.item(i) for i in range(self.count())]
        if self.single:
            items = [item for item in items if item.isSelected()]
        else:
            items = [item for item in items if item.checkState() == Qt.CheckState.Checked]
        return [(item.data(KeyRole), item.data(NameRole)) for item in items]


class _Dialog(WhileOpen, QDialog):
    """What both dialogs share: the member list, a line for the library's refusals, and
    answers dropped once the dialog has closed."""

    def __init__(self, bridge: NodeBridge, name: str, title: str, ok: str, *,
                 single: bool = False, parent: QWidget | None = None):
        super().__init__(parent, objectName=name)
        self.bridge = bridge
        self._watch_closing()
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.setWindowTitle(title)
        self.members = MemberChecklist(single=single)
        self.error = QLabel(objectName="privateError", wordWrap=True, visible=False)
        self.error.setTextFormat(Qt.TextFormat.PlainText)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText(ok)
        self.buttons.rejected.connect(self.reject)
        self.resize(380, 420)

    def say(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(bool(message))

    _refused = say


class NewPrivateChannelDialog(_Dialog):
    """A name and whom to let in; Create asks the library, and `created` carries the new
    channel's id once it answers."""

    created = Signal(bytes)

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(bridge, "newPrivateChannel", "New private channel", "Create",
                         parent=parent)
        self.name = QLineEdit(objectName="privateChannelName", placeholderText="Name")
        self.name.textChanged.connect(lambda text: self.ok.setEnabled(bool(text.strip())))
        self.ok.setEnabled(False)
        self.buttons.accepted.connect(self._confirmed)
        note = QLabel(PRIVATE_NOTE, wordWrap=True)
        note.setEnabled(False)  # muted, in the palette's disabled text colour
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("Name:"))
        layout.addWidget(self.name)
        layout.addWidget(QLabel("Who is in it (besides you):"))
        layout.addWidget(self.members, 1)
        layout.addWidget(note)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        me = bridge.facade.key
        self._then(bridge.facade.run(lambda ws: ws.members.all()),
                   done=lambda members: self.members.set_members(members, me))

    def _confirmed(self) -> None:
        name = self.name.text().strip()
        if not name:
            return
        self.say("")
        self.ok.setEnabled(False)
        keys = [key for key, _ in self.members.chosen()]
        self._then(self.bridge.facade.run(lambda ws: ws.private.create(name, keys)),
                   done=self._created)

    def say(self, message: str) -> None:
        super().say(message)
        if message:  # refused: let them change it and try again
            self.ok.setEnabled(bool(self.name.text().strip()))

    def _created(self, channel: bytes) -> None:
        self.created.emit(channel)
        self.accept()


class PickMembersDialog(_Dialog):
    """Members to choose from: those not in `exclude`, all of them ticked (or, with `single`,
    the one selected) going to `chosen` as (key, name) pairs when OK is clicked."""

    chosen = Signal(list)

    def __init__(self, bridge: NodeBridge, title: str, prompt: str, ok: str, *,
                 exclude: Collection[bytes] = (), single: bool = False,
                 parent: QWidget | None = None):
        super().__init__(bridge, "pickMembers", title, ok, single=single, parent=parent)
        self.empty = QLabel("Everyone in the workspace is in it already." if not single
                            else "No one else is in this workspace yet.", wordWrap=True,
                            visible=False)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel(prompt, wordWrap=True))
        layout.addWidget(self.members, 1)
        layout.addWidget(self.empty)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)
        self.buttons.accepted.connect(self._confirmed)
        if single:
            self.members.itemDoubleClicked.connect(lambda _: self._confirmed())
        me = bridge.facade.key
        self._then(bridge.facade.run(lambda ws: ws.members.all()),
                   done=lambda members: self._listed(members, me, exclude))

    def _listed(self, members: list[MemberRecord], me: bytes, exclude: Collection[bytes]) -> None:
        self.members.set_members(members, me, exclude)
        self.empty.setVisible(self.members.count() == 0)

    def _confirmed(self) -> None:
        picked = self.members.chosen()
        if not picked:
            self.say("Choose someone first.")
            return
        self.chosen.emit(picked)
        self.accept()
