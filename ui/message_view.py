"""The channel's message list, drawn like Slack or Element: bursts of one author under one
header, a day separator above each local day with a sticky day label at the top while it is
scrolled away, an empty state for a new channel, links, a context menu and keys, and lazy
loading of older messages when scrolled to the top, keeping the place like a chat. How each row
is drawn and hit-tested is ui/message_delegate.py's; the menu ui/message_menu.py's; the day label
and the empty state ui/message_overlays.py's.

The view acts on nothing itself beyond links, copying and deleting: a reaction chip, "(edited)",
a reply count and the menu's conversation items emit signals (reactionToggled, reactRequested,
versionsRequested, threadRequested, replyRequested, editRequested) that the window connects to
the facade, the emoji picker, the composer and the thread pane; a file's thumbnail, Download,
Open and Save as… emit fileRequested, and so do the menu's "Keep on this computer" and "Let
storage limits remove it" on someone else's file (ui/attachments.py acts on it, and keeps
`file_progress`, what the cards' progress bars show, calling `file_progressed` as it changes).
With `show_reply_counts` off (a thread's own list) rows show no reply counts or "replied to a
thread" lines. A post a moderator hid (only a moderator's list has one) is there to be
reviewed: its menu has Copy text, the moderation entries (Show again…) and Delete, and only its
links act on a click. A private channel's list (`private`) says so in its empty state; its
messages' menus are a public one's but for moderation (ui/message_menu.py)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QPoint,
    QRect,
    Qt,
    QUrl,
    Signal,
)
from PySide6.QtGui import (
    QDesktopServices,
    QGuiApplication,
    QKeySequence,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QMenu,
    QMessageBox,
    QStyleOptionViewItem,
)

from app.records import Message

from . import _rows
from .message_delegate import MessageDelegate
from .message_menu import MessageMenu
from .message_overlays import DayHeader, EmptyState
from .models import CONTENT_ROLES, MessageListModel, PendingRole
from .row_geometry import AVATAR_X

if TYPE_CHECKING:
    from .moderation import ModerationActions

LAYOUT_BATCH = 200
CODE_WHEEL_STEP = 60  # pixels a code block scrolls sideways per wheel notch
BAND_PAD = 3  # above and below the sticky day label, in its band over the rows


class MessageView(QListView):
    """The message list. Keeps its place like a chat: pinned to the newest message while at the
    bottom, on the message being read when older pages load above it or new ones arrive."""

    linkActivated = Signal(str)  # a link in a message was clicked (and opened)
    versionsRequested = Signal(bytes)  # "(edited)" or "Show earlier versions": message id
    reactionToggled = Signal(bytes, str)  # a reaction chip: message id, emoji (add or remove mine)
    reactRequested = Signal(bytes, QPoint)  # "+" or "Add reaction…": message id, where (global)
    threadRequested = Signal(bytes)  # a reply count or "replied to a thread": the thread's id
    replyRequested = Signal(bytes)  # "Reply in thread": the thread's first message's id
    editRequested = Signal(object)  # "Edit" on one of my messages: the Message
    # A click on a message's file: message id, the file's index, and "view" (a thumbnail),
    # "download", "open" or "save"; or from the menu "pin" (keep it here whatever the storage
    # limit) or "unpin".
    fileRequested = Signal(bytes, int, str)

    def __init__(self, model: MessageListModel):
        super().__init__(objectName="messageView")
        self._show_reply_counts = True  # off in a thread's own list
        self._admin = False  # may delete anyone's message (set_admin)
        self.private = False  # a private channel's list (its empty state says so)
        # Adds Hide, Block and the moderation log to a message's menu (ui.moderation's
        # ModerationActions, set by ConversationActions); None: the menu has none of them.
        self.moderation: ModerationActions | None = None
        # What a left press went down on: (message id, target) from MessageDelegate.target_at.
        self._pressed: tuple[bytes, tuple] | None = None
        # A sideways drag over a code block: (key, how far it scrolls, press x, offset then).
        self._code_drag: tuple[tuple[bytes, int], float, float, float] | None = None
        self._heights_before: dict[int, int] = {}  # rows changing in place: their heights
        # Files arriving here: the list id -> its latest FileProgress (ui/attachments.py).
        self.file_progress: dict = {}
        # Where to keep the view while rows change and layout batches run: ("bottom",),
        # ("message", id, row, pixels from the top), or None once the person scrolls.
        self._anchor: tuple | None = ("bottom",)
        self._anchor_channel = model.channel
        self._vetoing = False  # inside Qt's own fetch-when-the-last-row-shows
        self._stale = True  # rows changed and are not laid out yet: the scroll range is old
        self.delegate = MessageDelegate(self)
        self.menu = MessageMenu(self)
        self.setItemDelegate(self.delegate)
        self.day_header = DayHeader(self)
        self.empty_state = EmptyState(self)
        self._style_overlays()
        self.setModel(model)
        self.setWordWrap(True)
        # Lay rows out in batches: a channel scrolled back through 100,000 messages would
        # otherwise be laid out whole on every page that loads.
        self.setLayoutMode(QListView.LayoutMode.Batched)
        self.setBatchSize(LAYOUT_BATCH)
        self.setResizeMode(QListView.ResizeMode.Adjust)  # re-wrap rows when the width changes
        self.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.verticalScrollBar().setSingleStep(24)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        # A scroll bar that comes and goes would change the width, and re-wrap every row.
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOn)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setMouseTracking(True)
        self.viewport().setAttribute(Qt.WidgetAttribute.WA_Hover, True)


        model.fetch_gate = self._fetch_allowed
        model.modelAboutToBeReset.connect(self._rows_changing)
        model.modelReset.connect(self._after_reset)
        model.rowsAboutToBeInserted.connect(self._rows_changing)
        model.rowsInserted.connect(self._after_insert)
        model.rowsRemoved.connect(self._update_overlays)
        model.rowsChanging.connect(self._rows_changing_in_place)
        model.dataChanged.connect(self._data_changed)
        model.loadedChanged.connect(self._update_overlays)
        model.mentionsChanged.connect(self.viewport().update)
        self.verticalScrollBar().actionTriggered.connect(self._person_scrolled)
        self.verticalScrollBar().sliderPressed.connect(self._person_scrolled)
        self.verticalScrollBar().valueChanged.connect(self._update_day_header)

    def message_model(self) -> MessageListModel:
        return self.model()

    @property
    def show_reply_counts(self) -> bool:
        """Whether rows show reply counts and "replied to a thread" lines (not in a thread's
        own list, where every row is of the thread)."""
        return self._show_reply_counts

    @show_reply_counts.setter
    def show_reply_counts(self, show: bool) -> None:
        if show != self._show_reply_counts:
            self._show_reply_counts = show
            self._rows_changing()
            self.scheduleDelayedItemsLayout()  # rows change height

    def set_admin(self, admin: bool) -> None:
        """Whether I may delete others' messages (Workspace.is_admin); Delete then asks first."""
        self._admin = admin

    def is_admin(self) -> bool:
        return self._admin

    # Keeping the place -------------------------------------------------------------------------

    def _person_scrolled(self, *_) -> None:
        self._anchor = None

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 2

    def _rows_changing(self, *_) -> None:
        self._capture()
        self._stale = True

    def _capture(self) -> None:
        """Remember what the person looks at before rows change (unless still restoring)."""
        model = self.message_model()
        if self._anchor is not None and self._anchor_channel == model.channel:
            return
        self._anchor_channel = model.channel
        if not model.messages or self._at_bottom():
            self._anchor = ("bottom",)
            return
        index = self.indexAt(QPoint(AVATAR_X, 0))
        if not index.isValid():
            self._anchor = ("bottom",)
            return
        self._anchor = ("message", model.messages[index.row()].id, index.row(),
                        self.visualRect(index).top())

    def _after_reset(self) -> None:
        if self.message_model().channel != self._anchor_channel:
            self._anchor, self._anchor_channel = ("bottom",), self.message_model().channel
            self.delegate.heights.clear()  # the rows left measured are another channel's
        self._restore()
        self._update_overlays()

    def _after_insert(self, parent: QModelIndex, first: int, last: int) -> None:
        if self._anchor is not None and self._anchor[0] == "message" and first <= self._anchor[2]:
            kind, message_id, row, offset = self._anchor
            self._anchor = (kind, message_id, row + last - first + 1, offset)
        self._restore()
        self._update_overlays()

    def _restore(self) -> None:
        """Scroll back to the anchor; rows laid out later by a batch call this again."""
        anchor = self._anchor
        if anchor is None:
            return
        bar = self.verticalScrollBar()
        if anchor[0] == "bottom":
            bar.setValue(bar.maximum())
            return
        model = self.message_model()
        _, message_id, row, offset = anchor
        if not (0 <= row < len(model.messages)) or model.messages[row].id != message_id:
            found = model.row_of(message_id)
            if found is None:  # deleted, or out of the loaded window: keep the pixel place
                self._anchor = None
                return
            row = found
            self._anchor = ("message", message_id, row, offset)
        rect = self.visualRect(model.index(row))
        if rect.isValid():
            bar.setValue(bar.value() + rect.top() - offset)

    def scrollToBottom(self) -> None:  # noqa: N802 (Qt's name)
        """Show the newest message, and stay there while rows are laid out and added."""
        self._anchor, self._anchor_channel = ("bottom",), self.message_model().channel
        self._restore()

    def scrollTo(self, index: QModelIndex,  # noqa: N802 (Qt's name)
                 hint: QAbstractItemView.ScrollHint = QAbstractItemView.ScrollHint.EnsureVisible,
                 ) -> None:
        model = self.message_model()
        if not index.isValid() or index.row() >= len(model.messages):
            return
        before = self.verticalScrollBar().value()
        super().scrollTo(index, hint)
        rect = self.visualRect(index)
        if not rect.isValid():  # not laid out yet: get there once its batch is done
            self._anchor = ("message", model.messages[index.row()].id, index.row(), 0)
        elif self.verticalScrollBar().value() != before:  # it moved: this is the new place
            self._anchor = ("message", model.messages[index.row()].id, index.row(), rect.top())

    def updateGeometries(self) -> None:  # noqa: N802 (Qt's name)
        super().updateGeometries()
        self._stale = False
        self._restore()
        self._update_overlays()
        self._maybe_fetch()

    def timerEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        # Qt's timers here include its fetch-more (when the *last* row is visible: for a chat
        # that would load the whole history while sitting at the bottom) and layout batches.
        self._vetoing = True
        try:
            super().timerEvent(event)
        finally:
            self._vetoing = False
        self._restore()

    def verticalScrollbarValueChanged(self, value: int) -> None:  # noqa: N802 (Qt's name)
        self._vetoing = True
        try:
            super().verticalScrollbarValueChanged(value)
        finally:
            self._vetoing = False
        self._maybe_fetch()

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self._capture()  # rows re-wrap to the new width: keep the same message in view
        super().resizeEvent(event)
        self._update_overlays()

    def _fetch_allowed(self) -> bool:
        return not self._vetoing

    # Rows that change height -------------------------------------------------------------------

    def _rows_changing_in_place(self, rows: list[int]) -> None:
        """Rows are about to be edited, reacted to or replied to: note what is in view and how
        tall they are (Qt measures a changed row again at once, but moves the rows below it
        only when the list is laid out again)."""
        self._capture()
        model = self.message_model()
        self._heights_before = {row: self.visualRect(model.index(row)).height()
                                for row in rows}

    def _data_changed(self, top: QModelIndex, bottom: QModelIndex, roles=()) -> None:
        model = self.message_model()
        if CONTENT_ROLES[0] in roles:
            # Only a row that changes height lays the list out again (keeping the place);
            # else it is just repainted.
            grown = None
            for row in range(top.row(), bottom.row() + 1):
                index = model.index(row)
                before = self._heights_before.pop(row, -1)
                if self.delegate.sizeHint(QStyleOptionViewItem(), index).height() != before:
                    grown = index
            if grown is not None:
                self._stale = True
                self.delegate.sizeHintChanged.emit(grown)
        elif PendingRole in roles:
            # A pending mark that did not fit after its row's last line sits below it: the
            # row shrinks when it is delivered (and grows if it is pending again).
            for row in range(top.row(), bottom.row() + 1):
                index = model.index(row)
                if self.delegate.pending_moves_rows(index):
                    self._rows_changing()
                    self.delegate.sizeHintChanged.emit(index)
                    break
        self._update_day_header()

    # The day header and the empty state --------------------------------------------------------

    def _style_overlays(self) -> None:
        if getattr(self, "empty_state", None) is None:  # a change event before it is made
            return
        self.day_header.setFont(self.delegate.day_font)
        self.empty_state.restyle(self.font())
        self.setViewportMargins(0, self.band, 0, 0)

    @property
    def band(self) -> int:
        """The height of the band above the rows where the sticky day label shows."""
        return self.delegate.pill_height + 2 * BAND_PAD

    def _update_overlays(self, *_) -> None:
        model = self.message_model()
        self.empty_state.setGeometry(self.viewport().geometry())
        empty = model.loaded and not model.messages and model.channel is not None
        if empty:
            self.empty_state.show_channel(model.channel or "", private=self.private)
        self.empty_state.setVisible(empty)
        self._update_day_header()

    def _update_day_header(self, *_) -> None:
        """Show the topmost row's day, in the band above the rows, while that day's separator
        is out of sight."""
        area = self.viewport().geometry()
        band = QRect(area.left(), area.top() - self.band, area.width(), self.band)
        if self.day_header.geometry() != band:
            self.day_header.setGeometry(band)
        label = self._covered_day() or ""
        width = self.delegate.pill_width(label) if label else 0
        height = self.delegate.pill_height
        self.day_header.show_day(label, QRect((band.width() - width) // 2,
                                              (band.height() - height) // 2, width, height)
                                 if label else QRect())

    def _covered_day(self) -> str | None:
        model = self.message_model()
        if self._stale or not model.messages:
            return None
        index = self.indexAt(QPoint(AVATAR_X, 0))
        if not index.isValid():
            return None
        row = index.row()
        day = self.delegate.day_height
        if model.starts_day(row) and self.visualRect(index).top() + day > 0:
            return None  # its own separator is (even partly) in sight: never two pills
        below = self.indexAt(QPoint(AVATAR_X, day))
        if below.isValid() and below.row() != row and model.starts_day(below.row()):
            return None  # the next day's separator is arriving where the label would be
        return model.day_label(row)

    def _maybe_fetch(self) -> None:
        """Load older messages when the top is within a screen (or everything fits)."""
        model = self.message_model()
        if self._stale or not model.messages:
            return
        if self.verticalScrollBar().value() <= self.viewport().height() and model.canFetchMore():
            model.fetchMore()

    # Links, menu and keys ----------------------------------------------------------------------

    def link_at(self, pos: QPoint) -> str | None:
        index = self.indexAt(pos)
        return self.delegate.link_at(index, pos) if index.isValid() else None

    def link_rects(self, index: QModelIndex) -> list[tuple[QRect, str]]:
        """Where the links of row `index` are (viewport coordinates) and what they open."""
        return self.delegate.link_rects(index)

    def open_link(self, url: str) -> None:
        QDesktopServices.openUrl(QUrl(url))
        self.linkActivated.emit(url)

    def _target(self, pos: QPoint) -> tuple[bytes, tuple] | None:
        """(message id, what a click at `pos` acts on), if anything (MessageDelegate.target_at)."""
        index = self.indexAt(pos)
        if not index.isValid():
            return None
        target = self.delegate.target_at(index, pos)
        return (self.message_model().messages[index.row()].id, target) if target else None

    def _activate(self, message_id: bytes, target: tuple) -> None:
        kind, value = target
        if kind == "link":
            self.open_link(value)
        elif kind == "reaction":
            self.reactionToggled.emit(message_id, value)
        elif kind == "add":
            self.reactRequested.emit(message_id, self.viewport().mapToGlobal(value.bottomLeft()))
        elif kind == "edited":
            self.versionsRequested.emit(message_id)
        elif kind == "replies":
            self.threadRequested.emit(message_id)
        elif kind == "thread":
            self.threadRequested.emit(value)
        elif kind == "file":
            self.fileRequested.emit(message_id, *value)

    def file_progressed(self, list_id: bytes) -> None:
        """A file's progress changed: repaint the rows in sight that show it (a file box keeps
        its height, so nothing moves)."""
        model = self.message_model()
        viewport = self.viewport()
        top = self.indexAt(QPoint(AVATAR_X, 0))
        row = top.row() if top.isValid() else 0
        while 0 <= row < len(model.messages):
            index = model.index(row)
            rect = self.visualRect(index)
            if not rect.isValid() or rect.top() > viewport.height():
                break
            if any(f.list == list_id for f in model.messages[row].files):
                viewport.update(rect)
            row += 1

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        pos = event.position().toPoint()
        self._pressed = self._code_drag = None
        if event.button() == Qt.MouseButton.LeftButton:
            self._pressed = self._target(pos)
            index = self.indexAt(pos)
            code = self.delegate.code_at(index, pos) if index.isValid() and \
                self._pressed is None else None
            if code is not None:
                key, _, most = code
                self._code_drag = (key, most, event.position().x(),
                                   self.delegate.code_offsets.get(key, 0.0))
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        target = (self._target(event.position().toPoint())
                  if event.button() == Qt.MouseButton.LeftButton else None)
        super().mouseReleaseEvent(event)
        pressed, self._pressed, self._code_drag = self._pressed, None, None
        if target is not None and target == pressed:
            self._activate(*target)

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self._code_drag is not None and event.buttons() & Qt.MouseButton.LeftButton:
            key, most, x, offset = self._code_drag
            self.delegate.scroll_code(key, offset - (event.position().x() - x)
                                      - self.delegate.code_offsets.get(key, 0.0), most)
            self.viewport().update()
            return
        super().mouseMoveEvent(event)
        pos = event.position().toPoint()
        index = self.indexAt(pos)
        if self._target(pos) is not None:
            self.viewport().setCursor(Qt.CursorShape.PointingHandCursor)
        elif index.isValid() and self.delegate.code_at(index, pos) is not None:
            self.viewport().setCursor(Qt.CursorShape.OpenHandCursor)
        else:
            self.viewport().unsetCursor()

    def wheelEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        """A sideways wheel (or Shift and the wheel) over a wide code block scrolls it."""
        delta = event.angleDelta()
        sideways = delta.x() or (delta.y() if event.modifiers()
                                 & Qt.KeyboardModifier.ShiftModifier else 0)
        if sideways:
            pos = event.position().toPoint()
            index = self.indexAt(pos)
            code = self.delegate.code_at(index, pos) if index.isValid() else None
            if code is not None:
                key, box, most = code
                self.delegate.scroll_code(key, -sideways / 120 * CODE_WHEEL_STEP, most)
                self.viewport().update(box)
                event.accept()
                return
        super().wheelEvent(event)

    def context_menu(self, index: QModelIndex, pos: QPoint | None = None) -> QMenu:
        """The menu for row `index` (`pos`: where it was asked for, in the viewport; on a link
        it has the link's actions too): ui/message_menu.py's MessageMenu makes it."""
        return self.menu.build(index, pos)

    def contextMenuEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        index = self.indexAt(event.pos())
        if not index.isValid():
            return
        self.setCurrentIndex(index)
        menu = self.context_menu(index, event.pos())
        menu.exec(event.globalPos())
        menu.deleteLater()

    def copy_text(self, message: Message) -> None:
        model = self.message_model()
        row = model.row_of(message.id)
        name = model.display_name(row) if row is not None else _rows.nick_of(message)
        QGuiApplication.clipboard().setText(_rows.body_text(message, name))

    def delete_message(self, message: Message) -> QMessageBox | None:
        """Ask, then delete a message (on the Node's thread); it leaves the list on reload.
        Deleting is permanent on every computer, so mine are asked about too; others' only by
        an admin. Returns the box (None when I may not delete it)."""
        if message.author != self.message_model().me and not self._admin:
            return None
        return self.menu.confirm_delete(message)

    def _selected(self) -> Message | None:
        index = self.currentIndex()
        model = self.message_model()
        if not index.isValid() or not self.selectionModel().isSelected(index) \
                or index.row() >= len(model.messages):
            return None
        return model.messages[index.row()]

    def keyPressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        deleting = event.key() == Qt.Key.Key_Delete or event.matches(
            QKeySequence.StandardKey.Delete) or (sys.platform == "darwin"
                                                 and event.key() == Qt.Key.Key_Backspace)
        if deleting:
            message = self._selected()
            if message is not None and (message.author == self.message_model().me
                                        or self._admin):
                self.delete_message(message)
                event.accept()
                return
        if event.matches(QKeySequence.StandardKey.Copy):
            message = self._selected()
            if message is not None:
                self.copy_text(message)
                event.accept()
                return
        super().keyPressEvent(event)

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange,
                            QEvent.Type.StyleChange):
            delegate = getattr(self, "delegate", None)
            if delegate is not None:  # link colours and measures come from palette and font
                delegate.reset()
                self._style_overlays()
                self.scheduleDelayedItemsLayout()
        super().changeEvent(event)
