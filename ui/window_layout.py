"""Where the main window's parts sit: the sidebar, the header over the reading area (or a
document) and the composer, then the member and thread panes; what it returns is the window's
central widget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QHBoxLayout, QSplitter, QVBoxLayout, QWidget

if TYPE_CHECKING:
    from .main_window import MainWindow


def _column(widget: QWidget, margins: tuple[int, int, int, int] = (0, 0, 0, 0),
            spacing: int = 0) -> QVBoxLayout:
    column = QVBoxLayout(widget)
    column.setContentsMargins(*margins)
    column.setSpacing(spacing)
    return column


def laid_out(w: MainWindow) -> QSplitter:
    center = QWidget()
    column = _column(center)
    if w.first_run is not None:
        column.addWidget(w.first_run)
    column.addWidget(w.not_kept)
    column.addWidget(w.loading_older)
    column.addWidget(w.reading, 1)
    composing = QWidget()
    composing_layout = _column(composing, (12, 6, 12, 4), 2)
    composing_layout.addWidget(w.pending_files)
    composer_row = QHBoxLayout()
    composer_row.setSpacing(4)
    composer_row.addWidget(w.composer, 1)
    buttons = QVBoxLayout()
    buttons.setSpacing(0)
    buttons.addWidget(w.emoji_button)
    buttons.addWidget(w.attach_button)
    buttons.addStretch(1)
    composer_row.addLayout(buttons)
    composing_layout.addLayout(composer_row)
    composing_layout.addWidget(w.typing_label)
    column.addWidget(composing)
    w.pages.addWidget(center)  # the document pane joins when first opened (window.documents)
    main = QWidget()
    main_column = _column(main)
    main_column.addWidget(w.header)
    main_column.addWidget(w.removed_banner)
    main_column.addWidget(w.history_bar)
    main_column.addWidget(w.pages, 1)
    splitter = QSplitter(handleWidth=1)
    splitter.addWidget(w.sidebar)
    splitter.addWidget(main)
    splitter.addWidget(w.member_pane)
    splitter.addWidget(w.thread_pane)
    splitter.setStretchFactor(1, 1)
    splitter.setCollapsible(1, False)
    splitter.setSizes([220, 640, 210, 320])
    return splitter
