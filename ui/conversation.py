"""What a message list's conversation actions do: react, edit, show versions, open a thread.

`ConversationActions` connects a MessageView (the channel's, or a thread's) and a Composer to
the Node's facade; the window makes one per view. Its `moderation` (ui.moderation) adds Hide,
Block and the moderation log to the view's menu. Nothing here reads the replica: each action
is a facade call whose answer comes back through the bridge, and the rows change when the new
object comes back as a change the bridge hands on (NodeBridge.changed), as every other
change does.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, QPoint
from PySide6.QtWidgets import QWidget

from app.records import Message

from . import _rows
from .bridge import NodeBridge
from .composer import Composer
from .emoji_picker import EmojiPicker
from .message_versions import MessageVersionsDialog
from .message_view import MessageView
from .models import MessageListModel
from .moderation import ModerationActions


class ConversationActions(QObject):
    def __init__(self, bridge: NodeBridge, view: MessageView, model: MessageListModel,
                 composer: Composer, picker: EmojiPicker, open_thread: Callable[[bytes], None],
                 parent: QWidget, *, composer_edits: bool = True,
                 reading: Callable[[], ConversationActions] | None = None):
        super().__init__(parent)
        self.bridge, self.view, self.model, self.composer = bridge, view, model, composer
        self.window = parent
        # Whose list Up in the shared composer edits from: the one the window shows now.
        self._reading = reading
        self.picker = picker
        view.reactionToggled.connect(self.toggle_reaction)
        view.reactRequested.connect(self.pick_reaction)
        view.editRequested.connect(self.begin_edit)
        view.versionsRequested.connect(self.show_versions)
        view.threadRequested.connect(open_thread)
        view.replyRequested.connect(open_thread)
        if composer_edits:  # a composer shared with another list is connected once
            composer.editSubmitted.connect(self.edit)
            composer.editLastRequested.connect(self.edit_last)
        self.moderation = ModerationActions(bridge, model, parent)
        view.moderation = self.moderation

    def _failed(self, message: str) -> None:
        self.bridge.failed.emit(message)

    def toggle_reaction(self, message_id: bytes, emoji: str) -> None:
        """A chip: take my reaction back when I have it, else add it."""
        row = self.model.row_of(message_id)
        message = self.model.messages[row] if row is not None else None
        mine = message is not None and any(
            r.emoji == emoji and self.bridge.facade.key in r.by for r in message.reactions)
        run = self.bridge.facade.run
        future = (run(lambda ws: ws.conversation.unreact(message_id, emoji).id) if mine
                  else run(lambda ws: ws.conversation.react(message_id, emoji).id))
        self.bridge.then(future, done=lambda _: None, failed=self._failed)

    def pick_reaction(self, message_id: bytes, where: QPoint) -> None:
        """The emoji picker at `where`; the emoji picked is my reaction."""
        self.picker.open_at(where, on_pick=lambda emoji: self.bridge.then(
            self.bridge.facade.run(lambda ws: ws.conversation.react(message_id, emoji).id),
            done=lambda _: None,
            failed=self._failed))

    def begin_edit(self, message: Message) -> None:
        self.composer.begin_edit(message.id, message.text)
        self.composer.setFocus()

    def edit(self, message_id: bytes, text: str) -> None:
        self.bridge.then(self.bridge.facade.run(
            lambda ws: ws.conversation.edit(message_id, text).id), done=lambda _: None,
            failed=self._failed)

    def edit_last(self) -> None:
        """Up in an empty composer: edit my newest message shown in the list the window reads
        (not one a moderator hid, nor one imported from Slack: I signed it, someone else
        wrote it)."""
        actions = self._reading() if self._reading is not None else self
        me = self.bridge.facade.key
        for message in reversed(actions.model.messages):
            if message.author == me and message.origin is None and _rows.converses(message):
                actions.begin_edit(message)
                return

    def show_versions(self, message_id: bytes) -> None:
        self.bridge.then(self.bridge.facade.run(lambda ws: ws.conversation.versions(message_id)),
                         done=lambda versions: MessageVersionsDialog(versions, self.window).open(),
                         failed=self._failed)
