"""The emoji picker (ui/emoji_picker.py) and the composer's `:shortcode:` completion, offscreen
with real widgets: searching and picking, groups, the recent row, the status line that names an
emoji where no colour emoji font draws it, the composer's emoji button, the matches list under
the cursor, and a closing colon turning a shortcode into its emoji."""

from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402
from PySide6.QtCore import QPoint, Qt  # noqa: E402
from PySide6.QtGui import QFontDatabase  # noqa: E402
from PySide6.QtWidgets import QHBoxLayout, QLabel, QListView, QListWidget, QWidget  # noqa: E402

from app import emojis  # noqa: E402
from ui import emoji_picker  # noqa: E402
from ui.composer import Composer  # noqa: E402
from ui.emoji_picker import (  # noqa: E402
    NO_FONT_HINT,
    CharRole,
    EmojiButton,
    EmojiPicker,
    NameRole,
    has_colour_emoji_font,
)


@pytest.fixture
def picker(qtbot):
    widget = EmojiPicker(recent=[])
    qtbot.addWidget(widget)
    widget.open_at(QPoint(10, 10))
    qtbot.waitExposed(widget)
    return widget


def grid(picker: EmojiPicker) -> QListView:
    return picker.findChild(QListView, "emojiGrid")


def shown(view: QListView) -> list[str]:
    model = view.model()
    return [model.index(row, 0).data(CharRole) for row in range(model.rowCount())]


def tooltips(view: QListView) -> list[str]:
    model = view.model()
    return [model.index(row, 0).data(Qt.ItemDataRole.ToolTipRole)
            for row in range(model.rowCount())]


def status(picker: EmojiPicker) -> str:
    return picker.findChild(QLabel, "emojiStatus").text()


def click_cell(qtbot, view: QListView, char: str) -> None:
    row = shown(view).index(char)
    index = view.model().index(row, 0)
    view.scrollTo(index)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                     pos=view.visualRect(index).center())


# The picker -----------------------------------------------------------------------------------

def test_it_opens_on_the_first_group_with_the_search_focused(qtbot, picker):
    assert picker.isVisible() and picker.windowFlags() & Qt.WindowType.Popup
    assert picker.findChild(QListWidget, "emojiGroups").count() == len(emojis.GROUPS)
    assert picker.group() == "smileys"
    assert shown(grid(picker)) == [item.char for item in emojis.by_group()["smileys"]]
    assert tooltips(grid(picker))[shown(grid(picker)).index("😀")] == ":grinning_face:"
    assert picker.findChild(QLabel, "emojiSection").text() == "Smileys"
    qtbot.waitUntil(lambda: picker.search.hasFocus())
    assert not picker.findChild(QListView, "emojiRecent").isVisible()  # nothing picked yet


def test_search_filters_and_enter_picks_the_first_match(qtbot, picker):
    qtbot.keyClicks(picker.search, "thumbs")
    assert shown(grid(picker))[:2] == ["👍", "👎"]
    assert tooltips(grid(picker))[:2] == [":thumbs_up:", ":thumbs_down:"]
    assert picker.group() is None
    assert picker.findChild(QLabel, "emojiSection").text() == "Search results"
    with qtbot.waitSignal(picker.picked) as signal:
        qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert signal.args == ["👍"]
    assert not picker.isVisible() and picker.recent() == ["👍"]


def test_no_match_says_so_and_clearing_the_search_lists_the_group_again(qtbot, picker):
    qtbot.keyClicks(picker.search, "zzqx")
    assert shown(grid(picker)) == []
    assert status(picker) == "No emoji matches 'zzqx'"
    picker.search.clear()
    assert picker.group() == "smileys" and len(shown(grid(picker))) > 100


def test_clicking_a_cell_picks_it_and_a_group_lists_its_emoji(qtbot, picker):
    groups = picker.findChild(QListWidget, "emojiGroups")
    flags = groups.findItems("Flags", Qt.MatchFlag.MatchExactly)[0]
    qtbot.mouseClick(groups.viewport(), Qt.MouseButton.LeftButton,
                     pos=groups.visualItemRect(flags).center())
    assert picker.group() == "flags" and "🇯🇵" in shown(grid(picker))
    assert ":Japan:" in tooltips(grid(picker))
    with qtbot.waitSignal(picker.picked) as signal:
        click_cell(qtbot, grid(picker), "🇯🇵")
    assert signal.args == ["🇯🇵"]


def test_keys_move_from_the_search_into_the_grid(qtbot, picker):
    picker.show_group("food")
    qtbot.keyClick(picker.search, Qt.Key.Key_Down)
    assert grid(picker).hasFocus()
    qtbot.keyClick(grid(picker), Qt.Key.Key_Right)
    second = emojis.by_group()["food"][1]
    assert status(picker).endswith(second.name)
    with qtbot.waitSignal(picker.picked) as signal:
        qtbot.keyClick(grid(picker), Qt.Key.Key_Return)
    assert signal.args == [second.char]


def test_escape_closes_without_a_pick(qtbot, picker):
    with qtbot.assertNotEmitted(picker.picked):
        qtbot.keyClick(picker.search, Qt.Key.Key_Escape)
    assert not picker.isVisible()


def test_recent_picks_come_first_in_their_own_row(qtbot, picker):
    changes = []
    picker.recentChanged.connect(changes.append)
    for char in ("🎉", "👍", "🎉"):
        picker.open_at(QPoint(10, 10))
        picker.pick(char)
    assert changes[-1] == ["🎉", "👍"] == picker.recent()
    picker.open_at(QPoint(10, 10))
    row = picker.findChild(QListView, "emojiRecent")
    assert row.isVisible() and shown(row) == ["🎉", "👍"]
    assert tooltips(row) == [":party_popper:", ":thumbs_up:"]
    with qtbot.waitSignal(picker.picked) as signal:
        click_cell(qtbot, row, "👍")
    assert signal.args == ["👍"] and picker.recent() == ["👍", "🎉"]
    picker.set_recent(["😀", "not an emoji", "😀"])  # e.g. loaded from preferences
    assert picker.recent() == ["😀"]


def test_pickers_without_a_list_share_the_sessions_recent_picks(qtbot, monkeypatch):
    monkeypatch.setattr(emoji_picker, "_session_recent", [])
    first, second = EmojiPicker(), EmojiPicker()
    for widget in (first, second):
        qtbot.addWidget(widget)
    first.pick("🚀")
    assert second.recent() == ["🚀"]
    assert EmojiPicker(recent=[]).recent() == []


def test_open_at_hands_only_that_opening_its_pick(qtbot, picker):
    reacted = []
    picker.open_at(QPoint(10, 10), on_pick=reacted.append)
    picker.pick("👀")
    picker.open_at(QPoint(10, 10))
    picker.pick("🎉")
    picker.open_at(QPoint(10, 10), on_pick=reacted.append)
    picker.hide()  # clicked away
    picker.open_at(QPoint(10, 10))
    picker.pick("🚀")
    assert reacted == ["👀"]


def test_without_a_colour_font_the_status_line_names_the_hovered_emoji(qtbot, monkeypatch):
    monkeypatch.setattr(emoji_picker, "emoji_font_family", lambda: None)
    widget = EmojiPicker(recent=[])
    qtbot.addWidget(widget)
    widget.open_at(QPoint(10, 10))
    qtbot.waitExposed(widget)
    assert not has_colour_emoji_font()
    qtbot.keyClicks(widget.search, "grinning")
    cells = grid(widget)
    assert status(widget) == tooltips(cells)[0]  # the current one, named
    target = shown(cells).index("😄")
    index = cells.model().index(target, 0)
    qtbot.mouseMove(cells.viewport(), cells.visualRect(index).center())
    qtbot.waitUntil(lambda: status(widget) == ":grinning_face_with_smiling_eyes:")
    widget.search.clear()
    widget.search.setText("zzqx")
    widget.search.clear()  # back to a group: the first one is current again
    assert status(widget) == ":grinning_face:"
    widget._show_name(cells.model().index(-1, 0))
    assert status(widget) == NO_FONT_HINT


def test_with_a_colour_font_the_status_line_shows_the_glyph_too(qtbot, monkeypatch):
    monkeypatch.setattr(emoji_picker, "emoji_font_family", lambda: "DejaVu Sans")
    widget = EmojiPicker(recent=[])
    qtbot.addWidget(widget)
    widget.open_at(QPoint(10, 10))
    assert has_colour_emoji_font()
    assert status(widget) == "😀  :grinning_face:"
    assert grid(widget).font().families()[0] == "DejaVu Sans"


def test_colour_font_detection_reads_the_installed_families(qtbot):
    installed = {family.casefold() for family in QFontDatabase.families()}
    expected = any(f.casefold() in installed for f in emoji_picker.COLOUR_EMOJI_FAMILIES)
    assert has_colour_emoji_font() == expected


# The composer's button -------------------------------------------------------------------------

@pytest.fixture
def composer(qtbot):
    holder = QWidget()
    row = QHBoxLayout(holder)
    box = Composer(objectName="composer")
    row.addWidget(box)
    qtbot.addWidget(holder)
    holder.show()
    qtbot.waitExposed(holder)
    box.setFocus()
    box.set_nicknames(["ada", "bob"])
    yield box
    holder.close()


def test_the_emoji_button_inserts_the_pick_at_the_cursor(qtbot, composer):
    button = EmojiButton(composer, EmojiPicker(recent=[]))
    composer.parentWidget().layout().addWidget(button)
    assert button.objectName() == "emojiButton" and button.toolTip()
    qtbot.keyClicks(composer, "so  good")
    for _ in range(len(" good")):
        qtbot.keyClick(composer, Qt.Key.Key_Left)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)
    picker = button.picker()
    qtbot.waitUntil(picker.isVisible)
    qtbot.keyClicks(picker.search, "tada")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert composer.toPlainText() == "so 🎉 good"
    assert not picker.isVisible()
    # The same picker opened for something else (a reaction) leaves the composer alone.
    reacted = []
    picker.open_at(QPoint(0, 0), on_pick=reacted.append)
    picker.pick("👍")
    assert reacted == ["👍"] and composer.toPlainText() == "so 🎉 good"


# `:shortcode:` completion -----------------------------------------------------------------------

def matches(composer: Composer) -> QListWidget:
    return composer.findChild(QListWidget, "shortcodeList")


def rows(composer: Composer) -> list[tuple[str, str]]:
    """(emoji, shortcode) of each row of the matches list."""
    found = matches(composer)
    return [(found.item(i).data(CharRole), found.item(i).data(NameRole))
            for i in range(found.count())]


def test_a_colon_and_two_letters_list_matches_and_tab_inserts(qtbot, composer):
    qtbot.keyClicks(composer, "great :t")
    assert not matches(composer).isVisible()
    qtbot.keyClicks(composer, "hu")
    assert matches(composer).isVisible()
    assert rows(composer)[:2] == [("👍", ":thumbsup:"), ("👎", ":thumbsdown:")]
    assert matches(composer).currentRow() == 0
    qtbot.keyClick(composer, Qt.Key.Key_Down)
    qtbot.keyClick(composer, Qt.Key.Key_Down)
    qtbot.keyClick(composer, Qt.Key.Key_Up)
    assert matches(composer).currentRow() == 1
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "great 👎" and not matches(composer).isVisible()
    assert composer.textCursor().position() == len("great ") + 2  # UTF-16 units


def test_enter_inserts_the_match_without_sending(qtbot, composer):
    sent = []
    composer.submitted.connect(sent.append)
    qtbot.keyClicks(composer, ":+1")
    assert rows(composer) == [("👍", ":+1:")]
    qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert composer.toPlainText() == "👍" and sent == []
    qtbot.keyClick(composer, Qt.Key.Key_Return)
    assert sent == ["👍"]


def test_clicking_a_match_inserts_it(qtbot, composer):
    qtbot.keyClicks(composer, "x :rocke")
    found = matches(composer)
    item = found.item(0)
    qtbot.mouseClick(found.viewport(), Qt.MouseButton.LeftButton,
                     pos=found.visualItemRect(item).center())
    assert composer.toPlainText() == "x 🚀"


def test_escape_closes_the_list_and_tab_completes_nicknames_again(qtbot, composer):
    qtbot.keyClicks(composer, ":smile")
    assert matches(composer).isVisible()
    qtbot.keyClick(composer, Qt.Key.Key_Escape)
    assert not matches(composer).isVisible() and composer.toPlainText() == ":smile"
    composer.clear()
    qtbot.keyClicks(composer, "ad")
    qtbot.keyClick(composer, Qt.Key.Key_Tab)
    assert composer.toPlainText() == "ada: "
    qtbot.keyClicks(composer, "ok:th")  # not after a space: no list
    assert not matches(composer).isVisible()
    qtbot.keyClicks(composer, " :zzqx")  # nothing matches: no list
    assert not matches(composer).isVisible()


def test_the_list_goes_when_the_word_is_left_or_the_program_sets_text(qtbot, composer):
    qtbot.keyClicks(composer, ":smile")
    qtbot.keyClicks(composer, " ")
    assert not matches(composer).isVisible()
    qtbot.keyClick(composer, Qt.Key.Key_Backspace)
    assert matches(composer).isVisible()
    composer.setPlainText("")
    assert not matches(composer).isVisible()
    qtbot.keyClicks(composer, "a :smile")
    assert matches(composer).isVisible()
    qtbot.mouseClick(composer.viewport(), Qt.MouseButton.LeftButton, pos=QPoint(2, 2))
    assert not matches(composer).isVisible()  # clicked elsewhere in the text


def test_a_closing_colon_turns_a_known_shortcode_into_its_emoji(qtbot, composer):
    qtbot.keyClicks(composer, "ship it :rocket:")
    assert composer.toPlainText() == "ship it 🚀"
    qtbot.keyClicks(composer, " :nope: and 10:30:")
    assert composer.toPlainText() == "ship it 🚀 :nope: and 10:30:"
    composer.undo()  # the turn is its own undo step
    qtbot.keyClicks(composer, "")
    assert composer.toPlainText().startswith("ship it ")
