"""The emoji picker: a popup to find an emoji by group or by name, and the composer's button
that opens it.

`EmojiPicker` is a `Qt.Popup` frame: a search field, the groups (app/emojis.py's GROUPS) in a
column on the left, a row of recent picks, and a grid of the chosen group or of the search's
matches. The grid is one QListView over a small list model (uniform cells, only the visible ones
drawn), so opening it makes no widget per emoji. Each cell's tooltip is its `:shortcode:`, and a
status line at the bottom names the emoji under the mouse (or the keyboard's current one): on a
machine without a colour emoji font the cells may show boxes, and that line is how a person
tells what they pick. `picked(str)` carries the emoji; `open_at` / `open_beside` take a one-shot
`on_pick` so one picker can serve the composer and reactions alike.

Recent picks are kept for the session (shared by every picker made without its own list);
`recentChanged(list)` lets the window persist them and `set_recent` load them back.
`EmojiButton` (objectName "emojiButton") opens a picker beside itself and inserts the pick into
its Composer at the cursor."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QPersistentModelIndex,
    QPoint,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import (
    QFont,
    QFontDatabase,
    QFontMetrics,
    QGuiApplication,
    QKeyEvent,
    QPainter,
    QPalette,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QListWidget,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app import emojis
from app.emojis import Emoji

from . import theme

if TYPE_CHECKING:
    from .composer import Composer

# Families that draw emoji in colour, by platform; the first one installed is used.
COLOUR_EMOJI_FAMILIES = ("Noto Color Emoji", "Apple Color Emoji", "Segoe UI Emoji",
                         "Twemoji", "Twemoji Mozilla", "EmojiOne Color", "JoyPixels")
COLUMNS = 9  # cells across the grid
SEARCH_LIMIT = 300  # matches the grid lists for a query
CELL_SCALE = 1.6  # an emoji cell's glyph against the window's type size
NO_FONT_HINT = "No colour emoji font here: point at an emoji to see its name"

CharRole = int(Qt.ItemDataRole.UserRole)  # str: the emoji
NameRole = CharRole + 1  # str: its ":shortcode:"

_session_recent: list[str] = []  # what pickers without a list of their own remember


def emoji_font_family() -> str | None:
    """The installed colour emoji family the picker draws with, None where there is none."""
    installed = {family.casefold(): family for family in QFontDatabase.families()}
    for family in COLOUR_EMOJI_FAMILIES:
        if family.casefold() in installed:
            return installed[family.casefold()]
    return None


def has_colour_emoji_font() -> bool:
    """Whether this machine has a colour emoji font (needs a QGuiApplication)."""
    return emoji_font_family() is not None


def emoji_font(base: QFont, scale: float = 1.0) -> QFont:
    """`base` at `scale`, drawing emoji with the colour emoji font first where there is one."""
    font = theme.scaled(base, scale)
    family = emoji_font_family()
    if family:
        font.setFamilies([family, *base.families()])
    return font


class EmojiModel(QAbstractListModel):
    """A list of emoji: DisplayRole the emoji, ToolTipRole and NameRole its `:shortcode:`."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.items: list[Emoji] = []

    def set_items(self, items: Iterable[Emoji]) -> None:
        self.beginResetModel()
        self.items = list(items)
        self.endResetModel()

    def rowCount(self, parent: QModelIndex | QPersistentModelIndex = QModelIndex()) -> int:  # noqa: N802, B008
        return 0 if parent.isValid() else len(self.items)

    def data(self, index: QModelIndex | QPersistentModelIndex,
             role: int = Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self.items):
            return None
        item = self.items[index.row()]
        if role in (Qt.ItemDataRole.DisplayRole, CharRole):
            return item.char
        if role in (Qt.ItemDataRole.ToolTipRole, NameRole, Qt.ItemDataRole.AccessibleTextRole):
            return item.name
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return Qt.AlignmentFlag.AlignCenter
        return None


class EmojiDelegate(QStyledItemDelegate):
    """Draws a cell: its emoji centred and clipped to the cell (a sequence that the fonts draw
    as several glyphs would spill into its neighbours), on the hover or selection panel."""

    def __init__(self, view: QListView):
        super().__init__(view)
        self.view = view

    def sizeHint(self, option: QStyleOptionViewItem, index) -> QSize:  # noqa: N802
        return self.view.gridSize()

    def paint(self, painter: QPainter, option: QStyleOptionViewItem, index) -> None:
        self.initStyleOption(option, index)
        text, option.text = option.text, ""
        style = option.widget.style() if option.widget else QApplication.style()
        style.drawPrimitive(QStyle.PrimitiveElement.PE_PanelItemViewItem, option, painter,
                            option.widget)
        selected = bool(option.state & QStyle.StateFlag.State_Selected)
        painter.save()
        painter.setClipRect(option.rect)
        painter.setFont(option.font)
        painter.setPen(option.palette.color(
            QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text))
        painter.drawText(option.rect, Qt.AlignmentFlag.AlignCenter, text)
        painter.restore()


class EmojiGrid(QListView):
    """Uniform cells left to right, wrapping. `chosen` on a click or Enter; `hovered` names the
    cell under the mouse."""

    chosen = Signal(str)
    hovered = Signal(QModelIndex)

    def __init__(self, object_name: str, parent: QWidget | None = None):
        super().__init__(parent, objectName=object_name)
        self.setModel(EmojiModel(self))
        self.setFlow(QListView.Flow.LeftToRight)
        self.setWrapping(True)
        self.setResizeMode(QListView.ResizeMode.Adjust)
        self.setUniformItemSizes(True)
        self.setMovement(QListView.Movement.Static)
        self.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setMouseTracking(True)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setFont(emoji_font(self.font(), CELL_SCALE))
        side = QFontMetrics(self.font()).height() + 10
        self.setGridSize(QSize(side, side))
        self.setItemDelegate(EmojiDelegate(self))
        self.entered.connect(self.hovered)
        self.clicked.connect(lambda index: self.chosen.emit(index.data(CharRole)))

    def emoji_model(self) -> EmojiModel:
        return self.model()  # type: ignore[return-value]

    def cell(self) -> int:
        return self.gridSize().width()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter) and self.currentIndex().isValid():
            self.chosen.emit(self.currentIndex().data(CharRole))
            return
        super().keyPressEvent(event)


class EmojiPicker(QFrame):
    picked = Signal(str)  # the emoji chosen
    recentChanged = Signal(list)  # the recent picks, most recent first, after each pick

    def __init__(self, parent: QWidget | None = None, *, recent: Sequence[str] | None = None):
        super().__init__(parent, objectName="emojiPicker")
        self.setWindowFlags(Qt.WindowType.Popup)
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self._recent: list[str] = list(recent) if recent is not None else _session_recent
        self._on_pick: Callable[[str], None] | None = None
        self._group = emojis.GROUPS[0]
        self.colour_font = has_colour_emoji_font()

        self.search = QLineEdit(objectName="emojiSearch", clearButtonEnabled=True,
                                placeholderText="Search emoji by name")
        self.search.textChanged.connect(self._search)
        self.search.returnPressed.connect(self._pick_current)
        self.search.installEventFilter(self)

        self.groups = QListWidget(objectName="emojiGroups")
        for group in emojis.GROUPS:
            self.groups.addItem(emojis.GROUP_LABELS[group])
            self.groups.item(self.groups.count() - 1).setData(CharRole, group)
        self.groups.setFrameShape(QFrame.Shape.NoFrame)
        self.groups.setBackgroundRole(QPalette.ColorRole.Window)
        self.groups.setFixedWidth(max(self.groups.sizeHintForColumn(0) + 12, 96))
        self.groups.currentRowChanged.connect(self._group_row)

        self.recent_title = QLabel("Recent", objectName="emojiRecentTitle")
        self.recent_row = EmojiGrid("emojiRecent")
        self.recent_row.setWrapping(False)
        self.recent_row.setFixedHeight(self.recent_row.cell() + 2)
        self.recent_row.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.section = QLabel(objectName="emojiSection")
        self.grid = EmojiGrid("emojiGrid")
        self.grid.setMinimumWidth(self.grid.cell() * COLUMNS + 4
                                  + self.grid.verticalScrollBar().sizeHint().width())
        self.grid.setMinimumHeight(self.grid.cell() * 6)
        for title in (self.recent_title, self.section):
            title.setForegroundRole(QPalette.ColorRole.PlaceholderText)
            title.setFont(theme.scaled(title.font(), 0.9, bold=True))
        self.status = QLabel(objectName="emojiStatus")
        self.status.setTextFormat(Qt.TextFormat.PlainText)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status.setMinimumHeight(QFontMetrics(emoji_font(self.font(), 1.2)).height())
        for grid in (self.grid, self.recent_row):
            grid.chosen.connect(self.pick)
            grid.hovered.connect(self._show_name)
        self.grid.selectionModel().currentChanged.connect(lambda index, _: self._show_name(index))

        cells = QVBoxLayout()
        cells.setContentsMargins(0, 0, 0, 0)
        cells.addWidget(self.recent_title)
        cells.addWidget(self.recent_row)
        cells.addWidget(self.section)
        cells.addWidget(self.grid, 1)
        body = QHBoxLayout()
        body.setContentsMargins(0, 0, 0, 0)
        body.addWidget(self.groups)
        body.addLayout(cells, 1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 6)
        layout.addWidget(self.search)
        layout.addLayout(body, 1)
        layout.addWidget(self.status)
        self._show_recent()
        self._listed = False  # the first group is listed when the picker first shows

    # What the person sees -------------------------------------------------------------------

    def recent(self) -> list[str]:
        return list(self._recent)

    def set_recent(self, chars: Sequence[str]) -> None:
        """Recent picks to show (most recent first), e.g. loaded from preferences."""
        self._recent[:] = [c for c in dict.fromkeys(chars) if emojis.find(c)]
        self._recent[:] = self._recent[:emojis.RECENT_LIMIT]
        self._show_recent()

    def show_group(self, group: str) -> None:
        """List `group` (one of app.emojis.GROUPS) and forget the search."""
        self._listed = True
        self.groups.setCurrentRow(emojis.GROUPS.index(group))

    def group(self) -> str | None:
        """The group listed, None while the grid lists a search's matches."""
        return None if self.search.text().strip() else self._group

    def _group_row(self, row: int) -> None:
        if row < 0:
            return
        self._group = emojis.GROUPS[row]
        if self.search.text():
            self.search.blockSignals(True)
            self.search.clear()
            self.search.blockSignals(False)
        self._list(emojis.by_group()[self._group], emojis.GROUP_LABELS[self._group])

    def _search(self, text: str) -> None:
        if not text.strip():  # back to the group listed before the search
            row = emojis.GROUPS.index(self._group)
            if self.groups.currentRow() == row:
                self._group_row(row)
            else:
                self.groups.setCurrentRow(row)
            return
        self.groups.blockSignals(True)
        self.groups.clearSelection()
        self.groups.setCurrentRow(-1)
        self.groups.blockSignals(False)
        found = [emojis.find(char) for _, char in emojis.search(text, SEARCH_LIMIT)]
        items = [item for item in found if item is not None]
        self._list(items, "Search results" if items else "")
        if not items:
            self.status.setText(f"No emoji matches '{text.strip()}'")

    def _list(self, items: Sequence[Emoji], title: str) -> None:
        self.grid.emoji_model().set_items(items)
        self.section.setText(title)
        self._show_recent()
        if items:
            self.grid.setCurrentIndex(self.grid.model().index(0, 0))
        else:
            self._show_name(QModelIndex())
        self.grid.scrollToTop()

    def _show_recent(self) -> None:
        items = [item for item in map(emojis.find, self._recent) if item is not None]
        self.recent_row.emoji_model().set_items(items)
        shown = bool(items) and not self.search.text().strip()
        self.recent_title.setVisible(shown)
        self.recent_row.setVisible(shown)

    def _show_name(self, index: QModelIndex) -> None:
        if not index.isValid():
            self.status.setText("" if self.colour_font else NO_FONT_HINT)
            return
        name = index.data(NameRole)
        # Without a colour font the glyph may be a box: the name alone says what it is.
        self.status.setText(f"{index.data(CharRole)}  {name}" if self.colour_font else name)

    # Picking ----------------------------------------------------------------------------------

    def pick(self, char: str) -> None:
        """Choose `char`: it becomes the most recent pick, `picked` and the open's `on_pick`
        get it, and the picker closes."""
        if not char:
            return
        self._recent[:] = emojis.remember(self._recent, char)  # in place: the session's list
        on_pick, self._on_pick = self._on_pick, None
        self.hide()
        self._show_recent()
        self.recentChanged.emit(list(self._recent))
        self.picked.emit(char)
        if on_pick is not None:
            on_pick(char)

    def _pick_current(self) -> None:
        index = self.grid.currentIndex()
        if index.isValid():
            self.pick(index.data(CharRole))

    # Opening ----------------------------------------------------------------------------------

    def open_at(self, global_pos: QPoint, *,
                on_pick: Callable[[str], None] | None = None) -> None:
        """Open with its top left at `global_pos` (moved to fit the screen), the search empty
        and focused; `on_pick` gets this opening's pick, if any."""
        self._on_pick = on_pick
        self.search.clear()
        self.adjustSize()
        self.move(self._fitted(QRect(global_pos, self.sizeHint()), global_pos))
        self.show()
        self.raise_()
        self.activateWindow()
        self.search.setFocus()

    def open_beside(self, widget: QWidget, *,
                    on_pick: Callable[[str], None] | None = None) -> None:
        """Open below `widget`, or above it where the screen has no room below."""
        size = self.sizeHint()
        below = widget.mapToGlobal(QPoint(0, widget.height()))
        screen = self._screen_rect(below)
        if below.y() + size.height() > screen.bottom():
            below = widget.mapToGlobal(QPoint(0, -size.height()))
        self.open_at(below, on_pick=on_pick)

    def _screen_rect(self, at: QPoint) -> QRect:
        screen = QGuiApplication.screenAt(at) or QGuiApplication.primaryScreen()
        return screen.availableGeometry() if screen else QRect(at, self.sizeHint())

    def _fitted(self, rect: QRect, at: QPoint) -> QPoint:
        screen = self._screen_rect(at)
        x = max(screen.left(), min(rect.left(), screen.right() - rect.width()))
        y = max(screen.top(), min(rect.top(), screen.bottom() - rect.height()))
        return QPoint(x, y)

    def showEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        # The catalogue is read here, not at construction: a window that never opens the
        # picker never pays for it, and the first page comes sooner.
        if not self._listed:
            self._listed = True
            if self.groups.currentRow() < 0 and not self.search.text().strip():
                self.groups.setCurrentRow(emojis.GROUPS.index(self._group))
        super().showEvent(event)

    def hideEvent(self, event) -> None:  # noqa: N802 (Qt's name)
        self._on_pick = None
        super().hideEvent(event)

    def eventFilter(self, watched, event) -> bool:  # noqa: N802 (Qt's name)
        # Down (or Up) in the search field moves into the grid, as in every picker.
        if watched is self.search and isinstance(event, QKeyEvent) \
                and event.type() == QKeyEvent.Type.KeyPress \
                and event.key() in (Qt.Key.Key_Down, Qt.Key.Key_Up) \
                and self.grid.model().rowCount():
            self.grid.setFocus()
            if not self.grid.currentIndex().isValid():
                self.grid.setCurrentIndex(self.grid.model().index(0, 0))
            return True
        return super().eventFilter(watched, event)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 (Qt's name)
        if event.key() == Qt.Key.Key_Escape:
            self.hide()
            return
        super().keyPressEvent(event)


class EmojiButton(QToolButton):
    """Opens an EmojiPicker beside itself; the pick goes into `composer` at its cursor."""

    def __init__(self, composer: Composer, picker: EmojiPicker | None = None,
                 parent: QWidget | None = None):
        super().__init__(parent, objectName="emojiButton")
        self.composer = composer
        self._picker = picker
        # A smiling face where the font has one; the tooltip says what it does either way.
        self.setText("☺" if QFontMetrics(self.font()).inFontUcs4(0x263A) else ":)")
        self.setFont(theme.scaled(self.font(), 1.3))
        self.setToolTip("Insert an emoji")
        self.setAccessibleName("Insert an emoji")
        self.setAutoRaise(True)
        self.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the composer keeps the focus
        self.clicked.connect(self.open_picker)

    def picker(self) -> EmojiPicker:
        """The picker (made on the first use, so a window that never opens it pays nothing)."""
        if self._picker is None:
            self._picker = EmojiPicker(self)
        return self._picker

    def open_picker(self) -> None:
        self.picker().open_beside(self, on_pick=self._insert)

    def _insert(self, char: str) -> None:
        self.composer.insert_emoji(char)
