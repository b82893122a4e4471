"""The search panel over a real Node, offscreen (pytest-qt): what a person sees and chooses."""

from __future__ import annotations

import os
import time

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QLineEdit  # noqa: E402

from app.node import Node  # noqa: E402
from app.paths import Paths  # noqa: E402
from app.search import HINT  # noqa: E402
from app.workspace import Workspace  # noqa: E402
from tests.support import node_channels  # noqa: E402
from ui import _rows  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.search_panel import MATCH, SPANS_ROLE, TARGET_ROLE, TYPING_MS, SearchPanel  # noqa: E402

WAIT_MS = 20_000  # generous: latency belongs in the benchmarks


def result(future):
    return future.result(WAIT_MS / 1000)


@pytest.fixture
def node(tmp_path):
    paths = Paths.resolve(tmp_path / "ada", "default")
    Workspace.init(paths, "ada").close()
    running = Node(paths, interfaces=["127.0.0.1"], mdns=False, reconcile_interval=None).start()
    facade = running.facade
    node_channels(running, "random", "design")
    for channel, text in [("general", "the quick brown fox"), ("random", "quick thinking"),
                          ("general", "nothing to see"), ("design", "Quick brown sketches")]:
        result(facade.run(lambda ws, channel=channel, text=text: ws.post(channel, text).id))
        posted = time.time_ns() // 1_000_000
        while time.time_ns() // 1_000_000 <= posted:  # each post in its own millisecond, so
            pass  # "newest first" has one answer (ties are ordered by random ids)
    result(facade.run(lambda ws: ws.topic("design", "quick mock-ups").id))
    result(facade.run(lambda ws: ws.documents.new("Quick start guide").id))
    yield running
    running.stop()


@pytest.fixture
def panel(qtbot, node):
    bridge = NodeBridge(node)
    widget = SearchPanel(bridge)
    qtbot.addWidget(widget)
    widget.resize(600, 400)
    widget.show()
    yield widget
    bridge.close()


def run(qtbot, panel: SearchPanel, query: str) -> None:
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        panel.run(query)


def shown(panel: SearchPanel) -> list[str]:
    return [panel.list.item(row).text() for row in range(panel.list.count())]


def marked(item) -> list[str]:
    text = item.text()
    return [text[start:end] for start, end, kind in item.data(SPANS_ROLE) if kind == MATCH]


def test_results_are_grouped_by_channel_with_the_words_marked(qtbot, panel):
    run(qtbot, panel, "quick")
    assert panel.count_label.text() == \
        "3 messages in 3 channels · 1 matching channel · 1 document"
    assert panel.objectName() == "searchResults"
    rows = shown(panel)
    headings = [text for text in rows if text in ("#design", "#random", "#general",
                                                  "Channels", "Documents")]
    assert headings == ["#design", "#random", "#general", "Channels", "Documents"]
    messages = [item for item in panel.rows() if item.data(TARGET_ROLE)[0] == "message"]
    # Under each heading, its channel's message: author, app-style time, text.
    for heading, item in zip(["#design", "#random", "#general"], messages, strict=True):
        message = item.data(TARGET_ROLE)[1]
        assert rows.index(heading) + 1 == rows.index(item.text())
        assert f"#{message.channel}" == heading
        assert item.text() == f"ada  {_rows.time_label(message.ts)}  {message.text}"
        assert marked(item) == ["Quick" if message.text.startswith("Q") else "quick"]
    assert [item.data(TARGET_ROLE)[1].text for item in messages] == [
        "Quick brown sketches", "quick thinking", "the quick brown fox"]
    channel, document = panel.rows()[3:]
    assert channel.text() == "#design  quick mock-ups" and marked(channel) == ["quick"]
    assert document.text() == "Quick start guide" and marked(document) == ["Quick"]
    assert panel.hint_label.isHidden()


def test_a_phrase_and_filters_mark_only_what_matched(qtbot, panel):
    run(qtbot, panel, '"quick brown" in:#general')
    assert panel.count_label.text() == "1 message in 1 channel"
    [item] = panel.rows()
    assert marked(item) == ["quick brown"]
    assert shown(panel)[0] == "#general"


def test_keys_choose_a_message_and_escape_closes(qtbot, panel):
    run(qtbot, panel, "quick")
    # The newest result is selected; Down moves past the next heading to the next result.
    assert panel.list.currentItem().data(TARGET_ROLE)[1].text == "Quick brown sketches"
    qtbot.keyClick(panel.list, Qt.Key.Key_Down)
    with qtbot.waitSignal(panel.messageChosen, timeout=WAIT_MS) as chosen:
        qtbot.keyClick(panel.list, Qt.Key.Key_Return)
    message = chosen.args[0]
    assert (message.text, message.channel) == ("quick thinking", "random")
    assert message.id in [m.id for m in result(panel.bridge.facade.run(lambda ws: ws.read("random")))]
    qtbot.keyClick(panel.list, Qt.Key.Key_Up)
    qtbot.keyClick(panel.list, Qt.Key.Key_Up)  # already the first: stays
    with qtbot.waitSignal(panel.messageChosen, timeout=WAIT_MS) as chosen:
        qtbot.keyClick(panel.list, Qt.Key.Key_Enter)
    assert chosen.args[0].text == "Quick brown sketches"
    with qtbot.waitSignal(panel.closed, timeout=WAIT_MS):
        qtbot.keyClick(panel.list, Qt.Key.Key_Escape)


def test_channels_and_documents_are_chosen_by_name_and_id(qtbot, panel):
    run(qtbot, panel, "quick")
    for _ in range(3):
        qtbot.keyClick(panel.list, Qt.Key.Key_Down)
    with qtbot.waitSignal(panel.channelChosen, timeout=WAIT_MS) as chosen:
        qtbot.keyClick(panel.list, Qt.Key.Key_Return)
    assert chosen.args == ["design"]
    qtbot.keyClick(panel.list, Qt.Key.Key_Down)
    qtbot.keyClick(panel.list, Qt.Key.Key_Down)  # the last row: stays
    [doc] = result(panel.bridge.facade.run(lambda ws: ws.documents.all()))
    with qtbot.waitSignal(panel.documentChosen, timeout=WAIT_MS) as chosen:
        qtbot.keyClick(panel.list, Qt.Key.Key_Return)
    assert chosen.args == [doc.id]
    # A click opens a result too (found by its text: two posts made within one millisecond
    # may be listed in either order).
    item = next(row for row in panel.rows() if "quick thinking" in row.text())
    with qtbot.waitSignal(panel.messageChosen, timeout=WAIT_MS) as chosen:
        qtbot.mouseClick(panel.list.viewport(), Qt.MouseButton.LeftButton,
                         pos=panel.list.visualItemRect(item).center())
    assert chosen.args[0].text == "quick thinking"


def test_keys_from_the_search_box(qtbot, panel):
    box = QLineEdit()
    qtbot.addWidget(box)
    panel.keys_from(box)
    box.setText("quick")
    run(qtbot, panel, box.text())
    qtbot.keyClick(box, Qt.Key.Key_Down)
    with qtbot.waitSignal(panel.messageChosen, timeout=WAIT_MS) as chosen:
        qtbot.keyClick(box, Qt.Key.Key_Return)
    assert chosen.args[0].text == "quick thinking"
    # After an edit, Enter belongs to the box (it runs the new query), not to the results.
    box.setText("quick brown")
    with qtbot.waitSignal(box.returnPressed, timeout=WAIT_MS), \
            qtbot.assertNotEmitted(panel.messageChosen):
        qtbot.keyClick(box, Qt.Key.Key_Return)
    with qtbot.waitSignal(panel.closed, timeout=WAIT_MS):
        qtbot.keyClick(box, Qt.Key.Key_Escape)


def test_no_results_and_a_bad_filter_say_so(qtbot, panel):
    run(qtbot, panel, "zebra")
    assert panel.count_label.text() == 'No results for "zebra"'
    assert panel.hint_label.isVisible() and panel.hint_label.text() == HINT
    assert panel.list.count() == 0
    run(qtbot, panel, "quick after:2026-13-01")
    assert panel.count_label.text() == "after: wants a date like 2026-03-01"
    assert panel.hint_label.isVisible() and panel.list.count() == 0
    run(qtbot, panel, "quick from:nobody")
    assert panel.count_label.text().startswith("from: 'nobody' is neither a key")
    run(qtbot, panel, "quick")
    assert panel.hint_label.isHidden() and len(panel.rows()) == 5


def test_an_answer_to_an_older_query_is_dropped(qtbot, panel):
    answers = []
    panel.resultsShown.connect(lambda: answers.append(panel.count_label.text()))
    panel.run("thinking")
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        panel.run("sketches")
    # The Node answers in order: the older answer came first and was not shown.
    assert answers == ["1 message in 1 channel"]
    assert [item.data(TARGET_ROLE)[1].text for item in panel.rows()] == [
        "Quick brown sketches"]
    panel.run("")
    assert panel.list.count() == 0 and panel.count_label.text() == ""


def test_search_runs_as_one_types_with_no_enter(qtbot, panel):
    box = QLineEdit()
    qtbot.addWidget(box)
    panel.keys_from(box)  # as the window does with its search box
    asked: list[str] = []
    panel.queryTyped.connect(asked.append)
    panel.queryTyped.connect(panel.run)  # what the window's search does with it
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        qtbot.keyClicks(box, "thinking")
    assert asked[-1] == "thinking"  # the pause after the last key asked for what was typed
    assert [item.data(TARGET_ROLE)[1].text for item in panel.rows()] == ["quick thinking"]
    # Enter before the pause asks once: the pending pause is dropped.
    asked.clear()
    box.setText("sketches")
    with qtbot.waitSignal(panel.resultsShown, timeout=WAIT_MS):
        panel.run(box.text())  # the window runs the query on Enter
    with qtbot.assertNotEmitted(panel.queryTyped, wait=2 * TYPING_MS):
        pass
    assert asked == []


def test_results_show_messages_without_markdown_and_mark_the_words_shown(qtbot, node, panel):
    result(node.facade.run(lambda ws: ws.post("general", "**zesty** *lemon* `tart` [recipe](https://x.example/r) "                                        "and ~~zesty~~ __notes__").id))
    run(qtbot, panel, "zesty recipe")
    [row] = panel.rows()
    text = row.text()
    assert text.endswith("zesty lemon tart recipe and zesty notes")
    assert not any(mark in text for mark in ("**", "`", "](", "~~", "__"))
    assert marked(row) == ["zesty", "recipe", "zesty"]
