"""A document's history column (ui/document_pane.py): the branch's timeline (ui/timeline.py)
and below it the version box, which shows the version picked in the history as it read then,
or with "Compare with now" what changed from it to the branch as it is now, or "what changed
since you last looked" when the pane's notice (ui/doc_review_bar.py) asks for it. Changes show
in a ui/doc_diff.DocDiffView, highlighted in their authors' colours. An editor can restore the
version picked ("Restore this version"); Close puts the box away.

The box follows the history above it (`follow`, after each reload of the branch): a version
stays shown, and selected, while its commit is listed, and goes when it is not (another branch,
a merge). A diff shown is read again when the branch's heads move, so "now" stays now, at the
same scroll position.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QSplitter,
    QStackedWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.documents import on_document

from .bridge import NodeBridge
from .doc_diff import DocDiffView
from .timeline import Timeline

# What the box shows: a version's text, its changes up to now, or changes since I last looked.
VERSION, COMPARE, SINCE = "version", "compare", "since"
COMPARE_NOW = "Compare with now"
SHOW_VERSION = "Show this version"
SINCE_THEN = "What changed from it to now"
RESTORE_TIP = "Make the branch read as it did then (a new version)"


def tool(text: str, tip: str, name: str = "") -> QToolButton:
    """A compact, flat button for the editor's and the history's own tools."""
    button = QToolButton(text=text, toolTip=tip, autoRaise=True, objectName=name)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button


class VersionBox(QWidget):
    """A version of the branch shown in the pane, or changes between two of its versions."""

    restoreRequested = Signal(str)  # the commit to restore the branch to
    compareRequested = Signal(str)  # the pane commits my typing, then calls `compare`

    def __init__(self, bridge: NodeBridge, history: Timeline, parent: QWidget | None = None):
        super().__init__(parent, objectName="versionBox")
        self.bridge = bridge
        self.history = history
        self.doc_id: bytes | None = None
        self.branch = "main"
        self.commit: str | None = None  # the version picked in the history
        self.mode: str | None = None  # VERSION, COMPARE or SINCE while shown
        self.since: list[str] = []  # the heads last looked at (SINCE)
        self._heads: tuple[str, ...] = ()  # the branch's heads the diff shown was read at
        self._generation = 0  # what was asked for before the latest is dropped when it arrives
        self._scroll: int | None = None  # where to put the diff back to once it is read again

        self.caption = QLabel(objectName="versionCaption", wordWrap=True)
        self.text = QPlainTextEdit(objectName="versionView", readOnly=True,
                                   placeholderText="This version is empty.")
        self.diff = DocDiffView(bridge)
        self.diff.shown.connect(self._diff_shown)
        self.pages = QStackedWidget()
        self.pages.addWidget(self.text)
        self.pages.addWidget(self.diff)
        self.compare_button = tool(COMPARE_NOW, "Show what changed from this version to the "
                                                "branch as it is now", "compareVersion")
        self.compare_button.clicked.connect(self._toggle_compare)
        self.restore_button = tool("Restore this version", RESTORE_TIP, "restoreVersion")
        self.restore_button.clicked.connect(
            lambda: self.commit and self.restoreRequested.emit(self.commit))
        close = tool("Close", "Stop showing this version", "closeVersion")
        close.clicked.connect(self.close_box)
        history.itemClicked.connect(self._picked)
        history.itemActivated.connect(self._picked)

        caption = QHBoxLayout()
        caption.addWidget(self.caption, 1)
        for button in (self.compare_button, self.restore_button, close):
            caption.addWidget(button, 0, Qt.AlignmentFlag.AlignTop)
        column = QVBoxLayout(self)
        column.setContentsMargins(0, 0, 0, 0)
        column.addLayout(caption)
        column.addWidget(self.pages, 1)
        self.hide()

    # Showing -----------------------------------------------------------------------------------

    def opened(self, doc_id: bytes, branch: str) -> None:
        """The pane opened `branch` of `doc_id`: nothing of what was shown stays."""
        self.doc_id, self.branch = doc_id, branch
        self._start(None, None)

    def _picked(self, item) -> None:
        self.show_version(item.data(Qt.ItemDataRole.UserRole))

    def show_version(self, commit: str | None) -> None:
        """The text at `commit` (picked in the history); None puts the box away."""
        self._start(commit, VERSION if commit else None)
        if commit is None or self.doc_id is None:
            return
        generation = self._generation

        def done(text: str) -> None:
            if generation == self._generation:
                self.text.setPlainText(text)
                self._present()

        self.bridge.then(self.bridge.facade.run(on_document(
            self.doc_id, lambda _, d: d.text([commit] if commit else d.heads("main")))), done=done)

    def compare(self, commit: str, heads: list[str]) -> None:
        """What changed on the branch from the version at `commit` to now (its `heads`)."""
        self._start(commit, COMPARE)
        self._read_diff(heads)

    def show_since(self, seen: list[str], heads: list[str]) -> None:
        """What changed on the branch since it showed heads `seen`, up to now (its `heads`)."""
        self.history.setCurrentRow(-1)
        self._start(None, SINCE)
        self.since = list(seen)
        self._read_diff(heads)

    def close_box(self) -> None:
        self.history.setCurrentRow(-1)
        self._start(None, None)

    def follow(self, heads: list[str], readable: bool) -> None:
        """After the history was listed again at `heads`: the version picked is selected again
        while it is listed (and dropped when not); a diff is read again if the heads moved."""
        commits = self.history.commits()
        if self.commit is not None:
            if self.commit in commits and readable:
                self.history.setCurrentRow(commits.index(self.commit))
            else:
                self.close_box()
        if self.mode in (COMPARE, SINCE) and tuple(heads) != self._heads:
            self._scroll = self.diff.view.verticalScrollBar().value()
            self._read_diff(heads)
        self.enable_restore()

    def _start(self, commit: str | None, mode: str | None) -> None:
        self._generation += 1
        self.commit, self.mode = commit, mode
        self.since, self._heads, self._scroll = [], (), None
        self.enable_restore()
        entry = next((e for e in self.history.entries() if e.commit == commit), None)
        # Empty while changes since I last looked show: their heading says what they are.
        self.caption.setText(f"The version of {entry.when}, by {entry.name}" if entry
                             else "A version" if commit else "")
        comparing = mode == COMPARE
        self.compare_button.setText(SHOW_VERSION if comparing else COMPARE_NOW)
        self.compare_button.setVisible(commit is not None)
        self.restore_button.setVisible(commit is not None)
        if mode is None:
            self.text.clear()
            self.hide()

    def _read_diff(self, heads: list[str]) -> None:
        """Show the diff up to the branch as it is now; `heads` (what the pane shows now) tell
        a later `follow` whether now moved on."""
        if self.doc_id is None:
            return
        self._heads = tuple(heads)
        if self.mode == SINCE:
            self.diff.show_since(self.doc_id, self.branch, self.since)
        else:
            self.diff.show_diff(self.doc_id, f"{self.branch}@{self.commit}", self.branch,
                                heading=SINCE_THEN)
        self.pages.setCurrentWidget(self.diff)
        self.show()

    def _diff_shown(self) -> None:
        if self._scroll is not None:
            self.diff.view.verticalScrollBar().setValue(self._scroll)
            self._scroll = None

    def _present(self) -> None:
        self.pages.setCurrentWidget(self.text)
        self.show()

    def _toggle_compare(self) -> None:
        if self.doc_id is None or self.commit is None:
            return
        if self.mode == COMPARE:
            self.show_version(self.commit)
        else:
            self.compareRequested.emit(self.commit)

    def enable_restore(self) -> None:
        """Restore is offered for the version picked when the history says it may be."""
        commits = self.history.commits()
        row = commits.index(self.commit) if self.commit in commits else -1
        why = self.history.restore_refusal(row)
        self.restore_button.setEnabled(why is None)
        self.restore_button.setToolTip(why or RESTORE_TIP)


class HistoryColumn(QSplitter):
    """The branch's history with its own tools (`tools`, e.g. Tag…) above it, and the version
    box below it."""

    def __init__(self, bridge: NodeBridge, tools: list[QWidget], parent: QWidget | None = None):
        super().__init__(Qt.Orientation.Vertical, parent)
        self.history = Timeline()
        self.versions = VersionBox(bridge, self.history)
        box = QWidget()
        column = QVBoxLayout(box)
        column.setContentsMargins(0, 0, 0, 0)
        heading = QHBoxLayout()
        heading.addWidget(QLabel("<b>History</b>"), 1)
        for widget in tools:
            heading.addWidget(widget)
        column.addLayout(heading)
        column.addWidget(self.history, 1)
        self.addWidget(box)
        self.addWidget(self.versions)
        self.setChildrenCollapsible(False)
