"""Markdown in message rows: what the Qt-free helpers decide (ui/_markdown.py), and what a row
shows over a real Node, offscreen (pytest-qt): emphasis, code (monospace on a tinted box, wide
blocks scroll sideways), quotes, lists, links, typed line breaks, and nothing unsafe (raw HTML
shows as typed, images are neither fetched nor shown, links open only web and mail addresses).
"""

from __future__ import annotations

import os
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QPoint, QPointF, Qt  # noqa: E402
from PySide6.QtGui import (  # noqa: E402
    QColor,
    QFontDatabase,
    QGuiApplication,
    QImage,
    QPalette,
    QTextDocument,
    QTextListFormat,
    QWheelEvent,
)
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.records import Message  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.ui.test_message_view import url_catcher  # noqa: E402, F401
from tests.ui.test_window import WAIT_MS, result  # noqa: E402
from ui._markdown import BREAK, chat_source, clamp_scroll, escape, has_markup, safe_url  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.message_view import MessageView  # noqa: E402
from ui.models import BodyRole, MessageListModel  # noqa: E402

# The pure helpers --------------------------------------------------------------------------------

PLAIN = ["just words", "#general is quiet today", "see https://example.org/a.b?c=d",
         "ada: 3 + 4 = 7", "I <3 this", "2024 was a good year", "a - b", "hi @bob!",
         "x <b>bold</b> y", "snake case", "100% sure", "first line\nsecond line"]
MARKUP = ["*em*", "**strong**", "`code`", "> quote", "- item", "* item", "+ item", "1. one",
          "2) two", "    indented code", "\tcode", "[x](https://y.org)", "a \\* b", "&amp;",
          "<https://x.org>", "# title", "~~gone~~", "snake_case", "title\n===", "line\n---",
          "words\n```\ncode\n```"]


def test_plain_chat_lines_take_the_fast_path_and_markup_does_not():
    assert [text for text in PLAIN if has_markup(text)] == []
    assert [text for text in MARKUP if not has_markup(text)] == []


def test_typed_line_breaks_stay_breaks_and_code_stays_as_typed():
    assert chat_source("one line") == "one line"
    assert chat_source("a\nb\n\nc") == f"a{BREAK}\nb\n\nc"
    fenced = "look:\n```\nx = 1\n  y = 2\n```\nafter\nend"
    assert chat_source(fenced) == f"look:{BREAK}\n```\nx = 1\n  y = 2\n```\nafter{BREAK}\nend"
    tildes = "~~~\na\n```\nb\n~~~\nc"  # a ``` inside a ~~~ fence does not close it
    assert chat_source(tildes) == tildes
    indented = "intro\n\n    code one\n    code two\n\nouter\nmore"
    assert chat_source(indented) == f"intro\n\n    code one\n    code two\n\nouter{BREAK}\nmore"
    assert chat_source(f"a{BREAK}\nb") == f"a{BREAK}\nb"  # a typed BREAK never doubles


def test_only_web_and_mail_addresses_may_open():
    assert all(safe_url(url) for url in ("https://example.org", "http://x.org/a",
                                         "mailto:ada@example.org", "HTTPS://X.ORG"))
    assert not any(safe_url(url) for url in ("javascript:alert(1)", "file:///etc/passwd",
                                             "data:text/html,hi", "hearth:join", "x.png",
                                             "/etc/passwd", "", "vbscript:x"))


def test_escape_and_scroll_limits():
    assert escape("ada_l*[x]") == "ada\\_l\\*\\[x\\]"
    assert escape("plain ünïcode") == "plain ünïcode"
    assert clamp_scroll(-5, 300, 100) == 0
    assert clamp_scroll(50, 300, 100) == 50
    assert clamp_scroll(500, 300, 100) == 200
    assert clamp_scroll(30, 80, 100) == 0  # fits: nothing to scroll


# Rows over a real Node -------------------------------------------------------------------------

BOB = b"\xb0" * 32
NOON = 1_709_640_000_000


def message(text: str, n: int = 0, author: bytes = BOB, **fields) -> Message:
    return Message(bytes([n + 1]) * 32, "general", author, "bob", NOON + n * 1000, text,
                   **fields)


@dataclass
class Board:
    """A message view (no window) on ada's computer, alone."""

    qtbot: object
    node: Node
    model: MessageListModel
    view: MessageView

    def post(self, *texts: str) -> list:
        """Post `texts` to #general and show them; the indexes of their rows."""
        for text in texts:
            result(self.node.facade.run(lambda ws, text=text: ws.post("general", text).id))
        self.model.show_channel("general")
        self.qtbot.waitUntil(lambda: [m.text for m in self.model.messages][-len(texts):]
                             == list(texts) and self.laid_out(), timeout=WAIT_MS)
        return [self.model.index(self.model.rowCount() - len(texts) + i)
                for i in range(len(texts))]

    def show(self, messages: list[Message]) -> list:
        """Show these records (not the channel's); the indexes of their rows."""
        self.model.set_messages(messages, "general")
        self.qtbot.waitUntil(self.laid_out, timeout=WAIT_MS)
        return [self.model.index(i) for i in range(len(messages))]

    def show_texts(self, *texts: str, author: bytes = BOB) -> list:
        """Show messages of these texts by `author` (delivered: drawn at full strength)."""
        return self.show([message(text, n, author) for n, text in enumerate(texts)])

    def laid_out(self) -> bool:
        count = self.model.rowCount()
        return count == 0 or self.view.visualRect(self.model.index(count - 1)).isValid()

    def image(self) -> QImage:
        return self.view.viewport().grab().toImage()


@pytest.fixture
def board(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "lone", "default")
    Workspace.init(paths, "ada").close()
    node = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    bridge = NodeBridge(node)
    model = MessageListModel(bridge)
    view = MessageView(model)
    view.resize(560, 640)
    qtbot.addWidget(view)
    view.show()
    yield Board(qtbot, node, model, view)
    view.close()
    bridge.close()
    node.stop()


def fragments(doc: QTextDocument) -> list[tuple[str, object]]:
    """(text, char format) of every fragment of `doc`, in order."""
    out = []
    block = doc.begin()
    while block.isValid():
        it = block.begin()
        while not it.atEnd():
            out.append((it.fragment().text(), it.fragment().charFormat()))
            it += 1
        block = block.next()
    return out


def height(board: Board, index) -> int:
    """How tall a row's text is (rows with a header or a day separator are taller)."""
    return board.view.delegate.parts(index).body.height()


def rgb(color: QColor) -> tuple[int, int, int]:
    return color.red(), color.green(), color.blue()


def painted(view: MessageView, role: QPalette.ColorRole) -> tuple[int, int, int]:
    """A palette colour as rows are painted with it (the inactive group when the view's window
    is not the active one)."""
    group = QPalette.ColorGroup.Active if view.isActiveWindow() else QPalette.ColorGroup.Inactive
    return rgb(view.palette().color(group, role))


def test_emphasis_strong_and_code_render_while_the_text_stays_as_typed(qtbot, board):
    raw = "Some *emphasis*, **strong** words and `inline code`"
    plain, marked = board.post("just plain words", raw)
    delegate = board.view.delegate
    assert delegate.document(plain) is None  # the fast path: one QTextLayout
    assert delegate.shown_text(plain) == "just plain words"
    doc = delegate.document(marked)
    assert doc is not None
    assert delegate.shown_text(marked) == "Some emphasis, strong words and inline code"
    shown = {text: fmt for text, fmt in fragments(doc)}
    assert shown["emphasis"].fontItalic() and not shown["Some "].fontItalic()
    assert shown["strong"].fontWeight() >= 600
    # Code is set in Qt's fixed-pitch system font (whether Qt's font info calls a given
    # machine's "monospace" font fixed-pitch or not: fonts-noto-mono's it does not).
    fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
    assert delegate.code_family == fixed
    assert shown["inline code"].fontFamilies() == [fixed]
    assert fixed not in (shown["Some "].fontFamilies() or [])
    assert height(board, marked) == height(board, plain)  # one line either way
    # What is stored, searched and copied is the text as typed.
    assert marked.data(BodyRole) == raw
    board.view.copy_text(board.model.messages[marked.row()])
    assert QGuiApplication.clipboard().text() == raw


def test_html_shows_as_typed(qtbot, board):
    rows = board.post("<b>x</b> stays", "<b>y</b> and *z*", "<div>block</div>\n\n**w**")
    delegate = board.view.delegate
    assert delegate.shown_text(rows[0]) == "<b>x</b> stays"
    assert delegate.shown_text(rows[1]) == "<b>y</b> and z"
    assert delegate.shown_text(rows[2]) == "<div>block</div>\nw"
    for index in rows[1:]:
        bold = [text for text, fmt in fragments(delegate.document(index))
                if fmt.fontWeight() >= 600]
        assert bold in ([], ["w"])


def red_png(path: Path, size: int = 64) -> Path:
    """A `size`-pixel red square, written without Qt's image plugins."""
    row = b"\x00" + b"\xff\x00\x00" * size
    chunks = [(b"IHDR", struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)),
              (b"IDAT", zlib.compress(row * size)), (b"IEND", b"")]
    data = b"\x89PNG\r\n\x1a\n" + b"".join(
        struct.pack(">I", len(body)) + kind + body
        + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF) for kind, body in chunks)
    path.write_bytes(data)
    return path


def test_an_image_is_neither_fetched_nor_shown(qtbot, board, tmp_path):
    picture = red_png(tmp_path / "red.png")
    assert not QImage(str(picture)).isNull()  # a picture Qt would draw if it loaded it
    local = f"look ![a red square]({picture.as_uri()}) here"
    remote = "and ![a remote one](https://example.org/cat.png) *there*"
    line, local_row, remote_row = board.post("one plain line", local, remote)
    delegate = board.view.delegate
    assert delegate.shown_text(local_row) == "look a red square here"
    assert delegate.shown_text(remote_row) == "and a remote one there"
    for index in (local_row, remote_row):
        assert not any(fmt.isImageFormat() for _, fmt in fragments(delegate.document(index)))
        assert height(board, index) == height(board, line)  # no picture's height
    image = board.image()
    rect = board.view.visualRect(local_row)
    reds = [(x, y) for y in range(rect.top(), rect.bottom()) for x in range(rect.width())
            if rgb(image.pixelColor(x, y)) == (255, 0, 0)]
    assert reds == []
    # A web image's address is a link a person may open; the file's is not.
    assert [url for _, url in board.view.link_rects(remote_row)] == \
        ["https://example.org/cat.png"]
    assert board.view.link_rects(local_row) == []


def test_a_code_block_is_monospace_on_a_tinted_box_and_never_wraps(qtbot, board):
    long = "result = compute(" + ", ".join(f"argument_{i}" for i in range(30)) + ")"
    as_text, as_code, short_text, short_code = board.show_texts(
        f"{long}\nshort = 1", f"```\n{long}\nshort = 1\n```", "x = 1\ny = 2",
        "```\nx = 1\ny = 2\n```")
    delegate = board.view.delegate
    assert len(delegate.line_rects(as_text)) > 2  # plain text wraps the long line
    assert len(delegate.line_rects(as_code)) == 2  # code keeps its lines
    assert height(board, as_code) < height(board, as_text)
    assert height(board, short_code) > height(board, short_text)  # the box's padding
    for text, fmt in fragments(delegate.document(short_code)):
        assert fmt.fontFamilies() == [delegate.code_family], text
    # The box: AlternateBase inside, around the text.
    parts = delegate.parts(short_code)
    inside = board.image().pixelColor(parts.body.left() + 3, parts.body.center().y())
    assert rgb(inside) == painted(board.view, QPalette.ColorRole.AlternateBase) != \
        painted(board.view, QPalette.ColorRole.Base)


def wheel(view: MessageView, pos: QPoint, dy: int = 0, dx: int = 0, shift: bool = False):
    modifiers = Qt.KeyboardModifier.ShiftModifier if shift else Qt.KeyboardModifier.NoModifier
    event = QWheelEvent(QPointF(pos), QPointF(view.viewport().mapToGlobal(pos)), QPoint(0, 0),
                        QPoint(dx, dy), Qt.MouseButton.NoButton, modifiers,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(view.viewport(), event)


def test_a_wide_code_block_scrolls_sideways_with_shift_and_the_wheel_or_a_drag(qtbot, board):
    long = "print(" + " + ".join(f"'part {i}'" for i in range(40)) + ")"
    index, short = board.show_texts(f"```\n{long}\n```", "```\nx = 1\n```")
    view, delegate = board.view, board.view.delegate
    parts = delegate.parts(index)
    inside = QPoint(parts.body.center().x(), parts.body.top() + parts.body.height() // 2)
    found = delegate.code_at(index, inside)
    assert found is not None
    key, box, most = found
    assert most > 0 and box.width() <= parts.body.width()
    # The bar at the box's foot says there is more, and where the view is.
    base = painted(view, QPalette.ColorRole.AlternateBase)
    strip = [box.left() + 10 + x for x in range(box.width() - 20)]
    foot = box.bottom() - 2

    def thumb() -> list[int]:
        image = board.image()
        return [x for x in strip if rgb(image.pixelColor(x, foot)) != base]

    start = thumb()
    assert start and start[0] < box.left() + box.width() // 3
    before = board.image().copy(box)
    wheel(view, inside, dy=-120, shift=True)  # Shift and the wheel: sideways
    assert delegate.code_offsets[key] > 0
    qtbot.waitUntil(lambda: board.image().copy(box) != before, timeout=WAIT_MS)
    assert thumb()[0] > start[0]
    for _ in range(200):
        wheel(view, inside, dx=-120)  # a sideways wheel, to the end and past it
    assert delegate.code_offsets[key] == pytest.approx(most)
    wheel(view, inside, dx=120)
    assert delegate.code_offsets[key] < most
    # A plain wheel scrolls the list, not the block.
    offset = delegate.code_offsets[key]
    wheel(view, inside, dy=-120)
    assert delegate.code_offsets[key] == offset
    # A drag to the right moves the text with the pointer, back towards the start.
    qtbot.mousePress(view.viewport(), Qt.MouseButton.LeftButton, pos=inside)
    qtbot.mouseMove(view.viewport(), inside + QPoint(30, 0))
    assert delegate.code_offsets[key] == pytest.approx(offset - 30)
    qtbot.mouseMove(view.viewport(), inside + QPoint(200, 0))
    qtbot.mouseRelease(view.viewport(), Qt.MouseButton.LeftButton, pos=inside + QPoint(200, 0))
    assert delegate.code_offsets[key] == pytest.approx(offset - 200)
    for _ in range(200):
        wheel(view, inside, dy=120, shift=True)  # to the start, and no further
    assert delegate.code_offsets[key] == 0
    assert thumb()[0] == start[0]
    # A short block does not scroll.
    short_parts = delegate.parts(short)
    assert delegate.code_at(short, short_parts.body.center()) is None


def test_quotes_have_a_bar_and_lists_their_markers(qtbot, board):
    quote, listed, plain = board.post("> quoted words\n> more of them", "- one\n- two\n\n1. first",
                                      "quoted words")
    delegate = board.view.delegate
    assert delegate.shown_text(quote) == "quoted words\nmore of them"
    lines = delegate.line_rects(quote)
    parts = delegate.parts(quote)
    assert len(lines) == 2 and lines[0].left() > parts.body.left() + 8  # indented
    image = board.image()
    base = painted(board.view, QPalette.ColorRole.Base)
    for line in lines:  # a bar at the quote's left, then room before its text
        assert rgb(image.pixelColor(parts.body.left() + 2, line.center().y())) != base
        assert rgb(image.pixelColor(parts.body.left() + 6, line.center().y())) == base
    assert delegate.line_rects(plain)[0].left() == delegate.parts(plain).body.left()
    doc = delegate.document(listed)
    styles = []
    block = doc.begin()
    while block.isValid():
        styles.append((block.text(), block.textList().format().style()
                       if block.textList() else None))
        block = block.next()
    disc, decimal = QTextListFormat.Style.ListDisc, QTextListFormat.Style.ListDecimal
    assert styles == [("one", disc), ("two", disc), ("first", decimal)]


def test_typed_line_breaks_stay_lines_and_headings_keep_the_body_size(qtbot, board):
    plain, marked, heading = board.post("first line\nsecond line", "first *line*\nsecond line",
                                        "# first line\nsecond line")
    delegate = board.view.delegate
    assert delegate.shown_text(marked) == "first line\nsecond line"
    assert len(delegate.line_rects(marked)) == 2
    assert height(board, marked) == height(board, plain)  # no paragraph gap between lines
    assert delegate.shown_text(heading) == "first line\nsecond line"
    assert [r.height() for r in delegate.line_rects(heading)] == \
        [r.height() for r in delegate.line_rects(plain)]


def test_markdown_links_open_and_others_are_text(qtbot, board, url_catcher):  # noqa: F811
    (index,) = board.post("[the site](https://example.org/a) or [bad](javascript:alert(1)) "
                          "or [file](file:///etc/passwd) or <https://example.org/b> *now*")
    view = board.view
    assert view.delegate.shown_text(index) == \
        "the site or bad or file or https://example.org/b now"
    rects = view.link_rects(index)
    assert [url for _, url in rects] == ["https://example.org/a", "https://example.org/b"]
    with qtbot.waitSignal(view.linkActivated, timeout=WAIT_MS):
        qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rects[0][0].center())
    assert url_catcher.urls == ["https://example.org/a"]
    right_of_site = QPoint(rects[0][0].right() + 40, rects[0][0].center().y())  # on "bad"
    assert view.link_at(right_of_site) is None
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=right_of_site)
    assert url_catcher.urls == ["https://example.org/a"]


def test_a_me_row_renders_its_markdown_after_the_name_as_typed(qtbot, board):
    (index,) = board.show([Message(bytes(32), "general", BOB, "bob_the*builder", NOON,
                                   "/me waves *hard* at `you`")])
    delegate = board.view.delegate
    assert index.data(BodyRole) == "* bob_the*builder waves *hard* at `you`"
    # The name's own * and _ show as typed; the action's Markdown renders.
    assert delegate.shown_text(index) == "* bob_the*builder waves hard at you"
    doc = delegate.document(index)
    assert doc.defaultFont().italic()  # a /me row reads in italics, as plain ones do
    assert [text for text, fmt in fragments(doc) if fmt.fontItalic()] == ["hard"]
