"""Search results: messages grouped by channel, matching channels and documents.

`SearchPanel(bridge).run(query)` asks the library on the Node's thread (`ws.search`, app/search.py's
syntax: words, "phrases", in:#channel from:nick before:/after:YYYY-MM-DD) and shows the answer
when it arrives on the GUI thread; an answer to an older query than the latest is dropped. It
shows a count line, then under a "#channel" heading each matching message as author, time and
text with the matched words marked (bold on a highlight tint, from the palette), then the
channels whose name or topic matches, then the documents whose title does. A bad filter shows
its one-line refusal instead.

Up and Down move between results, Enter opens one, Escape closes the panel, in the list or in
any widget handed to `keys_from` (the window's search box). Opening a result emits
messageChosen (the Message), channelChosen (its name) or documentChosen (its hex id); Escape
emits closed. resultsShown tells that the latest query's answer (or refusal) is on screen.

Search runs as one types: `typed(text)` (the search box's textChanged: `keys_from` connects it)
restarts a TYPING_MS timer, and when typing pauses the panel emits queryTyped(text), which
the window takes as it takes Enter (runs it, or closes the results for an empty box). A
result's text is shown without its Markdown markup (`app.search.plain_text`), its matches
found in what is shown.
"""

from __future__ import annotations

from PySide6.QtCore import (
    QEvent,
    QModelIndex,
    QObject,
    QPointF,
    QRect,
    QSize,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import (
    QColor,
    QFont,
    QFontMetrics,
    QKeyEvent,
    QPainter,
    QPalette,
    QTextCharFormat,
    QTextLayout,
    QTextOption,
)
from PySide6.QtWidgets import (
    QLabel,
    QListWidget,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QVBoxLayout,
    QWidget,
)

from app.records import Message
from app.search import (
    HINT,
    SearchResults,
    highlights,
    mention_results,
    plain_text,
    snippet,
    summary,
)

from . import _rows
from .bridge import NodeBridge

LIMIT = 50  # messages asked for
SNIPPET = 160  # characters of a message a row shows, around its first match
# Roles of the list's items.
TARGET_ROLE = Qt.ItemDataRole.UserRole  # ("message", Message) | ("channel", name) |
#                                         ("document", hex id); none on headings
SPANS_ROLE = Qt.ItemDataRole.UserRole + 1  # [(start, end, kind)] over the item's text
AUTHOR, TIME, MATCH = "author", "time", "match"  # kinds of spans
SEPARATOR = "  "
MATCH_ALPHA = 90  # the highlight tint behind a matched word (of 255)
PAD = 8  # left and right of a row's text
ROW_PAD = 8  # above and below it, together
ELLIPSIS = "…"
TYPING_MS = 250  # a pause in typing this long runs the query typed (no Enter needed)


def _spans(prefix: list[tuple[str, str | None]], text: str,
           marks: list[tuple[int, int]]) -> tuple[str, list[tuple[int, int, str]]]:
    """A row's text: the (part, kind) pieces of `prefix`, each followed by SEPARATOR, then
    `text` with its `marks` as MATCH spans; and every span over the whole."""
    shown = ""
    spans = []
    for part, kind in prefix:
        if kind is not None:
            spans.append((len(shown), len(shown) + len(part), kind))
        shown += part + SEPARATOR
    spans += [(len(shown) + start, len(shown) + end, MATCH) for start, end in marks]
    return shown + text, spans


class _RowDelegate(QStyledItemDelegate):
    """Draws the rows: a result's author bold, its time quiet and its matches bold on a tint
    of the palette's highlight, cut with "…" where it outruns the row; a heading bold."""

    def paint(self, painter: QPainter, option: QStyleOptionViewItem,
              index: QModelIndex) -> None:
        spans = index.data(SPANS_ROLE)
        text = index.data(Qt.ItemDataRole.DisplayRole) or ""
        palette = option.palette
        state = option.state
        group = (QPalette.ColorGroup.Disabled if not state & QStyle.StateFlag.State_Enabled
                 else QPalette.ColorGroup.Active if state & QStyle.StateFlag.State_Active
                 else QPalette.ColorGroup.Inactive)
        rect = QRect(option.rect)
        painter.save()
        painter.setClipRect(rect)
        selected = bool(state & QStyle.StateFlag.State_Selected)
        if spans is not None and (selected or state & QStyle.StateFlag.State_MouseOver):
            shade = QColor(palette.color(group, QPalette.ColorRole.Highlight))
            shade.setAlpha(70 if selected else 24)
            painter.fillRect(rect, shade)
        font = QFont(option.font)
        if spans is None:  # a heading
            font.setBold(True)
        layout = QTextLayout(text, font)
        wrap = QTextOption()
        wrap.setWrapMode(QTextOption.WrapMode.NoWrap)
        layout.setTextOption(wrap)
        layout.setFormats([self._format(text, span, palette, group) for span in spans or ()])
        layout.beginLayout()
        line = layout.createLine()
        width = max(1, rect.width() - 2 * PAD)
        if line.isValid():
            line.setLineWidth(width)
        layout.endLayout()
        top = rect.top() + (rect.height() - (line.height() if line.isValid() else 0)) / 2
        painter.setPen(palette.color(group, QPalette.ColorRole.Text))
        if line.isValid() and line.naturalTextWidth() > width:
            more = QFontMetrics(font).horizontalAdvance(ELLIPSIS)
            cut = QRect(rect)
            cut.setRight(rect.right() - PAD - more)
            painter.setClipRect(cut)
            layout.draw(painter, QPointF(rect.left() + PAD, top))
            painter.setClipRect(rect)
            painter.setFont(font)
            painter.drawText(QRect(cut.right() + 1, rect.top(), more + PAD, rect.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             ELLIPSIS)
        else:
            layout.draw(painter, QPointF(rect.left() + PAD, top))
        painter.restore()

    @staticmethod
    def _format(text: str, span: tuple[int, int, str], palette: QPalette,
                group: QPalette.ColorGroup) -> QTextLayout.FormatRange:
        start, end, kind = span
        form = QTextCharFormat()
        if kind == TIME:
            form.setForeground(palette.color(group, QPalette.ColorRole.PlaceholderText))
        else:
            form.setFontWeight(QFont.Weight.Bold)
            if kind == MATCH:
                tint = QColor(palette.color(group, QPalette.ColorRole.Highlight))
                tint.setAlpha(MATCH_ALPHA)
                form.setBackground(tint)
        out = QTextLayout.FormatRange()
        out.start = _rows.to_utf16(text, start)
        out.length = _rows.to_utf16(text, end) - out.start
        out.format = form
        return out

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex) -> QSize:  # noqa: N802
        font = QFont(option.font)
        font.setBold(True)
        return QSize(option.rect.width(), QFontMetrics(font).height() + ROW_PAD)


class SearchPanel(QWidget):
    messageChosen = Signal(object)  # the Message
    channelChosen = Signal(str)  # the channel's name
    documentChosen = Signal(str)  # the document's hex id
    closed = Signal()  # Escape
    resultsShown = Signal()  # the latest query's results (or its refusal) are on screen
    queryTyped = Signal(str)  # typing paused on this query (TYPING_MS): the window runs it

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None, *,
                 limit: int = LIMIT):
        super().__init__(parent, objectName="searchResults")
        self.bridge = bridge
        self.limit = limit
        self.query = ""
        self.results: SearchResults | None = None
        self.error: str | None = None
        self._asked = 0  # which run() the shown answer must belong to
        self._typed = ""
        self._typing = QTimer(self, singleShot=True, interval=TYPING_MS)
        self._typing.timeout.connect(lambda: self.queryTyped.emit(self._typed))

        self.count_label = QLabel(objectName="searchCount")
        self.count_label.setTextFormat(Qt.TextFormat.PlainText)
        self.count_label.setWordWrap(True)
        self.hint_label = QLabel(HINT, objectName="searchHint")
        self.hint_label.setTextFormat(Qt.TextFormat.PlainText)
        self.hint_label.setWordWrap(True)
        self.hint_label.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.hint_label.hide()
        self.list = QListWidget(objectName="searchList")
        self.list.setItemDelegate(_RowDelegate(self.list))
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setUniformItemSizes(True)
        self.list.setMouseTracking(True)
        self.list.itemClicked.connect(self._open)
        self.keys_from(self.list)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        for label in (self.count_label, self.hint_label):
            label.setContentsMargins(PAD, PAD // 2, PAD, PAD // 2)
        layout.addWidget(self.count_label)
        layout.addWidget(self.hint_label)
        layout.addWidget(self.list, 1)
        self.setFocusProxy(self.list)

    # Asking --------------------------------------------------------------------------------------

    def typed(self, text: str) -> None:
        """The search box's text changed: once typing pauses for TYPING_MS, queryTyped(text)
        (each change restarts the wait, so a fast typist asks once)."""
        self._typed = text
        self._typing.start()

    def run(self, query: str) -> None:
        """Search for `query`; the answer replaces what is shown when it arrives. An empty
        query clears the panel."""
        if query == self._typed:
            self._typing.stop()  # asked already (Enter): the pause need not ask again
        self._asked += 1
        self.query = query
        if not query.strip():
            self.clear()
            return
        asked, limit = self._asked, self.limit
        self.count_label.setText("Searching…")
        self.bridge.then(self.bridge.facade.run(lambda ws: ws.search(query, limit=limit)),
                         done=lambda results: self._answered(asked, results),
                         failed=lambda message: self._refused(asked, message))

    def show_mentions(self) -> None:
        """Show the messages that mention me, newest first, grouped by channel as results are
        (ws.conversation.mentions); choosing one opens it in its channel."""
        self._asked += 1
        asked = self._asked
        self.query = ""
        self.count_label.setText("Looking for mentions of you…")

        def shown(messages: list[Message], nick: str | None) -> None:
            self._answered(asked, mention_results(messages, nick))
            if asked == self._asked:
                count = len(messages)
                self.count_label.setText(
                    f"{count} {'mention' if count == 1 else 'mentions'} of you" if count else
                    "Nobody has mentioned you yet. When someone writes @" +
                    (nick or "yournickname") + ", it shows here.")
                self.hint_label.hide()

        run, limit = self.bridge.facade.run, self.limit
        self.bridge.then(run(lambda ws: ws.nickname()), done=lambda nick: self.bridge.then(
            run(lambda ws: ws.conversation.mentions(limit=limit)),
            done=lambda messages: shown(messages, nick)))

    def clear(self) -> None:
        self.results = None
        self.error = None
        self.list.clear()
        self.count_label.clear()
        self.hint_label.hide()

    def _answered(self, asked: int, results: SearchResults) -> None:
        if asked != self._asked:
            return  # an answer to an older query
        self.results = results
        self.error = None
        self.count_label.setText(summary(results))
        self.hint_label.setVisible(results.empty)
        self._fill(results)
        self.resultsShown.emit()

    def _refused(self, asked: int, message: str) -> None:
        if asked != self._asked:
            return
        self.results = None
        self.error = message
        self.list.clear()
        self.count_label.setText(message)
        self.hint_label.show()
        self.resultsShown.emit()

    # Showing -------------------------------------------------------------------------------------

    def _fill(self, results: SearchResults) -> None:
        self.list.clear()
        terms = results.terms
        names = _rows.NickIndex(results.messages)  # lookalike nicknames get key suffixes
        for group in results.groups:
            self._heading(f"#{group.label}")
            for message in group.messages:
                plain = plain_text(message.text)  # "**bold**" reads "bold", marked there
                shown, marks = snippet(plain, highlights(plain, terms), SNIPPET)
                text, spans = _spans([(names.name(message), AUTHOR),
                                      (_rows.time_label(message.ts), TIME)], shown, marks)
                item = self._row(text, spans, ("message", message))
                item.setToolTip(f"{_rows.full_time(message.ts)}\n{message.text[:1000]}")
        if results.channels:
            self._heading("Channels")
            for channel in results.channels:
                topic = channel.topic or ""
                label = f"#{channel.label}"
                text = label + (SEPARATOR + topic if topic else "")
                marks = highlights(text, terms)
                self._row(text, [(s, e, MATCH) for s, e in marks], ("channel", channel.name))
        if results.documents:
            self._heading("Documents")
            for document in results.documents:
                marks = highlights(document.title, terms)
                self._row(document.title, [(s, e, MATCH) for s, e in marks],
                          ("document", document.id))
        first = next((row for row in range(self.list.count())
                      if self.list.item(row).data(TARGET_ROLE) is not None), None)
        if first is not None:
            self.list.setCurrentRow(first)

    def _heading(self, text: str) -> None:
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.ItemIsEnabled)
        self.list.addItem(item)

    def _row(self, text: str, spans: list[tuple[int, int, str]],
             target: tuple[str, object]) -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setData(TARGET_ROLE, target)
        item.setData(SPANS_ROLE, spans)
        self.list.addItem(item)
        return item

    def rows(self) -> list[QListWidgetItem]:
        """The result rows (not the headings), top to bottom."""
        return [self.list.item(row) for row in range(self.list.count())
                if self.list.item(row).data(TARGET_ROLE) is not None]

    # Keys and choosing ---------------------------------------------------------------------------

    def keys_from(self, widget: QWidget) -> None:
        """Up, Down, Enter and Escape pressed in `widget` (the window's search box) drive the
        panel. Enter opens the selected result only while the box still holds the query
        shown; after an edit, it reaches the box (which runs the new query). A widget with a
        textChanged(str) signal (a QLineEdit) also searches as one types (`typed`)."""
        widget.installEventFilter(self)
        changed = getattr(widget, "textChanged", None)
        if changed is not None:
            changed.connect(self.typed)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            if key in (Qt.Key.Key_Up, Qt.Key.Key_Down):
                self.move(1 if key == Qt.Key.Key_Down else -1)
                return True
            if key == Qt.Key.Key_Escape:
                self.closed.emit()
                return True
            if key in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self._shows(watched):
                self.open_current()
                return True
        return super().eventFilter(watched, event)

    def _shows(self, watched: QObject) -> bool:
        """Whether Enter in `watched` means the selected result: in the list, or in a search
        box whose text is the query whose results are shown."""
        if self.list.currentItem() is None or self.results is None:
            return False
        text = getattr(watched, "text", None)
        return watched is self.list or not callable(text) or \
            text().strip() == self.query.strip()

    def move(self, step: int) -> None:
        """Select the next (step 1) or previous (-1) result, skipping headings."""
        row = self.list.currentRow()
        while 0 <= row + step < self.list.count():
            row += step
            if self.list.item(row).data(TARGET_ROLE) is not None:
                self.list.setCurrentRow(row)
                self.list.scrollToItem(self.list.item(row))
                return

    def open_current(self) -> None:
        item = self.list.currentItem()
        if item is not None:
            self._open(item)

    def _open(self, item: QListWidgetItem) -> None:
        target = item.data(TARGET_ROLE)
        if target is None:
            return
        kind, value = target
        if kind == "message" and isinstance(value, Message):
            self.messageChosen.emit(value)
        elif kind == "channel":
            self.channelChosen.emit(value)
        elif kind == "document":
            self.documentChosen.emit(value)
