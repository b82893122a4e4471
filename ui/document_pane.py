"""A document: its text editor, branch selector and history. Typing is committed after a pause;
remote commits are applied to the editor as minimal edits, so the cursor stays on its
characters. A branch this computer holds no key for shows why, with the editor read-only and
every action off, until a key arrives (a capability, or being made an editor) and it reloads.
Every document operation is a call of the facade's `documents` (on the Node's
thread)."""

from __future__ import annotations

from datetime import datetime

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QListWidget,
    QPlainTextEdit,
    QPushButton,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from app.documents import minimal_edits
from app.records import Committed, DocumentView

from .bridge import NodeBridge

PAUSE_MS = 600  # keystrokes within a pause make one commit
EMPTY_STYLE = ('QPlainTextEdit#docEditor[emptyState="true"] '
               "{ background: palette(window); border: 1px dashed palette(mid); }")


def utf16_offset(text: str, position: int) -> int:
    """Qt counts UTF-16 code units; the document API counts codepoints."""
    return len(text[:position].encode("utf-16-le")) // 2


class DocumentPane(QWidget):
    changed = Signal()  # the shown text or branches changed (tests wait on it)

    def __init__(self, bridge: NodeBridge):
        super().__init__()
        self.bridge = bridge
        self.docs = bridge.facade.documents
        self.doc_id: bytes | None = None
        self.branch = "main"
        self.committed = ""  # the text at `seen`, the heads the editor was last in step with
        self.seen: list[str] = []
        self._applying = False
        self._generation = 0  # snapshots of a document or branch no longer shown are dropped
        self._busy = False  # a commit of my typing is on its way; reloads wait for it
        self._reload_after = False
        self.unreadable: str | None = None  # why the shown branch cannot be read here
        self._version_commit: str | None = None  # the version shown beside the history

        self.title = QLabel(objectName="docTitle")
        self.branch_selector = QComboBox(objectName="branchSelector")
        self.branch_selector.activated.connect(self._branch_chosen)
        fork = QPushButton("Fork…")
        fork.clicked.connect(self._fork)
        merge = QPushButton("Merge into main")
        merge.clicked.connect(lambda: self.merge(self.branch, "main"))
        make_main = QPushButton("Set as main")
        make_main.clicked.connect(lambda: self.set_main(self.branch))
        undo = QPushButton("Undo", toolTip="Undo my last edit (Ctrl+Z)")
        undo.clicked.connect(self.undo)
        redo = QPushButton("Redo", toolTip="Redo (Ctrl+Shift+Z)")
        redo.clicked.connect(self.redo)
        rename = QPushButton("Rename…")
        rename.clicked.connect(self._rename)
        tag = QPushButton("Tag…", toolTip="Name the selected version (or the latest)")
        tag.clicked.connect(self._tag)
        self.actions = (fork, merge, make_main, undo, redo, rename, tag)
        self.fork_button, self.merge_button, self.main_button = fork, merge, make_main
        self.undo_button, self.redo_button, self.rename_button, self.tag_button = \
            undo, redo, rename, tag
        self.notice = QLabel(objectName="docNotice", wordWrap=True)
        self.notice.hide()
        self.editor = QPlainTextEdit(objectName="docEditor")
        self.editor.setStyleSheet(EMPTY_STYLE)
        self.editor.textChanged.connect(self._typed)
        self.history = QListWidget(objectName="historyView")
        self.history.itemActivated.connect(self._show_version)
        self.version = QPlainTextEdit(objectName="versionView", readOnly=True)
        self.version.hide()

        bar = QHBoxLayout()
        bar.addWidget(self.title, 1)
        bar.addWidget(self.branch_selector)
        bar.addWidget(fork)
        bar.addWidget(merge)
        bar.addWidget(make_main)
        tools = QHBoxLayout()
        for button in (undo, redo, rename, tag):
            tools.addWidget(button)
        tools.addStretch(1)
        side = QSplitter(Qt.Orientation.Vertical)
        side.addWidget(self.history)
        side.addWidget(self.version)
        body = QSplitter()
        body.addWidget(self.editor)
        body.addWidget(side)
        body.setSizes([600, 240])
        layout = QVBoxLayout(self)
        layout.addLayout(bar)
        layout.addLayout(tools)
        layout.addWidget(self.notice)
        layout.addWidget(body, 1)

        self._pause = QTimer(self, singleShot=True, interval=PAUSE_MS)
        self._pause.timeout.connect(self.commit_now)
        QShortcut(QKeySequence.StandardKey.Undo, self.editor, self.undo)
        QShortcut(QKeySequence.StandardKey.Redo, self.editor, self.redo)

    # Showing -----------------------------------------------------------------------------------

    def open(self, doc_id: bytes, branch: str = "main") -> None:
        self._generation += 1
        self.doc_id, self.branch = doc_id, branch
        self.committed, self.seen = "", []
        self._show_version_of(None)
        self._applying = True
        self.editor.setPlainText("")
        self._applying = False
        self.reload()

    def reload(self) -> None:
        """Bring the editor in step with the branch's heads (after remote commits)."""
        if self.doc_id is None:
            return
        if self._busy:
            self._reload_after = True
            return
        if self.editor.toPlainText() != self.committed:  # my typing goes first
            self.commit_now(then=self.reload)
            return
        generation = self._generation
        self.bridge.then(self.docs.open(self.doc_id, self.branch),
                         done=lambda view: self._show(generation, view))

    def _show(self, generation: int, view: DocumentView) -> None:
        if generation != self._generation or self._busy:
            if generation == self._generation:
                self._reload_after = True
            return
        if self.editor.toPlainText() != self.committed:  # typed while the snapshot was made
            self.reload()
            return
        tagged: dict[str, list[str]] = {}
        for name, commit in sorted(view.tags.items()):
            tagged.setdefault(commit, []).append(name)
        self.title.setText(view.title)
        self.branch_selector.clear()
        for branch in view.branches:
            self.branch_selector.addItem(f"{branch.name}{' (main)' if branch.main else ''}",
                                         branch.name)
        index = self.branch_selector.findData(self.branch)
        self.branch_selector.setCurrentIndex(max(index, 0))
        self._set_readable(view)
        self._step_to(view.text, view.heads)
        self.history.clear()
        for commit in reversed(view.history):
            when = datetime.fromtimestamp(commit.ts / 1000).strftime("%Y-%m-%d %H:%M")
            who = view.names.get(commit.author, commit.author.hex()[:6])
            labels = "".join(f"  [{name}]" for name in tagged.get(commit.id, ()))
            self.history.addItem(f"{when}  {who}  {commit.kind}  {commit.id[:8]}{labels}")
            self.history.item(self.history.count() - 1).setData(Qt.ItemDataRole.UserRole,
                                                                commit.id)
        # The version beside the history stays only while its commit is still listed (not
        # after a branch switch or a merge); it is selected again in the new list.
        ids = [self.history.item(i).data(Qt.ItemDataRole.UserRole)
               for i in range(self.history.count())]
        if self._version_commit in ids and self.unreadable is None:
            self.history.setCurrentRow(ids.index(self._version_commit))
        else:
            self._show_version_of(None)
        self.changed.emit()

    def _set_readable(self, view: DocumentView) -> None:
        """Readable: an editor as usual. Not: why, an empty read-only editor, no actions."""
        self.unreadable = view.unreadable
        blocked = view.unreadable is not None
        if blocked:
            readable = [b for b in view.branches if b.readable]
            what = "This branch" if readable else "This document"
            self.notice.setText(f"{what} cannot be read on this computer. {view.unreadable}")
            self._pause.stop()
        self.notice.setVisible(blocked)
        self.editor.setReadOnly(blocked)
        if self.editor.property("emptyState") != blocked:
            self.editor.setProperty("emptyState", blocked)
            self.editor.style().unpolish(self.editor)
            self.editor.style().polish(self.editor)
        for button in self.actions:
            button.setEnabled(not blocked)

    def _step_to(self, text: str, heads: list[str]) -> None:
        """Apply the difference between the editor and `text` as minimal edits."""
        current = self.editor.toPlainText()
        self.seen = heads
        if current == text:
            self.committed = text
            return
        self._applying = True
        try:
            cursor = QTextCursor(self.editor.document())
            cursor.beginEditBlock()
            # Later edits first, so earlier positions stay valid; positions in codepoints of
            # the current text are converted to Qt's UTF-16 units.
            for position, delete, insert in reversed(minimal_edits(current, text)):
                start = utf16_offset(current, position)
                end = utf16_offset(current, position + delete)
                cursor.setPosition(start)
                cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
                cursor.insertText(insert)
            cursor.endEditBlock()
        finally:
            self._applying = False
        self.committed = text

    # Editing ----------------------------------------------------------------------------------

    def _typed(self) -> None:
        if not self._applying and self.doc_id is not None and self.unreadable is None:
            self._pause.start()

    def commit_now(self, then=None) -> None:
        """Commit what was typed since the editor was last in step (grouped by pause)."""
        self._pause.stop()
        if self.unreadable is not None:  # nothing can be committed: nothing typed is kept
            if self.editor.toPlainText() != self.committed:
                self._applying = True
                self.editor.setPlainText(self.committed)
                self._applying = False
            if then:
                then()
            return
        text, base, branch = self.editor.toPlainText(), self.committed, self.branch
        if text == base or self._busy:  # nothing new, or it follows the commit under way
            if self._busy and text != base:
                self._reload_after = True
            if then:
                then()
            return
        seen = list(self.seen)
        generation = self._generation
        self._busy = True

        def done(result: Committed) -> None:
            self._busy = False
            mine, heads, merged = result.commit, result.heads, result.text
            if generation != self._generation:  # another document or branch is shown now
                if then:
                    then()
                elif self._reload_after:
                    self._reload_after = False
                    self.reload()
                return
            if self.editor.toPlainText() == text:  # nothing typed meanwhile
                self._step_to(merged, heads)
            else:  # keep typing on top of my commit; what others did merges next time
                self.committed, self.seen = text, [mine]
            self.changed.emit()
            if then:
                then()
            elif self._reload_after:
                self._reload_after = False
                self.reload()

        def failed(message: str) -> None:
            self._busy = False
            self.bridge.failed.emit(message)

        # The edits are against the text at the heads I saw; if the branch moved on meanwhile
        # (remote commits), a merge commit acknowledges both.
        self.bridge.then(self.docs.edit(self.doc_id, seen, base, text, branch=branch),
                         done=done, failed=failed)

    def undo(self) -> None:
        self._undo_redo(redo=False)

    def redo(self) -> None:
        self._undo_redo(redo=True)

    def _undo_redo(self, *, redo: bool) -> None:
        if self.unreadable is not None:
            return
        branch, step = self.branch, (self.docs.redo if redo else self.docs.undo)
        self.commit_now(then=lambda: self.bridge.then(step(self.doc_id, branch),
                                                      done=lambda _: self.reload()))

    def _branch_chosen(self, index: int) -> None:
        self.commit_now(then=lambda: self.open(self.doc_id, self.branch_selector.itemData(index)))

    def fork(self, name: str) -> None:
        source = self.branch
        self.commit_now(then=lambda: self.bridge.then(
            self.docs.fork(self.doc_id, source, name),
            done=lambda _: self.open(self.doc_id, name)))

    def _fork(self) -> None:
        name, ok = QInputDialog.getText(self, "Fork", "New branch name:")
        if ok and name.strip():
            self.fork(name.strip())

    def merge(self, source: str, target: str) -> None:
        self.commit_now(then=lambda: self.bridge.then(
            self.docs.merge(self.doc_id, source, target),
            done=lambda _: self.open(self.doc_id, target)))

    def set_main(self, branch: str) -> None:
        self.bridge.then(self.docs.set_main(self.doc_id, branch), done=lambda _: self.reload())

    def rename(self, title: str) -> None:
        self.bridge.then(self.docs.rename(self.doc_id, title), done=lambda _: self.reload())

    def _rename(self) -> None:
        title, ok = QInputDialog.getText(self, "Rename", "Title:", text=self.title.text())
        if ok and title.strip():
            self.rename(title.strip())

    def tag(self, name: str, commit: str | None = None) -> None:
        """Tag `commit` (default: the branch's latest) once my typing is committed."""
        branch = self.branch
        self.commit_now(then=lambda: self.bridge.then(
            self.docs.tag(self.doc_id, name, commit, branch=branch),
            done=lambda _: self.reload()))

    def _tag(self) -> None:
        selected = self.history.currentItem()
        commit = selected.data(Qt.ItemDataRole.UserRole) if selected else None
        name, ok = QInputDialog.getText(self, "Tag", "Tag name:")
        if ok and name.strip():
            self.tag(name.strip(), commit)

    def _show_version(self, item) -> None:
        self._show_version_of(item.data(Qt.ItemDataRole.UserRole))

    def _show_version_of(self, commit: str | None) -> None:
        """Show the text at `commit` beside the history; None clears and hides it."""
        self._version_commit = commit
        if commit is None or self.doc_id is None:
            self.version.clear()
            self.version.hide()
            return
        generation = self._generation

        def done(text: str) -> None:
            if generation == self._generation and self._version_commit == commit:
                self.version.setPlainText(text)
                self.version.show()

        self.bridge.then(self.docs.show(self.doc_id, at=commit), done=done)
