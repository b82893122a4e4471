"""An attached image at full size (issue #19): a window of its own, opened by a click on a
thumbnail. The file is fetched first when it is not here yet (ui/attachments.py does that),
then read off the GUI thread with QImageReader: the format decided from the content and only
raster formats (never SVG or anything that could load more), the size checked before decoding
(a decompression bomb is refused, not decoded) and the allocation bounded. Nothing is executed
or handed to another program."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import QRectF, QSize, Qt, Signal
from PySide6.QtGui import (
    QImage,
    QImageReader,
    QKeySequence,
    QPainter,
    QPalette,
    QPixmap,
    QShortcut,
)
from PySide6.QtWidgets import QDialog, QLabel, QVBoxLayout, QWidget

from app.records import Attachment

from . import _files
from .bridge import NodeBridge

SAFE_FORMATS = frozenset({b"png", b"jpeg", b"jpg", b"gif", b"webp", b"bmp"})
MAX_PIXELS = 50_000_000  # as the thumbnails' decoder (app/thumbnails.py): more is a bomb
ALLOCATION_MB = 512  # what decoding one image may allocate
SCREEN_SHARE = 0.85  # the window's largest share of the screen

_decoder: ThreadPoolExecutor | None = None


def read_image(path: Path) -> QImage:
    """Decode an image file, bounded (see the module's docstring); OSError with the reason
    when it is not an image this shows, too large, or broken. Any thread."""
    reader = QImageReader(str(path))
    reader.setDecideFormatFromContent(True)
    reader.setAllocationLimit(ALLOCATION_MB)
    reader.setAutoTransform(True)
    kind = bytes(reader.format().data()).lower()
    if kind not in SAFE_FORMATS:
        raise OSError("it is not an image this window shows (PNG, JPEG, GIF, WebP or BMP)")
    size = reader.size()
    if size.width() <= 0 or size.height() <= 0:
        raise OSError("the image is broken")
    if size.width() * size.height() > MAX_PIXELS:
        raise OSError(f"it is too large to show ({size.width()} × {size.height()} pixels)")
    image = reader.read()
    if image.isNull():
        raise OSError(f"the image could not be read ({reader.errorString()})")
    return image


def _decode(path: Path):
    global _decoder
    if _decoder is None:
        _decoder = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hearth-image")
    return _decoder.submit(read_image, path)


class ImageCanvas(QWidget):
    """The picture, scaled down to fit (never up), centred on the window's background."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent, objectName="imageCanvas")
        self.pixmap: QPixmap | None = None

    def set_image(self, image: QImage) -> None:
        self.pixmap = QPixmap.fromImage(image)
        self.updateGeometry()
        self.update()

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        return self.pixmap.size() if self.pixmap is not None else QSize(320, 240)

    def paintEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        if self.pixmap is None:
            return
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        w, h = _files.fit(self.pixmap.width(), self.pixmap.height(), self.width(),
                          self.height())
        painter.drawPixmap(QRectF((self.width() - w) / 2, (self.height() - h) / 2, w, h),
                           self.pixmap, QRectF(self.pixmap.rect()))
        painter.end()


class ImageViewer(QDialog):
    """One attached image: "Loading…" (or the fetch's progress) until it is read, then the
    picture; Esc closes it."""

    shown = Signal()  # the picture is on screen
    failed = Signal(str)  # it could not be fetched or read: why

    def __init__(self, bridge: NodeBridge, attachment: Attachment,
                 parent: QWidget | None = None):
        super().__init__(parent, objectName="imageViewer")
        self.bridge = bridge
        self.attachment = attachment
        self.setWindowTitle(f"{attachment.name} ({_files.size_label(attachment.size)})")
        self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        self.status = QLabel("Loading…", objectName="imageStatus",
                             alignment=Qt.AlignmentFlag.AlignCenter, wordWrap=True)
        self.status.setForegroundRole(QPalette.ColorRole.PlaceholderText)
        self.canvas = ImageCanvas(self)
        self.canvas.hide()
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.status, 1)
        layout.addWidget(self.canvas, 1)
        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, self.close)
        self.resize(480, 360)

    def say(self, text: str) -> None:
        """What the window shows until the picture is ready ("Fetching… 1.2 MB of 4.0 MB")."""
        if self.canvas.isHidden():
            self.status.setText(text)

    def show_file(self, path: Path) -> None:
        """Read the file (off the GUI thread) and show it."""
        self.say("Loading…")
        self.bridge.then(_decode(path), done=self._decoded, failed=self.fail)

    def fail(self, message: str) -> None:
        self.canvas.hide()
        self.status.show()
        self.status.setText(f"Cannot show {self.attachment.name}: {message}")
        self.failed.emit(message)

    def _decoded(self, image: QImage) -> None:
        self.canvas.set_image(image)
        self.status.hide()
        self.canvas.show()
        screen = self.screen().availableGeometry() if self.screen() else None
        if screen is not None:
            w, h = _files.fit(image.width(), image.height(),
                              round(screen.width() * SCREEN_SHARE),
                              round(screen.height() * SCREEN_SHARE))
            self.resize(max(w, 200), max(h, 150))
        self.shown.emit()
