"""The typing indicator (ui/typing_label.py), offscreen: its sentence, who it leaves out, when
people stop showing, its steady height, and a typing signal from another real Node."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QVBoxLayout, QWidget  # noqa: E402

from sync.session import TYPING  # noqa: E402
from tests.support import node_call, node_service  # noqa: E402
from tests.ui.support import WAIT_MS, result  # noqa: E402
from ui.bridge import NodeBridge  # noqa: E402
from ui.typing_label import SEVERAL, TypingLabel, typing_text  # noqa: E402

ME, ADA, BOB, CY, DAN = (bytes([n]) * 32 for n in range(5))
NICKS = {ME: "me", ADA: "ada", BOB: "bob", CY: "cy", DAN: "dan"}
SHORT_TTL_S = 0.5  # tests wait for expiry with waitUntil; the app's is app.node.TYPING_TTL_S


def test_the_sentence_for_one_two_three_and_more_people():
    assert typing_text([]) == ""
    assert typing_text(["ada"]) == "ada is typing…"
    assert typing_text(["ada", "bob"]) == "ada and bob are typing…"
    assert typing_text(["ada", "bob", "cy"]) == "ada, bob and cy are typing…"
    assert typing_text(["ada", "bob", "cy", "dan"]) == "Several people are typing…" == SEVERAL
    assert typing_text([f"p{n}" for n in range(9)]) == SEVERAL


@pytest.fixture
def label(qtbot):
    widget = TypingLabel(ME, ttl_s=SHORT_TTL_S)
    qtbot.addWidget(widget)
    widget.resize(600, widget.height())
    widget.set_nicknames(NICKS)
    widget.set_channel("general")
    widget.show()
    return widget


def test_it_names_who_is_typing_in_the_open_channel_but_never_me(label):
    assert label.objectName() == "typingLabel"
    assert label.text() == ""
    label.typed(BOB, "general")
    assert label.text() == "bob is typing…"
    label.typed(ME, "general")  # my own key, from my other computer: never shown
    label.typed(CY, "random")  # another channel
    assert label.text() == "bob is typing…"
    label.typed(ADA, "General")  # the same channel, as channel names compare
    assert label.text() == "ada and bob are typing…"
    label.typed(CY, "general")
    assert label.text() == "ada, bob and cy are typing…"
    label.typed(DAN, "general")
    assert label.text() == "Several people are typing…"
    assert label.typing_keys() == {ADA, BOB, CY, DAN}


def test_a_person_without_a_nickname_is_told_apart_by_key(label):
    stranger = bytes.fromhex("3f2126de") + bytes(28)
    label.typed(stranger, "general")
    assert label.text() == "anonymous ·3f2126 is typing…"
    label.set_nicknames({**NICKS, stranger: "erin"})
    assert label.text() == "erin is typing…"


def test_names_are_plain_text_not_markup(label):
    label.set_nicknames({ADA: "<b>ada</b>"})
    label.typed(ADA, "general")
    assert label.text() == "<b>ada</b> is typing…"
    assert label.textFormat().name == "PlainText"


def test_a_person_stops_showing_after_the_time_to_live(qtbot, label):
    label.typed(ADA, "general")
    label.typed(BOB, "general")
    assert label.text() == "ada and bob are typing…"
    qtbot.waitUntil(lambda: label.text() == "", timeout=WAIT_MS)
    assert label.typing_keys() == set()


def test_each_signal_restarts_that_persons_time(qtbot, label):
    label.typed(ADA, "general")
    label.typed(BOB, "general")
    typist = QTimer(interval=round(SHORT_TTL_S * 1000 / 5))  # ada keeps typing, bob does not
    typist.timeout.connect(lambda: label.typed(ADA, "general"))
    typist.start()
    qtbot.waitUntil(lambda: label.text() == "ada is typing…", timeout=WAIT_MS)
    typist.stop()
    qtbot.waitUntil(lambda: label.text() == "", timeout=WAIT_MS)


def test_posting_in_the_channel_ends_that_persons_typing(label):
    label.typed(ADA, "general")
    label.typed(BOB, "general")
    label.posted(ADA, "random")  # a message elsewhere says nothing about this channel
    assert label.text() == "ada and bob are typing…"
    label.posted(ADA, "general")
    assert label.text() == "bob is typing…"
    label.posted(CY, "general")  # was not typing: nothing changes
    assert label.text() == "bob is typing…"


def test_changing_the_channel_clears_it(label):
    label.typed(ADA, "general")
    label.set_channel("GENERAL")  # the same channel: kept
    assert label.text() == "ada is typing…"
    label.set_channel("random")
    assert label.text() == ""
    label.typed(ADA, "general")  # the channel left
    assert label.text() == ""
    label.typed(BOB, "random")
    assert label.text() == "bob is typing…"
    label.set_channel(None)
    assert label.text() == "" and label.typing_keys() == set()


def test_its_height_stays_and_long_names_do_not_widen_the_window(qtbot):
    box = QWidget()
    qtbot.addWidget(box)
    column = QVBoxLayout(box)
    label = TypingLabel(ME)
    column.addWidget(label)
    long_names = {key: name * 10 for key, name in NICKS.items()}  # 20-30 characters each
    label.set_nicknames(long_names)
    label.set_channel("general")
    box.resize(240, 80)
    box.show()
    empty_height, empty_hint = label.height(), label.sizeHint().height()
    narrowest = box.minimumSizeHint().width()
    assert empty_height > 0

    for key in (ADA, BOB, CY):
        label.typed(key, "general")
    assert label.text().endswith("are typing…") and len(label.text()) > 60
    assert label.fontMetrics().horizontalAdvance(label.text()) > box.width()
    qtbot.waitUntil(lambda: label.height() == empty_height)
    assert label.sizeHint().height() == empty_hint
    assert box.minimumSizeHint().width() == narrowest  # the sentence is elided, not widened
    assert label.toolTip() == label.text()  # the whole sentence, when it does not fit


def test_a_typing_peer_shows_through_the_bridge(qtbot, pair):
    node_a, node_b = pair

    def understood() -> bool:
        return node_call(node_b, lambda: any(
            c.session.peer_key == node_a.key and TYPING in c.session.peer_caps
            for c in node_service(node_b).connections.values()))

    qtbot.waitUntil(understood, timeout=WAIT_MS)
    qtbot.waitUntil(lambda: node_a.key in result(node_b.facade.run(lambda ws: ws.nicknames())), timeout=WAIT_MS)
    bridge = NodeBridge(node_b)
    label = TypingLabel(node_b.key)
    qtbot.addWidget(label)
    bridge.typing.connect(label.typed)
    label.set_nicknames(result(node_b.facade.run(lambda ws: ws.nicknames())))
    label.set_channel("general")
    label.show()
    try:
        with qtbot.waitSignal(bridge.typing, timeout=WAIT_MS) as signal:
            node_a.typing("general")
        assert signal.args == [node_a.key, "general"]
        assert label.text() == "ada is typing…"
    finally:
        bridge.close()


def test_a_private_channel_is_told_apart_by_its_id(label):
    room, other = b"R" * 32, b"O" * 32
    label.typed(ADA, "general")
    label.set_channel(room)  # a private channel opened: its id, not a name
    assert label.text() == ""
    label.typed(ADA, room)
    label.typed(BOB, other)  # another private channel
    label.typed(CY, "general")  # a public channel, whatever its name
    assert label.text() == "ada is typing…"
    label.posted(ADA, room)
    assert label.text() == "" and label.typing_keys() == set()
    label.set_channel("general")
    label.typed(BOB, room)
    assert label.text() == ""
