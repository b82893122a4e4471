"""Days in the message list over real Nodes, offscreen (pytest-qt): a separator for each day
("Today", "Yesterday", a date), the sticky day label in its band above the rows, and the
days' grouping against the local time zone."""

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
    QFontMetrics,
    QImage,
    QPalette,
)
from PySide6.QtWidgets import (  # noqa: E402
    QAbstractItemView,
    QApplication,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import FakeClock, channels, join, node_channels, node_post  # noqa: E402
from tests.ui.support import WAIT_MS, result, texts  # noqa: E402
from ui import avatars  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.composer import Composer  # noqa: E402
from ui.message_overlays import EMPTY_HINT  # noqa: E402
from ui.message_view import MessageView  # noqa: E402
from ui.models import (  # noqa: E402
    DayRole,
    HeaderRole,
    MessageListModel,
    PendingRole,
    TimeRole,
)
from ui.row_geometry import AVATAR_X  # noqa: E402

from .test_message_view import ink, laid_out, start_node  # noqa: E402

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
