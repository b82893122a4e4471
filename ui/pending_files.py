"""Files waiting above the composer to go with the next message (issue #19).

`PendingFiles` is the strip of chips (name, size, x to take one back) over the composer; files
come from the attach button (`AttachButton`, a paperclip: a file dialog), from a drop on the
channel's messages or the composer (`FileDrops`, an event filter on their viewports), and from
the composer's paste (files, or image data, written to a temporary PNG off the GUI thread and
then attached). At most _files.MAX_FILES wait; more are refused in words (`refused`).

Sending is the window's: it `take`s the paths, shows `sending(n)` while the attach runs on the
Node's thread, then `sent` (the temporary PNGs among them are removed) or, when it failed,
`give_back` (the chips return)."""

from __future__ import annotations

import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path

from PySide6.QtCore import QEvent, QObject, QSize, Qt, Signal
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QImage, QPalette
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QToolButton,
    QWidget,
)

from . import _files, theme
from .bridge import NodeBridge
from .composer import Composer
from .file_icons import paperclip_icon

REMOVE = "\N{MULTIPLICATION SIGN}"  # the chip's "x" (every font has it)


class AttachButton(QToolButton):
    """The paperclip beside the composer: choose files to attach."""

    chosen = Signal(list)  # paths (str)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="attachButton")
        self.setToolTip("Attach files (or drop them here, or paste an image)")
        self.setAccessibleName("Attach files")
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the composer keeps the focus
        self._restyle()
        self.clicked.connect(self.choose)

    def _restyle(self) -> None:
        size = max(16, round(self.fontMetrics().height() * 1.15))
        self.setIcon(paperclip_icon(self.palette().color(QPalette.ColorRole.ButtonText), size))
        self.setIconSize(QSize(size, size))

    def choose(self) -> QFileDialog:
        """The file dialog (window-modal, not waited on); the chosen files go to `chosen`."""
        dialog = QFileDialog(self.window(), "Attach files", objectName="attachDialog")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFiles)
        dialog.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        dialog.filesSelected.connect(self.chosen.emit)
        dialog.open()
        return dialog

    def changeEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange):
            self._restyle()
        super().changeEvent(event)


class FileChip(QFrame):
    """One waiting file: its name, its size, and x to take it back."""

    removed = Signal(Path)

    def __init__(self, path: Path, size: int, parent: QWidget | None = None):
        super().__init__(parent, objectName="fileChip")
        self.path = path
        self.bytes = size
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAutoFillBackground(True)
        self.setBackgroundRole(QPalette.ColorRole.AlternateBase)
        self.name = QLabel(objectName="fileChipName")
        self.name.setText(self.name.fontMetrics().elidedText(
            path.name, Qt.TextElideMode.ElideMiddle, 220))
        self.size = QLabel(_files.size_label(size), objectName="fileChipSize")
        self.size.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.size.setFont(theme.scaled(self.size.font(), 0.9))
        self.remove = QToolButton(objectName="removeFile", text=REMOVE, autoRaise=True)
        self.remove.setToolTip(f"Don't send {path.name}")
        self.remove.setAccessibleName(f"Remove {path.name}")
        self.remove.setFocusPolicy(Qt.FocusPolicy.NoFocus)
        self.remove.clicked.connect(lambda: self.removed.emit(self.path))
        self.setToolTip(str(path))
        row = QHBoxLayout(self)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(6)
        row.addWidget(self.name)
        row.addWidget(self.size)
        row.addWidget(self.remove)


class PendingFiles(QWidget):
    """The files waiting to go with the next message, as chips above the composer (hidden
    while there are none)."""

    changed = Signal()  # files were added or taken back
    refused = Signal(str)  # why a file could not be added (for the status bar)

    def __init__(self, bridge: NodeBridge, parent: QWidget | None = None):
        super().__init__(parent, objectName="pendingFiles")
        self.bridge = bridge
        self._chips: list[FileChip] = []
        self._sizes: dict[Path, int] = {}  # sizes of files taken to be sent
        self._sending = 0  # files whose attach is under way
        self._pasted: set[Path] = set()  # temporary PNGs written for pasted images
        self._folder: Path | None = None  # where they are written (made on the first paste)
        self._writer: ThreadPoolExecutor | None = None
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 2)
        self._row.setSpacing(6)
        self.status = QLabel(objectName="pendingFilesStatus")
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self._row.addWidget(self.status)
        self._row.addStretch(1)
        self.status.hide()
        self.hide()

    def paths(self) -> list[Path]:
        return [chip.path for chip in self._chips]

    def chips(self) -> list[FileChip]:
        return list(self._chips)

    def add(self, paths: list[str] | list[Path]) -> list[Path]:
        """Add files (each once; folders and what cannot be read are refused in words); the
        ones added."""
        added: list[Path] = []
        for raw in paths:
            path = Path(raw)
            if path in self.paths():
                continue
            if len(self._chips) >= _files.MAX_FILES:
                self.refused.emit(f"At most {_files.MAX_FILES} files go with one message: send "
                                  "these, then attach more")
                break
            try:
                if not path.is_file():
                    self.refused.emit(f"{path.name or path} is not a file (folders cannot be "
                                      "attached)")
                    continue
                size = path.stat().st_size
            except OSError as exc:
                self.refused.emit(f"Cannot attach {path.name}: {exc.strerror or exc}")
                continue
            if size > _files.MAX_FILE_SIZE:
                self.refused.emit(f"{path.name} is {_files.size_label(size)}: a file may be at "
                                  f"most {_files.MAX_FILE_SIZE >> 30} GiB")
                continue
            self._insert(path, size)
            added.append(path)
        if added:
            self._update()
            self.changed.emit()
        return added

    def _insert(self, path: Path, size: int) -> None:
        chip = FileChip(path, size, self)
        chip.removed.connect(self.remove)
        self._row.insertWidget(len(self._chips), chip)
        self._chips.append(chip)

    def remove(self, path: Path) -> None:
        """Take a waiting file back (its x)."""
        for chip in self._chips:
            if chip.path == path:
                self._chips.remove(chip)
                chip.hide()
                chip.deleteLater()
                self._forget(path)
                self._update()
                self.changed.emit()
                return

    def take(self) -> list[Path]:
        """The waiting files, which leave the strip (to be sent)."""
        paths = self.paths()
        for chip in self._chips:
            self._sizes[chip.path] = chip.bytes
            chip.hide()
            chip.deleteLater()
        self._chips.clear()
        self._update()
        if paths:
            self.changed.emit()
        return paths

    def sending(self, count: int) -> None:
        """`count` more files are being attached (read, cut into chunks) on the Node's
        thread."""
        self._sending += count
        self._update()

    def sent(self, paths: list[Path]) -> None:
        """Their message is made: the temporary copies of pasted images go."""
        self._sending = max(0, self._sending - len(paths))
        for path in paths:
            self._sizes.pop(path, None)
            self._forget(path)
        self._update()

    def give_back(self, paths: list[Path]) -> None:
        """Their attach failed: they wait again as they were (even one gone since: the
        person sees which), before any added since."""
        self._sending = max(0, self._sending - len(paths))
        waiting = self.take()
        for path in [*paths, *waiting][:_files.MAX_FILES]:
            self._insert(path, self._sizes.get(path, 0))
        self._update()
        self.changed.emit()

    def add_image(self, image: QImage) -> None:
        """A pasted image: written to a temporary PNG (off the GUI thread), then added."""
        if len(self._chips) >= _files.MAX_FILES:
            self.refused.emit(f"At most {_files.MAX_FILES} files go with one message")
            return
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="hearth-pasted-"))
            self._writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-paste")
        taken = {p.name for p in self._pasted}
        path = self._folder / _files.pasted_name(datetime.now(), taken)
        self._pasted.add(path)
        copy = image.copy()  # the clipboard's may change while it is written

        def write() -> Path:
            if not copy.save(str(path), "PNG"):
                raise OSError("the pasted image could not be written")
            return path

        self.bridge.then(self._writer.submit(write), done=lambda written: self.add([written]),
                         failed=lambda message: (self._pasted.discard(path),
                                                 self.refused.emit(message)))

    def _forget(self, path: Path) -> None:
        if path in self._pasted:
            self._pasted.discard(path)
            path.unlink(missing_ok=True)

    def _update(self) -> None:
        if self._sending:
            self.status.setText(f"Attaching {self._sending} file"
                                f"{'s' if self._sending != 1 else ''}…")
        self.status.setVisible(bool(self._sending))
        self.setVisible(bool(self._chips or self._sending))

    def close_files(self) -> None:
        """The window closes: the temporary copies of pasted images go."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


class FileDrops(QObject):
    """Files dropped on the watched widgets (the message lists' and the composer's viewports)
    go to `dropped`; text dropped on the composer is inserted as before."""

    dropped = Signal(list)  # paths (str)

    def watch(self, widget: QWidget) -> None:
        widget.setAcceptDrops(True)
        widget.installEventFilter(self)

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 (Qt's name)
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop) and \
                Composer.local_files(event.mimeData()):
            assert isinstance(event, (QDragEnterEvent, QDropEvent))
            event.setDropAction(Qt.DropAction.CopyAction)
            event.accept()
            if kind == QEvent.Type.Drop:
                self.dropped.emit(Composer.local_files(event.mimeData()))
            return True
        return False
