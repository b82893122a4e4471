"""Private channels and direct messages in the window (issue #18; docs/ARCHITECTURE.md
"Private channels and direct messages").

They are not ordinary channels: their objects are encrypted for their members and the chat
views never see them. So this pane shows one in the reading area with its own message list
(read with ws.private.read, which opens them: app/private_conversation.py). Its rows have the
public list's conversation actions (ui.conversation.ConversationActions: reactions, Edit,
earlier versions, Reply in thread, Delete on mine; the window's thread pane shows a private
thread), all through ws.conversation, which hands a private message's id to the sealed
conversation; moderation (a public object) is left out. While it is open the window's composer
posts with ws.private.post (or ws.private.direct_message, for direct messages not started
yet), its member pane lists the channel's members, with "Add people…" and "Remove … from …"
for the channel's creator or an admin, and its header shows a lock and "Private · ada, bob".
Typing in the composer tells the open channel's other members online now (facade.typing_private)
and the typing label shows theirs. Private channels have no topic; slash commands other than
/me and /nick are refused in words.
Files waiting above the composer go with facade.attach_private (described inside the sealed box),
once the conversation exists (direct messages not started yet take a first text).

The sidebar lists them (ui/sidebar.py); "Message …" on a member (the member pane's menu, or
"Message someone…" beside the Direct messages heading) opens the direct messages with them.
Everything is re-read when objects arrive (the window's reload calls `reload`): a channel I was
taken out of closes, with a word in the status bar."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtWidgets import QFrame, QMenu, QMessageBox, QVBoxLayout, QWidget

from app.records import Message, PrivateChannel

from . import _rows
from .bridge import NodeBridge
from .conversation import ConversationActions
from .message_view import MessageView
from .models import MessageListModel
from .private_dialog import NewPrivateChannelDialog, PickMembersDialog

if TYPE_CHECKING:
    from app.workspace import Workspace

    from .main_window import MainWindow

READ_LIMIT = 500  # messages read at once (a private channel has no pages yet)
SAY_MS = 8000
COMMANDS = ("me", "nick")  # the slash commands a private channel takes


def add_member(channel: bytes, key: bytes) -> Callable[[Workspace], None]:
    """Add `key` to private channel `channel` (a call for facade.run)."""
    return lambda ws: ws.private.add_member(channel, key)


class PrivateMessages(MessageListModel):
    """A private channel's messages, opened on the Node's thread, newest READ_LIMIT of them in
    one read. `channel` is the title its empty state shows; `channel_id` None is direct
    messages not started yet (nothing to read)."""

    readFailed = Signal(str)

    def __init__(self, bridge: NodeBridge):
        super().__init__(bridge)
        self.channel_id: bytes | None = None
        self._asked = 0  # answers to an older read are dropped

    def show_private(self, channel_id: bytes | None, title: str) -> None:
        self.channel_id = channel_id
        self.show_channel(title)  # empties the list, then reload()

    def reload(self) -> None:
        if self.channel is None:
            return
        self._asked += 1
        if self.channel_id is None:
            self.set_messages([], self.channel)
            return
        asked, channel = self._asked, self.channel_id
        self.bridge.then(self.bridge.facade.run(
                             lambda ws: ws.private.read(channel, limit=READ_LIMIT)),
                         done=lambda messages: self._read(asked, messages),
                         failed=lambda message: self._failed(asked, message))

    def _read(self, asked: int, messages: list[Message]) -> None:
        if asked == self._asked:
            self.set_messages(messages, self.channel)

    def _failed(self, asked: int, message: str) -> None:
        if asked == self._asked:
            self.readFailed.emit(message)

    def close_private(self) -> None:
        """The channel closed (I was taken out, say): reads asked so far, and any asked of the
        list until another opens, answer nothing."""
        self.channel_id = None
        self._asked += 1

    def canFetchMore(self, parent: QModelIndex = QModelIndex()) -> bool:  # noqa: B008, N802
        return False  # never the public read of MessageListModel.fetchMore


class PrivatePane(QWidget):
    """The reading area's page for a private channel, and what the window does while one is
    open (see the module's docstring). `window` is the MainWindow it belongs to."""

    listed = Signal()  # the sidebar shows the latest list of my private channels
    shown = Signal()  # the header and member pane show the open channel as now stored

    def __init__(self, window: MainWindow):
        super().__init__(objectName="privatePane")
        self.window = window
        self.bridge = window.bridge
        self.facade = self.bridge.facade
        self.me = self.facade.key
        self.model = PrivateMessages(self.bridge)
        self.model.readFailed.connect(self._say)
        self.bridge.privateTyping.connect(window.typing_label.typed)
        self.model.modelReset.connect(self._newest_posted)
        self.view = MessageView(self.model)
        self.view.setObjectName("privateMessageView")
        self.view.private = True
        self.view.setFrameShape(QFrame.Shape.NoFrame)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.view)
        window.reading.addWidget(self)
        # The composer is the window's: its edits are connected once (window.actions, whose
        # ws.conversation.edit takes a private message's id as well).
        self.actions = ConversationActions(self.bridge, self.view, self.model, window.composer,
                                           window.emoji_picker, window.open_thread, window,
                                           composer_edits=False)
        self.view.moderation = None  # a hide is a public object: never about a private post

        self.channels: list[PrivateChannel] = []
        self.current: PrivateChannel | None = None
        self.dm_to: tuple[bytes, str] | None = None  # direct messages not started yet
        self.admin = False
        self.names: dict[bytes, str] = {}  # every known nickname
        self._opening: bytes | None = None  # asked to open before the list had it

        sidebar = window.sidebar
        sidebar.privateChosen.connect(self.open)
        sidebar.newPrivateRequested.connect(self.new_channel_dialog)
        sidebar.directMessageRequested.connect(self.pick_person)
        pane = window.member_pane
        pane.addRequested.connect(self.add_members)
        public_menu = pane.menu_for

        def menu_for(menu: QMenu, key: bytes, name: str) -> None:
            self.member_menu(menu, key, name)
            if not self.is_open and public_menu is not None:
                if not menu.isEmpty():
                    menu.addSeparator()
                public_menu(menu, key, name)

        pane.menu_for = menu_for

    # What is open ------------------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        """A private channel (or direct messages not started yet) is open."""
        return self.current is not None or self.dm_to is not None

    @property
    def channel_id(self) -> bytes | None:
        return self.current.id if self.current is not None else None

    def typing(self) -> None:
        """I am typing in the open channel (direct messages not started yet have no one to
        tell)."""
        if self.current is not None:
            self.facade.typing_private(self.current.id)

    def _newest_posted(self) -> None:
        """Whoever posted the newest message shown has stopped typing it."""
        if self.current is not None and self.model.messages:
            self.window.typing_label.posted(self.model.messages[-1].author, self.current.id)

    def manages(self) -> bool:
        """I may change who is in the open channel: its creator, or an admin."""
        return (self.current is not None and not self.current.dm
                and (self.current.creator == self.me or self.admin))

    def open(self, channel_id: bytes) -> None:
        """Show this private channel (once the list has it: a new one is listed first)."""
        channel = next((c for c in self.channels if c.id == channel_id), None)
        if channel is None:
            self._opening = channel_id
            self.refresh()
            return
        self._opening = None
        self.current, self.dm_to = channel, None
        self._show(channel.id, channel.name)

    def message(self, key: bytes, name: str) -> None:
        """The direct messages with `key`: theirs if either of us started them, else an empty
        page whose first message starts them."""
        if key == self.me:
            return
        self.bridge.then(self.facade.run(lambda ws: ws.private.dm_channel(key)),
                         done=lambda channel: self.open(channel) if channel is not None
                         else self._open_new_dm(key, name))

    def _open_new_dm(self, key: bytes, name: str) -> None:
        self.current, self.dm_to = None, (key, name)
        self._show(None, name)

    def _show(self, channel_id: bytes | None, title: str) -> None:
        window = self.window
        window.pages.setCurrentIndex(0)
        window.reading.setCurrentWidget(self)
        window.sidebar.mentions.setChecked(False)
        window.composer.cancel_edit()
        window.composer.setPlaceholderText(
            f"Message {title}   (private: only its members read it; Enter sends)")
        window.typing_label.set_channel(channel_id)  # None: direct messages not started yet
        if not window.thread_pane.isHidden():
            window.thread_pane.close_thread()
        window.member_pane.setVisible(window.header.members_button.isChecked())
        window.sidebar.select_private(channel_id)
        window._highlight()
        self.model.show_private(channel_id, title)
        self.load_state()

    def show_again(self) -> None:
        """Back to the open channel (after search results took its place)."""
        if self.current is not None:
            self._show(self.current.id, self.current.name)
        elif self.dm_to is not None:
            self._show(None, self.dm_to[1])

    def clear(self) -> None:
        """Nothing private is open: the window shows something else (a public channel, a
        document)."""
        if not self.is_open:
            return
        self.current = self.dm_to = None
        self._opening = None
        self.model.close_private()  # a read that fails now (I was taken out) says nothing
        self.window.member_pane.show_add(False)
        self.window.sidebar.select_private(None)

    # Reading -----------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Read the list of my private channels (with nicknames, and whether I am an admin)."""
        run = self.facade.run
        self.bridge.then(run(lambda ws: ws.is_admin()), done=lambda admin: self.bridge.then(
            run(lambda ws: ws.nicknames()), done=lambda names: self.bridge.then(
                run(lambda ws: ws.private.channels()),
                done=lambda channels: self._listed(channels, names, admin))))

    def reload(self) -> None:
        """Objects arrived: the list, and the open channel's messages."""
        self.refresh()
        if self.is_open:
            self.model.reload()

    def _listed(self, channels: list[PrivateChannel], names: dict[bytes, str],
                admin: bool) -> None:
        self.channels, self.names, self.admin = channels, names, admin
        self.window.sidebar.show_private(channels, self.me)
        by_id = {c.id: c for c in channels}
        if self.current is not None:
            now = by_id.get(self.current.id)
            if now is None:
                gone = self.current.name
                self.clear()
                self.window.show_channel(self.window.channel)
                self._say(f"You are no longer in {gone}")
            elif now != self.current:  # people added or taken out, a nickname arrived
                self.current = now
                self.load_state()
        elif self.dm_to is not None:
            started = next((c for c in channels if c.dm and self.dm_to[0] in c.members
                            and set(c.members) == {self.me, self.dm_to[0]}), None)
            if started is not None:
                self.open(started.id)
        if self._opening is not None and self._opening in by_id:
            self.open(self._opening)
        self.listed.emit()

    def member_names(self) -> dict[bytes, str]:
        """The open channel's members as they are shown (lookalike nicknames told apart)."""
        keys = list(self.current.members) if self.current is not None \
            else [self.me, self.dm_to[0]] if self.dm_to is not None else []
        names = _rows.member_names((key, self.names.get(key)) for key in keys)
        shown = {key: names[key] if self.names.get(key) else key.hex()[:8] for key in keys}
        if self.dm_to is not None and not self.names.get(self.dm_to[0]):
            shown[self.dm_to[0]] = self.dm_to[1]
        return shown

    def load_state(self) -> None:
        """The header ("Private · ada, bob"), the member pane and the composer's completions
        for the open channel."""
        if not self.is_open:
            return
        window, names = self.window, self.member_names()
        title = self.current.name if self.current is not None else self.dm_to[1]
        window.header.show_private(title, list(names.values()))
        online = window._online
        rows = [(key, f"{name} (you)" if key == self.me else name,
                 key in online or key == self.me) for key, name in names.items()]
        window.member_pane.set_members(rows, connected=bool(online))
        window.member_pane.show_add(self.manages())
        window.header.set_member_count(len(rows))
        window.composer.set_nicknames([name for key, name in names.items()
                                       if self.names.get(key)])
        self.model.set_nicknames(self.names)
        self.shown.emit()

    # Writing -----------------------------------------------------------------------------------

    def post(self, text: str) -> None:
        """The composer's text: a message in the open channel (or the first of new direct
        messages), /me as in any channel, /nick; other commands are refused in words."""
        if text.startswith("/") and not text.startswith("//"):
            name, _, arg = text[1:].partition(" ")
            if name == "nick" and arg.strip():
                nick = arg.strip()
                self.bridge.then(self.facade.run(lambda ws: ws.nick(nick).id),
                                 done=lambda _: self.window._reload(),
                                 failed=lambda message: self._refused(text, message))
                return
            if name not in COMMANDS or not arg.strip():
                self._refused(text, f"/{name} is not available in private channels yet (only "
                                    "/me and /nick are); start with // to send a slash")
                return
        elif text.startswith("//"):
            text = text[1:]
        if self.current is not None:
            channel = self.current.id
            self.bridge.then(self.facade.run(lambda ws: ws.private.post(channel, text).id),
                             done=lambda _: self.model.reload(),
                             failed=lambda message: self._refused(text, message))
        elif self.dm_to is not None:
            key = self.dm_to[0]
            self.bridge.then(self.facade.run(lambda ws: ws.private.direct_message(key, text).id),
                             done=lambda _: self.refresh(),
                             failed=lambda message: self._refused(text, message))

    def attach(self, paths: list[str], text: str) -> Future | None:
        """Files (and `text`) as a message in the open channel: the facade's future, or None
        (refused in words) for direct messages not started yet."""
        if self.current is None:
            self._say("Files can be sent once the conversation has started: send a first "
                      "message, then attach them")
            return None
        return self.facade.attach_private(self.current.id, paths, text)

    def _refused(self, text: str, message: str) -> None:
        """Say why, and give the text back to the composer when it is empty (later: the
        composer empties itself after `submitted`)."""
        self._say(message)
        composer = self.window.composer
        QTimer.singleShot(0, self, lambda: None if composer.toPlainText()
                          else composer.setPlainText(text))

    def _say(self, message: str) -> None:
        self.window.statusBar().showMessage(message, SAY_MS)

    # Who is in it ------------------------------------------------------------------------------

    def member_menu(self, menu: QMenu, key: bytes, name: str) -> None:
        """A member's entries: Message … (anyone else), and beside a private channel I manage,
        Remove … from it (never its creator)."""
        if key != self.me:
            menu.addAction(f"Message {name}…", lambda: self.message(key, name))
        if self.manages() and key not in (self.me, self.current.creator):
            channel = self.current
            menu.addAction(f"Remove {name} from {channel.name}…",
                           lambda: self.confirm_remove(channel, key, name))

    def confirm_remove(self, channel: PrivateChannel, key: bytes, name: str) -> QMessageBox:
        """Ask, window-modal, before taking someone out of a private channel."""
        box = QMessageBox(QMessageBox.Icon.Question, "Remove from private channel",
                          f"Take {name} out of {channel.name}?", parent=self.window,
                          objectName="confirmPrivateRemove")
        box.setInformativeText(f"{name} keeps what they could read so far; nothing written in "
                               f"{channel.name} from now on reaches them (it goes under a new "
                               "key).")
        remove = box.addButton("Remove", QMessageBox.ButtonRole.DestructiveRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        box.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        box.buttonClicked.connect(lambda button: self.bridge.then(
            self.facade.run(lambda ws: ws.private.remove_member(channel.id, key)),
            done=lambda _: self.reload(), failed=self._say) if button is remove else None)
        box.open()
        return box

    def add_members(self) -> PickMembersDialog | None:
        """Pick workspace members to add to the open channel (they read its history)."""
        if not self.manages():
            return None
        channel = self.current
        dialog = PickMembersDialog(self.bridge, f"Add people to {channel.name}",
                                   f"Who should join {channel.name}? They can read what was "
                                   "written in it so far.", "Add", exclude=channel.members,
                                   parent=self.window)

        def add(picked: list[tuple[bytes, str]]) -> None:
            for key, _ in picked:
                self.bridge.then(self.facade.run(add_member(channel.id, key)),
                                 done=lambda _: self.reload(), failed=self._say)

        dialog.chosen.connect(add)
        dialog.open()
        return dialog

    def new_channel_dialog(self) -> NewPrivateChannelDialog:
        """A name and members; the new channel opens once it is made."""
        dialog = NewPrivateChannelDialog(self.bridge, self.window)
        dialog.created.connect(self.open)
        dialog.open()
        return dialog

    def pick_person(self) -> PickMembersDialog:
        """Whom to message: their direct messages open."""
        dialog = PickMembersDialog(self.bridge, "Message someone",
                                   "Direct messages: only the two of you read them.", "Message",
                                   single=True, parent=self.window)
        dialog.chosen.connect(lambda picked: self.message(*picked[0]))
        dialog.open()
        return dialog
