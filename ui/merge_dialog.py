"""The merge dialog: merging one branch into another, previewed before anything is committed.

It asks the library for `Documents.merge_preview` (app/review.MergePreview) and shows the result:
the text both branches' changes make, each conflict highlighted where it is. A conflict is a
place both branches changed since their common past; for each, a row shows both sides' text and
who wrote it, with a choice: keep the target's ("ours"), take the source's ("theirs"), or both
(the target's then the source's between git-style markers). The preview follows the choices.
Merge stays disabled until every conflict has one; it then commits the merge with the
resolutions (and the heads the preview was read at, so a branch that moved meanwhile is refused
rather than merged unseen). Without conflicts Merge is enabled at once.
"""

from __future__ import annotations

from html import escape

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QColor, QPalette, QTextCharFormat, QTextCursor, QTextFormat
from PySide6.QtWidgets import (
    QButtonGroup,
    QDialog,
    QDialogButtonBox,
    QGroupBox,
    QLabel,
    QPushButton,
    QRadioButton,
    QScrollArea,
    QSizePolicy,
    QSplitter,
    QTextEdit,
    QVBoxLayout,
    QWidget,
)

from app.documents import on_document
from app.records import ALREADY_MERGED, RESOLUTIONS, Conflict, MergePreview

from ._rows import ANONYMOUS, member_names, name_rgb
from .bridge import NodeBridge

OPEN_ALPHA = 90  # of 255: the highlight behind a conflict with no choice yet
CHOSEN_ALPHA = 40  # and behind one resolved
CONFLICT = QTextFormat.Property.UserProperty + 3  # a conflict's index on its characters
SIDE_LINES = 6  # lines of each side's text shown in a conflict's row before it scrolls
NOTHING_TO_MERGE = "Already merged: nothing to do"
ROWS_WIDTH = 340  # the conflicts' column at least: room for each side's text and the choices


def choice_labels(source: str, target: str) -> dict[str, str]:
    return {"ours": f"Keep {target}'s", "theirs": f"Take {source}'s",
            "both": "Both, marked"}


class MergeDialog(QDialog):
    """Merging `source` into `target` of document `doc_id`. `previewed` is emitted when the
    preview is shown, `merged` with the merge commit once it is made (the dialog then
    closes)."""

    previewed = Signal()
    merged = Signal(str)

    def __init__(self, bridge: NodeBridge, doc_id: bytes, source: str, target: str,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self.bridge = bridge
        self.doc_id, self.source, self.target = doc_id, source, target
        self.preview: MergePreview | None = None
        self.choices: list[str | None] = []
        self._groups: list[QButtonGroup] = []
        self._spans: dict[int, tuple[int, int]] = {}
        self.setWindowTitle(f"Merge {source} into {target}")
        self.resize(760, 560)

        self.summary = QLabel("Reading both branches…", objectName="mergeSummary",
                              wordWrap=True)
        self.summary.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Minimum)
        self.result = QTextEdit(objectName="mergeResult", readOnly=True)
        self.conflict_rows = QWidget()
        self._rows_layout = QVBoxLayout(self.conflict_rows)
        self._rows_layout.addStretch(1)
        rows = self._rows_area = QScrollArea(widgetResizable=True)
        rows.setWidget(self.conflict_rows)
        rows.setMinimumWidth(ROWS_WIDTH)
        rows.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.conflict_rows.installEventFilter(self)
        self.error = QLabel(objectName="mergeError", wordWrap=True, visible=False)
        self.merge_button = QPushButton("Merge", enabled=False)
        self.merge_button.clicked.connect(self._merge)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        buttons.addButton(self.merge_button, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)

        split = QSplitter(Qt.Orientation.Horizontal)
        result_box = QWidget()
        result_layout = QVBoxLayout(result_box)
        result_layout.setContentsMargins(0, 0, 0, 0)
        result_layout.addWidget(QLabel(f"{target} after the merge:"))
        result_layout.addWidget(self.result, 1)
        split.addWidget(result_box)
        split.addWidget(rows)
        split.setStretchFactor(0, 1)
        split.setChildrenCollapsible(False)
        layout = QVBoxLayout(self)
        layout.addWidget(self.summary)
        layout.addWidget(split, 1)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        self.reload()

    # The preview -----------------------------------------------------------------------------

    def reload(self) -> None:
        """Read the preview again (choices made are dropped: the conflicts may differ)."""
        self.merge_button.setEnabled(False)
        source, target = self.source, self.target
        self.bridge.then(self.bridge.facade.run(on_document(
                             self.doc_id, lambda docs, d: docs.merge_preview(d, source, target))),
                         done=self._show, failed=self._failed)

    def _failed(self, message: str) -> None:
        self.error.setText(message)
        self.error.setVisible(True)
        self._update()

    def _show(self, preview: MergePreview) -> None:
        self.preview = preview
        self.choices = [None] * len(preview.conflicts)
        n = len(preview.conflicts)
        if preview.already_merged:
            self.summary.setText(f"Already merged: {preview.target} holds every change of "
                                 f"{preview.source}, so there is nothing to do.")
        elif n == 0:
            self.summary.setText(f"No conflicts: {preview.source} and {preview.target} "
                                 "changed different places, and both sets of changes are kept.")
        else:
            self.summary.setText(
                f"{n} conflict{'s' if n != 1 else ''}: {preview.source} and {preview.target} "
                f"changed the same text since they parted. Choose how to resolve "
                f"{'each' if n != 1 else 'it'}; nothing is merged until "
                f"{'every one has' if n != 1 else 'it has'} a choice.")
        self._show_rows(preview)
        self._render()
        self._update()
        self.previewed.emit()

    def _show_rows(self, preview: MergePreview) -> None:
        while self._rows_layout.count() > 1:
            item = self._rows_layout.takeAt(0)
            if item.widget() is not None:
                item.widget().deleteLater()
        self._groups = []
        keys = {k for c in preview.conflicts for k in (*c.ours_authors, *c.theirs_authors)}
        names = member_names((k, preview.names.get(k)) for k in keys)
        labels = choice_labels(preview.source, preview.target)
        for conflict in preview.conflicts:
            row = self._row(conflict, preview, names, labels)
            self._rows_layout.insertWidget(self._rows_layout.count() - 1, row)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        if watched is self.conflict_rows and event.type() == QEvent.Type.LayoutRequest:
            self._fit_rows()  # rows came or went, or their text or font changed
        return super().eventFilter(watched, event)

    def _fit_rows(self) -> None:
        """The conflicts' column is at least as wide as its widest row needs (the choices, one
        a line, each whole with its branch's name), beside its scroll bar: it never scrolls
        sideways, so nothing in it may be cut."""
        area = self._rows_area
        need = (self.conflict_rows.minimumSizeHint().width()
                + area.verticalScrollBar().sizeHint().width() + 2 * area.frameWidth())
        area.setMinimumWidth(max(ROWS_WIDTH, need))

    def _row(self, conflict: Conflict, preview: MergePreview, names: dict[bytes, str],
             labels: dict[str, str]) -> QGroupBox:
        first, last = conflict.lines
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        row = QGroupBox(f"Conflict {conflict.index + 1}: {preview.target} {where}")
        layout = QVBoxLayout(row)
        for branch, text, authors in ((preview.target, conflict.ours, conflict.ours_authors),
                                      (preview.source, conflict.theirs,
                                       conflict.theirs_authors)):
            layout.addWidget(self._who(branch, authors, names))
            side = QTextEdit(readOnly=True, plainText=text)
            side.setFixedHeight(side.fontMetrics().lineSpacing() * min(
                SIDE_LINES, max(1, text.count("\n") + 1)) + 12)
            layout.addWidget(side)
        options = QVBoxLayout()  # one a line: each shows whole, however long the names
        group = QButtonGroup(row)
        for choice in RESOLUTIONS:
            button = QRadioButton(labels[choice])
            button.setProperty("choice", choice)
            group.addButton(button)
            options.addWidget(button)
            button.toggled.connect(lambda on, i=conflict.index, c=choice:
                                   on and self._chosen(i, c))
        layout.addLayout(options)
        self._groups.append(group)
        return row

    def _who(self, branch: str, authors: tuple[bytes, ...], names: dict[bytes, str]) -> QLabel:
        """The side's branch, and who wrote it in their name colours."""
        base = self.palette().color(QPalette.ColorRole.Window)
        rgb = (base.red(), base.green(), base.blue())
        people = [f'<span style="color: {QColor(*name_rgb(k, rgb)).name()}">'
                  f"{escape(names.get(k, ANONYMOUS))}</span>" for k in authors]
        return QLabel(f"<b>{escape(branch)}</b>" + (f" by {', '.join(people)}" if people
                                                    else ""))

    def choose(self, index: int, choice: str) -> None:
        """Resolve conflict `index` by `choice` (one of RESOLUTIONS), as its radio button does."""
        for button in self._groups[index].buttons():
            if button.property("choice") == choice:
                button.setChecked(True)

    def _chosen(self, index: int, choice: str) -> None:
        self.choices[index] = choice
        self._render()
        self._update()

    def _update(self) -> None:
        preview = self.preview
        nothing = preview is not None and preview.already_merged
        ready = preview is not None and not nothing and all(c is not None for c in self.choices)
        self.merge_button.setEnabled(ready)
        self.merge_button.setToolTip("" if ready else NOTHING_TO_MERGE if nothing else
                                     "Choose how to resolve each conflict first")

    def _render(self) -> None:
        preview = self.preview
        self.result.clear()
        self._spans: dict[int, tuple[int, int]] = {}  # conflict -> where the preview shows it
        if preview is None:
            return
        highlight = self.palette().color(QPalette.ColorRole.Highlight)
        cursor = QTextCursor(self.result.document())
        for part in preview.parts:
            if isinstance(part, str):
                cursor.insertText(part, QTextCharFormat())
                continue
            choice = self.choices[part]
            shown = QTextCharFormat()
            tint = QColor(highlight)
            tint.setAlpha(OPEN_ALPHA if choice is None else CHOSEN_ALPHA)
            shown.setBackground(tint)
            shown.setProperty(CONFLICT, part)
            shown.setToolTip(f"Conflict {part + 1}: " + (
                "choose how to resolve it" if choice is None else f"resolved: {choice}"))
            start = cursor.position()
            cursor.insertText(preview.resolved(part, choice or "both"), shown)
            self._spans[part] = (start, cursor.position())
        self.result.moveCursor(QTextCursor.MoveOperation.Start)

    def conflict_texts(self) -> dict[int, str]:
        """The text the preview shows for each conflict, by its index."""
        shown = self.result.toPlainText()
        return {index: shown[start:end] for index, (start, end) in self._spans.items()}

    # Merging ---------------------------------------------------------------------------------

    def _merge(self) -> None:
        preview = self.preview
        if preview is None or any(c is None for c in self.choices):
            return
        self.merge_button.setEnabled(False)
        self.error.setVisible(False)
        source, target, choices = self.source, self.target, list(self.choices)
        expect = (list(preview.source_heads), list(preview.target_heads))
        self.bridge.then(
            self.bridge.facade.run(on_document(self.doc_id, lambda docs, d: docs.merge(
                d, source, target, resolutions=choices,  # type: ignore[arg-type]
                expect=expect))),
            done=self._done, failed=self._merge_failed)

    def _merge_failed(self, message: str) -> None:
        """Nothing was merged (a branch moved since the preview, say): say so, and show the
        merge as it would be now."""
        self.error.setText(f"Nothing was merged: {message}. Here is the merge as it is now.")
        self.error.setVisible(True)
        self.reload()

    def _done(self, commit: str | None) -> None:
        if commit is None:  # merged meanwhile (by another window, or `hearth doc merge`)
            self.error.setText(f"Nothing was merged: {ALREADY_MERGED}.")
            self.error.setVisible(True)
            self.reload()
            return
        self.merged.emit(commit)
        self.accept()

