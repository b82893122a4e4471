"""The Ctrl+K quick switcher (ui/switcher.py) offscreen: the order of its rows, what it
highlights, and the keys that drive it. The window's own Ctrl+K test is in
test_window_features.py."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtCore import Qt  # noqa: E402
from PySide6.QtWidgets import QLabel, QListWidgetItem  # noqa: E402

from app.records import UNREAD_CAP  # noqa: E402
from ui.switcher import (  # noqa: E402
    BadgeRole,
    KeyRole,
    PositionsRole,
    QuickSwitcher,
    RecentRole,
    channel_place,
    document_place,
    visited,
)

PLACES = [
    channel_place("general"),
    channel_place("engineering-gen"),
    channel_place("random", unread=3),
    channel_place("design", unread=12, mention=True),
    channel_place("legend"),
    document_place("d1", "Release notes"),
    document_place("d2", "Budget"),
    document_place("d3", "Plan"),
    document_place("d4", "Planning notes"),
]


def switcher(qtbot, places=PLACES, recent=()) -> QuickSwitcher:
    widget = QuickSwitcher(places, recent=recent)
    qtbot.addWidget(widget)
    widget.show()
    widget.filter.setFocus()
    return widget


def items(widget: QuickSwitcher) -> list[QListWidgetItem]:
    return [widget.list.item(i) for i in range(widget.list.count())
            if not widget.list.item(i).isHidden()]


def rows(widget: QuickSwitcher) -> list[str]:
    return [item.text() for item in items(widget)]


def bold(item: QListWidgetItem) -> str:
    """The characters of a row drawn bold (matched by the filter)."""
    return "".join(item.text()[p] for p in item.data(PositionsRole))


def typed(qtbot, widget: QuickSwitcher, text: str) -> list[str]:
    widget.filter.clear()
    qtbot.keyClicks(widget.filter, text)
    return rows(widget)


def test_nothing_typed_lists_recent_then_unread_then_channels_then_documents(qtbot):
    widget = switcher(qtbot, recent=[("document", "d2"), ("channel", "legend"),
                                     ("channel", "gone")])  # a place no longer listed
    assert rows(widget) == [
        "Budget", "# legend",  # visited last, most recent first
        "# design", "# random",  # unread
        "# engineering-gen", "# general",
        "Plan", "Planning notes", "Release notes",
    ]
    assert [item.data(RecentRole) for item in items(widget)][:3] == [True, True, False]
    assert widget.list.currentRow() == 0
    assert not widget.findChild(QLabel, "switcherHint").isVisible()


def test_rows_show_unread_counts_and_which_are_documents(qtbot):
    places = [channel_place("busy", unread=UNREAD_CAP), *PLACES]
    badges = {item.text(): item.data(BadgeRole) for item in items(switcher(qtbot, places))}
    assert badges["# design"] == "@ 12"
    assert badges["# random"] == "3"
    assert badges["# busy"] == "999+"
    assert badges["# general"] == ""
    assert badges["Budget"] == "document"


def test_typing_ranks_by_fuzzy_match_and_highlights_the_matched_letters(qtbot):
    widget = switcher(qtbot)
    assert typed(qtbot, widget, "gen") == ["# general", "# engineering-gen", "# legend"]
    assert [bold(item) for item in items(widget)] == ["gen", "gen", "gen"]
    assert [item.data(PositionsRole) for item in items(widget)] == [(2, 3, 4), (14, 15, 16),
                                                                    (4, 5, 6)]
    assert typed(qtbot, widget, "rn")[0] == "Release notes"
    assert bold(items(widget)[0]) == "Rn"
    assert typed(qtbot, widget, "DSGN") == ["# design"]
    assert bold(items(widget)[0]) == "dsgn"
    assert widget.list.currentRow() == 0


def test_a_recent_place_wins_a_near_tie_but_not_a_better_match(qtbot):
    assert typed(qtbot, switcher(qtbot), "plan") == ["Plan", "Planning notes"]
    recent = [("document", "d4"), ("channel", "legend")]
    widget = switcher(qtbot, recent=recent)
    assert typed(qtbot, widget, "plan") == ["Planning notes", "Plan"]
    assert typed(qtbot, widget, "gen")[0] == "# general"


def test_no_match_shows_a_hint_until_the_filter_matches_again(qtbot):
    widget = switcher(qtbot)
    hint = widget.findChild(QLabel, "switcherHint")
    assert typed(qtbot, widget, "xyz") == []
    assert hint.isVisible()
    assert hint.text() == "No channel or document matches 'xyz'"
    qtbot.keyClick(widget.filter, Qt.Key.Key_Backspace)
    qtbot.keyClick(widget.filter, Qt.Key.Key_Backspace)
    qtbot.keyClick(widget.filter, Qt.Key.Key_Backspace)
    assert not hint.isVisible()
    assert len(rows(widget)) == len(PLACES)


def test_deleting_letters_widens_the_list_again(qtbot):
    names = [f"{a}-{b}" for a in ("design", "desk", "dev", "ops") for b in ("red", "blue")]
    widget = switcher(qtbot, [channel_place(n) for n in names])
    typed(qtbot, widget, "desre")
    for _ in range(3):
        qtbot.keyClick(widget.filter, Qt.Key.Key_Backspace)
    fresh = switcher(qtbot, [channel_place(n) for n in names])
    assert rows(widget) == typed(qtbot, fresh, "de")
    assert len(rows(widget)) == 6


def test_arrows_move_enter_goes_and_escape_closes(qtbot):
    widget = switcher(qtbot)
    typed(qtbot, widget, "gen")
    qtbot.keyClick(widget.filter, Qt.Key.Key_Down)
    qtbot.keyClick(widget.filter, Qt.Key.Key_Down)
    qtbot.keyClick(widget.filter, Qt.Key.Key_Down)  # stays on the last row
    qtbot.keyClick(widget.filter, Qt.Key.Key_Up)
    assert widget.list.currentItem().text() == "# engineering-gen"
    with qtbot.waitSignal(widget.chosen, timeout=1000) as chosen:
        qtbot.keyClick(widget.filter, Qt.Key.Key_Return)
    assert chosen.args == ["channel", "engineering-gen"]
    assert not widget.isVisible()

    widget = switcher(qtbot)
    typed(qtbot, widget, "budg")
    assert widget.list.currentItem().data(KeyRole) == ("document", "d2")
    with qtbot.assertNotEmitted(widget.chosen):
        qtbot.keyClick(widget.filter, Qt.Key.Key_Escape)
    assert not widget.isVisible()


def test_enter_with_nothing_matching_does_nothing(qtbot):
    widget = switcher(qtbot)
    typed(qtbot, widget, "xyz")
    with qtbot.assertNotEmitted(widget.chosen):
        qtbot.keyClick(widget.filter, Qt.Key.Key_Return)
    assert widget.isVisible()


def test_matched_letters_are_drawn_bold(qtbot):
    widget = switcher(qtbot, [channel_place("general")])
    widget.list.setFocus()  # no selection colours: the row as drawn
    widget.list.setCurrentRow(-1)
    plain = widget.list.viewport().grab().toImage()
    widget.filter.setText("gen")
    widget.list.setCurrentRow(-1)
    drawn = widget.list.viewport().grab().toImage()
    assert drawn != plain
    widget.filter.setText("")
    widget.list.setCurrentRow(-1)
    assert widget.list.viewport().grab().toImage() == plain


def test_visits_keep_the_most_recent_first_without_repeats():
    recent = visited([], "channel", "general")
    recent = visited(recent, "document", "d1")
    recent = visited(recent, "channel", "general")
    assert recent == [("channel", "general"), ("document", "d1")]
    for n in range(20):
        recent = visited(recent, "channel", f"c{n}", limit=5)
    assert recent == [("channel", f"c{n}") for n in (19, 18, 17, 16, 15)]
