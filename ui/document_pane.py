"""A document: a header (its title, the branch selector and the branch's actions), the editor
with its undo and redo, and the branch's history as a timeline (ui/timeline.py) with the version
picked in it below. Typing is committed after a pause; remote commits are applied to the editor
as minimal edits, so the cursor stays on its characters.

The text is Markdown: "Outline" and "Preview" in the editor's tool row show its headings
(click one to go there) and its rendering beside the editor (ui/doc_preview.py). Others who
have the document open show as a caret, a selection and their name over the editor, live
(ui/doc_presence.py), and they see mine.

Who may change the branch comes with every view of it (DocumentView.writable, why_readonly): a
reader (by capability, or a member who is no editor) gets a read-only editor that says why, with
the editing actions off. A branch this computer holds no key for shows why too, with an empty
read-only editor and every action off, until a key arrives (a capability, or being made an
editor) and it reloads: the editor is then hidden behind a note (ui/doc_sharing.LockedNote) that
says what to do, with "Open share link…".

Who may read and change it shows too (ui/doc_sharing.py): the visibility in the branch row
("Private" with a lock, or "Workspace"); for editors Share (a capability, copied), Editors…, the
creator's Make private / Make visible to the workspace, and the open requests to edit, accepted
in one click; for a reader "Ask to edit" ("Asked to edit" once asked). A version picked in the
history can be restored by an editor (a new commit that reads as it did then). Every document
operation is a call of the facade's `documents` (on the Node's thread)."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut, QTextCursor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QInputDialog,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.documents import READ_ONLY, minimal_edits
from app.records import BranchInfo, Committed, DocumentView

from . import theme
from .bridge import NodeBridge
from .doc_presence import DocPresence
from .doc_preview import OUTLINE_WIDTH, MarkdownTools
from .doc_sharing import (
    COPIED,
    PRIVATE,
    WORKSPACE,
    EditorsDialog,
    LockedNote,
    RequestsBar,
    SharingBar,
    VisibilityBadge,
    sharing_state,
)
from .timeline import Timeline, timeline_entries

PAUSE_MS = 600  # keystrokes within a pause make one commit
TITLE_SCALE = 1.5  # the title's size against the window's
MAIN_MARK = " · main branch"  # after the main branch's name in the selector
SELECTOR_TIP = "The branch shown; the main branch is the one that opens by default"
MIN_SELECTOR_PX = 120  # the narrowest the branch selector gets in a narrow pane
PLACEHOLDER = ("Start writing. Everyone in the workspace sees your edits as you type; fork a "
               "branch to draft on your own.")
READER_PLACEHOLDER = "Nothing is written on this branch yet."
EDITOR_STYLE = ('QPlainTextEdit#docEditor[emptyState="true"] '
                "{ background: palette(window); border: 1px dashed palette(mid); }")
NOTICE_STYLE = ("QLabel#docNotice { background: palette(alternate-base); color: palette(text); "
                "border: 1px solid palette(mid); border-radius: 4px; padding: 6px 8px; }")


def branch_label(branch: BranchInfo) -> str:
    """How the selector names a branch: its whole name, the main one marked."""
    return branch.name + (MAIN_MARK if branch.main else "")


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
        self.writable = False  # whether I may change the shown branch (known once it is shown)
        self._version_commit: str | None = None  # the version shown below the history
        self.view: DocumentView | None = None  # the branch as last shown
        self.editors_dialog: EditorsDialog | None = None

        # The header: the document's title, and the branch shown with what can be done to it.
        self.title = QLabel(objectName="docTitle", wordWrap=True)
        self.title.setFont(theme.scaled(self.title.font(), TITLE_SCALE, bold=True))
        # A long title wraps rather than widening the pane.
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        rename = QPushButton("Rename…", toolTip="Change the document's title (its creator only)")
        rename.clicked.connect(self._rename)
        self.branch_selector = QComboBox(objectName="branchSelector", toolTip=SELECTOR_TIP)
        # Every branch name shows whole: the selector is as wide as its longest name.
        self.branch_selector.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.branch_selector.setSizePolicy(QSizePolicy.Policy.Fixed,
                                           QSizePolicy.Policy.Fixed)
        self.branch_selector.activated.connect(self._branch_chosen)
        fork = QPushButton("Fork…", toolTip="Start a new branch from this one, to draft on "
                                            "your own")
        fork.clicked.connect(self._fork)
        merge = QPushButton("Merge into main", toolTip="Bring this branch's changes into the "
                                                       "main branch")
        merge.clicked.connect(lambda: self.merge(self.branch, "main"))
        make_main = QPushButton("Set as main", toolTip="Make this branch the one that opens "
                                                       "by default")
        make_main.clicked.connect(lambda: self.set_main(self.branch))
        # The editor's own tools, and the history's.
        undo = _tool("Undo", "Undo my last edit (Ctrl+Z)")
        undo.clicked.connect(self.undo)
        redo = _tool("Redo", "Redo (Ctrl+Shift+Z)")
        redo.clicked.connect(self.redo)
        tag = _tool("Tag…", "Name the selected version (or the latest)")
        tag.clicked.connect(self._tag)
        self._editing = (fork, merge, make_main, undo, redo, rename, tag)
        self.fork_button, self.merge_button, self.main_button = fork, merge, make_main
        self.undo_button, self.redo_button, self.rename_button, self.tag_button = \
            undo, redo, rename, tag

        # Who may read and change it (ui/doc_sharing.py).
        self.badge = VisibilityBadge()
        self.sharing = SharingBar()
        self.sharing.shareClicked.connect(self.share)
        self.sharing.editorsClicked.connect(self.show_editors)
        self.sharing.toggleClicked.connect(self.toggle_visibility)
        self.sharing.askClicked.connect(self.ask_edit)
        self.requests = RequestsBar()
        self.requests.accepted.connect(self.accept)
        self.locked = LockedNote()
        self.locked.openLinkClicked.connect(self._open_link)
        self.unreadable_note = self.locked.note

        self.notice = QLabel(objectName="docNotice", wordWrap=True)
        self.notice.hide()
        self.editor = QPlainTextEdit(objectName="docEditor")
        theme.styled(self.editor, EDITOR_STYLE)  # follows light and dark switches
        theme.styled(self.notice, NOTICE_STYLE)
        self.editor.textChanged.connect(self._typed)
        self.history = Timeline()
        self.history.itemClicked.connect(self._show_version)
        self.history.itemActivated.connect(self._show_version)
        self.history.restoreRequested.connect(self.restore)
        self.version = QPlainTextEdit(objectName="versionView", readOnly=True,
                                      placeholderText="This version is empty.")
        self.version_caption = QLabel(objectName="versionCaption", wordWrap=True)
        close_version = _tool("Close", "Stop showing this version")
        close_version.clicked.connect(self._close_version)
        self.restore_button = _tool("Restore this version", "Make the branch read as it did "
                                                            "then (a new version)")
        self.restore_button.setObjectName("restoreVersion")
        self.restore_button.clicked.connect(
            lambda: self._version_commit and self.restore(self._version_commit))

        branch_row = self._branch_row = QHBoxLayout()
        branch_row.addWidget(self.branch_selector)
        for button in (fork, merge, make_main):
            branch_row.addWidget(button)
        branch_row.addStretch(1)
        branch_row.addWidget(self.badge)
        branch_row.addWidget(rename)  # at the right, whether or not the title shows above

        # The Markdown's outline and rendering, beside the editor when toggled on.
        self.markdown = MarkdownTools(self.editor, self)
        self.preview, self.outline = self.markdown.preview, self.markdown.outline
        writing = QWidget()
        writing_column = QVBoxLayout(writing)
        writing_column.setContentsMargins(0, 0, 0, 0)
        tools = QHBoxLayout()
        tools.addWidget(undo)
        tools.addWidget(redo)
        tools.addStretch(1)
        tools.addWidget(self.markdown.outline_button)
        tools.addWidget(self.markdown.preview_button)
        writing_column.addLayout(tools)
        page = QWidget()
        page_column = QVBoxLayout(page)
        page_column.setContentsMargins(0, 0, 0, 0)
        page_column.addWidget(self.editor, 1)
        page_column.addWidget(self.locked, 1)
        beside = QSplitter()
        beside.addWidget(self.outline)
        beside.addWidget(page)
        beside.addWidget(self.preview)
        beside.setChildrenCollapsible(False)
        beside.setStretchFactor(1, 1)
        beside.setStretchFactor(2, 1)
        beside.setSizes([OUTLINE_WIDTH, 560, 560])
        writing_column.addWidget(beside, 1)

        history_box = QWidget()
        history_column = QVBoxLayout(history_box)
        history_column.setContentsMargins(0, 0, 0, 0)
        heading = QHBoxLayout()
        heading.addWidget(QLabel("<b>History</b>"), 1)
        heading.addWidget(tag)
        history_column.addLayout(heading)
        history_column.addWidget(self.history, 1)
        self.version_box = QWidget(objectName="versionBox")
        version_column = QVBoxLayout(self.version_box)
        version_column.setContentsMargins(0, 0, 0, 0)
        caption = QHBoxLayout()
        caption.addWidget(self.version_caption, 1)
        caption.addWidget(self.restore_button, 0, Qt.AlignmentFlag.AlignTop)
        caption.addWidget(close_version, 0, Qt.AlignmentFlag.AlignTop)
        version_column.addLayout(caption)
        version_column.addWidget(self.version, 1)
        self.version_box.hide()
        side = QSplitter(Qt.Orientation.Vertical)
        side.addWidget(history_box)
        side.addWidget(self.version_box)
        side.setChildrenCollapsible(False)
        body = QSplitter()
        body.addWidget(writing)
        body.addWidget(side)
        body.setStretchFactor(0, 3)
        body.setStretchFactor(1, 1)
        body.setSizes([560, 260])
        layout = QVBoxLayout(self)
        layout.addWidget(self.title)
        layout.addLayout(branch_row)
        layout.addWidget(self.sharing)
        layout.addWidget(self.requests)
        layout.addWidget(self.notice)
        layout.addWidget(body, 1)

        self._pause = QTimer(self, singleShot=True, interval=PAUSE_MS)
        self._pause.timeout.connect(self.commit_now)
        QShortcut(QKeySequence.StandardKey.Undo, self.editor, self.undo)
        QShortcut(QKeySequence.StandardKey.Redo, self.editor, self.redo)
        self.presence = DocPresence(self)  # others' cursors over the editor, mine to them

    # Showing -----------------------------------------------------------------------------------

    def open(self, doc_id: bytes, branch: str = "main") -> None:
        self.presence.opened(doc_id)
        self._generation += 1
        self.doc_id, self.branch = doc_id, branch
        self.committed, self.seen = "", []
        self._show_version_of(None)
        self._applying = True
        self.editor.setPlainText("")
        self._applying = False
        # Typing before the branch shows is not kept: it would be edits against no heads.
        self.writable = False
        self.sharing.say("")
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
        self.view = view
        self.title.setText(view.title)
        self.title.setToolTip(view.title)
        self._show_branches(view.branches)
        self._set_access(view)
        self._step_to(view.text, view.heads)
        self.history.set_entries(timeline_entries(view))
        # The version below the history stays only while its commit is still listed (not
        # after a branch switch or a merge); it is selected again in the new list.
        ids = self.history.commits()
        if self._version_commit in ids and self.unreadable is None:
            self.history.setCurrentRow(ids.index(self._version_commit))
        elif self._version_commit is not None:
            self.history.setCurrentRow(-1)
            self._show_version_of(None)
        self._enable_restore()  # against the entries now listed
        self.changed.emit()

    def _show_branches(self, branches: list[BranchInfo]) -> None:
        """The selector lists every branch by its whole name, the main one marked; it is
        refilled only when they changed, so an open list is not reset by a remote commit."""
        wanted = [(branch_label(b), b.name) for b in branches]
        shown = [(self.branch_selector.itemText(i), self.branch_selector.itemData(i))
                 for i in range(self.branch_selector.count())]
        if wanted != shown:
            self.branch_selector.clear()
            for label, name in wanted:
                self.branch_selector.addItem(label, name)
        index = self.branch_selector.findData(self.branch)
        self.branch_selector.setCurrentIndex(max(index, 0))
        self._fit_selector()

    def _fit_selector(self) -> None:
        """The selector is as wide as its longest name, unless the pane is too narrow for that
        beside the branch actions: then the shown name is cut, and whole in its tooltip and in
        the list that opens (which always fits every name)."""
        selector = self.branch_selector
        row = self._branch_row
        others = sum(button.sizeHint().width() + row.spacing()
                     for button in (self.fork_button, self.merge_button, self.main_button))
        margins = self.layout().contentsMargins()
        room = self.width() - margins.left() - margins.right() - others
        selector.setMaximumWidth(max(room, MIN_SELECTOR_PX))
        cut = selector.sizeHint().width() > selector.maximumWidth()
        selector.setToolTip(selector.currentText() if cut else SELECTOR_TIP)
        view = selector.view()
        view.setMinimumWidth(view.sizeHintForColumn(0) + view.verticalScrollBar().sizeHint().width())

    def resizeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        super().resizeEvent(event)
        self._fit_selector()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        self.presence.send_now()

    def hideEvent(self, event) -> None:  # noqa: N802
        super().hideEvent(event)
        if not event.spontaneous():  # another page, or the window closing; not minimized
            self.presence.leave()

    def _set_access(self, view: DocumentView) -> None:
        """Writable: an editor as usual, with the placeholder when there is no text yet. A
        reader: the text read-only, why, and no editing actions. Unreadable: why, an empty
        read-only editor, no actions."""
        self.unreadable = view.unreadable
        self.writable = view.writable and view.unreadable is None
        blocked = view.unreadable is not None
        if blocked:
            readable = [b for b in view.branches if b.readable]
            what = "This branch" if readable else "This document"
            self.notice.setText(f"{what} cannot be read on this computer. {view.unreadable}")
        elif not self.writable:
            self.notice.setText(view.why_readonly or READ_ONLY)
        if not self.writable:
            self._pause.stop()
        self.notice.setVisible(not self.writable)
        self.editor.setReadOnly(not self.writable)
        self.editor.setPlaceholderText(
            PLACEHOLDER if self.writable else "" if blocked else READER_PLACEHOLDER)
        if self.editor.property("emptyState") != blocked:
            self.editor.setProperty("emptyState", blocked)
            self.editor.style().unpolish(self.editor)
            self.editor.style().polish(self.editor)
        for button in self._editing:
            button.setEnabled(self.writable)
        # The main branch cannot be merged into itself, nor made main again.
        on_main = any(b.main and b.name == self.branch for b in view.branches)
        for button in (self.merge_button, self.main_button):
            button.setEnabled(self.writable and not on_main)
            button.setToolTip("This is the main branch" if on_main else "")
        # Who may read and change it; with no key, a note says what to do instead of a page.
        state = sharing_state(view, self.bridge.facade.key)
        self.badge.show_visibility(state.badge, state.badge_tip)
        self.sharing.show_state(state)
        self.requests.show_requests(state.requests)
        self.locked.note.setText(state.locked_note or "")
        self.locked.setVisible(blocked)
        self.editor.setVisible(not blocked)
        self.history.set_editable(self.writable)
        self._enable_restore()
        if self.editors_dialog is not None and self.editors_dialog.isVisible():
            self.editors_dialog.show_editors(view, self.bridge.facade.key)

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
        if not self._applying and self.doc_id is not None and self.writable:
            self._pause.start()

    def commit_now(self, then=None) -> None:
        """Commit what was typed since the editor was last in step (grouped by pause)."""
        self._pause.stop()
        if not self.writable:  # nothing can be committed: nothing typed is kept
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
        if not self.writable:
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

    # Sharing, asking to edit, restoring ------------------------------------------------------

    def share(self) -> None:
        """Copy a capability to read the shown branch, and say so."""
        self.bridge.then(self.docs.share(self.doc_id, self.branch), done=self._copied,
                         failed=self.sharing.say)

    def _copied(self, capability: str) -> None:
        QGuiApplication.clipboard().setText(capability)
        self.sharing.say(COPIED)

    def ask_edit(self) -> None:
        self.sharing.ask.setEnabled(False)  # once; the reload says "Asked to edit"

        def failed(message: str) -> None:
            self.sharing.ask.setEnabled(True)
            self.sharing.say(message)

        self.bridge.then(self.docs.ask_edit(self.doc_id), done=lambda _: self.reload(),
                         failed=failed)

    def accept(self, key: bytes) -> None:
        """Make the person who asked an editor."""
        self.bridge.then(self.docs.accept(self.doc_id, key.hex()), done=lambda _: self.reload(),
                         failed=self._refused)

    def _refused(self, message: str) -> None:
        self.sharing.say(message)
        self.reload()

    def set_visibility(self, visibility: str) -> None:
        self.bridge.then(self.docs.set_visibility(self.doc_id, visibility),
                         done=lambda _: self.reload(), failed=self._refused)

    def toggle_visibility(self) -> None:
        if self.view is not None:
            private = self.view.visibility == PRIVATE
            self.set_visibility(WORKSPACE if private else PRIVATE)

    def show_editors(self) -> EditorsDialog:
        """The Editors dialog over the shown document (non-modal)."""
        if self.editors_dialog is None:
            self.editors_dialog = EditorsDialog(self)
            self.editors_dialog.addRequested.connect(self.add_editor)
            self.editors_dialog.removeRequested.connect(self.remove_editor)
        if self.view is not None:
            self.editors_dialog.show_editors(self.view, self.bridge.facade.key)
        self.editors_dialog.say("")
        self.editors_dialog.show()
        return self.editors_dialog

    def _editors_changed(self, _=None) -> None:
        if self.editors_dialog is not None:
            self.editors_dialog.added()
        self.reload()

    def _editors_refused(self, message: str) -> None:
        if self.editors_dialog is not None:
            self.editors_dialog.say(message)

    def add_editor(self, key: bytes) -> None:
        self.bridge.then(self.docs.add_editor(self.doc_id, key.hex()),
                         done=self._editors_changed, failed=self._editors_refused)

    def remove_editor(self, key: bytes) -> None:
        self.bridge.then(self.docs.remove_editor(self.doc_id, key.hex()),
                         done=self._editors_changed, failed=self._editors_refused)

    def open_link(self, capability: str) -> None:
        """Keep a share link's keys and show its document."""
        def done(doc_hex: str) -> None:
            doc_id = bytes.fromhex(doc_hex)
            if doc_id == self.doc_id:
                self.reload()
            else:
                self.open(doc_id)

        self.bridge.then(self.docs.open_cap(capability.strip()), done=done,
                         failed=self.sharing.say)

    def _open_link(self) -> None:
        link, ok = QInputDialog.getText(self, "Open share link", "Share link:")
        if ok and link.strip():
            self.open_link(link)

    def restore(self, commit: str) -> None:
        """Make the branch read as it did at `commit` (a new commit), once my typing is in."""
        branch = self.branch

        def done(_) -> None:
            self._close_version()
            self.reload()

        self.commit_now(then=lambda: self.bridge.then(
            self.docs.restore(self.doc_id, commit, branch=branch), done=done,
            failed=self.sharing.say))

    def _enable_restore(self) -> None:
        commits = self.history.commits()
        row = commits.index(self._version_commit) if self._version_commit in commits else -1
        why = self.history.restore_refusal(row)
        self.restore_button.setEnabled(why is None)
        self.restore_button.setToolTip(why or "Make the branch read as it did then "
                                              "(a new version)")

    def _show_version(self, item) -> None:
        self._show_version_of(item.data(Qt.ItemDataRole.UserRole))

    def _close_version(self) -> None:
        self.history.setCurrentRow(-1)
        self._show_version_of(None)

    def _show_version_of(self, commit: str | None) -> None:
        """Show the text at `commit` below the history; None clears and hides it."""
        self._version_commit = commit
        self._enable_restore()
        if commit is None or self.doc_id is None:
            self.version.clear()
            self.version_caption.clear()
            self.version_box.hide()
            return
        generation = self._generation
        entry = next((e for e in self.history.entries() if e.commit == commit), None)
        caption = f"The version of {entry.when}, by {entry.name}" if entry else "A version"

        def done(text: str) -> None:
            if generation == self._generation and self._version_commit == commit:
                self.version_caption.setText(caption)
                self.version.setPlainText(text)
                self.version_box.show()

        self.bridge.then(self.docs.show(self.doc_id, at=commit), done=done)


def _tool(text: str, tip: str) -> QToolButton:
    """A compact, flat button for the editor's and the history's own tools."""
    button = QToolButton(text=text, toolTip=tip, autoRaise=True)
    button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextOnly)
    return button
