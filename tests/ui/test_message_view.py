"""The message list over real Nodes, offscreen (pytest-qt): grouping, names, pending marks,
deleting, links, lazy loading, and the composer's nickname completion."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QModelIndex, QObject, QPoint, Qt, QUrl, Slot  # noqa: E402
from PySide6.QtGui import QColor, QDesktopServices, QGuiApplication, QPalette  # noqa: E402
from PySide6.QtWidgets import QLineEdit, QVBoxLayout, QWidget  # noqa: E402

from app import sharing  # noqa: E402
from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.ui.test_window import (  # noqa: E402, F401
    WAIT_MS,
    pair,
    result,
    texts,
    type_and_send,
    window,
)
from ui.bridge import NodeBridge  # noqa: E402
from ui.composer import Composer  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.message_view import BAR_WIDTH, BAR_X, MessageView  # noqa: E402
from ui.models import PAGE, HeaderRole, MessageListModel, NameRole, PendingRole  # noqa: E402


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

def test_a_burst_shows_one_header_and_unique_nicks_show_bare(qtbot, window, pair):  # noqa: F811
    node_a, node_b = pair
    for text in ("one", "two", "three"):
        node_a.post("general", text)
    qtbot.waitUntil(lambda: texts(window)[-3:] == ["one", "two", "three"], timeout=WAIT_MS)
    node_b.post("general", "bob here")
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
    sharing.join_workspace(b, sharing.invite(a).encode(), nick="ada")
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
    node_a.post("general", "I am the first ada")
    node_b.post("general", "and I am another ada")
    qtbot.waitUntil(lambda: {"I am the first ada", "and I am another ada"} <= set(texts(win)),
                    timeout=WAIT_MS)
    mine = win.messages.index(row_of(win, "I am the first ada")).data(NameRole)
    theirs = win.messages.index(row_of(win, "and I am another ada")).data(NameRole)
    assert mine == f"ada ·{node_a.key.hex()[:6]}"
    assert theirs == f"ada ·{node_b.key.hex()[:6]}"
    node_b.post("general", "/me waves")
    qtbot.waitUntil(lambda: "/me waves" in texts(win), timeout=WAIT_MS)
    assert win.messages.index(row_of(win, "/me waves")).data() == \
        f"* ada ·{node_b.key.hex()[:6]} waves"
    win.close()


# Pending ---------------------------------------------------------------------------------------

def test_a_message_is_pending_until_a_peer_has_it(qtbot, tmp_path):
    a = Paths.resolve(tmp_path / "a", "default")
    b = Paths.resolve(tmp_path / "b", "default")
    Workspace.init(a, "ada").close()
    sharing.join_workspace(b, sharing.invite(a).encode(), nick="bob")
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
    nodes[0].post("general", mine)
    nodes[1].post("general", theirs)
    qtbot.waitUntil(lambda: {mine, theirs} <= set(texts(win)), timeout=WAIT_MS)
    return win.message_view, win.messages


def test_context_menu_deletes_my_message_and_only_mine(qtbot, window, pair):  # noqa: F811
    node_a, node_b = pair
    view, model = shown(qtbot, window, pair, "mine, to delete", "bob's, to keep")
    theirs = view.context_menu(model.index(row_of(window, "bob's, to keep")))
    assert menu_texts(theirs) == ["Copy text"]
    menu = view.context_menu(model.index(row_of(window, "mine, to delete")))
    assert menu_texts(menu) == ["Copy text", "Delete"]
    copy = next(a for a in menu.actions() if a.text() == "Copy text")
    copy.trigger()
    assert QGuiApplication.clipboard().text() == "mine, to delete"
    delete = next(a for a in menu.actions() if a.text() == "Delete")
    delete.trigger()
    qtbot.waitUntil(lambda: "mine, to delete" not in texts(window), timeout=WAIT_MS)
    stored = [m.text for m in result(node_a.facade.read("general"))]
    assert "mine, to delete" not in stored and "bob's, to keep" in stored
    # The peer's replica drops it too.
    qtbot.waitUntil(lambda: "mine, to delete" not in [
        m.text for m in result(node_b.facade.read("general"))], timeout=WAIT_MS)


def test_the_delete_key_deletes_a_selected_message_of_mine(qtbot, window, pair):  # noqa: F811
    view, model = shown(qtbot, window, pair, "delete me by key", "not yours")
    view.setCurrentIndex(model.index(row_of(window, "not yours")))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    view.setCurrentIndex(model.index(row_of(window, "delete me by key")))
    qtbot.keyClick(view, Qt.Key.Key_Delete)
    qtbot.waitUntil(lambda: "delete me by key" not in texts(window), timeout=WAIT_MS)
    assert "not yours" in texts(window)


# Links -----------------------------------------------------------------------------------------

class UrlCatcher(QObject):
    def __init__(self):
        super().__init__()
        self.urls: list[str] = []

    @Slot(QUrl)
    def capture(self, url: QUrl) -> None:
        self.urls.append(url.toString())


@pytest.fixture
def url_catcher():
    catcher = UrlCatcher()
    for scheme in ("http", "https"):
        QDesktopServices.setUrlHandler(scheme, catcher, "capture")
    yield catcher
    for scheme in ("http", "https"):
        QDesktopServices.unsetUrlHandler(scheme)


def test_clicking_a_link_opens_it(qtbot, window, pair, url_catcher):  # noqa: F811
    text = "😀 the notes are at https://example.org/notes?x=1, and www.hearth.chat too"
    pair[1].post("general", text)
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
    assert menu_texts(menu) == ["Open link", "Copy link", "Copy text"]


# Drawing ---------------------------------------------------------------------------------------

def test_rows_are_drawn_in_the_palette_colours(qtbot, window, pair):  # noqa: F811
    pair[0].post("general", "drawn with the palette")
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

    posted = [node.facade.post("general", f"message {i}" + (" with more words" * (i % 4)))
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
    result(facade.post("general", "new at the bottom"))
    model.reload()
    qtbot.waitUntil(lambda: model.messages[-1].text == "new at the bottom" and laid_out(view)
                    and bar.value() == bar.maximum(), timeout=WAIT_MS)
    bar.triggerAction(bar.SliderAction.SliderPageStepSub)  # read a little higher up
    top = view.indexAt(QPoint(20, 0))
    reading, offset = model.messages[top.row()].id, view.visualRect(top).top()
    result(facade.post("general", "another one"))
    model.reload()
    qtbot.waitUntil(lambda: model.messages[-1].text == "another one" and laid_out(view),
                    timeout=WAIT_MS)
    row = model.row_of(reading)
    assert view.visualRect(model.index(row)).top() == offset
    assert bar.value() < bar.maximum()


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


def test_the_view_needs_no_index_for_an_empty_model(qtbot, window):  # noqa: F811
    view = window.message_view
    assert view.link_at(QPoint(5, 5)) is None
    assert view.link_rects(QModelIndex()) == []
