"""A document's Markdown beside its editor: a rendered preview and an outline of its headings,
each shown by a toggle in the editor's tool row (`MarkdownTools`).

The preview is Qt's own Markdown engine (md4c, QTextDocument.setMarkdown, in GitHub's dialect
with raw HTML shown as typed: ui/message_body.FEATURES), made safe as message bodies are: it
loads nothing (no image, file or remote address: `loadResource` answers nothing), an image
shows as its alt text (a link when its address may open), and links open only web and mail
addresses (ui/_markdown.safe_url), in the system's browser, when clicked. Nothing runs: a
QTextDocument has no scripts. The outline lists the headings ui/doc_outline.py finds, indented
by level; clicking one puts the editor's cursor on it and scrolls it to the top. Both follow
the editor's text (typing not committed yet included) after a short pause, and only while
shown.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QTextCharFormat, QTextCursor, QTextDocument, QTextFormat
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QTextBrowser,
    QToolButton,
)

from . import _markdown
from ._rows import to_utf16
from .doc_outline import Heading, headings
from .message_body import FEATURES

PREVIEW_MS = 250  # the preview and the outline follow typing after this pause
INDENT = "    "  # per heading level below the first, in the outline
NO_HEADINGS = "No headings yet: a line that starts with # is one."
PREVIEW_PLACEHOLDER = "Nothing to preview yet."
OUTLINE_WIDTH = 180  # the outline's share of the row when it opens beside the editor


def make_safe(doc: QTextDocument) -> None:
    """Images become their alt text (a link where their address may open), and links that may
    not open (file:, javascript:, an application's own scheme) become plain text."""
    edits: list[tuple[int, int, QTextCharFormat]] = []
    block = doc.begin()
    while block.isValid():
        fragments = block.begin()
        while not fragments.atEnd():
            fragment = fragments.fragment()
            char_format = fragment.charFormat()
            if char_format.isImageFormat() or char_format.isAnchor() \
                    or char_format.anchorHref():
                edits.append((fragment.position(), fragment.length(), char_format))
            fragments += 1
        block = block.next()
    cursor = QTextCursor(doc)
    for position, length, char_format in reversed(edits):
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        if char_format.isImageFormat():
            image = char_format.toImageFormat()
            alt = image.stringProperty(QTextFormat.Property.ImageAltText)
            source = image.name()
            shown = QTextCharFormat()
            if _markdown.safe_url(source):
                shown.setAnchor(True)
                shown.setAnchorHref(source)
                shown.setFontUnderline(True)
            cursor.insertText(alt or source, shown)
        elif not _markdown.safe_url(char_format.anchorHref()):
            plain = QTextCharFormat(char_format)
            plain.setAnchor(False)
            plain.setAnchorHref("")
            plain.clearForeground()
            plain.setFontUnderline(False)
            cursor.setCharFormat(plain)


class MarkdownPreview(QTextBrowser):
    """The editor's text rendered, safe (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__(objectName="docPreview")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setPlaceholderText(PREVIEW_PLACEHOLDER)
        self.anchorClicked.connect(self._open)

    def loadResource(self, kind: int, name: QUrl) -> None:  # noqa: N802 (Qt's name)
        return None  # nothing is fetched: no image, file, or remote address

    def show_markdown(self, text: str) -> None:
        bar = self.verticalScrollBar()
        kept = bar.value()
        self.document().setMarkdown(text, FEATURES)
        make_safe(self.document())
        bar.setValue(kept)

    @staticmethod
    def _open(url: QUrl) -> None:
        if _markdown.safe_url(url.toString()):
            QDesktopServices.openUrl(url)


class Outline(QListWidget):
    """The headings, indented by level; `jumpRequested(position)` when one is clicked."""

    jumpRequested = Signal(int)  # a heading's position, in codepoints

    def __init__(self) -> None:
        super().__init__(objectName="docOutline")
        self._shown: list[Heading] | None = None
        self.itemClicked.connect(self._chosen)
        self.itemActivated.connect(self._chosen)

    def show_headings(self, found: list[Heading]) -> None:
        if found == self._shown:
            return  # an unchanged outline keeps its selection and scroll
        self._shown = found
        self.clear()
        if not found:
            empty = QListWidgetItem(NO_HEADINGS)
            empty.setFlags(Qt.ItemFlag.NoItemFlags)
            self.addItem(empty)
            return
        top = min(h.level for h in found)
        for heading in found:
            item = QListWidgetItem(INDENT * (heading.level - top) + heading.title)
            item.setData(Qt.ItemDataRole.UserRole, heading.position)
            item.setToolTip(heading.title)
            if heading.level == top:
                font = item.font()
                font.setBold(True)
                item.setFont(font)
            self.addItem(item)

    def titles(self) -> list[str]:
        """What each row shows, for tests and the screenshot."""
        return [self.item(i).text() for i in range(self.count())]

    def _chosen(self, item: QListWidgetItem) -> None:
        position = item.data(Qt.ItemDataRole.UserRole)
        if position is not None:
            self.jumpRequested.emit(int(position))


class MarkdownTools(QObject):
    """The preview and the outline of one editor, with their toggles (`preview_button`,
    `outline_button`) for the editor's tool row; the pane places the widgets."""

    def __init__(self, editor: QPlainTextEdit, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.editor = editor
        self.preview = MarkdownPreview()
        self.outline = Outline()
        self.preview.hide()
        self.outline.hide()
        self.preview_button = _toggle("Preview", "Show the Markdown rendered beside the editor")
        self.preview_button.setObjectName("previewToggle")
        self.outline_button = _toggle("Outline", "List the headings; click one to go there")
        self.outline_button.setObjectName("outlineToggle")
        self.preview_button.toggled.connect(self._toggled)
        self.outline_button.toggled.connect(self._toggled)
        self.outline.jumpRequested.connect(self.jump)
        self._pause = QTimer(self, singleShot=True, interval=PREVIEW_MS)
        self._pause.timeout.connect(self.refresh)
        editor.textChanged.connect(self._text_changed)

    def _toggled(self) -> None:
        self.preview.setVisible(self.preview_button.isChecked())
        self.outline.setVisible(self.outline_button.isChecked())
        self.refresh()

    def _text_changed(self) -> None:
        if self.preview_button.isChecked() or self.outline_button.isChecked():
            self._pause.start()

    def refresh(self) -> None:
        """Show the editor's text now (what the pause would do)."""
        self._pause.stop()
        text = self.editor.toPlainText()
        if self.preview_button.isChecked():
            self.preview.show_markdown(text)
        if self.outline_button.isChecked():
            self.outline.show_headings(headings(text))

    def jump(self, position: int) -> None:
        """Put the editor's cursor at `position` (codepoints) and scroll its line to the top."""
        editor = self.editor
        text = editor.toPlainText()
        cursor = editor.textCursor()
        cursor.setPosition(min(to_utf16(text, position), editor.document().characterCount() - 1))
        bar = editor.verticalScrollBar()
        bar.setValue(bar.maximum())  # from the end, showing the cursor scrolls it to the top
        editor.setTextCursor(cursor)
        editor.ensureCursorVisible()
        editor.setFocus()


def _toggle(text: str, tip: str) -> QToolButton:
    button = QToolButton(text=text, toolTip=tip, autoRaise=True, checkable=True)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button
