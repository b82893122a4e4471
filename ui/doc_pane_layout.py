"""The document pane's widgets and where they sit (ui/document_pane.py says what they do): the
title, the branch row, who may read and change it, the editor with its tools, comments,
outline and preview, and the history column beside."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from . import theme
from .bridge import NodeBridge
from .doc_comments import CommentMargin
from .doc_preview import OUTLINE_WIDTH, MarkdownTools
from .doc_review_bar import ChangedNotice
from .doc_sharing import LockedNote, RequestsBar, SharingBar, VisibilityBadge
from .doc_versions import HistoryColumn, tool
from .flow_row import FlowRow

if TYPE_CHECKING:
    from .document_pane import DocumentPane

TITLE_SCALE = 1.5  # the title's size against the window's
SELECTOR_TIP = "The branch shown; the main branch is the one that opens by default"
COMMENTS_MIN_PX = 220  # the comments' margin keeps its heading and cards readable
EDITOR_STYLE = ('QPlainTextEdit#docEditor[emptyState="true"] '
                "{ background: palette(window); border: 1px dashed palette(mid); }")
NOTICE_STYLE = ("QLabel#docNotice { background: palette(alternate-base); color: palette(text); "
                "border: 1px solid palette(mid); border-radius: 4px; padding: 6px 8px; }")


def build(pane: DocumentPane, bridge: NodeBridge) -> None:
    # The header: the document's title, and the branch shown with what can be done to it.
    pane.title = QLabel(objectName="docTitle", wordWrap=True)
    pane.title.setFont(theme.scaled(pane.title.font(), TITLE_SCALE, bold=True))
    # A long title wraps rather than widening the pane.
    pane.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
    rename = QPushButton("Rename…", toolTip="Change the document's title (its creator only)")
    rename.clicked.connect(pane._rename)
    pane.branch_selector = QComboBox(objectName="branchSelector", toolTip=SELECTOR_TIP)
    # Every branch name shows whole: the selector is as wide as its longest name.
    pane.branch_selector.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    pane.branch_selector.setSizePolicy(QSizePolicy.Policy.Fixed,
                                       QSizePolicy.Policy.Fixed)
    pane.branch_selector.activated.connect(pane._branch_chosen)
    fork = QPushButton("Fork…", toolTip="Start a new branch from this one, to draft on "
                                        "your own")
    fork.clicked.connect(pane._fork)
    merge = QPushButton("Merge into main", toolTip="Bring this branch's changes into the "
                                                   "main branch")
    merge.clicked.connect(lambda: pane.review_merge(pane.branch, pane._main()))
    make_main = QPushButton("Set as main", toolTip="Make this branch the one that opens "
                                                   "by default")
    make_main.clicked.connect(lambda: pane.set_main(pane.branch))
    # The editor's own tools, and the history's.
    undo = tool("Undo", "Undo my last edit (Ctrl+Z)")
    undo.clicked.connect(pane.undo)
    redo = tool("Redo", "Redo (Ctrl+Shift+Z)")
    redo.clicked.connect(pane.redo)
    tag = tool("Tag…", "Name the selected version (or the latest)")
    tag.clicked.connect(pane._tag)
    pane._editing = (fork, merge, make_main, undo, redo, rename, tag)
    pane.fork_button, pane.merge_button, pane.main_button = fork, merge, make_main
    pane.undo_button, pane.redo_button, pane.rename_button, pane.tag_button = \
        undo, redo, rename, tag

    # Who may read and change it (ui/doc_sharing.py).
    pane.badge = VisibilityBadge()
    pane.sharing = SharingBar()
    pane.sharing.shareClicked.connect(pane.share)
    pane.sharing.editorsClicked.connect(pane.show_editors)
    pane.sharing.toggleClicked.connect(pane.toggle_visibility)
    pane.sharing.askClicked.connect(pane.ask_edit)
    pane.requests = RequestsBar()
    pane.requests.accepted.connect(pane.accept)
    pane.locked = LockedNote()
    pane.locked.openLinkClicked.connect(pane._open_link)
    pane.unreadable_note = pane.locked.note

    pane.notice = QLabel(objectName="docNotice", wordWrap=True)
    pane.notice.hide()
    pane.editor = QPlainTextEdit(objectName="docEditor")
    theme.styled(pane.editor, EDITOR_STYLE)  # follows light and dark switches
    theme.styled(pane.notice, NOTICE_STYLE)
    pane.editor.textChanged.connect(pane._typed)
    # The history, and the version picked in it or what changed (ui/doc_versions.py).
    side = HistoryColumn(bridge, [tag])
    pane.history, pane.versions = side.history, side.versions
    pane.version_box = pane.versions
    pane.history.restoreRequested.connect(pane.restore)
    pane.versions.restoreRequested.connect(pane.restore)
    pane.versions.compareRequested.connect(pane.compare)
    pane.version, pane.version_caption = pane.versions.text, pane.versions.caption
    pane.restore_button = pane.versions.restore_button
    # "Changed by bob since you last looked · Show changes" (ui/doc_review_bar.py).
    pane.changed_notice = ChangedNotice()
    pane.changed_notice.showRequested.connect(pane._show_since)
    pane.comments = CommentMargin(bridge, pane.editor)  # beside the editor
    pane.comments.setMinimumWidth(COMMENTS_MIN_PX)  # the editor gives way first
    pane.changed.connect(pane.comments.reload)

    # A row that wraps when the pane is narrow: its minimum is the selector's, not the
    # whole row's (a long branch name once made a 1000 px window 1052 px wide).
    branch_row = pane._branch_row = FlowRow()
    branch_row.addWidget(pane.branch_selector)
    for button in (fork, merge, make_main):
        branch_row.addWidget(button)
    branch_row.add_stretch()
    branch_row.addWidget(pane.badge)
    branch_row.addWidget(rename)  # at the right, whether or not the title shows above

    # The Markdown's outline and rendering, beside the editor when toggled on.
    pane.markdown = MarkdownTools(pane.editor, pane)
    pane.preview, pane.outline = pane.markdown.preview, pane.markdown.outline
    writing = QWidget()
    writing_column = QVBoxLayout(writing)
    writing_column.setContentsMargins(0, 0, 0, 0)
    tools = QHBoxLayout()
    tools.addWidget(undo)
    tools.addWidget(redo)
    tools.addStretch(1)
    tools.addWidget(pane.markdown.outline_button)
    tools.addWidget(pane.markdown.preview_button)
    writing_column.addLayout(tools)
    page = QWidget()
    page_column = QVBoxLayout(page)
    page_column.setContentsMargins(0, 0, 0, 0)
    with_comments = QHBoxLayout()
    with_comments.addWidget(pane.editor, 3)
    with_comments.addWidget(pane.comments, 2)
    page_column.addLayout(with_comments, 1)
    page_column.addWidget(pane.locked, 1)
    beside = QSplitter()
    beside.addWidget(pane.outline)
    beside.addWidget(page)
    beside.addWidget(pane.preview)
    beside.setChildrenCollapsible(False)
    beside.setStretchFactor(1, 3)  # the editor with its comments
    beside.setStretchFactor(2, 2)
    beside.setSizes([OUTLINE_WIDTH, 840, 560])
    writing_column.addWidget(beside, 1)

    body = QSplitter()
    body.addWidget(writing)
    body.addWidget(side)
    body.setStretchFactor(0, 3)
    body.setStretchFactor(1, 1)
    body.setSizes([560, 260])
    layout = QVBoxLayout(pane)
    layout.addWidget(pane.title)
    layout.addLayout(branch_row)
    layout.addWidget(pane.sharing)
    layout.addWidget(pane.requests)
    layout.addWidget(pane.notice)
    layout.addWidget(pane.changed_notice)
    layout.addWidget(body, 1)
