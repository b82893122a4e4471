"""app/emojis.py without Qt: the catalogue and its groups, search ranking, shortcodes turned into
emoji in a message, the composer's typed and closed shortcodes, and recent picks."""

from __future__ import annotations

import emoji
import pytest
from hypothesis import given
from hypothesis import strategies as st

from app import emojis

FULLY_QUALIFIED = emoji.STATUS["fully_qualified"]


def test_the_catalogue_is_every_fully_qualified_emoji_without_a_skin_tone_once():
    chars = [item.char for item in emojis.catalogue()]
    assert len(chars) == len(set(chars))
    assert 1800 < len(chars) < 2100  # the Unicode 15-17 RGI set less its skin-toned variants
    for char in chars:
        assert emoji.EMOJI_DATA[char]["status"] == FULLY_QUALIFIED
        assert not any(0x1F3FB <= ord(c) <= 0x1F3FF for c in char)
    assert "❤️" in chars and "❤" not in chars  # the qualified one, with its VS16
    assert "👍🏽" not in chars


def test_the_group_table_is_in_code_point_order():
    starts = [start for start, _ in emojis._GROUP_TABLE]
    assert starts == sorted(set(starts))
    assert {group for _, group in emojis._GROUP_TABLE} == set(emojis.GROUPS)


@pytest.mark.parametrize("char, group", [
    ("😀", "smileys"), ("❤️", "smileys"), ("🙈", "smileys"), ("💯", "smileys"),
    ("👍", "people"), ("🧑‍💻", "people"), ("👨‍👩‍👧", "people"), ("🫶", "people"), ("👀", "people"),
    ("🐈", "animals"), ("🌵", "animals"), ("🍄", "animals"), ("🐻‍❄️", "animals"),
    ("🍕", "food"), ("🦀", "food"), ("☕", "food"), ("🍋‍🟩", "food"),
    ("🚀", "travel"), ("⌛", "travel"), ("🔥", "travel"), ("⭐", "travel"), ("⚓", "travel"),
    ("🎉", "activities"), ("⚽", "activities"), ("⛳", "activities"), ("♠️", "activities"),
    ("💡", "objects"), ("📎", "objects"), ("⌨️", "objects"), ("🫧", "objects"),
    ("✅", "symbols"), ("#️⃣", "symbols"), ("🔴", "symbols"), ("♻️", "symbols"),
    ("🇯🇵", "flags"), ("🏳️‍🌈", "flags"), ("🏁", "flags"), ("🏴‍☠️", "flags"),
])
def test_groups(char, group):
    assert emojis.group_of(char) == group
    assert emojis.find(char).group == group


def test_groups_list_the_catalogue_in_order_and_none_is_empty():
    groups = emojis.by_group()
    assert tuple(groups) == emojis.GROUPS
    assert all(groups.values())
    assert [item for items in groups.values() for item in items] == list(emojis.catalogue())
    assert set(emojis.GROUP_LABELS) == set(emojis.GROUPS)


def test_search_ranks_a_word_prefix_before_a_substring():
    found = emojis.search("thu", 10)
    chars = [char for _, char in found]
    assert chars[:2] == ["👍", "👎"]  # ":thumbsup:", ":thumbsdown:": the name starts "thu"
    assert dict(found)[":thunder_cloud_and_rain:"] == "⛈️"  # a word starts "thu"
    assert "🇱🇹" in chars  # ":Lithuania:" only contains it: last
    assert chars.index("⛈️") < chars.index("🇱🇹")
    assert len(chars) == len(set(chars))  # once each, under its best name


def test_search_finds_aliases_and_exact_names_first():
    assert emojis.search("+1") == [(":+1:", "👍")]
    assert emojis.search(":thumbsup", 1) == [(":thumbsup:", "👍")]
    assert emojis.search("smile", 1) == [(":smile:", "😄")]
    assert emojis.search("red heart", 1) == [(":red_heart:", "❤️")]
    assert emojis.search("joy", 2) == [(":joy:", "😂"), (":joy_cat:", "😹")]
    assert emojis.search("", 5) == [] and emojis.search("zzzq", 5) == []
    assert len(emojis.search("a", 7)) == 7 and emojis.search("a", 0) == []


def test_search_leaves_skin_tones_out():
    assert all(not any(0x1F3FB <= ord(c) <= 0x1F3FF for c in char)
               for _, char in emojis.search("hand", 200))


def test_lookup_and_emojize():
    assert emojis.lookup(":thumbs_up:") == "👍" == emojis.lookup("+1") == emojis.lookup(":+1:")
    assert emojis.lookup(":cat:") == "🐈"  # 🐈's CLDR name, before 🐱's alias
    assert emojis.lookup(":Japan:") == "🇯🇵" and emojis.lookup(":nope:") is None
    assert emojis.lookup(":thumbs_up_medium_skin_tone:") == "👍🏽"
    assert emojis.shortcode(emojis.lookup(":+1:")) == ":thumbs_up:"  # and back
    assert emojis.emojize(":thumbs_up:") == "👍"
    assert emojis.emojize("great :+1::tada: (:smile:) :nope: :thumbs_up") == \
        "great 👍🎉 (😄) :nope: :thumbs_up"
    assert emojis.emojize("a:b:c at 10:30:45, std::vector") == "a:b:c at 10:30:45, std::vector"
    assert emojis.emojize(":red_heart:") == "❤️"  # fully qualified


@given(st.text(alphabet=st.sampled_from("ab: _+1\n😀"), max_size=30))
def test_emojize_turns_only_whole_known_shortcodes(text):
    result = emojis.emojize(text)
    assert emojis.emojize(result) == result  # nothing left to turn
    if ":" not in text:
        assert result == text


def test_typed_and_closed_shortcodes():
    assert emojis.typed_shortcode(":thu") == (0, "thu")
    assert emojis.typed_shortcode("ok :+1") == (3, "+1")
    assert emojis.typed_shortcode("ok :t") is None  # two characters at least
    assert emojis.typed_shortcode("ok:thu") is None  # after a space or at the start only
    assert emojis.typed_shortcode("ok :thu ") is None
    assert emojis.closed_shortcode("hi :thumbs_up:") == (3, "👍")
    assert emojis.closed_shortcode("😀:tada:") == (1, "🎉")
    assert emojis.closed_shortcode("hi :nope:") is None
    assert emojis.closed_shortcode("a:b:") is None


def test_remember_keeps_the_most_recent_first_once_and_at_most_the_limit():
    recent = emojis.remember(["🎉", "👍"], "👍")
    assert recent == ["👍", "🎉"]
    many: list[str] = []
    for item in emojis.catalogue()[:emojis.RECENT_LIMIT + 5]:
        many = emojis.remember(many, item.char)
    assert len(many) == emojis.RECENT_LIMIT and many[0] == emojis.catalogue()[
        emojis.RECENT_LIMIT + 4].char
