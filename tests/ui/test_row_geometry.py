"""What makes a long channel cheap to scroll back through changes nothing a row shows: a row
measured by its advance (one plain line, ui/row_geometry.RowHeights) is as tall, and ends where,
its text layout says; rows grouped a page at a time start groups and days where row-by-row
grouping does; new messages below the shown ones are inserted, not reset."""

from __future__ import annotations

import os
import random

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.records import Message  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from ui import _rows  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.message_view import MessageView  # noqa: E402
from ui.models import MessageListModel  # noqa: E402
from ui.row_geometry import right_edge  # noqa: E402

WAIT_MS = 20_000
TEXTS = ["hi", "the quick brown fox jumps over the lazy dog " * 6, "/me waves at everyone",
         "lunch? 🍕", "**bold** and `code`", "see https://example.com/page for more",
         "@ada look at this", "tab\tseparated", "x" * 400, "two\nlines"]


def test_rows_measured_without_a_layout_match_their_layout(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "a", "default")
    ws = Workspace.init(paths, "ada")
    for text in TEXTS:
        ws.post("general", text)
    ws.close()
    node = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    bridge = NodeBridge(node)
    try:
        model = MessageListModel(bridge)
        view = MessageView(model)
        qtbot.addWidget(view)
        view.show()
        model.show_channel("general")
        qtbot.waitUntil(lambda: model.rowCount() == len(TEXTS), timeout=WAIT_MS)
        delegate = view.delegate
        for width in (120, 300, 700, 2000):
            for row, message in enumerate(model.messages):
                name = model.display_name(row)
                body = delegate.body(message, name, width, keep=False)
                measured = delegate.heights._extent(message, name, width)
                assert measured == (body.height, right_edge(body)), (message.text, width)
        view.close()
    finally:
        bridge.close()
        node.stop()


def test_a_page_groups_as_row_by_row():
    rng = random.Random(7)
    ts = 1_700_000_000_000
    rows = []
    for i in range(2000):
        ts += rng.choice([0, 1000, 60_000, 5 * 60_000 + 1, 3_600_000, 20 * 3_600_000])
        rows.append(Message(bytes([i % 256, i // 256]), "general", bytes([rng.randint(0, 2)]),
                            "ada", ts, rng.choice(["hi", "/me waves", "yes"])))
    for previous, page in ((None, rows), (rows[999], rows[1000:])):
        groups, days, before = [], [], previous
        for message in page:
            groups.append(_rows.starts_group(before, message))
            days.append(_rows.starts_day(before, message))
            before = message
        assert _rows.group_starts(page, previous) == groups
        assert _rows.day_starts(page, previous) == days


def test_new_messages_are_inserted_below_without_a_reset(qtbot, tmp_path):
    paths = Paths.resolve(tmp_path / "a", "default")
    Workspace.init(paths, "ada").close()
    node = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    bridge = NodeBridge(node)
    try:
        model = MessageListModel(bridge)
        model.show_channel("general")
        node.facade.run(lambda ws: ws.post("general", "first").id).result(WAIT_MS / 1000)
        model.reload()
        qtbot.waitUntil(lambda: [m.text for m in model.messages] == ["first"], timeout=WAIT_MS)
        resets: list[bool] = []
        inserted: list[tuple[int, int]] = []
        model.modelReset.connect(lambda: resets.append(True))
        model.rowsInserted.connect(lambda parent, first, last: inserted.append((first, last)))
        for text in ("second", "third"):
            node.facade.run(lambda ws, text=text: ws.post("general", text).id).result(
                WAIT_MS / 1000)
        model.reload()
        qtbot.waitUntil(lambda: len(model.messages) == 3, timeout=WAIT_MS)
        assert [m.text for m in model.messages] == ["first", "second", "third"]
        assert inserted == [(1, 2)] and not resets
        assert model.shows_header(0) and not model.shows_header(1)
    finally:
        bridge.close()
        node.stop()
