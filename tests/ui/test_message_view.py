"""The message list over real Nodes, offscreen (pytest-qt): grouping, avatars and author
colours, day separators and the sticky day label, the empty state, names, pending marks, type
sizes, deleting, links, lazy loading, and the composer's nickname completion."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, QRect, Qt  # noqa: E402
from PySide6.QtGui import (  # noqa: E402
    QColor,
    QGuiApplication,
    QImage,
    QPalette,
)
from PySide6.QtWidgets import (  # noqa: E402
    QMessageBox,
)

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import join, node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts, type_and_send  # noqa: E402
from ui import _rows  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.message_view import MessageView  # noqa: E402
from ui.models import (  # noqa: E402
    PAGE,
    HeaderRole,
    MessageListModel,
    NameRole,
    PendingRole,
    TimeRole,
)
from ui.row_geometry import BAR_WIDTH, BAR_X  # noqa: E402


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
