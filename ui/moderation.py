"""Moderation in the window: Hide for everyone (moderators) and Block in a message's and a
member's context menu, each asked about first, and the moderation log with the keys blocked on
this computer.

`ModerationActions` is made by ConversationActions for each message list: MessageView asks it
for its entries when it builds a message's menu (`add_to_menu`), and a MemberPane asks it for a
member's (`watch_members`). A moderator's message list has the posts moderators hid, marked
(ui/models.py reads with hidden=True); their menu offers Show again… instead of Hide. Nothing
here reads the replica: whether I moderate a channel, hiding, blocking and the log are
ws.moderation's (app/moderation.py), run on the Node's thread (facade.run) and answered
through the bridge; after a block, which adds no object, the list is read again. How a log entry reads is decided without Qt (`describe`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.records import BlockedKey, Message, ModAction, ModerationLog

from . import _rows
from .bridge import NodeBridge, WhileOpen
from .models import MessageListModel

MAX_REASON = 256  # codepoints, as core.kinds.MAX_REASON (ingest refuses longer ones)
EXCERPT = 60  # characters of a hidden post quoted in the log
ActionRole = Qt.ItemDataRole.UserRole  # a log row's ModAction
KeyRole = Qt.ItemDataRole.UserRole  # a blocked row's key


def describe(action: ModAction, names: Mapping[bytes, str],
             excerpts: Mapping[bytes, str] | None = None) -> str:
    """A log entry as a sentence: "ada hid bob's post “buy now”: spam"."""
    def who(key: bytes) -> str:
        return names.get(key) or key.hex()[:8]

    if action.action == "moderator":
        what = f"made {who(action.target)} a moderator of #{action.channel}"
    elif action.action == "none":
        what = f"took {who(action.target)}'s moderator role in #{action.channel} away"
    else:
        verb = "hid" if action.action == "hide" else "showed again"
        if action.post:
            excerpt = " ".join((excerpts or {}).get(action.target, "").split())
            if len(excerpt) > EXCERPT:
                excerpt = excerpt[:EXCERPT - 1] + "…"
            quoted = f" “{excerpt}”" if excerpt else ""
            what = f"{verb} a post{quoted} in #{action.channel}"
        else:
            what = f"{verb} {who(action.target)}'s posts in #{action.channel}"
    reason = f": {action.reason}" if action.reason else ""
    counts = "" if action.counts else "  (no longer counts)"
    return f"{who(action.author)} {what}{reason}{counts}"


class ReasonDialog(QDialog):
    """Asks why, before a hide or a show: the reason goes in the log everyone reads. OK is
    enabled once a reason is typed; `reasoned` carries it."""

    reasoned = Signal(str)

    def __init__(self, title: str, question: str, parent: QWidget | None = None):
        super().__init__(parent, objectName="moderationReason")
        self.setWindowTitle(title)
        self.setWindowModality(Qt.WindowModality.WindowModal)
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        label = QLabel(question, wordWrap=True, objectName="reasonQuestion")
        label.setTextFormat(Qt.TextFormat.PlainText)
        note = QLabel("Everyone in the workspace can read the reason in the moderation log.",
                      wordWrap=True)
        note.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.reason = QLineEdit(objectName="reasonText", maxLength=MAX_REASON)
        self.reason.setPlaceholderText("Reason")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok
                                        | QDialogButtonBox.StandardButton.Cancel)
        self.ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        self.ok.setText(title)
        self.ok.setEnabled(False)
        self.reason.textChanged.connect(lambda text: self.ok.setEnabled(bool(text.strip())))
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(label)
        layout.addWidget(self.reason)
        layout.addWidget(note)
        layout.addWidget(self.buttons)

    def accept(self) -> None:
        text = self.reason.text().strip()
        if text:
            self.reasoned.emit(text)
            super().accept()


class ModerationLogDialog(WhileOpen, QDialog):
    """The moderation log of a channel, oldest first (entries that no longer count greyed),
    Show again for the hide selected when I moderate the channel, and who is blocked on this
    computer, with Unblock for the one selected. The dialog is deleted when it closes:
    answers that come back later are dropped."""

    changed = Signal()  # something was shown again or unblocked: lists showing it reload

    def __init__(self, bridge: NodeBridge, channel: str, parent: QWidget | None = None):
        super().__init__(parent, objectName="moderationLog")
        self.bridge, self.channel = bridge, channel
        self.moderator = False
        self._watch_closing()
        self.setWindowTitle(f"Moderation log · #{channel}")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.entries = QListWidget(objectName="moderationEntries")
        self.entries.setWordWrap(True)
        self.entries.setAlternatingRowColors(True)
        self.empty = QLabel("No moderation in this channel yet.", objectName="moderationEmpty")
        self.empty.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.show_again = QPushButton("Show again…", objectName="showAgain", enabled=False)
        self.show_again.clicked.connect(self._show_again)
        # Selected, not current: a list given focus makes its first row current, unselected.
        self.entries.itemSelectionChanged.connect(self._selected)
        self.blocked = QListWidget(objectName="blockedKeys")
        self.blocked.setMaximumHeight(90)
        self.unblock = QPushButton("Unblock", objectName="unblock", enabled=False)
        self.unblock.clicked.connect(self._unblock)
        self.blocked.itemSelectionChanged.connect(
            lambda: self.unblock.setEnabled(bool(self.blocked.selectedItems())))
        blocked_label = QLabel("Blocked on this computer (only you see this):")
        close = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        close.rejected.connect(self.reject)
        row = QHBoxLayout()
        row.addStretch(1)
        row.addWidget(self.show_again)
        blocked_row = QHBoxLayout()
        blocked_row.addWidget(self.blocked, 1)
        blocked_row.addWidget(self.unblock, 0, Qt.AlignmentFlag.AlignTop)
        layout = QVBoxLayout(self)
        layout.addWidget(self.entries, 1)
        layout.addWidget(self.empty)
        layout.addLayout(row)
        layout.addWidget(blocked_label)
        layout.addLayout(blocked_row)
        layout.addWidget(close)
        self.resize(560, 420)
        self.reload()

    def reload(self) -> None:
        run, channel = self.bridge.facade.run, self.channel
        self._then(run(lambda ws: ws.moderation.log(channel)), self._logged)
        self._then(run(lambda ws: ws.moderation.moderates(channel)), self._moderates)
        self._then(run(lambda ws: ws.moderation.blocked()), self._blocked)
        self._then(run(lambda ws: ws.nicknames()), self._named)

    def _moderates(self, moderator: bool) -> None:
        self.moderator = moderator
        self._selected()

    def _logged(self, log: ModerationLog) -> None:
        self.entries.clear()
        dim = self.palette().placeholderText()
        for action in log.actions:
            item = QListWidgetItem(f"{_rows.full_time(action.ts)}\n"
                                   f"{describe(action, log.names, log.excerpts)}")
            item.setData(ActionRole, action)
            if not action.counts:
                item.setForeground(dim)
            self.entries.addItem(item)
        self.empty.setVisible(not log.actions)
        self._selected()

    def _named(self, names: dict[bytes, str]) -> None:
        self._names = names
        for row in range(self.blocked.count()):
            item = self.blocked.item(row)
            key = item.data(KeyRole)
            item.setText(self._blocked_label(key))

    def _blocked_label(self, key: bytes) -> str:
        nick = getattr(self, "_names", {}).get(key)
        return f"{nick} ({key.hex()[:8]})" if nick else key.hex()[:16]

    def _blocked(self, blocked: list[BlockedKey]) -> None:
        self.blocked.clear()
        for entry in blocked:
            item = QListWidgetItem(self._blocked_label(entry.key))
            item.setData(KeyRole, entry.key)
            item.setToolTip(f"blocked since {_rows.full_time(entry.ts)}\nkey {entry.key.hex()}")
            self.blocked.addItem(item)
        self.unblock.setEnabled(bool(self.blocked.selectedItems()))

    def selected_action(self) -> ModAction | None:
        items = self.entries.selectedItems()
        return items[0].data(ActionRole) if items else None

    def _selected(self) -> None:
        action = self.selected_action()
        self.show_again.setEnabled(self.moderator and action is not None
                                   and action.action == "hide" and action.counts)

    def _show_again(self) -> ReasonDialog | None:
        action = self.selected_action()
        if action is None:
            return None
        dialog = ReasonDialog("Show again", "Show this again to everyone?", self)
        channel = self.channel
        dialog.reasoned.connect(lambda reason: self._then(
            self.bridge.facade.run(
                lambda ws: ws.moderation.unhide(channel, action.target, reason).id),
            lambda _: self._done()))
        dialog.open()
        return dialog

    def _unblock(self) -> None:
        items = self.blocked.selectedItems()
        if items:
            key = items[0].data(KeyRole)
            self._then(self.bridge.facade.run(lambda ws: ws.moderation.unblock(key)),
                       lambda _: self._done())

    def _done(self) -> None:
        self.changed.emit()
        self.reload()


class ModerationActions(QObject):
    """What a message list (and a member pane) offers for moderation, for one window."""

    # A block, an unblock or a show again changed what the views show (a block adds no
    # object, so no change event follows): what lists members or counts should reload.
    viewsChanged = Signal()

    def __init__(self, bridge: NodeBridge, model: MessageListModel, parent: QWidget):
        super().__init__(parent)
        self.bridge, self.model, self.window = bridge, model, parent
        self._moderated: dict[str, bool] = {}  # channel -> I moderate it (as last asked)
        model.modelReset.connect(self._ask)
        bridge.membershipChanged.connect(lambda: self._ask(again=True))  # roles may change

    # Who moderates what ---------------------------------------------------------------------

    def _channels(self) -> set[str]:
        channels = {m.channel for m in self.model.messages}
        if self.model.channel:
            channels.add(self.model.channel)
        return channels

    def _ask(self, again: bool = False) -> None:
        for channel in self._channels():
            if again or channel not in self._moderated:
                self.bridge.then(self.bridge.facade.run(
                                     lambda ws, c=channel: ws.moderation.moderates(c)),
                                 done=lambda yes, c=channel: self._moderated.__setitem__(c, yes),
                                 failed=lambda _: None)  # a channel with a name it refuses

    def moderates(self, channel: str) -> bool:
        return self._moderated.get(channel, False)

    # Menus ------------------------------------------------------------------------------------

    def add_to_menu(self, menu: QMenu, message: Message, name: str) -> None:
        """A message's entries: Hide for everyone… (a moderator of its channel, on others'
        messages; Show again… on one a moderator hid), Block NAME… (on others'), Moderation
        log…."""
        mine = message.author == self.model.me
        if message.hidden and self.moderates(message.channel):
            menu.addAction("Show again…", lambda: self.show_again(message, name))
        elif not mine and self.moderates(message.channel):
            hide = menu.addAction("Hide for everyone…", lambda: self.hide(message, name))
            hide.setObjectName("hideMessage")
        if not mine:
            block = menu.addAction(f"Block {name}…",
                                   lambda: self.block(message.author, name))
            block.setObjectName("blockAuthor")
        log = menu.addAction("Moderation log…", lambda: self.show_log(message.channel))
        log.setObjectName("moderationLog")

    def watch_members(self, pane, channel: Callable[[], str]) -> None:
        """Give a MemberPane's menu its entries for the channel `channel()` shows."""
        pane.menu_for = lambda menu, key, name: self.member_menu(menu, key, name, channel())

    def member_menu(self, menu: QMenu, key: bytes, name: str, channel: str) -> None:
        """A member's entries: Hide their posts in #channel… (moderators), Block NAME…."""
        if key == self.model.me:
            return
        if self.moderates(channel):
            menu.addAction(f"Hide {name}'s posts in #{channel}…",
                           lambda: self.hide_member(channel, key, name))
        menu.addAction(f"Block {name}…", lambda: self.block(key, name))

    # Doing it ---------------------------------------------------------------------------------

    def hide(self, message: Message, name: str) -> ReasonDialog:
        """Ask why, then hide the message for everyone but the channel's moderators."""
        dialog = ReasonDialog("Hide", f"Hide {name}'s message in #{message.channel} for "
                              "everyone but the channel's moderators?", self.window)
        dialog.reasoned.connect(lambda reason: self._then(
            self.bridge.facade.run(
                lambda ws: ws.moderation.hide(message.channel, message.id, reason).id)))
        dialog.open()
        return dialog

    def show_again(self, message: Message, name: str) -> ReasonDialog:
        """Ask why, then show a message a moderator hid to everyone again."""
        dialog = ReasonDialog("Show again", f"Show {name}'s message in #{message.channel} to "
                              "everyone again?", self.window)
        dialog.reasoned.connect(lambda reason: self._then(
            self.bridge.facade.run(
                lambda ws: ws.moderation.unhide(message.channel, message.id, reason).id)))
        dialog.open()
        return dialog

    def hide_member(self, channel: str, key: bytes, name: str) -> ReasonDialog:
        dialog = ReasonDialog("Hide", f"Hide everything {name} posts in #{channel} for "
                              "everyone but the channel's moderators?", self.window)
        dialog.reasoned.connect(lambda reason: self._then(
            self.bridge.facade.run(lambda ws: ws.moderation.hide(channel, key, reason).id)))
        dialog.open()
        return dialog

    def block(self, key: bytes, name: str) -> QMessageBox:
        """Ask, then block `key` on this computer; the window-modal box is returned."""
        box = QMessageBox(QMessageBox.Icon.Question, "Block", f"Block {name}?",
                          parent=self.window, objectName="confirmBlock")
        box.setInformativeText(
            f"On this computer only: {name}'s posts are hidden and what they send is no "
            "longer stored. Nobody is told, and nobody else's view changes. The moderation "
            "log lists whom you blocked, to unblock them.")
        block = box.addButton("Block", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda button: self._then(
            self.bridge.facade.run(lambda ws: ws.moderation.block(key)))
                                  if button is block else None)
        box.open()
        return box

    def show_log(self, channel: str) -> ModerationLogDialog:
        dialog = ModerationLogDialog(self.bridge, channel, self.window)
        dialog.changed.connect(self.model.reload)
        dialog.changed.connect(self.viewsChanged)
        dialog.open()
        return dialog

    def _then(self, future) -> None:
        """After a hide (whose object reloads every list anyway) or a block (which adds no
        object), read the list again."""
        self.bridge.then(future, done=lambda _: (self.model.reload(), self.viewsChanged.emit()))
