"""A row of widgets that wraps onto more lines when its width is short (Qt's flow layout), so
that its minimum width is its widest widget's rather than the whole row's: a row of buttons
never makes its pane, and so the window, wider than the person set it (issue 29).

Widgets added after `add_stretch()` sit at the right end while the whole row fits on one
line, as after a QHBoxLayout's stretch; when it wraps, every line starts at the left."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QRect, QSize, Qt
from PySide6.QtWidgets import QLayout, QLayoutItem, QWidget


class FlowRow(QLayout):
    def __init__(self, parent: QWidget | None = None, *, gap: int = 6):
        super().__init__(parent)
        self._items: list[QLayoutItem] = []
        self._split: int | None = None  # the index of the first item after the stretch
        self._gap = gap
        self.setContentsMargins(0, 0, 0, 0)

    # QLayout's interface ------------------------------------------------------------------------

    def addItem(self, item: QLayoutItem) -> None:  # noqa: N802 (Qt's name)
        self._items.append(item)

    def add_stretch(self) -> None:
        self._split = len(self._items)

    def count(self) -> int:
        return len(self._items)

    def itemAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 (Qt's name)
        return self._items[index] if 0 <= index < len(self._items) else None

    def takeAt(self, index: int) -> QLayoutItem | None:  # noqa: N802 (Qt's name)
        if not 0 <= index < len(self._items):
            return None
        if self._split is not None and index < self._split:
            self._split -= 1
        return self._items.pop(index)

    def spacing(self) -> int:
        return self._gap

    def expandingDirections(self) -> Qt.Orientation:  # noqa: N802 (Qt's name)
        return Qt.Orientation(0)

    def hasHeightForWidth(self) -> bool:  # noqa: N802 (Qt's name)
        return True

    def heightForWidth(self, width: int) -> int:  # noqa: N802 (Qt's name)
        return self._arrange(QRect(0, 0, width, 0), place=False)

    def setGeometry(self, rect: QRect) -> None:  # noqa: N802 (Qt's name)
        super().setGeometry(rect)
        self._arrange(rect, place=True)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt's name)
        """Everything on one line."""
        shown = self._shown()
        width = sum(item.sizeHint().width() for _, item in shown)
        height = max((item.sizeHint().height() for _, item in shown), default=0)
        return self._with_margins(QSize(width + self._gap * max(0, len(shown) - 1), height))

    def minimumSize(self) -> QSize:  # noqa: N802 (Qt's name)
        """The widest widget: the others wrap below it."""
        shown = self._shown()
        width = max((item.minimumSize().width() for _, item in shown), default=0)
        height = max((item.minimumSize().height() for _, item in shown), default=0)
        return self._with_margins(QSize(width, height))

    # Placing ----------------------------------------------------------------------------------

    def _shown(self) -> list[tuple[int, QLayoutItem]]:
        return [(n, item) for n, item in enumerate(self._items) if not item.isEmpty()]

    def _with_margins(self, size: QSize) -> QSize:
        margins = self.contentsMargins()
        return size + QSize(margins.left() + margins.right(), margins.top() + margins.bottom())

    def _lines(self, width: int) -> list[list[tuple[int, QLayoutItem]]]:
        lines: list[list[tuple[int, QLayoutItem]]] = [[]]
        used = 0
        for n, item in self._shown():
            wide = item.sizeHint().width()
            if lines[-1] and used + self._gap + wide > width:
                lines.append([])
                used = 0
            used += (self._gap if lines[-1] else 0) + wide
            lines[-1].append((n, item))
        return lines if lines[0] else []

    def _arrange(self, rect: QRect, *, place: bool) -> int:
        """Lay the items out in `rect` (when `place`); returns the height they take."""
        area = rect.marginsRemoved(self.contentsMargins())
        lines = self._lines(area.width())
        y = area.y()
        for line in lines:
            height = max(item.sizeHint().height() for _, item in line)
            x = area.x()
            for n, item in line:
                hint = item.sizeHint()
                if len(lines) == 1 and self._split is not None and n >= self._split:
                    rest = sum(i.sizeHint().width() + self._gap for m, i in line
                               if m >= n) - self._gap
                    x = max(x, area.right() + 1 - rest)  # the stretch: these sit at the right
                if place:
                    width = min(hint.width(), area.width())
                    item.setGeometry(QRect(QPoint(x, y + (height - hint.height()) // 2),
                                           QSize(width, hint.height())))
                x += hint.width() + self._gap
            y += height + self._gap
        margins = self.contentsMargins()
        return y - area.y() - (self._gap if lines else 0) + margins.top() + margins.bottom()
