"""The channel's message list: rows drawn like a chat (one header per burst of one author, my
messages marked, pending ones dimmed, links clickable), a context menu, and lazy loading of
older messages when scrolled to the top.

Everything is drawn with the view's palette roles, never fixed colours, so it follows the
system's light or dark palette. Text is laid out once per (message, width) with QTextLayout and
cached; painting and hit-testing reuse the cached layout (no regex or layout per paint).
"""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from dataclasses import dataclass

from PySide6.QtCore import QEvent, QModelIndex, QPoint, QPointF, QRect, QSize, Qt, QUrl, Signal
from PySide6.QtGui import (
    QColor,
    QDesktopServices,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QKeySequence,
    QPainter,
    QPalette,
    QTextCharFormat,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QListView,
    QMenu,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
)

from app.records import Message

from . import _rows
from .models import MessageListModel

PAD_LEFT = 16  # text starts here; my messages' accent bar sits in this margin
BAR_X, BAR_WIDTH = 5, 3
GROUP_TOP = 8  # space above a row that starts a group
ROW_PAD = 2  # space above (inside a group) and below every row
PENDING_MARK = "◷ sending…"
PENDING_OPACITY = 0.55
LAYOUT_CACHE = 800  # laid-out rows kept for painting and hit-testing (a few screens' worth)
HEIGHT_CACHE = 250_000  # measured heights kept (cheap); cleared whole when it grows past this
LAYOUT_BATCH = 200


@dataclass(slots=True)
class _Body:
    layout: QTextLayout
    height: int
    first_line: float  # the first line's ascent: where the pending mark's baseline goes
    links: list[tuple[int, int, str]]  # UTF-16 ranges into the layout's text, and the URL


class MessageDelegate(QStyledItemDelegate):
    """Draws one message row; sizes and layouts are cached per message, width and name."""

    def __init__(self, view: MessageView):
        super().__init__(view)
        self._view = view
        self._layouts: OrderedDict[tuple, _Body] = OrderedDict()
        # Measured heights at one width: by message id (by (id, name) for "/me" rows, whose
        # text holds the name). Small ints, so 100,000 rows cost a few MB.
        self._heights: dict[bytes | tuple[bytes, str], int] = {}
        self._heights_width = 0
        self._option = QTextOption()
        self._option.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.reset()

    def reset(self) -> None:
        """Forget layouts and measures (the font, palette or style changed)."""
        self._layouts.clear()
        self._heights.clear()
        base = QFont(self._view.font())
        self._body_font = base
        self._emote_font = QFont(base)
        self._emote_font.setItalic(True)
        self._name_font = QFont(base)
        self._name_font.setBold(True)
        self._small_font = QFont(base)
        if base.pointSizeF() > 0:
            self._small_font.setPointSizeF(base.pointSizeF() * 0.85)
        else:
            self._small_font.setPixelSize(max(8, round(base.pixelSize() * 0.85)))
        self._name_metrics = QFontMetrics(self._name_font)
        self._small_metrics = QFontMetrics(self._small_font)
        self._line_height = QFontMetrics(base).height()
        self._header_height = max(self._name_metrics.height(), self._small_metrics.height())
        self._gutter = self._small_metrics.horizontalAdvance(PENDING_MARK) + 14
        self._link_format = QTextCharFormat()
        self._link_format.setForeground(self._view.palette().color(QPalette.ColorRole.Link))
        self._link_format.setFontUnderline(True)

    # Measures ----------------------------------------------------------------------------------

    def text_width(self) -> int:
        return max(40, self._view.viewport().width() - PAD_LEFT - self._gutter)

    def body_top(self, header: bool) -> int:
        """Where the text starts below a row's top edge."""
        return GROUP_TOP + self._header_height + 1 if header else ROW_PAD

    def body(self, message: Message, name: str, width: int) -> _Body:
        """The laid-out text of a row (cached; the name only matters to `/me` rows)."""
        key = (message.id, width, name if _rows.is_emote(message) else None)
        body = self._layouts.get(key)
        if body is not None:
            self._layouts.move_to_end(key)
            return body
        text = _rows.body_text(message, name)
        # QTextLayout breaks lines only at U+2028; both are one UTF-16 unit, so offsets hold.
        shown = text.replace("\n", "\u2028").replace("\r", "\u2028")
        layout = QTextLayout(shown, self._emote_font if _rows.is_emote(message)
                             else self._body_font)
        layout.setTextOption(self._option)
        links = [(*link.utf16(text), link.url) for link in _rows.links(text)]
        if links:
            formats = []
            for start, end, _ in links:
                span = QTextLayout.FormatRange()
                span.start, span.length, span.format = start, end - start, self._link_format
                formats.append(span)
            layout.setFormats(formats)
        layout.beginLayout()
        height = 0.0
        first = 0.0
        while True:
            line = layout.createLine()
            if not line.isValid():
                break
            line.setLineWidth(width)
            line.setPosition(QPointF(0, height))
            if not height:
                first = line.ascent()
            height += line.height()
        layout.endLayout()
        body = _Body(layout, max(self._line_height, math.ceil(height)), first, links)
        self._layouts[key] = body
        if len(self._layouts) > LAYOUT_CACHE:
            self._layouts.popitem(last=False)
        return body

    def body_height(self, message: Message, name: str, width: int) -> int:
        if width != self._heights_width or len(self._heights) >= HEIGHT_CACHE:
            self._heights.clear()
            self._heights_width = width
        key = (message.id, name) if _rows.is_emote(message) else message.id
        height = self._heights.get(key)
        if height is None:
            height = self._heights[key] = self.body(message, name, width).height
        return height

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return super().sizeHint(option, index)
        message, header, name, _, _ = model.row(index.row())
        height = self.body_height(message, name, self.text_width())
        return QSize(PAD_LEFT, self.body_top(header) + height + ROW_PAD)

    # Painting ----------------------------------------------------------------------------------

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex) -> None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return
        message, header, name, mine, pending = model.row(index.row())
        rect = option.rect
        palette = option.palette
        state = option.state
        group = (QPalette.ColorGroup.Disabled if not state & QStyle.StateFlag.State_Enabled
                 else QPalette.ColorGroup.Active if state & QStyle.StateFlag.State_Active
                 else QPalette.ColorGroup.Inactive)
        selected = bool(state & QStyle.StateFlag.State_Selected)
        hovered = bool(state & QStyle.StateFlag.State_MouseOver)
        painter.save()
        if selected or hovered:
            shade = QColor(palette.color(group, QPalette.ColorRole.Highlight))
            shade.setAlpha(70 if selected else 24)
            painter.fillRect(rect, shade)
        accent = palette.color(group, QPalette.ColorRole.Highlight)
        text_color = palette.color(group, QPalette.ColorRole.Text)
        quiet = palette.color(group, QPalette.ColorRole.PlaceholderText)
        if mine:
            top = rect.top() + (GROUP_TOP // 2 if header else 0)
            painter.fillRect(QRect(rect.left() + BAR_X, top, BAR_WIDTH, rect.bottom() - top + 1),
                             accent)
        x = rect.left() + PAD_LEFT
        right = rect.right() - self._gutter
        if header:
            self._paint_header(painter, message, name, mine, x, rect.top() + GROUP_TOP, right,
                               text_color, quiet)
        width = self.text_width()
        body = self.body(message, name, width)
        top = rect.top() + self.body_top(header)
        painter.setPen(text_color)
        if pending:
            painter.setOpacity(PENDING_OPACITY)
        body.layout.draw(painter, QPointF(x, top))
        painter.setOpacity(1.0)
        mark = PENDING_MARK if pending else (_rows.time_label(message.ts).split(" ")[-1]
                                             if hovered and not header else None)
        if mark:
            painter.setFont(self._small_font)
            painter.setPen(quiet)
            painter.drawText(QPointF(rect.right() - self._gutter + 8, top + body.first_line),
                             mark)
        painter.restore()

    def _paint_header(self, painter: QPainter, message: Message, name: str, mine: bool,
                      x: int, top: int, right: int, text_color: QColor, quiet: QColor) -> None:
        when = _rows.time_label(message.ts)
        you = "  (you)" if mine else ""
        small = self._small_metrics
        tail = small.horizontalAdvance(you) + small.horizontalAdvance(when) + 10
        shown = self._name_metrics.elidedText(name, Qt.TextElideMode.ElideRight,
                                              max(24, right - x - tail))
        baseline = top + max(self._name_metrics.ascent(), small.ascent())
        painter.setFont(self._name_font)
        painter.setPen(text_color)
        painter.drawText(QPointF(x, baseline), shown)
        x += self._name_metrics.horizontalAdvance(shown)
        painter.setFont(self._small_font)
        painter.setPen(quiet)
        if you:
            painter.drawText(QPointF(x, baseline), you)
            x += small.horizontalAdvance(you)
        painter.drawText(QPointF(x + 10, baseline), when)

    # Hit-testing -------------------------------------------------------------------------------

    def _placed(self, index: QModelIndex) -> tuple[_Body, QPoint] | None:
        model = index.model()
        if not isinstance(model, MessageListModel) or index.row() >= len(model.messages):
            return None
        message, header, name, _, _ = model.row(index.row())
        rect = self._view.visualRect(index)
        if not rect.isValid():
            return None
        body = self.body(message, name, self.text_width())
        return body, QPoint(rect.left() + PAD_LEFT, rect.top() + self.body_top(header))

    def link_at(self, index: QModelIndex, pos: QPoint) -> str | None:
        """The URL of the link under `pos` (viewport coordinates) in row `index`, if any."""
        placed = self._placed(index)
        if placed is None or not placed[0].links:
            return None
        body, origin = placed
        x, y = pos.x() - origin.x(), pos.y() - origin.y()
        for i in range(body.layout.lineCount()):
            line = body.layout.lineAt(i)
            if line.y() <= y < line.y() + line.height():
                if not line.x() <= x <= line.x() + line.naturalTextWidth():
                    return None
                at = line.xToCursor(x, line.CursorPosition.CursorOnCharacter)
                for start, end, url in body.links:
                    if start <= at < end:
                        return url
                return None
        return None

    def link_rects(self, index: QModelIndex) -> list[tuple[QRect, str]]:
        """Where row `index`'s links are drawn (viewport coordinates), one rect per line."""
        placed = self._placed(index)
        if placed is None:
            return []
        body, origin = placed
        rects = []
        for start, end, url in body.links:
            for i in range(body.layout.lineCount()):
                line = body.layout.lineAt(i)
                first = max(start, line.textStart())
                last = min(end, line.textStart() + line.textLength())
                if first >= last:
                    continue
                left = line.cursorToX(first)[0]
                right = line.cursorToX(last)[0]
                rects.append((QRect(origin.x() + math.floor(left), origin.y() + int(line.y()),
                                    max(1, math.ceil(right - left)), math.ceil(line.height())),
                              url))
        return rects


class MessageView(QListView):
    """The message list. Keeps its place like a chat: pinned to the newest message while at the
    bottom, on the message being read when older pages load above it or new ones arrive."""

    linkActivated = Signal(str)  # a link in a message was clicked (and opened)

    def __init__(self, model: MessageListModel):
        super().__init__(objectName="messageView")
        # Where to keep the view while rows change and layout batches run: ("bottom",),
        # ("message", id, row, pixels from the top), or None once the person scrolls.
        self._anchor: tuple | None = ("bottom",)
        self._anchor_channel = model.channel
        self._vetoing = False  # inside Qt's own fetch-when-the-last-row-shows
        self._stale = True  # rows changed and are not laid out yet: the scroll range is old
        self._pressed_link: str | None = None
        self.delegate = MessageDelegate(self)
        self.setItemDelegate(self.delegate)
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
        self.verticalScrollBar().actionTriggered.connect(self._person_scrolled)
        self.verticalScrollBar().sliderPressed.connect(self._person_scrolled)

    def message_model(self) -> MessageListModel:
        return self.model()

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
        index = self.indexAt(QPoint(PAD_LEFT, 0))
        if not index.isValid():
            self._anchor = ("bottom",)
            return
        self._anchor = ("message", model.messages[index.row()].id, index.row(),
                        self.visualRect(index).top())

    def _after_reset(self) -> None:
        if self.message_model().channel != self._anchor_channel:
            self._anchor, self._anchor_channel = ("bottom",), self.message_model().channel
        self._restore()

    def _after_insert(self, parent: QModelIndex, first: int, last: int) -> None:
        if self._anchor is not None and self._anchor[0] == "message" and first <= self._anchor[2]:
            kind, message_id, row, offset = self._anchor
            self._anchor = (kind, message_id, row + last - first + 1, offset)
        self._restore()

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

    def _fetch_allowed(self) -> bool:
        return not self._vetoing

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

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self._pressed_link = (self.link_at(event.position().toPoint())
                              if event.button() == Qt.MouseButton.LeftButton else None)
        super().mousePressEvent(event)

    def mouseReleaseEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        link = (self.link_at(event.position().toPoint())
                if event.button() == Qt.MouseButton.LeftButton else None)
        super().mouseReleaseEvent(event)
        if link is not None and link == self._pressed_link:
            self.open_link(link)
        self._pressed_link = None

    def mouseMoveEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().mouseMoveEvent(event)
        if self.link_at(event.position().toPoint()):
            self.viewport().setCursor(Qt.CursorShape.PointingHandCursor)
        else:
            self.viewport().unsetCursor()

    def context_menu(self, index: QModelIndex, pos: QPoint | None = None) -> QMenu:
        """The menu for row `index`: Copy text on every message, Delete on mine only, and the
        link's actions when `pos` is on a link."""
        model = self.message_model()
        message = model.messages[index.row()]
        menu = QMenu(self)
        link = self.delegate.link_at(index, pos) if pos is not None else None
        if link:
            menu.addAction("Open link", lambda: self.open_link(link))
            menu.addAction("Copy link", lambda: QGuiApplication.clipboard().setText(link))
            menu.addSeparator()
        menu.addAction("Copy text", lambda: self.copy_text(message))
        if message.author == model.me:
            menu.addSeparator()
            delete = menu.addAction("Delete", lambda: self.delete_message(message))
            delete.setObjectName("deleteMessage")
        return menu

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

    def delete_message(self, message: Message) -> None:
        """Delete one of my messages (on the Node's thread); it leaves the list on reload."""
        model = self.message_model()
        if message.author != model.me:
            return
        model.bridge.then(model.bridge.facade.delete(message.id), done=lambda _: model.reload())

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
            if message is not None and message.author == self.message_model().me:
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
                self.scheduleDelayedItemsLayout()
        super().changeEvent(event)
