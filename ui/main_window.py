"""The main window: channels, a channel's messages, the composer, members and sync status.

It talks to the app only through the Node's facade (`self.facade`, app/facade.py), whose calls
return futures that the bridge delivers back on the GUI thread, and hears of changes by the
bridge's signals; switching, joining and leaving workspaces it asks of the Controller.

Files (issue #19): the paperclip beside the composer, a drop on the messages or the composer,
or a paste add files to the strip above the composer (ui/pending_files.py); Enter sends the
text and those files as one message (facade.attach, or attach_private in a private channel;
the text is sent as typed, never as a slash command). Clicks on files in the message lists are
ui/attachments.py's.

History and keeping (issue #20): while a joiner's history streams in, a bar over the reading
area says how far it has come, and a channel whose history is still arriving says "Loading older
messages…" above its messages (ui/history_bar.py); the channel shown is told to the Node
(facade.focus) so its history comes first. A channel's menu keeps it on this computer or not;
those not kept are dimmed and say so above their messages (ui/kept_channels.py)."""

from __future__ import annotations

from concurrent.futures import Future

from PySide6.QtCore import QModelIndex, Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QApplication,
    QFrame,
    QInputDialog,
    QLabel,
    QMainWindow,
    QMenu,
    QPushButton,
    QStackedWidget,
)

from app.node import Node
from app.records import ChannelState, HistoryProgress

from . import _rows, conversation_target, theme, window_layout
from .attachments import AttachmentActions
from .bridge import NodeBridge
from .channel_join import ChannelJoin
from .commands import run_command
from .composer import Composer
from .conversation import ConversationActions
from .dialogs import PeersDialog, SettingsDialog
from .doc_new import NewDocumentDialog
from .document_pane import DocumentPane
from .emoji_picker import EmojiButton, EmojiPicker
from .first_run import FirstRunPanel
from .header import ChannelHeader
from .history_bar import HistoryBar, LoadingOlder
from .invite_dialog import InviteDialog
from .kept_channels import KEEP_ACTION, KeptChannels, NotKeptNotice
from .member_pane import MemberPane
from .members_dialog import MembersDialog
from .message_view import MessageView
from .models import ChannelListModel, MessageListModel
from .notification_settings import NotificationMenus
from .notifications import WindowNotifications
from .pending_files import AttachButton, FileDrops, PendingFiles
from .private_pane import PrivatePane
from .search_panel import SearchPanel
from .sidebar import Sidebar
from .switcher import QuickSwitcher, channel_place, document_place, visited
from .thread_pane import ThreadPane
from .typing_label import TypingLabel
from .window_documents import WindowDocuments
from .window_search import WindowSearch
from .window_updates import WindowUpdates
from .window_workspaces import WindowWorkspaces

DEFAULT_CHANNEL = "general"
TOPIC_KIND = "post/topic"


class MainWindow(QMainWindow):
    # Asks for the application (ui.app.Controller), which owns the Node: these change it.
    switchRequested = Signal(str)  # open another workspace of this data folder
    leaveRequested = Signal(str)  # leave this workspace (already confirmed)
    joinRequested = Signal(str, str, str)  # invite code, nickname, member's HOST:PORT or ""
    restartRequested = Signal()  # reopen the workspace (a new identity was imported)
    topicShown = Signal(str)  # the header shows this channel's topic as now stored

    def __init__(self, node: Node, *, first_run: bool = False):
        super().__init__()
        self.bridge = NodeBridge(node, self)
        self.facade = self.bridge.facade
        self._workspace_name = self.facade.info.name  # its creator's name, for the title
        self.setWindowTitle("Hearth")
        self.resize(1000, 680)
        self.channel = DEFAULT_CHANNEL
        self.channel_shown: str | None = None
        self._members_shown = True  # the header's Members button
        self._recent: list[tuple[str, str]] = []  # places visited, the latest first (Ctrl+K)
        self._switcher: QuickSwitcher | None = None
        self._online: set[bytes] = set()  # keys of connected peers

        self.sidebar = Sidebar()
        self.sidebar.set_workspace_name(self._workspace_name)
        self.sidebar.joinChannelRequested.connect(self._join_channel)
        self.sidebar.newDocumentRequested.connect(self.new_document_dialog)
        self.sidebar.mentionsRequested.connect(self.show_mentions)
        self.channels = ChannelListModel(self.bridge)
        self.channel_list = self.sidebar.channel_list
        self.channel_list.setModel(self.channels)
        self.channel_list.clicked.connect(self._channel_clicked)
        self.channel_list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.channel_list.customContextMenuRequested.connect(self._channel_menu)
        self.channels.modelReset.connect(self._highlight)
        self.kept = KeptChannels(self.bridge, self)
        self.channels.kept = self.kept.is_kept
        self.kept.changed.connect(self._kept_loaded)
        self.document_list = self.sidebar.document_list
        self.workspace_list = self.sidebar.workspace_list
        self.workspaces = WindowWorkspaces(self)

        self.header = ChannelHeader()
        self.topic_bar = self.header.topic_bar
        self.search_box = self.header.search_box
        self.header.topicEdited.connect(self._set_topic)
        self.header.membersToggled.connect(self._members_toggled)
        self.search_results = SearchPanel(self.bridge)
        self.search_results.keys_from(self.search_box)
        self.search_results.channelChosen.connect(self.show_channel)
        self.search_results.documentChosen.connect(self.open_document)

        self.messages = MessageListModel(self.bridge)
        self.messages.me = self.facade.key
        self.message_view = MessageView(self.messages)
        self.message_view.setFrameShape(QFrame.Shape.NoFrame)
        # Shown is read: a new channel's rows, and new messages arriving as rows below them.
        self.messages.modelReset.connect(self._mark_read)
        self.messages.rowsInserted.connect(self._mark_read)
        self.channels.modelReset.connect(self._title_badge)
        self.channels.modelReset.connect(
            lambda: self.sidebar.set_unread(self.channels.private_unread, self.channels.muted))
        self.reading = QStackedWidget(objectName="reading")  # the messages, or search results
        self.reading.addWidget(self.message_view)
        self.reading.addWidget(self.search_results)

        self.composer = Composer(objectName="composer")
        self.composer.setFixedHeight(72)
        self.composer.submitted.connect(self._send)
        self.composer.typing.connect(lambda: self.private.typing() if self.private.is_open
                                     else self.facade.typing(self.channel))
        self.typing_label = TypingLabel(self.facade.key)
        self.bridge.typing.connect(self.typing_label.typed)
        self.thread_pane = ThreadPane(self.bridge)
        self.thread_pane.hide()
        self.thread_pane.closed.connect(self._thread_closed)
        self.emoji_picker = EmojiPicker(self)  # one picker: the composer's and reactions'
        self.emoji_button = EmojiButton(self.composer, self.emoji_picker)
        # Files waiting to go with the next message, and where they come from.
        self.pending_files = PendingFiles(self.bridge)
        self.pending_files.refused.connect(lambda why: self.statusBar().showMessage(why, 8000))
        self.attach_button = AttachButton()
        self.attach_button.chosen.connect(self.pending_files.add)
        self.composer.has_files = lambda: bool(self.pending_files.paths())
        self.composer.filesPasted.connect(self.pending_files.add)
        self.composer.imagePasted.connect(self.pending_files.add_image)
        self.file_drops = FileDrops(self)
        self.file_drops.dropped.connect(self.pending_files.add)
        for target in (self.message_view.viewport(), self.composer.viewport()):
            self.file_drops.watch(target)
        self.actions = ConversationActions(
            self.bridge, self.message_view, self.messages, self.composer, self.emoji_picker,
            self.open_thread, self,
            reading=lambda: self.private.actions if self.private.is_open else self.actions)
        self.thread_actions = ConversationActions(
            self.bridge, self.thread_pane.view, self.thread_pane.model,
            self.thread_pane.composer, self.emoji_picker, self.open_thread, self)
        self.messages.modelReset.connect(self._newest_posted)
        self.bridge.then(self.facade.run(lambda ws: ws.is_admin()), done=self._admin_known)
        self._load_nicknames()

        self.member_pane = MemberPane()
        self.member_pane.inviteRequested.connect(self.show_invite)
        self.member_list = self.member_pane.list
        # A member's menu: Hide their posts (moderators), Block (ui.moderation); a block adds
        # no object, so the views it changes reload as after new objects.
        self.actions.moderation.watch_members(self.member_pane, lambda: self.channel)
        for actions in (self.actions, self.thread_actions):
            actions.moderation.viewsChanged.connect(lambda: self._refresh.start())
        # Private channels and direct messages: their page in `reading`, their sidebar lists.
        self.private = PrivatePane(self)
        self.private.model.modelReset.connect(self._mark_private_read)
        self.search = WindowSearch(self)
        self.joining = ChannelJoin(self.bridge, self._join,
                                   lambda n, p, f: self.facade.run(
                                       lambda ws: ws.create_channel(n, public=p, force=f).id),
                                   parent=self)
        self.joining.joined.connect(lambda name: (self.show_channel(name), self._reload()))
        self.joining.refused.connect(lambda why: self.statusBar().showMessage(why, 8000))
        self.file_drops.watch(self.private.view.viewport())
        self.attachments = AttachmentActions(
            self.bridge, self, lambda line: self.statusBar().showMessage(line, 8000),
            on_complete=lambda: self._refresh.start())
        for view in (self.message_view, self.thread_pane.view, self.private.view):
            self.attachments.watch(view)
        self.peer_status = QPushButton("offline", objectName="peerStatus", flat=True)
        self.peer_status.clicked.connect(self.show_peers)
        # The workspace's own actions: its members, inviting, the settings.
        for label, name, action in (("Members…", "openMembers", self.show_members),
                                    ("Invite people…", "openInvite", self.show_invite),
                                    ("Settings", "openSettings", self.show_settings)):
            button = QPushButton(label, flat=True, objectName=name)
            button.clicked.connect(action)
            self.statusBar().addPermanentWidget(button)
        self.sync_state = QLabel("idle", objectName="syncState")
        self.statusBar().addPermanentWidget(self.sync_state)
        self.statusBar().addPermanentWidget(self.peer_status)

        # Above the messages: history still arriving in this channel, or that it is not kept.
        self.loading_older = LoadingOlder()
        self.not_kept = NotKeptNotice()
        self.not_kept.keepRequested.connect(lambda: self.kept.keep(self.channel))
        self.history_bar = HistoryBar()
        self._focused: str | None = None  # the channel the Node was last told is shown
        self.first_run: FirstRunPanel | None = None
        if first_run:
            self.first_run = FirstRunPanel(self.bridge)
            self.first_run.joinRequested.connect(self.joinRequested)
            self.first_run.inviteRequested.connect(self.show_invite)
            self.first_run.nicknameSaved.connect(lambda _: self._reload())
        # This computer was removed from the workspace: who, when, why (the replica stays
        # readable; composing is off). Shown once the Node's own replica says so.
        self.removed_banner = QLabel(objectName="removedBanner", wordWrap=True)
        self.removed_banner.setContentsMargins(12, 6, 12, 6)
        self.removed_banner.hide()
        self.pages = QStackedWidget()
        self.setCentralWidget(window_layout.laid_out(self))
        self.documents = WindowDocuments(self)

        # Notifications (issue #32): raised as app.notify_watch decides; levels in menus.
        self.notifications = WindowNotifications(self, self.windowIcon())
        self.notification_menus = NotificationMenus(self)
        self._title_badge()
        QShortcut(QKeySequence("Ctrl+K"), self, self.show_switcher)
        QShortcut(QKeySequence("Ctrl+F"), self, self.search_box.setFocus)

        self.updates = WindowUpdates(self)
        self.bridge.failed.connect(lambda message: self.statusBar().showMessage(message, 8000))
        self.bridge.historyProgress.connect(self._history_moved)
        self.pages.currentChanged.connect(self._shown_changed)
        self.reading.currentChanged.connect(self._shown_changed)
        self._refresh = QTimer(self, singleShot=True, interval=50)
        self._refresh.timeout.connect(self._reload)
        self.history_bar.show_progress(self.facade.history())
        self.kept.load()
        self.show_channel(DEFAULT_CHANNEL)
        self.channels.refresh()
        self.private.refresh()
        self.documents.load()
        self.updates.ask_online()
        self.updates.check_removal()
        # After the channel asked for next (the first page is what the person waits for).
        QTimer.singleShot(0, self, self.workspaces.load)

    @property
    def document_pane(self) -> DocumentPane:
        """The document page (made on first use: see ui/window_documents.py)."""
        return self.documents.pane

    # Actions -----------------------------------------------------------------------------------

    def show_channel(self, channel: str) -> None:
        self.private.clear()
        self.channel = channel
        self._recent = visited(self._recent, "channel", channel)
        self.pages.setCurrentIndex(0)
        self.reading.setCurrentWidget(self.message_view)
        self.sidebar.mentions.setChecked(False)
        if channel != self.channel_shown:
            self.composer.cancel_edit()  # an edit belongs to the channel it began in
        self.channel_shown = channel
        self.header.show_channel(self.channels.label(channel))
        self.member_pane.setVisible(self._members_shown and self.thread_pane.isHidden())
        self.typing_label.set_channel(channel)
        self.composer.setPlaceholderText(
            f"Message #{channel}   (Enter sends, Shift+Enter: new line, /topic /nick /me …)")
        self.messages.show_channel(channel)
        self.not_kept.show_channel(channel)
        self._shown_changed()
        self._highlight()
        self._load_state()

    def _channel_clicked(self, index: QModelIndex) -> None:
        self.show_channel(index.data(Qt.ItemDataRole.UserRole))

    def _load_state(self) -> None:
        if self.private.is_open:
            if conversation_target.shown(self).kind in ("private", "dm"):  # not behind Mentions
                self.private.load_state()
            return
        channel = self.channel
        self.bridge.then(self.facade.run(lambda ws: ws.state(channel)),
                         done=lambda state: self._state_loaded(channel, state),
                         # a channel nobody posted in yet
                         failed=lambda _: self._state_loaded(channel, None))

    def _state_loaded(self, channel: str, state: ChannelState | None) -> None:
        if channel != self.channel or self.private.is_open:
            return
        topic = state.topic or "" if state else ""
        self.bridge.then(self.facade.run(lambda ws: ws.may(channel, TOPIC_KIND)),
                         done=lambda allowed: self._topic_loaded(channel, topic, allowed))
        members = state.members if state else ()
        # Two members whose nicknames look alike ("alice", "аlice" with a Cyrillic а) are
        # completed and listed with a key suffix, so Tab never offers two names that read
        # the same.
        names = _rows.member_names((m.key, m.nick) for m in members)
        self.typing_label.set_nicknames(names)
        self.composer.set_nicknames([names[m.key] for m in members if m.nick])
        online, me = self._online, self.facade.key
        rows = []
        for member in members:
            lookalike = " \N{WARNING SIGN}" if member.nick and names[member.key] != member.nick \
                else ""
            you = " (you)" if member.key == me else ""
            rows.append((member.key, f"{names[member.key]}{you}{lookalike}",
                         member.key in online or member.key == me))
        self.member_pane.set_members(rows, connected=bool(online))
        self.header.set_member_count(len(rows))

    def _topic_loaded(self, channel: str, topic: str, allowed: bool) -> None:
        shown = conversation_target.shown(self)
        if shown.offers_topic and shown.name == channel:
            self.header.set_topic(topic, editable=allowed)
            self.topicShown.emit(channel)

    def _send(self, text: str) -> None:
        if self.pending_files.paths():
            self._send_files(text)
        elif self.private.is_open:
            self.private.post(text)  # never a slash command or post in a public channel
        else:
            run_command(self, text)

    def _send_files(self, text: str) -> None:
        """The waiting files and `text` as one message; a failure says why and gives both
        back."""
        paths = self.pending_files.take()
        names = [str(path) for path in paths]
        future = (self.private.attach(names, text) if self.private.is_open
                  else self.facade.attach(self.channel, names, text))
        if future is None:  # refused in words
            self.pending_files.give_back(paths)
            return
        self.pending_files.sending(len(paths))

        def failed(message: str) -> None:
            self.statusBar().showMessage(f"Not sent: {message}", 8000)
            self.pending_files.give_back(paths)
            if text and not self.composer.toPlainText():
                self.composer.setPlainText(text)

        self.bridge.then(future, failed=failed,
                         done=lambda _: (self.pending_files.sent(paths), self._refresh.start()))

    def _set_topic(self, topic: str) -> None:
        if not conversation_target.shown(self).offers_topic:
            return  # a topic belongs to a public channel shown, never to what is behind
        channel = self.channel
        self.bridge.then(self.facade.run(lambda ws: ws.topic(channel, topic).id),
                         done=lambda _: self._reload())

    def show_mentions(self) -> None:
        self.search.show_mentions()

    def open_thread(self, message_id: bytes) -> None:
        """The thread of `message_id` beside the channel, in the member pane's place."""
        self.member_pane.hide()
        self.thread_pane.open(message_id)

    def _load_nicknames(self) -> None:
        """Every known nickname, for reaction tooltips and mentions in the message lists."""
        def known(names: dict[bytes, str]) -> None:
            self.messages.set_nicknames(names)
            self.thread_pane.model.set_nicknames(names)
        self.bridge.then(self.facade.run(lambda ws: ws.nicknames()), done=known)

    def _admin_known(self, admin: bool) -> None:
        """Admins may delete anyone's messages from the context menu."""
        self.message_view.set_admin(admin)
        self.thread_pane.view.set_admin(admin)

    def _newest_posted(self) -> None:
        """Whoever posted the newest message shown has stopped typing it."""
        if self.messages.messages:
            newest = self.messages.messages[-1]
            self.typing_label.posted(newest.author, newest.channel)

    def _thread_closed(self) -> None:
        self.member_pane.setVisible(self._members_shown and
                                    self.reading.currentWidget() is self.message_view)

    def _mark_read(self) -> None:
        """What the open channel shows is read (unread counts survive a restart)."""
        shown = conversation_target.shown(self)
        if shown.kind != "channel" or not self.isVisible():  # not behind Mentions or search
            return
        channel = self.channel
        self.bridge.then(self.facade.run(lambda ws: ws.mark_read(channel)),
                         done=lambda _: self._read(channel))

    def _read(self, channel: str) -> None:
        """A channel was marked read: the list's counts follow, unless it counted none there
        (messages arriving in the channel shown)."""
        if any(self.channels.unread.get(channel, (1, False))):  # a count, or a muted mention
            self.channels.refresh()

    def _mark_private_read(self) -> None:
        """What the open private channel shows is read (as _mark_read for a channel)."""
        channel = self.private.channel_id
        if (channel is None or not self.isVisible()
                or conversation_target.shown(self).kind not in ("private", "dm")):
            return
        self.bridge.then(self.facade.run(lambda ws: ws.private.mark_read(channel)),
                         done=lambda _: self.channels.refresh(),
                         failed=lambda message: self._private_failed(channel, message))

    def _private_failed(self, channel: bytes, message: str) -> None:
        """A private channel's call failed: said, unless the channel closed meanwhile (I was
        taken out: the pane says so in its own words)."""
        if self.private.channel_id == channel:
            self.statusBar().showMessage(message, 8000)

    def _title_badge(self) -> None:
        total = self.channels.total_unread()
        name = self._workspace_name
        self.setWindowTitle(f"({total}) Hearth: {name}" if total else f"Hearth: {name}")
        self.notifications.set_unread(total)

    # Channels and workspaces --------------------------------------------------------------------

    def join_channel(self, name: str) -> None:
        """Join `name`, or after asking create it (ui/channel_join.py)."""
        self.joining.start(name)

    def _join_channel(self) -> None:
        name, ok = QInputDialog.getText(self, "Join a channel", "Channel name:")
        if ok and name.strip():
            self.join_channel(name.strip())

    def _join(self, name: str) -> Future[bytes]:
        return self.facade.run(lambda ws: ws.join(name).id)

    def leave_channel(self, name: str) -> None:
        self.bridge.then(self.facade.run(lambda ws: ws.leave(name).id), done=lambda _: self._reload())

    def channel_menu(self, name: str) -> QMenu:
        """A channel's menu in the sidebar: Leave, and whether this computer keeps it."""
        menu = QMenu(self)
        menu.addAction(f"Leave #{name}", lambda: self.leave_channel(name))
        keep = menu.addAction(KEEP_ACTION)
        keep.setCheckable(True)
        keep.setChecked(self.kept.is_kept(name))
        menu.addMenu(self.notification_menus.menu(name, menu))
        keep.toggled.connect(lambda checked: self.kept.keep(name, checked))
        return menu

    def _channel_menu(self, position) -> None:
        index = self.channel_list.indexAt(position)
        if index.isValid():
            self.channel_menu(index.data(Qt.ItemDataRole.UserRole)).popup(
                self.channel_list.viewport().mapToGlobal(position))

    def _kept_loaded(self) -> None:
        self.channels.restyle()
        self._show_notices()

    def _history_moved(self, progress: HistoryProgress) -> None:
        self.history_bar.show_progress(progress)
        self._show_notices()

    def _shown_channel(self) -> str | None:
        """The public channel the reading area is on (its search results too), else None."""
        if self.pages.currentIndex() != 0 or self.private.is_open:
            return None
        return self.channel

    def _shown_changed(self, *_) -> None:
        """Another channel, a private one or a document is shown: the Node fetches the shown
        channel's history first, and the notices above the messages follow."""
        shown = self._shown_channel()
        if shown != self._focused:
            self._focused = shown
            self.facade.focus(shown)
        self._show_notices()

    def _show_notices(self) -> None:
        on_channel = (self.reading.currentWidget() is self.message_view
                      and self._shown_channel() is not None)
        self.loading_older.setVisible(on_channel and self.history_bar.arriving(self.channel))
        self.not_kept.setVisible(on_channel and not self.kept.is_kept(self.channel))

    def _highlight(self) -> None:
        """Select in the sidebar what is shown, nothing else (ui/conversation_target.py)."""
        conversation_target.select(self)

    def _members_toggled(self, shown: bool) -> None:
        self._members_shown = shown
        self.member_pane.setVisible(shown and self.pages.currentIndex() == 0)

    def confirm_leave(self) -> None:
        self.workspaces.confirm_leave()

    def show_switcher(self) -> QuickSwitcher:
        """Ctrl+K: every channel and document, recent places first, matched fuzzily."""
        unread = self.channels.unread
        places = [channel_place(c.name, *unread.get(c.name, (0, False)),
                                shown=self.channels.label(c.name))
                  for c in self.channels.channels]
        places += [document_place(self.document_list.item(i).data(Qt.ItemDataRole.UserRole),
                                  self.document_list.item(i).text())
                   for i in range(self.document_list.count())]
        if self._switcher is not None:  # one at a time (an old hidden one is not found)
            self._switcher.deleteLater()
        switcher = self._switcher = QuickSwitcher(places, recent=self._recent, parent=self)
        switcher.chosen.connect(lambda kind, value: self.show_channel(value)
                                if kind == "channel" else self.open_document(value))
        switcher.show()
        switcher.filter.setFocus()
        return switcher

    # Updates -----------------------------------------------------------------------------------

    def _reload(self) -> None:
        """Read again everything the window shows (after an action of its own that changes
        more than one part; what arrives updates only its parts: ui.window_updates)."""
        self.messages.reload()
        self.private.reload()
        self.thread_pane.reload()
        self._load_nicknames()
        self.bridge.then(self.facade.run(lambda ws: ws.is_admin()), done=self._admin_known)
        self.channels.refresh()
        self.kept.load()
        self._load_state()
        self.documents.load()
        if self.documents.showing():
            self.document_pane.reload()
        if self.workspaces.unnamed:  # a joined workspace: its name comes with its genesis
            self.workspaces.load()

    def open_document(self, doc_id: str, title: str | None = None) -> None:
        self.documents.open(doc_id, title)

    def new_document(self, title: str, *, private: bool = False,
                     editing: str | None = None) -> None:
        self.documents.new(title, private=private, editing=editing)

    def new_document_dialog(self) -> NewDocumentDialog:
        return self.documents.new_dialog()

    def set_appearance(self, appearance: str) -> None:
        """Light, dark or the system's: restyles every window of the application now."""
        theme.apply(QApplication.instance(), appearance)

    def show_settings(self) -> SettingsDialog:
        dialog = SettingsDialog(self.bridge, self)
        dialog.appearanceChanged.connect(self.set_appearance)
        dialog.saved.connect(lambda what: (self.statusBar().showMessage(f"saved {what}", 4000),
                                           self._reload()))
        dialog.peersRequested.connect(self.show_peers)
        dialog.membersRequested.connect(self.show_members)
        dialog.inviteRequested.connect(self.show_invite)
        dialog.leaveRequested.connect(self.confirm_leave)
        dialog.identityReplaced.connect(self.restartRequested)
        dialog.show()
        return dialog

    def show_members(self) -> MembersDialog:
        dialog = MembersDialog(self.bridge, self)
        dialog.inviteRequested.connect(self.show_invite)
        dialog.show()
        return dialog

    def show_invite(self) -> InviteDialog:
        dialog = InviteDialog(self.bridge, self)
        dialog.show()
        return dialog

    def show_peers(self) -> PeersDialog:
        dialog = PeersDialog(self.bridge, self)
        self.bridge.peersChanged.connect(lambda _: dialog.refresh())
        dialog.show()
        return dialog

    def bring_forward(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def closeEvent(self, event) -> None:
        self.pending_files.close_files()
        self.notifications.close()
        self.bridge.close()
        super().closeEvent(event)
