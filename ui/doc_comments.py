"""Comments in the margin beside a document's editor (issue #16): each comment is a card level
with its words in the editor, with its replies, Reply and Resolve; "Comment…" comments on the
words selected in the editor.

The margin reads a branch's comments with app.doc_views' `comments_view` (a CommentsView:
the comments, anchored in the text at the branch's heads, read together with that text) and
writes with Documents' `comment_at`, `reply` and `resolve_comment`, each run on the Node's
thread (facade.run) and answered through the bridge. Positions are
codepoints of the view's text. The editor may show other text for a moment (typing not
committed yet, or commits the pane has not stepped to), so positions are carried across the
smallest edits between the two texts (`follow`) and converted to Qt's UTF-16 units; a card sits
at its words' line (`stack` keeps cards from overlapping, in the order of the text) and moves as
the editor scrolls, is resized or changes. Comments whose words were all deleted are listed
below, "On deleted text"; resolved ones are hidden unless "Show resolved" is on. Clicking a
card selects its words in the editor.

Wiring (by the pane that owns the editor): make `CommentMargin(bridge, editor)`, put it beside
the editor, call `show_branch(doc_id, branch)` whenever the pane opens a document or a branch,
`reload()` whenever the pane shows new heads (its `changed`), and `clear()` when it shows no
document.
"""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, QPoint, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QPalette, QTextCursor
from PySide6.QtWidgets import (
    QCheckBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.doc_views import comments_view
from app.documents import on_document
from app.records import CommentsView
from app.text_edits import minimal_edits

from . import theme
from ._rows import from_utf16, name_rgb, to_utf16
from .bridge import NodeBridge

MARGIN_WIDTH = 280  # px: the margin's preferred width beside the editor
PLACE_MS = 30  # after the editor's text changes, cards move once it has been quiet this long
EMPTY = "No comments yet. Select words in the editor and choose Comment…"
SELECT_FIRST = "Select the words to comment on first."
NOT_SAVED = "Those words are not saved yet; try again in a moment."
DETACHED = "On deleted text"
CARD_STYLE = ("QFrame#commentCard { background: palette(base); border: 1px solid palette(mid); "
              "border-radius: 6px; } "
              'QFrame#commentCard[current="true"] { border: 2px solid palette(highlight); } '
              'QFrame#commentCard[resolved="true"] { background: palette(window); }')


from .comment_places import (  # noqa: E402 (re-exported for the tests)
    Card,
    Edit,
    cards,
    carried,
    follow,
    shown_quote,
    stack,
)


def _label(text: str = "", name: str = "", *, wrap: bool = True) -> QLabel:
    """A label that shows its text as it is (what members write is never HTML)."""
    label = QLabel(objectName=name, wordWrap=wrap)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setText(text)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def _colour(label: QLabel, key: bytes) -> None:
    """The author's colour for a name, against the card's background (light or dark)."""
    base = label.palette().color(QPalette.ColorRole.Base)
    palette = label.palette()
    palette.setColor(QPalette.ColorRole.WindowText,
                     QColor(*name_rgb(key, (base.red(), base.green(), base.blue()))))
    label.setPalette(palette)


class CommentCard(QFrame):
    """One comment: its words, who wrote it and when, what it says, its replies, and Reply and
    Resolve. Typing a reply survives the card being refreshed."""

    replyRequested = Signal(str, str)  # comment id, text
    resolveRequested = Signal(str)
    activated = Signal(str)  # clicked: its words are wanted in the editor

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="commentCard")
        theme.styled(self, CARD_STYLE)
        self.card: Card | None = None
        self.quote = _label(name="commentQuote", wrap=False)
        self.quote.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        font = self.quote.font()
        font.setItalic(True)
        self.quote.setFont(font)
        self.quote.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.author = _label(name="commentAuthor", wrap=False)
        self.author.setFont(theme.scaled(self.author.font(), 1.0, bold=True))
        self.when = _label(name="commentTime", wrap=False)
        self.when.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.body = _label(name="commentBody")
        self.replies = QVBoxLayout()
        self.replies.setContentsMargins(8, 0, 0, 0)
        self.replies.setSpacing(2)
        self.reply_button = QToolButton(text="Reply", objectName="replyButton", autoRaise=True)
        self.reply_button.clicked.connect(self.open_reply)
        self.resolve_button = QToolButton(text="Resolve", objectName="resolveButton",
                                          autoRaise=True, toolTip="Mark this comment done "
                                          "(its author and the editors can)")
        self.resolve_button.clicked.connect(
            lambda: self.card and self.resolveRequested.emit(self.card.comment.id))
        self.resolved = _label(name="resolvedLabel", wrap=False)
        self.resolved.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.reply_input = QLineEdit(objectName="replyInput", placeholderText="Reply…")
        self.reply_input.returnPressed.connect(self._send_reply)
        self.reply_input.hide()

        header = QHBoxLayout()
        header.setSpacing(8)
        header.addWidget(self.author)
        header.addWidget(self.when)
        header.addStretch(1)
        actions = QHBoxLayout()
        actions.addWidget(self.resolved)
        actions.addStretch(1)
        actions.addWidget(self.reply_button)
        actions.addWidget(self.resolve_button)
        column = QVBoxLayout(self)
        column.setContentsMargins(8, 6, 8, 4)
        column.setSpacing(2)
        column.addWidget(self.quote)
        column.addLayout(header)
        column.addWidget(self.body)
        column.addLayout(self.replies)
        column.addWidget(self.reply_input)
        column.addLayout(actions)

    def show_card(self, card: Card) -> None:
        self.card = card
        comment = card.comment
        self.quote.setText(card.quote)
        self.quote.setToolTip(comment.quote)
        self.author.setText(card.name)
        _colour(self.author, comment.author)
        self.when.setText(card.when)
        self.body.setText(comment.text)
        while self.replies.count():
            item = self.replies.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        for author, name, when, text in card.replies:
            who = _label(f"{name} · {when}", "replyAuthor", wrap=False)
            _colour(who, author)
            self.replies.addWidget(who)
            self.replies.addWidget(_label(text, "replyText"))
        self.resolve_button.setVisible(card.can_resolve)
        self.resolved.setText(card.resolved)
        self.resolved.setVisible(bool(card.resolved))
        if self.property("resolved") != comment.resolved:
            self.setProperty("resolved", comment.resolved)
            self.style().unpolish(self)
            self.style().polish(self)

    def set_current(self, current: bool) -> None:
        """Marked while the editor's cursor is in its words."""
        if bool(self.property("current")) != current:
            self.setProperty("current", current)
            self.style().unpolish(self)
            self.style().polish(self)

    def open_reply(self) -> None:
        self.reply_input.show()
        self.reply_input.setFocus()

    def _send_reply(self) -> None:
        text = self.reply_input.text().strip()
        if text and self.card is not None:
            self.replyRequested.emit(self.card.comment.id, text)

    def replied(self) -> None:
        self.reply_input.clear()
        self.reply_input.hide()

    def texts(self) -> list[str]:
        """What the card reads, top to bottom (tests read it as a person would)."""
        out = [self.quote.text(), self.author.text(), self.body.text()]
        out += [self.replies.itemAt(i).widget().text() for i in range(self.replies.count())]
        return out + ([self.resolved.text()] if self.resolved.isVisibleTo(self) else [])

    def mousePressEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self.card is not None and event.button() == Qt.MouseButton.LeftButton:
            self.activated.emit(self.card.comment.id)
        super().mousePressEvent(event)


class CommentMargin(QWidget):
    """The comments of the branch shown in `editor`, beside it (see the module docstring)."""

    changed = Signal()  # the comments shown changed (tests wait on it)

    def __init__(self, bridge: NodeBridge, editor: QPlainTextEdit,
                 parent: QWidget | None = None):
        super().__init__(parent, objectName="commentMargin")
        self.bridge = bridge
        self.editor = editor
        self.doc_id: bytes | None = None
        self.branch = "main"
        self.view: CommentsView | None = None
        self._generation = 0  # views of a document or branch no longer shown are dropped
        self._cards: dict[str, CommentCard] = {}
        self._order: list[str] = []  # the comments' ids, in the order of the text
        self._selection: tuple[str, int, int] | None = None  # (editor text, start, end)

        title = QLabel("<b>Comments</b>")
        self.count = _label(name="commentCount", wrap=False)
        self.add_button = QPushButton("Comment…", objectName="addComment",
                                      toolTip="Comment on the words selected in the editor")
        self.add_button.clicked.connect(self.start_comment)
        self.show_resolved = QCheckBox("Show resolved", objectName="showResolved")
        self.show_resolved.toggled.connect(lambda _: self._arrange())
        self.notice = _label(name="commentNotice")
        self.notice.setForegroundRole(QPalette.ColorRole.PlaceholderText)

        self.composer = QFrame(objectName="commentComposer")
        self.composer_quote = _label(name="composerQuote")
        self.composer_quote.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.composer_body = QPlainTextEdit(objectName="composerBody",
                                            placeholderText="Your comment")
        self.composer_body.setMaximumHeight(90)
        self.post_button = QPushButton("Comment", objectName="postComment")
        self.post_button.clicked.connect(lambda: self.add_comment(
            self.composer_body.toPlainText()))
        cancel = QPushButton("Cancel", objectName="cancelComment")
        cancel.clicked.connect(self.cancel_comment)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(cancel)
        buttons.addWidget(self.post_button)
        composing = QVBoxLayout(self.composer)
        composing.setContentsMargins(0, 0, 0, 0)
        composing.addWidget(self.composer_quote)
        composing.addWidget(self.composer_body)
        composing.addLayout(buttons)
        self.composer.hide()

        # Cards level with their words: placed by hand (`_place`), not by a layout.
        self.canvas = QWidget(objectName="commentCanvas")
        self.canvas.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Expanding)
        self.canvas.installEventFilter(self)
        self.detached_box = QWidget(objectName="detachedComments")
        self.detached = QVBoxLayout(self.detached_box)
        self.detached.setContentsMargins(0, 0, 0, 0)
        below = _label(DETACHED, "detachedHeading", wrap=False)
        below.setFont(theme.scaled(below.font(), 1.0, bold=True))
        self.detached.addWidget(below)
        self.detached_box.hide()

        heading = QHBoxLayout()
        heading.addWidget(title)
        heading.addStretch(1)
        heading.addWidget(self.add_button)
        counts = QHBoxLayout()  # the count on its own row: the heading's is too narrow for it
        counts.addWidget(self.show_resolved)
        counts.addStretch(1)
        counts.addWidget(self.count)
        column = QVBoxLayout(self)
        column.setContentsMargins(4, 0, 0, 0)
        column.addLayout(heading)
        column.addLayout(counts)
        column.addWidget(self.composer)
        column.addWidget(self.notice)
        column.addWidget(self.canvas, 1)
        column.addWidget(self.detached_box)
        self.setMinimumWidth(MARGIN_WIDTH // 2)

        self._place_soon = QTimer(self, singleShot=True, interval=PLACE_MS)
        self._place_soon.timeout.connect(self._place)
        editor.verticalScrollBar().valueChanged.connect(lambda _: self._place())
        editor.textChanged.connect(self._place_soon.start)
        editor.cursorPositionChanged.connect(self._mark_current)
        editor.selectionChanged.connect(self._enable)
        editor.viewport().installEventFilter(self)
        self.clear()

    def sizeHint(self):  # noqa: N802 (Qt's name)
        hint = super().sizeHint()
        hint.setWidth(MARGIN_WIDTH)
        return hint

    # Showing -------------------------------------------------------------------------------

    def show_branch(self, doc_id: bytes, branch: str = "main") -> None:
        """Show the comments of `branch` of the document `doc_id`."""
        if (doc_id, branch) != (self.doc_id, self.branch):
            self._generation += 1
            self.doc_id, self.branch = doc_id, branch
            self.view = None
            self.cancel_comment()
            self._show_cards([])
        self.reload()

    def clear(self) -> None:
        """Show no document."""
        self._generation += 1
        self.doc_id, self.view = None, None
        self.cancel_comment()
        self._show_cards([])

    def reload(self) -> None:
        """Read the branch's comments again (after commits or comments arrive)."""
        if self.doc_id is None:
            return
        generation, branch = self._generation, self.branch
        self.bridge.then(self.bridge.facade.run(on_document(
                             self.doc_id, lambda docs, d: comments_view(docs, d, branch))),
                         done=lambda view: self._show(generation, view),
                         failed=self.say)

    def _show(self, generation: int, view: CommentsView) -> None:
        if generation != self._generation:
            return
        self.view = view
        self.say(view.unreadable or "")
        self._show_cards(cards(view, self.bridge.facade.key))
        self.changed.emit()

    def _show_cards(self, wanted: list[Card]) -> None:
        ids = {c.comment.id for c in wanted}
        for comment_id in [i for i in self._cards if i not in ids]:
            self._cards.pop(comment_id).deleteLater()
        for card in wanted:
            widget = self._cards.get(card.comment.id)
            if widget is None:
                widget = self._cards[card.comment.id] = CommentCard()
                widget.replyRequested.connect(self.reply)
                widget.resolveRequested.connect(self.resolve)
                widget.activated.connect(self.select_words)
            widget.show_card(card)
        self._order = [c.comment.id for c in wanted]
        self._arrange()

    def _arrange(self) -> None:
        """Attached cards on the canvas, detached ones listed below; resolved ones only when
        asked for."""
        shown = self.show_resolved.isChecked()
        detached = 0
        for comment_id in self._order:
            widget = self._cards[comment_id]
            comment = widget.card.comment  # type: ignore[union-attr]
            visible = shown or not comment.resolved
            if comment.detached:
                if widget.parent() is not self.detached_box:
                    self.detached.addWidget(widget)
                detached += visible
            elif widget.parent() is not self.canvas:
                self.detached.removeWidget(widget)
                widget.setParent(self.canvas)
            widget.setVisible(visible)
        self.detached_box.setVisible(detached > 0)
        open_ = sum(not self._cards[i].card.comment.resolved for i in self._order)  # type: ignore[union-attr]
        resolved = len(self._order) - open_
        self.count.setText(f"{open_} open" + (f", {resolved} resolved" if resolved else "")
                           if self._order else "")
        if not self._order and self.view is not None and self.view.unreadable is None:
            self.say(EMPTY)
        elif self.notice.text() == EMPTY:
            self.say("")
        self._enable()
        self._place()
        self._mark_current()

    def _place(self) -> None:
        """Each attached card level with its words' line in the editor, none overlapping."""
        view = self.view
        placed = [w for i in self._order if (w := self._cards[i]).parent() is self.canvas
                  and w.isVisibleTo(self.canvas)]
        if view is None or not placed:
            return
        text, edits = self._edits(view)
        width = max(1, self.canvas.width() - 4)
        viewport = self.editor.viewport()
        wanted, heights = [], []
        for widget in placed:
            comment = widget.card.comment  # type: ignore[union-attr]
            start = follow(comment.start or 0, edits, after=True)
            cursor = QTextCursor(self.editor.document())
            cursor.setPosition(min(to_utf16(text, start), len(text.encode("utf-16-le")) // 2))
            top = self.editor.cursorRect(cursor).top()
            at = self.canvas.mapFromGlobal(viewport.mapToGlobal(QPoint(0, top))).y()
            # Words in sight whose line is above the canvas (beside the margin's heading) get
            # their card at the canvas's top; words scrolled out of sight take theirs along.
            wanted.append(max(at, 0) if top >= 0 else at)
            layout = widget.layout()
            heights.append(layout.totalHeightForWidth(width) if layout.hasHeightForWidth()
                           else widget.sizeHint().height())
        for widget, top, height in zip(placed, stack(wanted, heights), heights, strict=True):
            widget.setGeometry(2, top, width, height)

    def _mark_current(self) -> None:
        """Mark the cards whose words hold the editor's cursor."""
        view = self.view
        if view is None:
            return
        text, edits = self._edits(view)
        at = from_utf16(text, self.editor.textCursor().position())
        for widget in self._cards.values():
            comment = widget.card.comment  # type: ignore[union-attr]
            inside = False
            if comment.start is not None and comment.end is not None:
                start = follow(comment.start, edits, after=True)
                inside = start <= at < follow(comment.end, edits, after=False)
            widget.set_current(inside)

    def _edits(self, view: CommentsView) -> tuple[str, list[Edit]]:
        """The editor's text, and the edits from the view's text to it (none when equal)."""
        text = self.editor.toPlainText()
        return text, [] if text == view.text else minimal_edits(view.text, text)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if event.type() == QEvent.Type.Resize:
            self._place()
        return super().eventFilter(watched, event)

    def say(self, text: str) -> None:
        self.notice.setText(text)
        self.notice.setVisible(bool(text))

    def _enable(self) -> None:
        readable = self.view is not None and self.view.unreadable is None
        self.add_button.setEnabled(readable)

    def comment_cards(self) -> list[CommentCard]:
        """The cards shown, in the order of the text (detached ones last)."""
        return [self._cards[i] for i in self._order if self._cards[i].isVisibleTo(self)]

    # Acting ---------------------------------------------------------------------------------

    def select_words(self, comment_id: str) -> None:
        """Select a comment's words in the editor."""
        widget = self._cards.get(comment_id)
        if widget is None or self.view is None or widget.card.comment.detached:  # type: ignore[union-attr]
            return
        comment = widget.card.comment  # type: ignore[union-attr]
        text = self.editor.toPlainText()
        start, end = carried(self.view.text, text, comment.start, comment.end)  # type: ignore[arg-type]
        cursor = QTextCursor(self.editor.document())
        cursor.setPosition(to_utf16(text, start))
        cursor.setPosition(to_utf16(text, max(start, end)), QTextCursor.MoveMode.KeepAnchor)
        self.editor.setTextCursor(cursor)
        self.editor.setFocus()

    def start_comment(self) -> None:
        """Open the composer on the words selected in the editor."""
        cursor = self.editor.textCursor()
        if not cursor.hasSelection():
            self.say(SELECT_FIRST)
            return
        text = self.editor.toPlainText()
        start = from_utf16(text, cursor.selectionStart())
        end = from_utf16(text, cursor.selectionEnd())
        self._selection = (text, start, end)
        self.composer_quote.setText(shown_quote(text[start:end]))
        self.composer.show()
        self.composer_body.setFocus()
        self.say("")

    def cancel_comment(self) -> None:
        self._selection = None
        self.composer_body.clear()
        self.composer.hide()

    def add_comment(self, body: str) -> None:
        """Comment `body` on the words the composer was opened on."""
        if self._selection is None or self.view is None or self.doc_id is None:
            self.say(SELECT_FIRST)
            return
        if not body.strip():
            self.composer_body.setFocus()
            return
        text, start, end = self._selection
        view = self.view
        start, end = carried(text, view.text, start, end)
        if end <= start:
            self.say(NOT_SAVED)
            return
        generation = self._generation

        def done(_: str) -> None:
            if generation == self._generation:
                self.cancel_comment()
                self.reload()

        self.post_button.setEnabled(False)

        def settled(action, value) -> None:
            self.post_button.setEnabled(True)
            action(value)

        branch, heads = self.branch, list(view.heads)
        self.bridge.then(self.bridge.facade.run(on_document(
                             self.doc_id, lambda docs, d: docs.comment_at(
                                 d, start, end, body, branch=branch, heads=heads))),
                         done=lambda result: settled(done, result),
                         failed=lambda message: settled(self.say, message))

    def reply(self, comment_id: str, text: str) -> None:
        if self.doc_id is None:
            return

        def done(_: str) -> None:
            widget = self._cards.get(comment_id)
            if widget is not None:
                widget.replied()
            self.reload()

        self.bridge.then(self.bridge.facade.run(on_document(
                             self.doc_id, lambda docs, d: docs.reply(d, comment_id, text))),
                         done=done, failed=self.say)

    def resolve(self, comment_id: str) -> None:
        if self.doc_id is not None:
            self.bridge.then(self.bridge.facade.run(on_document(
                                 self.doc_id, lambda docs, d: docs.resolve_comment(d, comment_id))),
                             done=lambda _: self.reload(), failed=self.say)
