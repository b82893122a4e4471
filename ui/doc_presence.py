"""Others' cursors in the open document, painted over the editor, and mine sent to them
(issue #16, presence; docs/ARCHITECTURE.md "Sync" says what travels).

Presence is a live signal, never stored: the facade's `presence` and `presence_left` send it,
and NodeBridge.presence / presenceLeft bring others' (sync/session.py has the frames, their
limits and checks). Like typing, it goes only to the peers connected now.

Sending (`DocPresence`). My selection goes out when it moves (at most every SEND_MS),
when the branch's heads change (the pane's `changed`), and every PRESENCE_REFRESH_S while the
document shows, so a peer that connects later sees me within that; when the pane stops showing
the document (another document, a channel, the window closing) a `left` goes at once. It goes
to the document's readers only: every member for a workspace document, its editors for a
private one.

Positions are codepoints of the text at the commits the editor was last in step with (the
pane's `seen`), with those heads, rather than Yjs sticky indices: the editor holds typing that
is not committed yet (up to the pane's pause), which has no Yjs items a sticky index could
name, on both sides, so the sender maps its cursor back onto the text at its heads, and the
receiver maps the position from that text onto its editor, through its own uncommitted typing
(ui/doc_cursors.map_position). That needs only the texts both sides already hold and keeps
the frame small and checkable. A presence whose heads are not the receiver's (a commit that has
not reached one side yet, for a moment) leaves that person's cursor where it was: the
receiver's QTextCursor for it moves with every edit applied to the editor, so it stays on its
characters until a presence on the same heads places it exactly again.

Receiving. Each person's latest presence per document is kept (ui/doc_cursors.PresenceBook)
until `left`, the end of their session, or `ttl_s` (PRESENCE_TTL_S) without a frame; my own
key never shows. `CursorOverlay` paints, over the editor's viewport, a caret and a tinted
selection in the person's colour (ui/_rows.name_rgb against the editor's base, so it reads in
light and dark palettes), and a label with their name above the caret in that colour, its text
black or white, whichever reads.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, QRect, QRectF, Qt, QTimer
from PySide6.QtGui import QColor, QPainter, QPalette, QTextCursor
from PySide6.QtWidgets import QLabel, QPlainTextEdit, QWidget

from app.names import suffixed
from app.node import PRESENCE_REFRESH_S, PRESENCE_TTL_S

from . import theme
from ._rows import ANONYMOUS, contrast, from_utf16, member_names, name_rgb, to_utf16
from .doc_cursors import Presence, PresenceBook, map_position
from .doc_sharing import WORKSPACE

if TYPE_CHECKING:
    from .document_pane import DocumentPane

SEND_MS = 50  # my selection goes at most this often while it moves (the Node limits the wire)
CARET_PX = 2
SELECTION_ALPHA = 70
LABEL_SCALE = 0.8  # the name label's size against the editor's


def _rgb(color: QColor) -> tuple[int, int, int]:
    return color.red(), color.green(), color.blue()


class CursorOverlay(QWidget):
    """Others' carets, selections and names over `editor`'s viewport (it takes no clicks).
    Positions are the editor's (UTF-16); each is a QTextCursor, so it follows the edits made
    to the text around it."""

    def __init__(self, editor: QPlainTextEdit):
        super().__init__(editor.viewport(), objectName="remoteCursors")
        self.editor = editor
        self.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
        self.setAttribute(Qt.WidgetAttribute.WA_NoSystemBackground)
        self._cursors: dict[bytes, QTextCursor] = {}
        self._labels: dict[bytes, QLabel] = {}
        self._font = theme.scaled(editor.font(), LABEL_SCALE)
        editor.viewport().installEventFilter(self)
        editor.updateRequest.connect(self.refresh)
        self.setGeometry(editor.viewport().rect())
        self.show()

    # What the controller says -----------------------------------------------------------------

    def place(self, key: bytes, name: str, anchor: int, position: int) -> None:
        """Show `key`'s selection from `anchor` to `position` (UTF-16), labelled `name`."""
        last = max(0, self.editor.document().characterCount() - 1)
        cursor = self._cursors.get(key)
        if cursor is None:
            cursor = self._cursors[key] = QTextCursor(self.editor.document())
        cursor.setPosition(max(0, min(anchor, last)))
        cursor.setPosition(max(0, min(position, last)), QTextCursor.MoveMode.KeepAnchor)
        label = self._labels.get(key)
        if label is None:
            label = self._labels[key] = QLabel(self, objectName="remoteCursorLabel")
            label.setAttribute(Qt.WidgetAttribute.WA_TransparentForMouseEvents)
            label.setTextFormat(Qt.TextFormat.PlainText)  # a nickname is a peer's text
            label.setFont(self._font)
            self._style(key, label)
        self.rename(key, name)

    def rename(self, key: bytes, name: str) -> None:
        label = self._labels.get(key)
        if label is not None and label.text() != name:
            label.setText(name)
            label.setToolTip(name)
            label.adjustSize()
        self.refresh()

    def drop(self, key: bytes) -> None:
        self._cursors.pop(key, None)
        label = self._labels.pop(key, None)
        if label is not None:
            label.hide()
            label.deleteLater()
        self.update()

    def clear(self) -> None:
        for key in list(self._cursors):
            self.drop(key)

    def people(self) -> set[bytes]:
        """Whose cursors show."""
        return set(self._cursors)

    def selection(self, key: bytes) -> tuple[int, int] | None:
        """`key`'s (anchor, position) in the editor (UTF-16), or None."""
        cursor = self._cursors.get(key)
        return None if cursor is None else (cursor.anchor(), cursor.position())

    def label(self, key: bytes) -> QLabel | None:
        return self._labels.get(key)

    def caret_rect(self, key: bytes) -> QRect:
        """Where `key`'s caret is drawn, in the viewport's coordinates."""
        caret = QTextCursor(self._cursors[key])
        caret.clearSelection()
        rect = self.editor.cursorRect(caret)
        return QRect(rect.left(), rect.top(), CARET_PX, rect.height())

    # Painting -------------------------------------------------------------------------------

    def refresh(self, *_: object) -> None:
        """Follow the editor: its text moved or scrolled."""
        if not self._cursors:
            return
        # Scrolling moves the viewport's children with its pixels: back to cover it.
        if self.geometry() != self.editor.viewport().rect():
            self.setGeometry(self.editor.viewport().rect())
        for key, label in self._labels.items():
            caret = self.caret_rect(key)
            x = max(0, min(caret.left(), self.width() - label.width()))
            y = caret.top() - label.height()
            if y < 0:  # no room above the first line: below the caret
                y = caret.bottom() + 1
            label.move(x, y)
            label.setVisible(self.rect().intersects(caret))
        self.update()

    def colour(self, key: bytes) -> QColor:
        """`key`'s colour, readable on the editor's background."""
        base = self.editor.palette().color(QPalette.ColorRole.Base)
        return QColor(*name_rgb(key, _rgb(base)))

    def _style(self, key: bytes, label: QLabel) -> None:
        colour = self.colour(key)
        text = "#000000" if contrast(_rgb(colour), (0, 0, 0)) >= \
            contrast(_rgb(colour), (255, 255, 255)) else "#ffffff"
        label.setStyleSheet(f"QLabel {{ background: {colour.name()}; color: {text}; "
                            "border-radius: 3px; padding: 0px 3px; }")

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if not self._cursors:
            return
        painter = QPainter(self)
        for key in self._cursors:
            colour = self.colour(key)
            tint = QColor(colour)
            tint.setAlpha(SELECTION_ALPHA)
            for rect in self.selection_rects(key):
                painter.fillRect(rect, tint)
            painter.fillRect(self.caret_rect(key), colour)
        painter.end()

    def selection_rects(self, key: bytes) -> list[QRectF]:
        """The rectangles `key`'s selection tints, from the first line that shows down."""
        cursor = self._cursors[key]
        start, end = cursor.selectionStart(), cursor.selectionEnd()
        if start == end:
            return []
        editor = self.editor
        doc = editor.document()
        block = doc.findBlock(start)
        first = editor.firstVisibleBlock()
        if first.isValid() and first.blockNumber() > block.blockNumber():
            block = first
        offset = editor.contentOffset()
        rects = []
        while block.isValid() and block.position() <= end:
            top = editor.blockBoundingGeometry(block).translated(offset)
            if top.top() > self.height():
                break
            layout = block.layout()
            for i in range(layout.lineCount()):
                line = layout.lineAt(i)
                line_start = block.position() + line.textStart()
                line_end = line_start + line.textLength()
                low, high = max(start, line_start), min(end, line_end)
                if low > high or (low == high and end <= line_end):
                    continue
                # cursorToX counts from the layout's left, the line's indent included.
                left = line.cursorToX(low - block.position())[0]
                right = line.cursorToX(high - block.position())[0]
                if end > line_end:  # the selection goes on: show its line break
                    right = max(right, line.x() + line.naturalTextWidth()) + CARET_PX * 2
                rects.append(QRectF(top.left() + left, top.top() + line.y(),
                                    max(right - left, 1.0), line.height()))
            block = block.next()
        return rects

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802
        if watched is self.editor.viewport() and event.type() == QEvent.Type.Resize:
            self.setGeometry(self.editor.viewport().rect())
            self.refresh()
        return False

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange:  # light and dark: colours again
            for key, label in self._labels.items():
                self._style(key, label)


class DocPresence(QObject):
    """My presence in the pane's document, sent; others', shown (see the module docstring).
    `ttl_s` is for tests. The pane calls `opened` when it opens a document or branch, `leave`
    when it stops showing one, and `send_now` when it shows again."""

    def __init__(self, pane: DocumentPane):
        super().__init__(pane)
        self.pane = pane
        self.editor = pane.editor
        self.facade = pane.bridge.facade
        self.ttl_s = PRESENCE_TTL_S
        self.overlay = CursorOverlay(self.editor)
        self.book = PresenceBook()
        self._me = self.facade.key
        self._announced: bytes | None = None  # the document peers have my presence in
        self._names: dict[bytes, str] = {}
        self._send = QTimer(self, singleShot=True, interval=SEND_MS)
        self._send.timeout.connect(self.send_now)
        self._refresh = QTimer(self, interval=round(PRESENCE_REFRESH_S * 1000))
        self._refresh.timeout.connect(self.send_now)
        self._expiry = QTimer(self, singleShot=True)
        self._expiry.timeout.connect(self._expire)
        self.editor.cursorPositionChanged.connect(self._moved)
        self.editor.selectionChanged.connect(self._moved)
        pane.bridge.presence.connect(self.heard)
        pane.bridge.presenceLeft.connect(self.gone)
        pane.changed.connect(self.shown)

    # Mine -----------------------------------------------------------------------------------

    def _readable(self) -> bool:
        """Whether the pane holds a readable branch of a document, as last loaded."""
        pane, view = self.pane, self.pane.view
        return (pane.doc_id is not None and view is not None and pane.unreadable is None
                and view.id == pane.doc_id.hex() and view.branch == pane.branch)

    def _showing(self) -> bool:
        return self._readable() and self.pane.isVisible()

    def _moved(self) -> None:
        if self._showing() and not self._send.isActive():  # the newest goes when it fires
            self._send.start()

    def send_now(self) -> None:
        """Tell the document's readers where my selection is now."""
        self._send.stop()
        if not self._showing():
            return
        pane, view = self.pane, self.pane.view
        text, cursor = self.editor.toPlainText(), self.editor.textCursor()
        anchor = map_position(text, pane.committed, from_utf16(text, cursor.anchor()))
        at = map_position(text, pane.committed, from_utf16(text, cursor.position()))
        readers = None if view.visibility == WORKSPACE else view.editors
        self.facade.presence(pane.doc_id, pane.branch, list(pane.seen), anchor, at,
                             readers=readers)
        self._announced = pane.doc_id
        if not self._refresh.isActive():
            self._refresh.start()

    def leave(self) -> None:
        """The pane stops showing the document: the peers hear it at once."""
        self._send.stop()
        self._refresh.stop()
        if self._announced is not None:
            self.facade.presence_left(self._announced)
            self._announced = None

    def opened(self, doc_id: bytes) -> None:
        """The pane opens `doc_id` (or another branch of it): the last document is left, and
        the cursors shown go until the new branch shows."""
        if self._announced is not None and self._announced != doc_id:
            self.leave()
        self.overlay.clear()

    # Others' --------------------------------------------------------------------------------

    def heard(self, key: bytes, doc: bytes, branch: str, heads: list, anchor: int,
              at: int) -> None:
        if key == self._me:
            return  # my own key, from my other computer: never shown
        self.book.heard(Presence(key, doc, branch, tuple(heads), anchor, at,
                                 time.monotonic() + self.ttl_s))
        self._arm_expiry()
        if doc == self.pane.doc_id:
            self._place(key)

    def gone(self, key: bytes, doc: bytes) -> None:
        self.book.left(key, doc)
        if doc == self.pane.doc_id:
            self.overlay.drop(key)

    def shown(self) -> None:
        """The pane shows the branch afresh (loaded, or my commit went in): names, each
        person's place, and mine sent."""
        view = self.pane.view
        if view is not None:
            self._names = member_names(view.names.items())
        doc = self.pane.doc_id
        present = {p.key for p in self.book.in_document(doc)} if doc is not None else set()
        for key in self.overlay.people() - present:
            self.overlay.drop(key)
        for key in present:
            self.overlay.rename(key, self.name(key))  # a nickname may have arrived
            self._place(key)
        self.send_now()

    def name(self, key: bytes) -> str:
        return self._names.get(key) or suffixed(ANONYMOUS, key)

    def _place(self, key: bytes) -> None:
        pane = self.pane
        presence = self.book.get(key, pane.doc_id)
        if presence is None or presence.branch != pane.branch or not self._readable():
            self.overlay.drop(key)
            return
        if not presence.refers_to(pane.seen):
            return  # kept where it is until a presence on these heads comes
        text = self.editor.toPlainText()
        anchor = map_position(pane.committed, text, presence.anchor)
        at = map_position(pane.committed, text, presence.at)
        self.overlay.place(key, self.name(key), to_utf16(text, anchor), to_utf16(text, at))

    def _arm_expiry(self) -> None:
        due = self.book.next_expiry()
        if due is None:
            self._expiry.stop()
            return
        self._expiry.start(max(0, round((due - time.monotonic()) * 1000)))

    def _expire(self) -> None:
        for presence in self.book.expire(time.monotonic()):
            if presence.doc == self.pane.doc_id:
                self.overlay.drop(presence.key)
        self._arm_expiry()
