"""The message list over real Nodes, offscreen (pytest-qt): grouping, avatars and author
colours, day separators and the sticky day label, the empty state, names, pending marks, type
sizes, deleting, links, lazy loading, and the composer's nickname completion."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import date, datetime, timedelta
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QModelIndex, QPoint, QRect, Qt  # noqa: E402
from PySide6.QtGui import (  # noqa: E402
    QColor,
    QFontMetrics,
    QGuiApplication,
    QImage,
    QPalette,
)
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractItemView,
    QApplication,
    QLabel,
    QLineEdit,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import FakeClock, channels, join, node_channels, node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts, type_and_send  # noqa: E402
from ui import _rows, avatars  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.composer import Composer  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.message_overlays import EMPTY_HINT  # noqa: E402
from ui.message_view import MessageView  # noqa: E402
from ui.models import (  # noqa: E402
    PAGE,
    DayRole,
    HeaderRole,
    MessageListModel,
    NameRole,
    PendingRole,
    TimeRole,
)
from ui.row_geometry import AVATAR_X, BAR_WIDTH, BAR_X  # noqa: E402


def row_of(win: MainWindow, text: str) -> int:
    return texts(win).index(text)


def laid_out(view: MessageView) -> bool:
    """Every row has its place (batched layout finished)."""
    model = view.model()
    return model.rowCount() == 0 or view.visualRect(model.index(model.rowCount() - 1)).isValid()


def start_node(paths: Paths, peers=()) -> Node:
    return Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None,
                peers=list(peers)).start()


# Grouping and names ----------------------------------------------------------------------------

def test_a_burst_shows_one_header_and_unique_nicks_show_bare(qtbot, window, pair):
    node_a, node_b = pair
    for text in ("one", "two", "three"):
        node_post(node_a, "general", text)
    qtbot.waitUntil(lambda: texts(window)[-3:] == ["one", "two", "three"], timeout=WAIT_MS)
    node_post(node_b, "general", "bob here")
    qtbot.waitUntil(lambda: "bob here" in texts(window), timeout=WAIT_MS)
    model = window.messages
    rows = [row_of(window, t) for t in ("one", "two", "three", "bob here")]
    assert [model.index(r).data(HeaderRole) for r in rows] == [True, False, False, True]
    assert [model.display_name(r) for r in rows] == ["ada", "ada", "ada", "bob"]
    # What the view draws: the header row is taller than the rows it heads.
    view = window.message_view
    heights = [view.delegate.sizeHint(_option(view), model.index(r)).height() for r in rows]
    assert heights[0] > heights[1] == heights[2]
    assert model.is_mine(rows[0]) and not model.is_mine(rows[3])


def _option(view: MessageView):
    from PySide6.QtWidgets import QStyleOptionViewItem

    option = QStyleOptionViewItem()
    option.initFrom(view)
    return option


@pytest.fixture
def namesakes(tmp_path):
    """Two people both called "ada", on two computers of one workspace."""
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="ada")
    node_a = start_node(a)
    node_b = start_node(b, peers=[("127.0.0.1", node_a.port)])
    yield node_a, node_b
    node_b.stop()
    node_a.stop()


def test_two_people_with_the_same_nickname_get_key_suffixes(qtbot, namesakes):
    node_a, node_b = namesakes
    win = MainWindow(node_a)
    qtbot.addWidget(win)
    win.show()
    node_post(node_a, "general", "I am the first ada")
    node_post(node_b, "general", "and I am another ada")
    qtbot.waitUntil(lambda: {"I am the first ada", "and I am another ada"} <= set(texts(win)),
                    timeout=WAIT_MS)
    mine = win.messages.index(row_of(win, "I am the first ada")).data(NameRole)
    theirs = win.messages.index(row_of(win, "and I am another ada")).data(NameRole)
    assert mine == f"ada ·{node_a.key.hex()[:6]}"
    assert theirs == f"ada ·{node_b.key.hex()[:6]}"
    node_post(node_b, "general", "/me waves")
    qtbot.waitUntil(lambda: "/me waves" in texts(win), timeout=WAIT_MS)
    assert win.messages.index(row_of(win, "/me waves")).data() == \
        f"* ada ·{node_b.key.hex()[:6]} waves"
    win.close()


# Pending ---------------------------------------------------------------------------------------

def test_a_message_is_pending_until_a_peer_has_it(qtbot, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    node_a = start_node(a)  # alone: nobody to deliver to
    node_b = None
    try:
        win = MainWindow(node_a)
        qtbot.addWidget(win)
        win.show()
        type_and_send(qtbot, win, "sent while alone")
        qtbot.waitUntil(lambda: "sent while alone" in texts(win), timeout=WAIT_MS)
        model = win.messages
        row = row_of(win, "sent while alone")
        assert model.is_pending(row) and model.index(row).data(PendingRole)
        changes: list[list[int]] = []
        model.dataChanged.connect(lambda top, bottom, roles: changes.append(list(roles)))
        resets: list[bool] = []
        model.modelReset.connect(lambda: resets.append(True))
        node_b = start_node(b, peers=[("127.0.0.1", node_a.port)])
        qtbot.waitUntil(lambda: not model.is_pending(row_of(win, "sent while alone")),
                        timeout=WAIT_MS)
        assert not model.index(row_of(win, "sent while alone")).data(PendingRole)
        assert [PendingRole] in changes  # refreshed in place, not by a reset of the list
        win.close()
    finally:
        if node_b is not None:
            node_b.stop()
        node_a.stop()


# Deleting --------------------------------------------------------------------------------------

def menu_texts(menu) -> list[str]:
    return [action.text() for action in menu.actions() if not action.isSeparator()]


def shown(qtbot, win, nodes, mine: str, theirs: str):
    """My message and the peer's, both in the window; returns its view and model."""
    node_post(nodes[0], "general", mine)
    node_post(nodes[1], "general", theirs)
    qtbot.waitUntil(lambda: {mine, theirs} <= set(texts(win)), timeout=WAIT_MS)
    return win.message_view, win.messages


def test_context_menu_deletes_my_message_and_only_mine(qtbot, window, pair):
    node_a, node_b = pair
    view, model = shown(qtbot, window, pair, "mine, to delete", "bob's, to keep")
    qtbot.waitUntil(view.is_admin, timeout=WAIT_MS)  # ada created the workspace
    theirs = model.index(row_of(window, "bob's, to keep"))
    assert "Delete" in menu_texts(view.context_menu(theirs))  # an admin's menu
    view.set_admin(False)  # as a member who is not an admin
    assert "Delete" not in menu_texts(view.context_menu(theirs))
    menu = view.context_menu(model.index(row_of(window, "mine, to delete")))
    assert menu_texts(menu)[0] == "Copy text" and menu_texts(menu)[-1] == "Delete"
    copy = next(a for a in menu.actions() if a.text() == "Copy text")
    copy.trigger()
    assert QGuiApplication.clipboard().text() == "mine, to delete"
    delete = next(a for a in menu.actions() if a.text() == "Delete")
    delete.trigger()
    answer(qtbot, view, "Delete")
    qtbot.waitUntil(lambda: "mine, to delete" not in texts(window), timeout=WAIT_MS)
    stored = [m.text for m in result(node_a.facade.run(lambda ws: ws.read("general")))]
    assert "mine, to delete" not in stored and "bob's, to keep" in stored
    # The peer's replica drops it too.
    qtbot.waitUntil(lambda: "mine, to delete" not in [
        m.text for m in result(node_b.facade.run(lambda ws: ws.read("general")))], timeout=WAIT_MS)


def answer(qtbot, view, button: str) -> str:
    """Answer the open "Delete message" box with `button` ("Delete" or "Cancel"), as a click
    does (the box is window-modal, opened with `open`: nothing blocks); returns its question."""
    qtbot.waitUntil(lambda: (box := view.findChild(QMessageBox, "confirmDelete")) is not None
                    and box.isVisible(), timeout=WAIT_MS)
    box = view.findChild(QMessageBox, "confirmDelete")
    question = f"{box.text()} {box.informativeText()}"
    with qtbot.waitSignal(box.finished, timeout=WAIT_MS):
        next(b for b in box.buttons() if b.text().replace("&", "") == button).click()
    return question


def test_the_delete_key_deletes_a_selected_message_of_mine(qtbot, window, pair):
    view, model = shown(qtbot, window, pair, "delete me by key", "not yours")
    view.set_admin(False)  # as a member who is not an admin: another's message stays
    view.setCurrentIndex(model.index(row_of(window, "not yours")))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    assert view.findChild(QMessageBox, "confirmDelete") is None
    view.setCurrentIndex(model.index(row_of(window, "delete me by key")))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    answer(qtbot, view, "Delete")
    qtbot.waitUntil(lambda: "delete me by key" not in texts(window), timeout=WAIT_MS)
    assert "not yours" in texts(window)


def test_deleting_my_message_asks_first_and_cancel_keeps_it(qtbot, window, pair):
    node_a, node_b = pair
    view, model = shown(qtbot, window, pair, "think twice", "theirs")
    menu = view.context_menu(model.index(row_of(window, "think twice")))
    next(a for a in menu.actions() if a.text() == "Delete").trigger()
    question = answer(qtbot, view, "Cancel")
    assert question == ("Delete this message for everyone? This cannot be undone: it is "
                        "removed from every computer in the workspace.")
    qtbot.waitUntil(lambda: view.findChild(QMessageBox, "confirmDelete") is None,
                    timeout=WAIT_MS)  # closed and deleted: nothing was sent
    assert "think twice" in texts(window)
    assert "think twice" in [m.text for m in result(node_a.facade.run(lambda ws: ws.read("general")))]
    view.setCurrentIndex(model.index(row_of(window, "think twice")))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    answer(qtbot, view, "Delete")
    qtbot.waitUntil(lambda: "think twice" not in texts(window), timeout=WAIT_MS)
    qtbot.waitUntil(lambda: "think twice" not in [
        m.text for m in result(node_b.facade.run(lambda ws: ws.read("general")))], timeout=WAIT_MS)


# Links -----------------------------------------------------------------------------------------


def test_clicking_a_link_opens_it(qtbot, window, pair, url_catcher):
    text = "😀 the notes are at https://example.org/notes?x=1, and www.hearth.chat too"
    node_post(pair[1], "general", text)
    qtbot.waitUntil(lambda: text in texts(window), timeout=WAIT_MS)
    view, model = window.message_view, window.messages
    index = model.index(row_of(window, text))
    qtbot.waitUntil(lambda: len(view.link_rects(index)) == 2, timeout=WAIT_MS)
    (first, url), (second, www) = view.link_rects(index)
    assert (url, www) == ("https://example.org/notes?x=1", "http://www.hearth.chat")
    with qtbot.waitSignal(view.linkActivated, timeout=WAIT_MS):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=first.center())
    assert url_catcher.urls == ["https://example.org/notes?x=1"]
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=second.center())
    assert url_catcher.urls[-1] == "http://www.hearth.chat"
    # Plain text is not a link.
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=QPoint(first.left() - 30, first.center().y()))
    assert len(url_catcher.urls) == 2
    assert view.link_at(first.center()) == url and view.link_at(QPoint(2, 2)) is None
    menu = view.context_menu(index, first.center())
    assert menu_texts(menu)[:3] == ["Open link", "Copy link", "Copy text"]


# Drawing ---------------------------------------------------------------------------------------

def test_rows_are_drawn_in_the_palette_colours(qtbot, window, ada_node):
    node_post(ada_node, "general", "drawn with the palette")
    qtbot.waitUntil(lambda: "drawn with the palette" in texts(window), timeout=WAIT_MS)
    view = window.message_view
    palette = QPalette(view.palette())
    dark = QColor(20, 22, 30)
    palette.setColor(QPalette.ColorRole.Base, dark)
    palette.setColor(QPalette.ColorRole.Text, QColor(230, 230, 230))
    palette.setColor(QPalette.ColorRole.Highlight, QColor(255, 0, 255))
    view.setPalette(palette)
    qtbot.waitUntil(lambda: laid_out(view), timeout=WAIT_MS)
    rect = view.visualRect(window.messages.index(row_of(window, "drawn with the palette")))
    image = view.viewport().grab().toImage()
    bar = image.pixelColor(rect.left() + BAR_X + BAR_WIDTH // 2, rect.bottom() - 2)
    assert (bar.red(), bar.green(), bar.blue()) == (255, 0, 255)  # my accent bar: Highlight
    background = image.pixelColor(rect.right() - 3, rect.bottom())
    assert background.lightness() < 60  # the dark Base, not a fixed light colour


# Lazy loading ----------------------------------------------------------------------------------

@pytest.fixture
def long_channel(qtbot, tmp_path):
    """A view (no window) on a channel with three pages and a bit."""
    a = Paths.resolve(tmp_path / "a", "default")
    Workspace.init(a, "ada").close()
    node = start_node(a)

    posted = [node.facade.run(lambda ws, text=f"message {i}" + " with more words" * (i % 4):
                              ws.post("general", text).id)
              for i in range(3 * PAGE + 20)]
    result(posted[-1])  # the Node's thread runs them in order
    bridge = NodeBridge(node)
    model = MessageListModel(bridge)
    view = MessageView(model)
    view.resize(500, 400)
    qtbot.addWidget(view)
    view.show()
    model.show_channel("general")
    yield view, model
    view.close()
    bridge.close()
    node.stop()


def test_older_messages_load_at_the_top_and_the_view_keeps_its_place(qtbot, long_channel):
    view, model = long_channel
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: model.rowCount() == PAGE and laid_out(view)
                    and bar.value() == bar.maximum() > 0, timeout=WAIT_MS)
    assert model.messages[-1].text.startswith(f"message {3 * PAGE + 19}")
    # Sitting at the newest message does not pull in the history.
    assert not model._loading and model.rowCount() == PAGE
    bar.triggerAction(bar.SliderAction.SliderToMinimum)  # the person scrolls to the top
    qtbot.waitUntil(lambda: model.rowCount() >= 2 * PAGE and not model._loading,
                    timeout=WAIT_MS)
    # The message that was at the top is still in view: the page went in above it.
    first_before = model.row_of(next(m.id for m in model.messages
                                     if m.text.startswith(f"message {2 * PAGE + 20}")))
    qtbot.waitUntil(lambda: laid_out(view), timeout=WAIT_MS)
    assert view.visualRect(model.index(first_before)).intersects(view.viewport().rect())
    assert bar.value() > 0

    def scrolled_to_the_start() -> bool:  # each look: the person scrolls to the top again
        bar.triggerAction(bar.SliderAction.SliderToMinimum)
        return model.rowCount() == 3 * PAGE + 20 and not model.canFetchMore()

    qtbot.waitUntil(scrolled_to_the_start, timeout=WAIT_MS)
    assert model.messages[0].text == "message 0"


def test_a_new_message_keeps_a_reader_in_the_history_and_follows_at_the_bottom(
        qtbot, long_channel):
    view, model = long_channel
    bar = view.verticalScrollBar()
    qtbot.waitUntil(lambda: model.rowCount() == PAGE and laid_out(view)
                    and bar.value() == bar.maximum() > 0, timeout=WAIT_MS)
    facade = model.bridge.facade
    result(facade.run(lambda ws: ws.post("general", "new at the bottom").id))
    model.reload()
    qtbot.waitUntil(lambda: model.messages[-1].text == "new at the bottom" and laid_out(view)
                    and bar.value() == bar.maximum(), timeout=WAIT_MS)
    bar.triggerAction(bar.SliderAction.SliderPageStepSub)  # read a little higher up
    top = view.indexAt(QPoint(20, 0))
    reading, offset = model.messages[top.row()].id, view.visualRect(top).top()
    result(facade.run(lambda ws: ws.post("general", "another one").id))
    model.reload()
    qtbot.waitUntil(lambda: model.messages[-1].text == "another one" and laid_out(view),
                    timeout=WAIT_MS)
    row = model.row_of(reading)
    assert view.visualRect(model.index(row)).top() == offset
    assert bar.value() < bar.maximum()


# Avatars and author colours --------------------------------------------------------------------

def rgb(color: QColor) -> tuple[int, int, int]:
    return color.red(), color.green(), color.blue()


def near(a: tuple[int, int, int], b: tuple[int, int, int], tolerance: int = 8) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b, strict=True))


def ink(image: QImage, rect: QRect, base: QColor) -> int:
    """How many pixels of `rect` are drawn on (far from the background colour `base`)."""
    count = 0
    for y in range(rect.top(), rect.bottom() + 1):
        for x in range(rect.left(), rect.right() + 1):
            if sum(abs(a - b) for a, b in zip(rgb(image.pixelColor(x, y)), rgb(base),
                                              strict=True)) > 90:
                count += 1
    return count


def strongest(image: QImage, rect: QRect, base: tuple[int, int, int]) -> tuple[int, int, int]:
    """The colour in `rect` that stands out most from `base`: a glyph's fully covered pixel."""
    pixels = (rgb(image.pixelColor(x, y)) for y in range(rect.top(), rect.bottom() + 1)
              for x in range(rect.left(), rect.right() + 1))
    return max(pixels, key=lambda pixel: _rows.contrast(pixel, base))


def namesake_rows(qtbot, namesakes):
    """A window on two "ada"s' messages: mine (a burst of two) and the other ada's."""
    node_a, node_b = namesakes
    win = MainWindow(node_a)
    qtbot.addWidget(win)
    win.resize(900, 600)
    win.show()
    node_post(node_a, "general", "I am the first ada")
    node_post(node_a, "general", "and this continues my burst")
    # The other ada answers after reading the burst, so her message links it and sorts after
    # it (two unrelated posts in one millisecond would be ordered by their random ids).
    qtbot.waitUntil(lambda: "and this continues my burst" in [
        m.text for m in result(node_b.facade.run(lambda ws: ws.read("general")))], timeout=WAIT_MS)
    node_post(node_b, "general", "and I am another ada")
    wanted = ["I am the first ada", "and this continues my burst", "and I am another ada"]
    qtbot.waitUntil(lambda: set(wanted) <= set(texts(win)) and laid_out(win.message_view),
                    timeout=WAIT_MS)
    return win, [win.messages.index(row_of(win, text)) for text in wanted]


def test_header_rows_show_their_authors_avatar_and_namesakes_look_different(qtbot, namesakes):
    win, (first, second, theirs) = namesake_rows(qtbot, namesakes)
    view, delegate = win.message_view, win.message_view.delegate
    assert [index.data(HeaderRole) for index in (first, second, theirs)] == [True, False, True]
    mine, burst, other = (delegate.parts(index) for index in (first, second, theirs))
    assert mine.avatar is not None and other.avatar is not None and burst.avatar is None
    # One text column: continuation rows are indented to where the headed text starts.
    assert mine.body.left() == burst.body.left() == other.body.left() > mine.avatar.right()
    image = view.viewport().grab().toImage()
    assert image.copy(mine.avatar) != image.copy(other.avatar)
    for parts, node in ((mine, namesakes[0]), (other, namesakes[1])):
        edge = image.pixelColor(parts.avatar.left() + 2, parts.avatar.center().y())
        assert rgb(edge) == _rows.avatar_rgb(node.key)  # the key's colour, not the nickname's
    base = view.palette().color(QPalette.ColorRole.Base)
    gutter = QRect(burst.row.left() + mine.avatar.left() - mine.row.left(), burst.body.top(),
                   delegate.avatar_size, burst.body.height())
    assert ink(image, gutter, base) == 0  # a continuation row: no avatar, no time until hovered
    win.close()


def test_a_continuation_row_shows_its_time_in_the_gutter_on_hover(qtbot, namesakes):
    win, (first, second, _) = namesake_rows(qtbot, namesakes)
    view, delegate = win.message_view, win.message_view.delegate
    burst = delegate.parts(second)
    assert burst.gutter is not None and delegate.parts(first).gutter is None
    assert delegate.parts(first).avatar.left() <= burst.gutter.left()
    assert burst.gutter.right() < burst.body.left()
    base = view.palette().color(QPalette.ColorRole.Base)
    assert ink(view.viewport().grab().toImage(), burst.gutter, base) == 0
    qtbot.mouseMove(view.viewport(), burst.body.center())
    qtbot.waitUntil(lambda: ink(view.viewport().grab().toImage(), burst.gutter, base) > 0,
                    timeout=WAIT_MS)
    assert second.data(TimeRole) == _rows.clock(second.data(Qt.ItemDataRole.UserRole).ts)
    win.close()


def test_names_are_in_their_authors_colour_and_read_on_light_and_dark(qtbot, namesakes):
    win, (first, _, theirs) = namesake_rows(qtbot, namesakes)
    view, delegate = win.message_view, win.message_view.delegate
    shown: dict[str, list[tuple[int, int, int]]] = {}
    for scheme, base, text in (("light", QColor("#ffffff"), QColor("#1d1c1d")),
                               ("dark", QColor("#18191c"), QColor("#e6e6ea"))):
        palette = QPalette(view.palette())
        palette.setColor(QPalette.ColorRole.Base, base)
        palette.setColor(QPalette.ColorRole.Text, text)
        view.setPalette(palette)
        qtbot.waitUntil(lambda: laid_out(view), timeout=WAIT_MS)
        image = view.viewport().grab().toImage()
        for index, node in ((first, namesakes[0]), (theirs, namesakes[1])):
            parts = delegate.parts(index)
            drawn = strongest(image, parts.name, rgb(base))
            assert near(drawn, _rows.name_rgb(node.key, rgb(base)))
            assert _rows.contrast(drawn, rgb(base)) >= 4.4  # 4.5, give or take a rounding
            shown.setdefault(scheme, []).append(drawn)
    assert shown["light"][0] != shown["light"][1]  # two "ada"s, two colours
    for light, dark in zip(shown["light"], shown["dark"], strict=True):
        assert sum(light) < sum(dark)  # the same hue, darker on light and lighter on dark
    win.close()


# Days ------------------------------------------------------------------------------------------

TODAY = date(2024, 3, 5)  # a Tuesday


def at(days: int, hour: int, minute: int = 0) -> datetime:
    return datetime(TODAY.year, TODAY.month, TODAY.day, hour, minute) + timedelta(days=days)


def lone_node(tmp_path, posts: list[tuple[datetime, str]], channel: str = "history") -> Node:
    """Ada's computer, alone, with `posts` written at their (local) times, oldest first."""
    paths = Paths.resolve(tmp_path / "lone", "default")
    Workspace.init(paths, "ada").close()
    clock = FakeClock()
    with Workspace.open(paths, clock=clock) as ws:
        channels(ws, channel)
        for when, text in posts:
            clock.now = when.timestamp()
            ws.post(channel, text)
    return start_node(paths)


@pytest.fixture
def views(qtbot):
    """Makes a message view (no window) on a Node's channel; closes them at the end."""
    made = []

    def make(node: Node, channel: str, size: tuple[int, int] = (520, 420),
             today: date | None = None) -> tuple[MessageView, MessageListModel]:
        bridge = NodeBridge(node)
        model = MessageListModel(bridge)
        model.set_today(today)
        view = MessageView(model)
        view.resize(*size)
        qtbot.addWidget(view)
        view.show()
        model.show_channel(channel)
        made.append((view, bridge))
        return view, model

    yield make
    for view, bridge in made:
        view.close()
        bridge.close()


def column(model: MessageListModel, role: int) -> list:
    return [model.index(row).data(role) for row in range(model.rowCount())]


HISTORY = [(at(-2, 12, 0), "two days ago"), (at(-2, 12, 1), "in the same burst"),
           (at(-1, 20, 25), "last night"), (at(0, 9, 0), "this morning"),
           (at(0, 9, 2), "still this morning")]


def test_each_day_starts_with_a_separator_and_headers_show_only_the_clock(qtbot, views,
                                                                          tmp_path):
    node = lone_node(tmp_path, HISTORY)
    try:
        view, model = views(node, "history", today=TODAY)
        qtbot.waitUntil(lambda: model.rowCount() == len(HISTORY) and laid_out(view),
                        timeout=WAIT_MS)
        assert column(model, DayRole) == ["Sun 3 Mar", None, "Yesterday", "Today", None]
        assert column(model, HeaderRole) == [True, False, True, True, False]
        assert column(model, TimeRole)[2] == "20:25"
        assert model.index(2).data().startswith("ada  Yesterday 20:25")  # read aloud
        delegate = view.delegate
        parts = [delegate.parts(model.index(row)) for row in range(model.rowCount())]
        assert [p.day is not None for p in parts] == [True, False, True, True, False]
        assert parts[2].time.width() == QFontMetrics(delegate.time_font).horizontalAdvance(
            "20:25")  # the header draws "20:25", not "Yesterday 20:25"
        image = view.viewport().grab().toImage()
        base = view.palette().color(QPalette.ColorRole.Base)
        for p in parts:
            if p.day is not None:
                assert p.row.contains(p.day) and p.day.bottom() < p.avatar.top()
                assert ink(image, p.day, base) > 0  # the line and its label are drawn
        changes: list[list[int]] = []
        model.dataChanged.connect(lambda top, bottom, roles: changes.append(list(roles)))
        resets: list[bool] = []
        model.modelReset.connect(lambda: resets.append(True))
        model.set_today(TODAY + timedelta(days=1))  # midnight
        assert column(model, DayRole) == ["Sun 3 Mar", None, "Mon 4 Mar", "Yesterday", None]
        assert any(DayRole in roles for roles in changes) and not resets
        # The clock's own midnight is armed, and relabels the rows when it comes.
        assert model.midnight.isActive()
        changes.clear()
        model.midnight.timeout.emit()
        assert any(DayRole in roles for roles in changes) and model.midnight.isActive()
    finally:
        node.stop()


def test_the_day_label_sticks_at_the_top_while_its_separator_is_scrolled_away(
        qtbot, views, tmp_path):
    posts = [(at(day, 8) + timedelta(minutes=10 * i), f"day {day} message {i}")
             for day in (-2, -1, 0) for i in range(20)]
    node = lone_node(tmp_path, posts)
    try:
        view, model = views(node, "history", size=(520, 300), today=TODAY)
        bar = view.verticalScrollBar()
        qtbot.waitUntil(lambda: model.rowCount() == 60 and laid_out(view)
                        and bar.value() == bar.maximum() > 0, timeout=WAIT_MS)
        sticky = view.findChild(QLabel, "dayHeader")
        assert sticky is not None and sticky.parent() is view
        qtbot.waitUntil(lambda: shows(sticky), timeout=WAIT_MS)  # mid-"Today", at the bottom
        assert sticky.text() == "Today"
        area = view.viewport().geometry()  # the label's band is just above the rows
        assert sticky.geometry().bottom() == area.top() - 1 and sticky.width() == area.width()
        assert abs(sticky.pill.center().x() + sticky.x() - area.center().x()) <= 1

        def show_at_top(row: int) -> None:
            view.scrollTo(model.index(row), QAbstractItemView.ScrollHint.PositionAtTop)
            qtbot.waitUntil(lambda: view.visualRect(model.index(row)).top() == 0,
                            timeout=WAIT_MS)

        show_at_top(40)  # the first of today, its own separator in sight
        assert model.index(40).data(DayRole) == "Today" and not shows(sticky)
        bar.setValue(bar.value() + view.delegate.day_height // 2)  # half of it still shows:
        assert not shows(sticky)  # never two "Today" pills, one peeking under the other
        bar.setValue(bar.value() + view.delegate.day_height)  # its separator scrolled off
        assert shows(sticky) and sticky.text() == "Today"
        show_at_top(25)
        assert shows(sticky) and sticky.text() == "Yesterday"
        show_at_top(5)
        assert shows(sticky) and sticky.text() == "Sun 3 Mar"
        model.set_today(TODAY + timedelta(days=1))  # midnight: the sticky label moves on too
        assert sticky.text() == "Sun 3 Mar"
        show_at_top(45)
        assert sticky.text() == "Yesterday"
        show_at_top(0)
        assert not shows(sticky)
    finally:
        node.stop()


def shows(sticky) -> bool:
    """Whether the sticky day label is drawn (its band is always there, above the rows)."""
    return sticky.isVisible() and bool(sticky.text()) and not sticky.pill.isEmpty()


def test_the_sticky_day_label_never_covers_a_rows_text(qtbot, views, tmp_path):
    posts = [(at(day, 8) + timedelta(minutes=10 * i), f"day {day} message {i} " + "words " * 12)
             for day in (-1, 0) for i in range(15)]
    node = lone_node(tmp_path, posts)
    try:
        view, model = views(node, "history", size=(520, 300), today=TODAY)
        bar = view.verticalScrollBar()
        qtbot.waitUntil(lambda: model.rowCount() == 30 and laid_out(view)
                        and bar.value() == bar.maximum() > 0, timeout=WAIT_MS)
        sticky = view.findChild(QLabel, "dayHeader")
        viewport = view.viewport()
        base = view.palette().color(QPalette.ColorRole.Base)
        checked = 0
        # Every scroll position from yesterday's middle into today's rows, a few pixels at a
        # time: rows' text slides under the top edge at every offset.
        for value in range(bar.value() // 3, bar.maximum(), 7):
            bar.setValue(value)
            if not shows(sticky):
                continue
            pill = sticky.pill.translated(sticky.pos())  # in the view's coordinates
            image = view.grab().toImage()
            assert ink(image, pill.adjusted(2, 2, -2, -2), base) > 0  # the label is drawn
            top, bottom = view.indexAt(QPoint(AVATAR_X, 0)), view.indexAt(
                QPoint(AVATAR_X, viewport.height() - 1))
            for row in range(top.row(), (bottom.row() if bottom.isValid() else top.row()) + 1):
                for line in view.delegate.line_rects(model.index(row)):
                    shown = line.intersected(viewport.rect())  # what of it is on screen
                    if not shown.isEmpty():
                        assert not shown.translated(viewport.pos()).intersects(pill), (value, row)
            checked += 1
        assert checked > 10  # the label showed over many positions
    finally:
        node.stop()


# The empty state -------------------------------------------------------------------------------

def test_an_empty_channel_says_so_once_its_first_read_is_back(qtbot, window, pair):
    view = window.message_view
    empty = view.findChild(QWidget, "emptyState")
    assert empty is not None
    qtbot.waitUntil(lambda: window.messages.loaded, timeout=WAIT_MS)
    window.show_channel("quiet")
    assert window.messages.channel == "quiet"
    assert not empty.isVisible()  # still loading: nothing to say yet
    qtbot.waitUntil(empty.isVisible, timeout=WAIT_MS)
    title = empty.findChild(QLabel, "emptyTitle")
    hint = empty.findChild(QLabel, "emptyHint")
    assert title.text() == "This is the start of #quiet"
    assert hint.text() == EMPTY_HINT == ("Write the first message below. People you invite "
                                         "will see everything posted here.")
    assert title.isVisible() and hint.isVisible()
    assert title.font().pointSizeF() > hint.font().pointSizeF()
    area = view.viewport().geometry()
    centre = title.mapTo(view, title.rect().center())
    assert area.contains(centre) and abs(centre.x() - area.center().x()) <= 2
    assert abs(centre.y() - area.center().y()) < area.height() // 4
    node_channels(pair[1], "quiet")
    node_post(pair[1], "quiet", "the first words")
    qtbot.waitUntil(lambda: "the first words" in texts(window), timeout=WAIT_MS)
    assert not empty.isVisible()


# The pending mark ------------------------------------------------------------------------------

def test_the_sending_mark_sits_after_the_text_or_below_it_and_only_while_pending(
        qtbot, views, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    join(a, b, nick="bob")
    node_a = start_node(a)  # alone: nobody to deliver to
    node_b = None
    try:
        view, model = views(node_a, "general")
        delegate = view.delegate
        qtbot.waitUntil(lambda: model.loaded and laid_out(view), timeout=WAIT_MS)
        metrics = QFontMetrics(delegate.body_font)
        width = delegate.text_width()
        per_line = max(n for n in range(1, 400) if metrics.horizontalAdvance("m" * n) <= width)
        full = "m" * (2 * per_line)  # two lines, the last one filled to the edge
        facade = node_a.facade
        ids = [result(facade.run(lambda ws: ws.post("general", "short one").id)), result(facade.run(lambda ws: ws.post("general", full).id))]
        model.reload()
        qtbot.waitUntil(lambda: [m.text for m in model.messages] == ["short one", full]
                        and laid_out(view), timeout=WAIT_MS)
        short, long = model.index(0), model.index(1)
        assert set(ids) <= facade.pending()
        assert short.data(PendingRole) and long.data(PendingRole)
        assert "sending…" in short.data()  # read aloud too

        inline = delegate.parts(short)
        lines = delegate.line_rects(short)
        assert inline.mark is not None and len(lines) == 1
        assert inline.mark.left() > lines[-1].right()  # right after the text, on its line
        assert lines[-1].top() <= inline.mark.top() and inline.mark.bottom() <= lines[-1].bottom()
        assert inline.row.contains(inline.mark)

        below = delegate.parts(long)
        lines = delegate.line_rects(long)
        assert len(lines) == 2 and lines[-1].width() > width - metrics.horizontalAdvance("m")
        assert below.mark.top() > lines[-1].bottom()  # no room on the line: below it
        assert below.mark.left() == below.body.left()
        assert below.row.contains(below.mark)
        pending_height = view.visualRect(long).height()
        for parts in (inline, below):
            assert not any(parts.mark.intersects(line) for line in delegate.line_rects(
                short if parts is inline else long))
        base = view.palette().color(QPalette.ColorRole.Base)
        image = view.viewport().grab().toImage()
        marks = [inline.mark, below.mark]
        assert all(ink(image, mark, base) > 0 for mark in marks)

        node_b = start_node(b, peers=[("127.0.0.1", node_a.port)])  # delivered
        qtbot.waitUntil(lambda: not set(ids) & facade.pending() and laid_out(view)
                        and view.visualRect(long).height() < pending_height, timeout=WAIT_MS)
        assert not short.data(PendingRole) and not long.data(PendingRole)
        assert delegate.parts(short).mark is None and delegate.parts(long).mark is None
        assert view.visualRect(long).height() == \
            pending_height - QFontMetrics(delegate.time_font).height()
        image = view.viewport().grab().toImage()
        assert ink(image, inline.mark, base) == 0
    finally:
        if node_b is not None:
            node_b.stop()
        node_a.stop()


# Type and fit ----------------------------------------------------------------------------------

def test_type_reads_at_the_applications_size(qtbot, window):
    delegate = window.message_view.delegate
    body = delegate.body_font.pointSizeF()
    assert body >= QApplication.font().pointSizeF() > 0  # never smaller than the default
    assert delegate.name_font.bold() and delegate.name_font.pointSizeF() == body
    assert 0.85 * body <= delegate.time_font.pointSizeF() < body
    assert 0.85 * body <= delegate.day_font.pointSizeF()
    view = window.message_view
    tiny = view.font()
    tiny.setPointSizeF(QApplication.font().pointSizeF() * 0.7)
    view.setFont(tiny)  # a smaller font set on the list still reads at the default size
    assert delegate.body_font.pointSizeF() == QApplication.font().pointSizeF()
    assert 0.85 * delegate.body_font.pointSizeF() <= delegate.time_font.pointSizeF()


FIT_POSTS = [(at(-1, 22, 0), "yesterday's last word"),
             (at(0, 9, 0), "a first message of the day"),
             (at(0, 9, 1), "a continuation, long enough to wrap over a few lines of the view: "
                           "the quick brown fox jumps over the lazy dog, twice, and then "
                           "https://example.org/a/rather/long/link/that/wraps/too"),
             (at(0, 9, 2), "/me waves"),
             (at(0, 9, 3), "after the wave")]


@pytest.mark.parametrize("points", [None, 15.0])
def test_row_parts_fit_inside_their_rows_and_never_overlap(qtbot, views, tmp_path, points):
    """Also run at QT_SCALE_FACTOR=2 (test_rows_fit_at_scale_factor_2)."""
    node = lone_node(tmp_path, FIT_POSTS)  # alone: every message pending, marks everywhere
    try:
        view, model = views(node, "history", size=(420, 700), today=TODAY)
        if points:
            font = view.font()
            font.setPointSizeF(points)
            view.setFont(font)
        qtbot.waitUntil(lambda: model.rowCount() == len(FIT_POSTS) and laid_out(view),
                        timeout=WAIT_MS)
        delegate = view.delegate
        assert delegate.body_font.pointSizeF() == view.font().pointSizeF()
        name_height = QFontMetrics(delegate.name_font).height()
        line_height = QFontMetrics(delegate.body_font).height()
        for row in range(model.rowCount()):
            index = model.index(row)
            parts = delegate.parts(index)
            lines = delegate.line_rects(index)
            assert index.data(PendingRole) and parts.mark is not None
            shown = [r for r in (parts.day, parts.avatar, parts.name, parts.time, parts.body,
                                 parts.mark, parts.gutter) if r is not None]
            assert all(parts.row.contains(r) for r in shown), row
            assert parts.body.height() >= len(lines) * line_height * 0.99
            assert all(parts.body.contains(line) for line in lines)
            texts_ = [r for r in (parts.avatar, parts.name, parts.time, parts.gutter) if r]
            for i, first in enumerate(texts_ + [parts.mark]):
                for second in (texts_ + [parts.mark])[i + 1:]:
                    assert not first.intersects(second), row
            assert not any(parts.mark.intersects(line) for line in lines), row
            for piece in texts_:
                assert not any(piece.intersects(line) for line in lines), row
            if parts.day is not None:
                assert all(parts.day.bottom() < r.top() for r in shown if r is not parts.day)
            if index.data(HeaderRole):
                assert parts.name.height() >= name_height
                assert parts.avatar.bottom() <= parts.row.bottom()
                assert parts.name.bottom() < parts.body.top()
        if os.environ.get("QT_SCALE_FACTOR") == "2":
            ratio = view.devicePixelRatioF()
            assert ratio == 2.0
            grabbed = view.viewport().grab()
            assert grabbed.devicePixelRatio() == 2.0
            image = grabbed.toImage()
            first = delegate.parts(model.index(0)).avatar
            inner = first.adjusted(first.width() // 4, first.height() // 4,
                                   -first.width() // 4, -first.height() // 4)
            device = QRect(inner.left() * 2, inner.top() * 2, inner.width() * 2,
                           inner.height() * 2)
            drawn = avatars.avatar(node.key, delegate.avatar_size, 2.0).toImage()
            at_two = drawn.copy(QRect(device.topLeft() - first.topLeft() * 2, device.size()))
            assert image.copy(device).convertToFormat(QImage.Format.Format_RGB32) == \
                at_two.convertToFormat(QImage.Format.Format_RGB32)  # every device pixel
    finally:
        node.stop()


def test_rows_fit_at_scale_factor_2():
    """The fit test again in a process whose Qt scales by 2 (QT_SCALE_FACTOR, like a HiDPI
    screen): sizes come from font metrics, so nothing is cut or overlaps, avatars are sharp."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, QT_SCALE_FACTOR="2", QT_QPA_PLATFORM="offscreen")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         f"{Path(__file__).relative_to(root)}::"
         "test_row_parts_fit_inside_their_rows_and_never_overlap"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "2 passed" in done.stdout


# Composer --------------------------------------------------------------------------------------

@pytest.fixture
def composer(qtbot):
    holder = QWidget()
    column = QVBoxLayout(holder)
    box = Composer()
    after = QLineEdit(objectName="after")
    column.addWidget(box)
    column.addWidget(after)
    qtbot.addWidget(holder)
    holder.show()
    qtbot.waitExposed(holder)
    box.setFocus()
    box.set_nicknames(["ada", "Adam", "bob", "ada"])
    yield box  # `holder` lives (and owns the composer) until the test ends
    holder.close()


def test_tab_completes_nicknames_and_cycles(qtbot, composer):
    qtbot.keyClicks(composer, "ad")
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "ada: "
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "Adam: "
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "ada: "
    qtbot.keyClicks(composer, "look, B")
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "ada: look, bob "
    assert composer.textCursor().position() == len("ada: look, bob ")
    assert composer.nicknames() == ["ada", "Adam", "bob"]


def test_tab_with_no_match_does_nothing(qtbot, composer):
    qtbot.keyClicks(composer, "hi zed")
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "hi zed"
    assert composer.hasFocus()
    composer.clear()
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "" and composer.hasFocus()


def test_completion_counts_positions_past_emoji(qtbot, composer):
    composer.insertPlainText("😀😀 thanks b")  # QTest cannot type surrogate pairs
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "😀😀 thanks bob "
    cursor = composer.textCursor()
    assert cursor.position() == len("😀😀 thanks bob ".encode("utf-16-le")) // 2


def test_enter_sends_and_up_brings_the_last_message_back(qtbot, composer):
    sent: list[str] = []
    composer.submitted.connect(sent.append)
    qtbot.keyClicks(composer, "first")
    qtbot.keyClick(composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    qtbot.keyClicks(composer, "second line")
    qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert sent == ["first\nsecond line"] and composer.toPlainText() == ""
    qtbot.keyClick(composer, Qt.Key.Key_Up)
    assert composer.toPlainText() == "first\nsecond line"
    qtbot.keyClick(composer, Qt.Key.Key_Up)  # not empty now: Up moves the cursor
    assert composer.toPlainText() == "first\nsecond line"


def test_the_view_needs_no_index_for_an_empty_model(qtbot, window):
    view = window.message_view
    assert view.link_at(QPoint(5, 5)) is None
    assert view.link_rects(QModelIndex()) == []
