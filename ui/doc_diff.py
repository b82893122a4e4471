"""A diff between two versions of a document (app/review.DocDiff, from the facade's
`documents.diff`): the newer text with what was removed left in place, struck through, each
insertion and deletion tinted with its author's colour (their avatar's hue, ui/_rows), and a
legend naming who changed what. Hovering a change says who made it.

It is handed two versions: refs (a branch's name, `BRANCH@COMMIT`, a tag's name) or lists of
commit ids. "What changed since I last looked" is `show_since(doc, branch, seen)`, `seen` being
the heads the branch was at when it was last shown; the pane that shows documents keeps those.
Removed line breaks show as a pilcrow, so a joined line is seen.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QEvent, Signal
from PySide6.QtGui import QColor, QPalette, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import QLabel, QTextEdit, QVBoxLayout, QWidget

from app.documents import on_document
from app.records import DocDiff, Segment

from ._rows import ANONYMOUS, avatar_rgb, member_names, name_rgb
from .bridge import NodeBridge

INSERT_ALPHA = 90  # of 255: the author's colour behind inserted text, light or dark palette
DELETE_ALPHA = 45
REMOVED_BREAK = "\N{PILCROW SIGN}"
OP = QTextFormat.Property.UserProperty + 1  # "+" or "-" on a change's characters
AUTHOR = QTextFormat.Property.UserProperty + 2  # its author's key (hex), "" when not known


def shown_text(segment: Segment) -> str:
    """What a segment reads as: a removed line break as a pilcrow (the line it joined)."""
    return segment.text.replace("\n", REMOVED_BREAK) if segment.op == "-" else segment.text


def author_names(diff: DocDiff) -> dict[bytes, str]:
    return member_names((key, diff.names.get(key)) for key in diff.authors)


class DocDiffView(QWidget):
    """Shows one diff at a time; `shown` is emitted once it is on screen."""

    shown = Signal()

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(parent)
        self.bridge = bridge
        self.diff: DocDiff | None = None
        self._runs: list[tuple[str, int, int, str]] = []
        self._generation = 0  # a diff asked for before the latest is dropped when it arrives
        self.heading = QLabel(objectName="diffHeading", wordWrap=True)
        self.legend = QLabel(objectName="diffLegend", wordWrap=True)
        self.view = QTextEdit(objectName="diffText", readOnly=True)
        self.view.setLineWrapMode(QTextEdit.LineWrapMode.WidgetWidth)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.heading)
        layout.addWidget(self.legend)
        layout.addWidget(self.view, 1)

    def show_diff(self, doc_id: bytes, old: str | list[str], new: str | list[str], *,
                  heading: str | None = None) -> None:
        """Show what changed in document `doc_id` from version `old` to `new`."""
        self._generation += 1
        generation = self._generation
        self.heading.setText("Comparing…")
        self.bridge.then(self.bridge.facade.run(
                             on_document(doc_id, lambda docs, d: docs.diff(d, old, new))),
                         done=lambda diff: self._display(generation, diff, heading),
                         failed=lambda message: self._failed(generation, message))

    def show_since(self, doc_id: bytes, branch: str, seen: list[str]) -> None:
        """What changed on `branch` since it was last looked at, at heads `seen`."""
        self.show_diff(doc_id, list(seen), branch,
                       heading=f"What changed on {branch} since you last looked")

    def _failed(self, generation: int, message: str) -> None:
        if generation == self._generation:
            self.diff = None
            self.heading.setText(message)
            self.legend.clear()
            self.view.clear()
            self._runs = []

    def _display(self, generation: int, diff: DocDiff, heading: str | None) -> None:
        if generation != self._generation:
            return
        self.diff = diff
        changed = any(s.op != "=" for s in diff.segments)
        self.heading.setText(heading or f"Changes from {diff.old_ref} to {diff.new_ref}")
        if not changed:
            self.heading.setText(f"{self.heading.text()}: none")
        self._render()
        self.shown.emit()

    def _render(self) -> None:
        diff = self.diff
        self.view.clear()
        self._runs: list[tuple[str, int, int, str]] = []  # (op, start, end, author) laid out
        if diff is None:
            self.legend.clear()
            return
        names = author_names(diff)
        base = self.view.palette().color(QPalette.ColorRole.Base)
        cursor = QTextCursor(self.view.document())
        for segment in diff.segments:
            start = cursor.position()
            cursor.insertText(shown_text(segment), self._format(segment, names, base))
            self._runs.append((segment.op, start, cursor.position(),
                               segment.author.hex() if segment.author else ""))
        self.view.moveCursor(QTextCursor.MoveOperation.Start)
        people = [f'<span style="color: {self._name_colour(key, base).name()}">'
                  f"{escape(name)}</span>" for key, name in names.items()]
        self.legend.setText(("Changes by " + ", ".join(people)) if people else "")

    def _name_colour(self, key: bytes | None, base: QColor) -> QColor:
        if key is None:
            return self.palette().color(QPalette.ColorRole.PlaceholderText)
        return QColor(*name_rgb(key, (base.red(), base.green(), base.blue())))

    def _format(self, segment: Segment, names: dict[bytes, str],
                base: QColor) -> QTextCharFormat:
        shown = QTextCharFormat()
        if segment.op == "=":
            return shown
        key = segment.author
        tint = QColor(*avatar_rgb(key)) if key is not None else \
            self.palette().color(QPalette.ColorRole.Highlight)
        tint.setAlpha(INSERT_ALPHA if segment.op == "+" else DELETE_ALPHA)
        shown.setBackground(tint)
        if segment.op == "-":
            shown.setFontStrikeOut(True)
            shown.setForeground(self._name_colour(key, base))
        who = names.get(key, ANONYMOUS) if key is not None else "someone"
        shown.setToolTip(f"{'added' if segment.op == '+' else 'deleted'} by {who}")
        shown.setProperty(OP, segment.op)
        shown.setProperty(AUTHOR, key.hex() if key is not None else "")
        return shown

    def changes(self) -> list[tuple[str, str, str]]:
        """What the view shows, run by run as it was laid out: (op, the text shown there, the
        author's key in hex or ""), op "=" for unchanged text."""
        shown = self.view.toPlainText()
        return [(op, shown[start:end], author) for op, start, end, author in self._runs]

    def changeEvent(self, event: QEvent) -> None:  # noqa: N802 (Qt's name)
        super().changeEvent(event)
        if event.type() == QEvent.Type.PaletteChange and self.diff is not None:
            self._render()  # the tints and name colours follow the palette

