"""A message's files under its text (ui/message_delegate.py draws the rest of the row): an image
as its thumbnail (decoded once from Attachment.thumb, bounded, at most THUMB_MAX pixels a side,
clicked to see it full size), any other file as a card with a page glyph, its name and size
("Kept here" after them when pinned), a progress bar while it arrives (the view's
`file_progress`, from the bridge's fileProgress) and Download, or Open and Save as…; a pinned
image says so in its tooltip. File boxes have the same height in every state, so a download
never moves the rows.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TYPE_CHECKING

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QPoint, QRect, QRectF, QSize, Qt
from PySide6.QtGui import QFont, QFontMetrics, QImageReader, QPainter, QPalette, QPixmap

from app.records import Attachment, Message

from . import _files
from .file_icons import paint_file_glyph
from .message_body import alpha

if TYPE_CHECKING:
    from .message_view import MessageView

FILE_GAP = 6  # above each file under a message
CARD_MAX = 420  # a file card's widest
CARD_PAD = 8  # inside a file card
LINE_GAP = 2  # between a card's name and its second line
GLYPH_WIDTH = 30  # a card's page glyph
BUTTON_GAP = 14  # between a card's buttons
PROGRESS_HEIGHT = 3  # the bar in a card's foot (or an image's) while the file arrives
THUMB_CACHE = 300  # decoded thumbnails kept
THUMB_LIMIT_MB = 8  # what decoding one thumbnail may allocate (they are <= 12 KiB JPEGs)
THUMB_MOST = 1024  # a thumbnail claiming a bigger side is not one: not decoded
FILE_ACTIONS = {"download": "Download", "open": "Open", "save": "Save as…"}

Boxes = tuple[tuple[QRect, int], ...]  # each file's thumbnail or card, and its index
Actions = tuple[tuple[QRect, int, str], ...]  # what a click there does to file i


class FileBoxes:
    """Lays out, draws and decodes the files of the message view's rows; `reset` with the
    row's fonts before use."""

    def __init__(self, view: MessageView):
        self._view = view
        # Decoded thumbnails by the file's list id (None: it would not decode).
        self._thumbs: OrderedDict[tuple[bytes, bytes], QPixmap | None] = OrderedDict()

    def reset(self, name_font: QFont, detail_font: QFont, button_font: QFont) -> None:
        """The fonts of a card's name, its second line and its buttons."""
        self._name_font, self._detail_font, self._button_font = \
            name_font, detail_font, button_font
        self._name_metrics = QFontMetrics(name_font)
        self._detail_metrics = QFontMetrics(detail_font)
        self._button_metrics = QFontMetrics(button_font)
        self._card_height = (2 * CARD_PAD + self._name_metrics.height() + LINE_GAP
                             + self._detail_metrics.height())

    def height(self, files: tuple[Attachment, ...], width: int) -> int:
        """What a message's files take under its text (a gap above each)."""
        return sum(FILE_GAP + self._size(attachment, width).height() for attachment in files)

    def _size(self, attachment: Attachment, width: int) -> QSize:
        if _files.shows_inline(attachment):
            w, h = attachment.width, attachment.height
            if w <= 0 or h <= 0:  # not told: the thumbnail's own shape
                thumb = self.thumbnail(attachment)
                w, h = (thumb.width(), thumb.height()) if thumb is not None else (0, 0)
            return QSize(*_files.fit(w, h, min(width, _files.THUMB_MAX)))
        return QSize(min(width, CARD_MAX), self._card_height)

    def thumbnail(self, attachment: Attachment) -> QPixmap | None:
        """The file's thumbnail, decoded once (bounded: a thumbnail is small, and one that
        claims to be large or will not decode is not drawn)."""
        key = (attachment.list, attachment.thumb)  # another message may name the same list
        if key in self._thumbs:
            self._thumbs.move_to_end(key)
            return self._thumbs[key]
        pixmap = None
        buffer = QBuffer()
        buffer.setData(QByteArray(attachment.thumb))
        buffer.open(QIODevice.OpenModeFlag.ReadOnly)
        reader = QImageReader(buffer)
        reader.setAllocationLimit(THUMB_LIMIT_MB)
        size = reader.size()
        if 0 < size.width() <= THUMB_MOST and 0 < size.height() <= THUMB_MOST:
            image = reader.read()
            if not image.isNull():
                pixmap = QPixmap.fromImage(image)
        buffer.close()
        self._thumbs[key] = pixmap
        if len(self._thumbs) > THUMB_CACHE:
            self._thumbs.popitem(last=False)
        return pixmap

    def _progress(self, attachment: Attachment):
        """The file's latest FileProgress while it arrives here, else None."""
        progress = getattr(self._view, "file_progress", {}).get(attachment.list)
        return progress if progress is not None and not attachment.complete \
            and not progress.done else None

    def card_detail(self, attachment: Attachment) -> str:
        """A card's second line: how much has arrived while it arrives, else its size and
        kind, and "Kept here" when it is pinned."""
        progress = self._progress(attachment)
        if progress is not None:
            return _files.progress_label(progress.have, attachment.size)
        detail = f"{_files.size_label(attachment.size)} · {_files.kind_label(attachment)}"
        return f"{detail} · {kept_label(attachment)}" if attachment.pinned else detail

    def _card_actions(self, attachment: Attachment) -> list[str]:
        if attachment.complete:
            return ["open", "save"]
        return [] if self._progress(attachment) is not None else ["download"]

    def layout(self, files: tuple[Attachment, ...], x: int, top: int, width: int
               ) -> tuple[Boxes, Actions, int]:
        """Where a message's files go from `top` down, what clicking them does, and where
        they end."""
        boxes: list[tuple[QRect, int]] = []
        actions: list[tuple[QRect, int, str]] = []
        metrics = self._button_metrics
        for i, attachment in enumerate(files):
            top += FILE_GAP
            box = QRect(QPoint(x, top), self._size(attachment, width))
            boxes.append((box, i))
            if _files.shows_inline(attachment):
                actions.append((box, i, "view"))
            else:
                right = box.right() - CARD_PAD
                for action in reversed(self._card_actions(attachment)):
                    label = FILE_ACTIONS[action]
                    w = metrics.horizontalAdvance(label)
                    actions.append((QRect(right - w + 1, box.center().y() - metrics.height() // 2,
                                          w, metrics.height()), i, action))
                    right -= w + BUTTON_GAP
            top = box.bottom() + 1
        return tuple(boxes), tuple(actions), top

    def paint(self, painter: QPainter, message: Message, boxes: Boxes, actions: Actions,
              palette: QPalette, group: QPalette.ColorGroup, faded: float) -> None:
        quiet = palette.color(group, QPalette.ColorRole.PlaceholderText)
        text = palette.color(group, QPalette.ColorRole.Text)
        link = palette.color(group, QPalette.ColorRole.Link)
        border = alpha(palette.color(group, QPalette.ColorRole.Mid), 170)
        painter.save()
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.setRenderHint(QPainter.RenderHint.SmoothPixmapTransform)
        painter.setOpacity(faded)
        labels = {(i, action): rect for rect, i, action in actions}
        for box, i in boxes:
            attachment = message.files[i]
            progress = self._progress(attachment)
            outline = QRectF(box).adjusted(0.5, 0.5, -0.5, -0.5)
            if _files.shows_inline(attachment):
                thumb = self.thumbnail(attachment)
                if thumb is not None:
                    painter.drawPixmap(box, thumb)
                    painter.setPen(border)
                    painter.setBrush(Qt.BrushStyle.NoBrush)
                else:
                    painter.setPen(border)
                    painter.setBrush(palette.color(group, QPalette.ColorRole.AlternateBase))
                painter.drawRoundedRect(outline, 3, 3)
                if progress is not None:
                    self._paint_bar(painter, QRectF(box.left() + 4, box.bottom() - 4
                                                    - PROGRESS_HEIGHT, box.width() - 8,
                                                    PROGRESS_HEIGHT), progress, palette, group)
                continue
            painter.setPen(border)
            painter.setBrush(palette.color(group, QPalette.ColorRole.AlternateBase))
            painter.drawRoundedRect(outline, 5, 5)
            glyph = QRectF(box.left() + CARD_PAD, box.top() + CARD_PAD, GLYPH_WIDTH,
                           box.height() - 2 * CARD_PAD)
            paint_file_glyph(painter, glyph, quiet, palette.color(group, QPalette.ColorRole.Base),
                             _files.kind_label(attachment), self._detail_font)
            left = round(glyph.right()) + CARD_PAD
            buttons = [labels[(i, a)] for a in FILE_ACTIONS if (i, a) in labels]
            right = (min(r.left() for r in buttons) - BUTTON_GAP) if buttons \
                else box.right() - CARD_PAD
            name = self._name_metrics.elidedText(attachment.name, Qt.TextElideMode.ElideMiddle,
                                                 max(20, right - left))
            painter.setFont(self._name_font)
            painter.setPen(text)
            top = box.top() + CARD_PAD
            painter.drawText(QRect(left, top, right - left, self._name_metrics.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter, name)
            painter.setFont(self._detail_font)
            painter.setPen(quiet)
            detail = self.card_detail(attachment)
            second = top + self._name_metrics.height() + LINE_GAP
            painter.drawText(QRect(left, second, right - left, self._detail_metrics.height()),
                             Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter,
                             self._detail_metrics.elidedText(detail, Qt.TextElideMode.ElideRight,
                                                             max(20, right - left)))
            if progress is not None:
                self._paint_bar(painter, QRectF(left, box.bottom() - CARD_PAD / 2
                                                - PROGRESS_HEIGHT + 1,
                                                box.right() - CARD_PAD - left, PROGRESS_HEIGHT),
                                progress, palette, group)
            painter.setFont(self._button_font)
            painter.setPen(link)
            for action in FILE_ACTIONS:
                rect = labels.get((i, action))
                if rect is not None:
                    painter.drawText(rect, Qt.AlignmentFlag.AlignCenter, FILE_ACTIONS[action])
        painter.restore()

    @staticmethod
    def _paint_bar(painter: QPainter, rect: QRectF, progress, palette: QPalette,
                   group: QPalette.ColorGroup) -> None:
        radius = rect.height() / 2
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(alpha(palette.color(group, QPalette.ColorRole.Mid), 140))
        painter.drawRoundedRect(rect, radius, radius)
        done = QRectF(rect)
        done.setWidth(max(rect.height(), rect.width() * _files.fraction(progress.have,
                                                                         progress.size)))
        painter.setBrush(palette.color(group, QPalette.ColorRole.Highlight))
        painter.drawRoundedRect(done, radius, radius)


def kept_label(attachment: Attachment) -> str:
    """A pinned file's quiet mark on its card: whether it is here yet."""
    return "Kept here" if attachment.complete else "Kept here once downloaded"


def file_tip(attachment: Attachment, action: str) -> str:
    """What a file's tooltip says about a click on it (and that it is kept, when pinned)."""
    described = _files.describe(attachment)
    if action == "view":
        tip = f"{described}\nClick to see it full size"
    elif action == "download":
        tip = f"Download {described} to this computer"
    elif action == "save":
        tip = f"Save a copy of {described}…"
    elif _files.is_executable(attachment.name):
        tip = f"Open {described}: it may be a program, so you are asked first"
    else:
        tip = f"Open {described} with this computer's application for it"
    if attachment.pinned:
        tip += "\nKept on this computer whatever the storage limit"
    return tip
