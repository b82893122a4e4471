"""A document: a header (its title, the branch selector and the branch's actions), the editor
with its undo and redo and the comments in its margin (ui/doc_comments.py), and the branch's
history as a timeline with the version picked in it below (ui/doc_versions.py). Typing is
committed after a pause. Whatever else changes the branch (others' typing, a merge, a restore)
reaches the editor as the smallest edits, made in order where ui/doc_edits.py puts them, so
the cursor and selection stay on their characters; none of it counts as typing, and only what
differs from the text the pane last put in (`committed`) is ever committed. Undo and redo
(Ctrl+Z, Ctrl+Shift+Z) are the document's: my last edit, never another's.

Reviewing: "Merge into main" previews the merge in ui/merge_dialog.py (a choice per conflict)
and opens main once merged; a version picked in the history can be compared with now; a branch
opened again after others changed it says so, with "Show changes" (ui/doc_review_bar.py keeps
the heads last looked at, in memory). Changes show in the version box, in authors' colours.

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
operation is a call of the library's documents (app.documents), run on the Node's thread
(`_on_doc`)."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING, TypeVar

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication, QKeySequence, QTextCursor
from PySide6.QtWidgets import (
    QInputDialog,
    QWidget,
)

from app.doc_views import commit_typed, document_view
from app.documents import on_document
from app.records import READ_ONLY, BranchInfo, Committed, DocumentView
from app.text_edits import minimal_edits

from . import doc_pane_layout
from ._rows import from_utf16, to_utf16
from .bridge import NodeBridge
from .doc_cursors import map_position
from .doc_edits import editor_edits
from .doc_pane_layout import SELECTOR_TIP
from .doc_presence import DocPresence
from .doc_sharing import (
    COPIED,
    PRIVATE,
    WORKSPACE,
    EditorsDialog,
    sharing_state,
)
from .merge_dialog import NOTHING_TO_MERGE, MergeDialog
from .timeline import timeline_entries

if TYPE_CHECKING:
    from app.documents import Document, Documents

T = TypeVar("T")

PAUSE_MS = 600  # keystrokes within a pause make one commit
MAIN_MARK = " · main branch"  # after the main branch's name in the selector
PLACEHOLDER = ("Start writing. Everyone in the workspace sees your edits as you type; fork a "
               "branch to draft on your own.")
READER_PLACEHOLDER = "Nothing is written on this branch yet."



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
        self._opening = False  # the branch opened is not shown yet
        self.view: DocumentView | None = None  # the branch as last shown
        self.editors_dialog: EditorsDialog | None = None
        self.merge_dialog: MergeDialog | None = None

        doc_pane_layout.build(self, bridge)

        self._pause = QTimer(self, singleShot=True, interval=PAUSE_MS)
        self._pause.timeout.connect(self.commit_now)
        # Undo and redo are the document's ("my last edit"). Qt's own would also take back
        # what others' commits, merges and restores did to the editor, and the pane would then
        # commit that as my typing; and the editor takes Ctrl+Z before any QShortcut sees it.
        self.editor.setUndoRedoEnabled(False)
        self.editor.installEventFilter(self)
        self.presence = DocPresence(self)  # others' cursors over the editor, mine to them

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.editor and event.type() == QEvent.Type.KeyPress:
            if event.matches(QKeySequence.StandardKey.Undo):
                self.undo()
                return True
            if event.matches(QKeySequence.StandardKey.Redo):
                self.redo()
                return True
        return super().eventFilter(watched, event)

    # Showing -----------------------------------------------------------------------------------

    def open(self, doc_id: bytes, branch: str = "main") -> None:
        self.presence.opened(doc_id)
        self._generation += 1
        self.doc_id, self.branch = doc_id, branch
        self.committed, self.seen = "", []
        self.versions.opened(doc_id, branch)
        self.changed_notice.hide()
        self._opening = True
        self.comments.show_branch(doc_id, branch)
        self._applying = True
        self.editor.setPlainText("")
        self._applying = False
        # Typing before the branch shows is not kept: it would be edits against no heads.
        self.writable = False
        self.sharing.say("")
        self.reload()

    def _on_doc(self, action: Callable[[Documents, Document], T]) -> Future[T]:
        """action(the library's documents, the shown document) on the Node's thread."""
        return self.bridge.facade.run(on_document(self.doc_id, action))

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
        generation, branch = self._generation, self.branch
        self.bridge.then(self._on_doc(lambda docs, d: document_view(docs, d, branch)),
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
        if self._opening:  # opened again after others changed it: say so
            self._opening = False
            self.changed_notice.check(self.doc_id, view, self.bridge.facade.key)
        self.title.setText(view.title)
        self.title.setToolTip(view.title)
        self._show_branches(view.branches)
        self._set_access(view)
        self._step_to(view.text, view.heads)
        self.history.set_entries(timeline_entries(view))
        self.versions.follow(view.heads, self.unreadable is None)
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
        """The selector is as wide as its longest name (the branch row wraps the actions below
        it when the pane is narrow), and so is the list that opens."""
        selector = self.branch_selector
        cut = selector.width() < selector.sizeHint().width()  # narrower than the longest name
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
        self.comments.setVisible(not blocked)
        self.history.set_editable(self.writable)
        self.versions.enable_restore()
        if self.editors_dialog is not None and self.editors_dialog.isVisible():
            self.editors_dialog.show_editors(view, self.bridge.facade.key)

    def _step_to(self, text: str, heads: list[str]) -> None:
        """Bring the editor to `text` (the branch's at `heads`) with the smallest edits, made
        in order, each where the edits before it left the text (ui/doc_edits.py), so my cursor
        and selection stay on their characters. None of it counts as my typing."""
        current = self.editor.toPlainText()
        self._saw(heads)
        if current != text:
            self._applying = True
            try:
                cursor = QTextCursor(self.editor.document())
                cursor.beginEditBlock()
                for start, end, insert in editor_edits(current, minimal_edits(current, text)):
                    cursor.setPosition(start)
                    cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
                    cursor.insertText(insert)
                cursor.endEditBlock()
                if self.editor.toPlainText() != text:  # never show what the branch does not read
                    self._replace(text)
            finally:
                self._applying = False
        self.committed = text

    def _replace(self, text: str) -> None:
        """Put `text` in the editor whole, the cursor carried to where its characters went."""
        old, cursor = self.editor.toPlainText(), self.editor.textCursor()
        anchor, at = (map_position(old, text, from_utf16(old, p))
                      for p in (cursor.anchor(), cursor.position()))
        self.editor.setPlainText(text)
        cursor = self.editor.textCursor()
        cursor.setPosition(to_utf16(text, anchor))
        cursor.setPosition(to_utf16(text, at), QTextCursor.MoveMode.KeepAnchor)
        self.editor.setTextCursor(cursor)

    def in_step(self) -> bool:
        """Whether the editor shows exactly the text at the heads it last saw, with nothing
        typed waiting for its commit and no commit under way."""
        return (not self._busy and not self._pause.isActive()
                and self.editor.toPlainText() == self.committed)

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
                self.committed = text
                self._saw([mine])
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
        self.bridge.then(self._on_doc(lambda docs, d: commit_typed(docs, d, list(seen), base,
                                                                   text, branch)),
                         done=done, failed=failed)

    def undo(self) -> None:
        self._undo_redo(redo=False)

    def redo(self) -> None:
        self._undo_redo(redo=True)

    def _undo_redo(self, *, redo: bool) -> None:
        if not self.writable:
            return
        branch = self.branch
        self.commit_now(then=lambda: self.bridge.then(
            self._on_doc(lambda docs, d: docs.redo(d, branch) if redo else docs.undo(d, branch)),
            done=lambda _: self.reload()))

    def _branch_chosen(self, index: int) -> None:
        self.commit_now(then=lambda: self.open(self.doc_id, self.branch_selector.itemData(index)))

    def fork(self, name: str) -> None:
        source = self.branch
        self.commit_now(then=lambda: self.bridge.then(
            self._on_doc(lambda docs, d: docs.fork(d, source, name, None)),
            done=lambda _: self.open(self.doc_id, name)))

    def _fork(self) -> None:
        name, ok = QInputDialog.getText(self, "Fork", "New branch name:")
        if ok and name.strip():
            self.fork(name.strip())

    def merge(self, source: str, target: str) -> None:
        """Merge `source` into `target` and show the target; if it held all of `source`
        already, nothing is committed and the pane says so."""
        def done(commit: str | None) -> None:
            if commit is None:
                self.sharing.say(NOTHING_TO_MERGE)
            else:
                self.open(self.doc_id, target)

        self.commit_now(then=lambda: self.bridge.then(
            self._on_doc(lambda docs, d: docs.merge(d, source, target)), done=done,
            failed=self.sharing.say))

    def set_main(self, branch: str) -> None:
        self.bridge.then(self._on_doc(lambda docs, d: docs.set_main(d, branch)),
                         done=lambda _: self.reload())

    def rename(self, title: str) -> None:
        self.bridge.then(self._on_doc(lambda docs, d: docs.rename(d, title)),
                         done=lambda _: self.reload())

    def _rename(self) -> None:
        title, ok = QInputDialog.getText(self, "Rename", "Title:", text=self.title.text())
        if ok and title.strip():
            self.rename(title.strip())

    def tag(self, name: str, commit: str | None = None) -> None:
        """Tag `commit` (default: the branch's latest) once my typing is committed."""
        branch = self.branch
        self.commit_now(then=lambda: self.bridge.then(
            self._on_doc(lambda docs, d: docs.tag(d, name, commit, branch)),
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
        branch = self.branch
        self.bridge.then(self._on_doc(lambda _, d: d.share(branch).encode()), done=self._copied,
                         failed=self.sharing.say)

    def _copied(self, capability: str) -> None:
        QGuiApplication.clipboard().setText(capability)
        self.sharing.say(COPIED)

    def ask_edit(self) -> None:
        self.sharing.ask.setEnabled(False)  # once; the reload says "Asked to edit"

        def failed(message: str) -> None:
            self.sharing.ask.setEnabled(True)
            self.sharing.say(message)

        self.bridge.then(self._on_doc(lambda docs, d: docs.ask_edit(d)),
                         done=lambda _: self.reload(), failed=failed)

    def accept(self, key: bytes) -> None:
        """Make the person who asked an editor."""
        self.bridge.then(self._on_doc(lambda docs, d: docs.accept(d, key.hex())),
                         done=lambda _: self.reload(), failed=self._refused)

    def _refused(self, message: str) -> None:
        self.sharing.say(message)
        self.reload()

    def set_visibility(self, visibility: str) -> None:
        self.bridge.then(self._on_doc(lambda docs, d: docs.set_visibility(d, visibility)),
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
        self.bridge.then(self._on_doc(lambda docs, d: docs.add_editor(d, key.hex())),
                         done=self._editors_changed, failed=self._editors_refused)

    def remove_editor(self, key: bytes) -> None:
        self.bridge.then(self._on_doc(lambda docs, d: docs.remove_editor(d, key.hex())),
                         done=self._editors_changed, failed=self._editors_refused)

    def open_link(self, capability: str) -> None:
        """Keep a share link's keys and show its document."""
        def done(doc_hex: str) -> None:
            doc_id = bytes.fromhex(doc_hex)
            if doc_id == self.doc_id:
                self.reload()
            else:
                self.open(doc_id)

        capability = capability.strip()
        self.bridge.then(self.bridge.facade.run(
                             lambda ws: ws.documents.open_capability(capability).id), done=done,
                         failed=self.sharing.say)

    def _open_link(self) -> None:
        link, ok = QInputDialog.getText(self, "Open share link", "Share link:")
        if ok and link.strip():
            self.open_link(link)

    def restore(self, commit: str) -> None:
        """Make the branch read as it did at `commit` (a new commit), once my typing is in."""
        branch = self.branch

        def done(_) -> None:
            self.versions.close_box()
            self.reload()

        self.commit_now(then=lambda: self.bridge.then(
            self._on_doc(lambda docs, d: docs.restore(d, commit, branch)), done=done,
            failed=self.sharing.say))

    # Versions, changes and merges (ui/doc_versions.py, ui/doc_review_bar.py) ----------------

    def _saw(self, heads: list[str]) -> None:
        """The editor is in step with `heads`: what "since you last looked" counts from."""
        self.seen = heads
        self.changed_notice.saw(self.doc_id, self.branch, heads)

    def compare(self, commit: str) -> None:
        """What changed on the branch from the version at `commit` to now (my typing in)."""
        doc_id, branch = self.doc_id, self.branch
        self.commit_now(then=lambda: (doc_id, branch) == (self.doc_id, self.branch)
                        and self.versions.compare(commit, self.seen))

    def _show_since(self, doc_id: bytes, branch: str, seen: list[str]) -> None:
        if (doc_id, branch) == (self.doc_id, self.branch):
            self.versions.show_since(seen, self.seen)

    def _main(self) -> str:
        """The name of the document's main branch."""
        branches = self.view.branches if self.view is not None else []
        return next((b.name for b in branches if b.main), "main")

    def review_merge(self, source: str, target: str) -> MergeDialog:
        """The merge dialog for `source` into `target` (my typing committed first): a preview
        with its conflicts, each resolved by a choice; the target opens once it is merged."""
        if self.merge_dialog is not None:
            self.merge_dialog.close()
            self.merge_dialog.deleteLater()
        doc_id = self.doc_id
        dialog = self.merge_dialog = MergeDialog(self.bridge, doc_id, source, target, self)
        dialog.merged.connect(lambda _: doc_id == self.doc_id and self.open(doc_id, target))
        if self._busy or self.editor.toPlainText() != self.committed:  # preview my typing too
            self.commit_now(then=lambda: dialog is self.merge_dialog and dialog.reload())
        dialog.open()
        return dialog
