"""The message list's pure logic (ui/_rows.py), without Qt: grouping, days, names, author
colours and identicons, links, times and nickname completion."""

from __future__ import annotations

import subprocess
import sys
from datetime import date, datetime
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from storage import Message
from ui._rows import (
    GRID,
    GROUP_GAP_MS,
    MIN_CONTRAST,
    Link,
    NickCompleter,
    NickIndex,
    author_hue,
    avatar_rgb,
    body_text,
    clock,
    contrast,
    day_label,
    day_starts,
    display_name,
    from_utf16,
    group_starts,
    identicon,
    links,
    member_names,
    ms_until_next_day,
    name_rgb,
    nick_keys,
    nick_matches,
    shared_nicks,
    starts_day,
    starts_group,
    time_label,
    to_utf16,
)

ADA, BOB, EVE = b"\xad" * 32, b"\xb0" * 32, b"\xe7" * 32
NOON = int(datetime(2024, 3, 5, 12, 0).timestamp() * 1000)  # local time
MINUTE = 60_000


def msg(author: bytes = ADA, ts: int = NOON, text: str = "hi", nick: str | None = "ada",
        n: int = 0) -> Message:
    return Message(bytes([n % 256]) * 32, "general", author, nick, ts, text)


def test_ui_rows_imports_no_qt():
    probe = "import sys, ui._rows; print(any(m.startswith('PySide6') for m in sys.modules))"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[2], timeout=60, check=True)
    assert result.stdout.strip() == "False"


# Grouping --------------------------------------------------------------------------------------

def test_a_burst_by_one_author_shows_one_header():
    burst = [msg(ts=NOON + i * MINUTE, n=i) for i in range(4)]
    assert group_starts(burst) == [True, False, False, False]


def test_a_new_author_a_pause_or_a_new_day_starts_a_group():
    first = msg(ts=NOON)
    assert starts_group(first, msg(author=BOB, nick="bob", ts=NOON + 1))
    assert not starts_group(first, msg(ts=NOON + GROUP_GAP_MS))
    assert starts_group(first, msg(ts=NOON + GROUP_GAP_MS + 1))
    before_midnight = int(datetime(2024, 3, 5, 23, 59).timestamp() * 1000)
    assert starts_group(msg(ts=before_midnight), msg(ts=before_midnight + 2 * MINUTE))
    assert starts_group(None, first)


def test_me_rows_name_themselves_and_the_next_row_shows_a_header():
    rows = [msg(n=0), msg(text="/me waves", n=1, ts=NOON + 1), msg(n=2, ts=NOON + 2)]
    assert group_starts(rows) == [True, False, True]
    assert body_text(rows[1], "ada") == "* ada waves"
    assert body_text(rows[0], "ada") == "hi"


messages = st.lists(st.builds(
    msg, author=st.sampled_from([ADA, BOB, EVE]),
    ts=st.integers(NOON - 3 * 24 * 60 * MINUTE, NOON + 3 * 24 * 60 * MINUTE),
    text=st.sampled_from(["hi", "/me waves", "ok"]),
    nick=st.sampled_from(["ada", "Ada", "bob", None]), n=st.integers(0, 255)), max_size=30)


@given(messages, messages)
def test_loading_an_older_page_only_changes_the_old_first_row(older, newer):
    """What the model does when a page loads above: the rows below keep their flags, and
    only the old first row is decided again (it may now continue the older page's last, or
    be on its day)."""
    older = sorted(older, key=lambda m: m.ts)
    newer = sorted(newer, key=lambda m: m.ts)
    joined, days = group_starts(older), day_starts(older)
    tail, tail_days = group_starts(newer), day_starts(newer)
    if older and newer:
        tail[0] = starts_group(older[-1], newer[0])
        tail_days[0] = starts_day(older[-1], newer[0])
    assert joined + tail == group_starts(older + newer)
    assert days + tail_days == day_starts(older + newer)


@given(messages)
def test_a_new_day_always_starts_a_group(rows):
    rows = sorted(rows, key=lambda m: m.ts)
    for row, (day, group) in enumerate(zip(day_starts(rows), group_starts(rows), strict=True)):
        assert day == (row == 0 or starts_day(rows[row - 1], rows[row]))
        if day and not rows[row].text.startswith("/me "):
            assert group


def test_the_first_row_of_each_local_day_starts_one():
    late = int(datetime(2024, 3, 4, 23, 58).timestamp() * 1000)
    rows = [msg(ts=late, n=0), msg(ts=late + MINUTE, n=1), msg(ts=late + 3 * MINUTE, n=2),
            msg(ts=late + 4 * MINUTE, n=3, text="/me waves")]
    assert day_starts(rows) == [True, False, True, False]
    assert day_starts(rows[1:], previous=rows[0]) == [False, True, False]
    assert group_starts(rows) == [True, False, True, False]  # same author, but a new day


# Names -----------------------------------------------------------------------------------------

def test_two_people_with_one_nickname_are_told_apart_by_key():
    rows = [msg(ADA, nick="ada"), msg(EVE, nick="ada"), msg(BOB, nick="bob")]
    shared = shared_nicks(rows)
    assert display_name(rows[0], shared) == f"ada ·{ADA.hex()[:6]}"
    assert display_name(rows[1], shared) == f"ada ·{EVE.hex()[:6]}"
    assert display_name(rows[2], shared) == "bob"  # unique nicknames show bare
    assert body_text(msg(EVE, nick="ada", text="/me waves"), display_name(rows[1], shared)) \
        == f"* ada ·{EVE.hex()[:6]} waves"


def test_look_alike_nicknames_and_anonymous_authors_count_as_shared():
    assert shared_nicks([msg(ADA, nick="Ada"), msg(EVE, nick="ＡＤＡ")]) == {"ada"}
    assert shared_nicks([msg(ADA, nick=None), msg(EVE, nick=None)]) == set(nick_keys(None))
    assert shared_nicks([msg(ADA, nick="ada"), msg(ADA, nick="ada")]) == set()
    assert display_name(msg(nick=None), set()) == "anonymous"


LOOKALIKE_ALICES = ["\u0430lice", "al\u200dice", "aIice", "ALICE", "\uff41lice", "a\u217cice"]


def test_lookalike_nicknames_from_other_scripts_or_with_invisibles_get_key_suffixes():
    """A Cyrillic а, a zero-width joiner, a capital I for the l, fullwidth or a Roman numeral
    fifty: each reads as "alice", so both authors show their key."""
    for fake in LOOKALIKE_ALICES:
        rows = [msg(ADA, nick="alice", n=1), msg(EVE, nick=fake, n=2), msg(BOB, nick="bob", n=3)]
        shared = shared_nicks(rows)
        assert display_name(rows[0], shared) == f"alice ·{ADA.hex()[:6]}", fake
        assert display_name(rows[1], shared) == f"{fake} ·{EVE.hex()[:6]}", fake
        assert display_name(rows[2], shared) == "bob"
        # The clash shows whichever of them loads first, and in a /me row.
        index = NickIndex(rows[1:])
        assert index.name(rows[1]) == fake
        assert index.add(rows[:1]) and index.name(rows[1]) == f"{fake} ·{EVE.hex()[:6]}"
        emote = msg(EVE, nick=fake, text="/me waves", n=4)
        assert body_text(emote, index.name(emote)) == f"* {fake} ·{EVE.hex()[:6]} waves"


def test_different_names_stay_bare():
    alisa = "\u0430\u043b\u0438\u0441\u0430"  # Cyrillic, reads "алиса", not "alice"
    rows = [msg(ADA, nick="alice"), msg(EVE, nick="alicia"), msg(BOB, nick=alisa)]
    assert [display_name(m, shared_nicks(rows)) for m in rows] == ["alice", "alicia", alisa]


def test_members_and_completions_tell_lookalikes_apart():
    nobody = b"\x01" * 32
    names = member_names([(ADA, "alice"), (EVE, "\u0430lice"), (BOB, "bob"), (nobody, None)])
    assert names == {ADA: f"alice ·{ADA.hex()[:6]}", EVE: f"\u0430lice ·{EVE.hex()[:6]}",
                     BOB: "bob", nobody: "anonymous"}
    completer = NickCompleter([names[ADA], names[EVE], names[BOB]])
    assert completer.complete("al", 2) == (f"alice ·{ADA.hex()[:6]}: ", 15)
    completed = completer.complete("\u0430l", 2)
    assert completed is not None and completed[0] == f"\u0430lice ·{EVE.hex()[:6]}: "


@given(messages, st.integers(0, 30))
def test_the_nickname_index_grows_like_it_was_built_at_once(rows, cut):
    index = NickIndex(rows[cut:])
    index.add(rows[:cut])
    assert index.shared == shared_nicks(rows)


# Links -----------------------------------------------------------------------------------------

def urls(text: str) -> list[str]:
    return [link.url for link in links(text)]


def test_links_are_found_with_their_ranges():
    text = "see https://example.org/a?b=1 and www.hearth.chat."
    found = links(text)
    assert found == [Link(4, 29, "https://example.org/a?b=1"),
                     Link(34, 49, "http://www.hearth.chat")]
    assert text[found[0].start:found[0].end] == "https://example.org/a?b=1"
    assert text[found[1].start:found[1].end] == "www.hearth.chat"


def test_link_edges_trailing_punctuation_and_brackets():
    assert urls("(see https://x.org/a)") == ["https://x.org/a"]
    assert urls("https://en.wikipedia.org/wiki/Rust_(language), yes") == [
        "https://en.wikipedia.org/wiki/Rust_(language)"]
    assert urls("HTTP://X.ORG!") == ["HTTP://X.ORG"]
    assert urls("no links: http:// www. awww.x.org mailto:a@www.x.org") == []
    assert urls("xhttp://a.org and_www.b.org") == []  # glued to a word: not a link
    assert urls("two http://a.org,https://b.org") == ["http://a.org,https://b.org"]
    assert urls("") == []


def test_link_ranges_convert_to_qt_positions_past_emoji():
    text = "😀😀 www.x.org"
    (link,) = links(text)
    assert (link.start, link.end) == (3, 12)
    assert link.utf16(text) == (5, 14)  # each emoji is two UTF-16 units


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
       st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")), max_size=5))
def test_links_are_ordered_slices_of_the_text(before, host):
    text = f"{before} https://h{host}.org/p {before}"
    found = links(text)
    assert found, text
    for link in found:
        assert 0 <= link.start < link.end <= len(text)
        shown = text[link.start:link.end]
        assert link.url in (shown, "http://" + shown)
        assert link.url.lower().startswith(("http://", "https://"))
        assert shown[-1] not in ".,;:!?'\""
    assert all(a.end <= b.start for a, b in zip(found, found[1:], strict=False))


@given(st.text(max_size=50).filter(lambda t: "http" not in t.lower() and "www." not in t.lower()))
def test_text_without_a_scheme_or_www_has_no_links(text):
    assert links(text) == []


@given(st.text(st.characters(blacklist_categories=("Cs",)), max_size=30), st.data())
def test_utf16_positions_round_trip(text, data):
    i = data.draw(st.integers(0, len(text)))
    assert to_utf16(text, i) == len(text[:i].encode("utf-16-le")) // 2
    assert from_utf16(text, to_utf16(text, i)) == i


# Times -----------------------------------------------------------------------------------------

def test_time_labels_name_the_day_when_it_is_not_today():
    today = date(2024, 3, 5)
    assert time_label(NOON + 3 * MINUTE, today) == "12:03"
    assert time_label(NOON - 24 * 60 * MINUTE, today) == "Yesterday 12:00"
    march_1 = int(datetime(2024, 3, 1, 9, 30).timestamp() * 1000)
    assert time_label(march_1, today).endswith("1 Mar 09:30")
    last_year = int(datetime(2023, 12, 24, 8, 0).timestamp() * 1000)
    assert time_label(last_year, today) == "24 Dec 2023 08:00"


# Days ------------------------------------------------------------------------------------------

def test_day_labels_say_today_yesterday_or_the_date():
    today = date(2024, 3, 5)
    assert day_label(NOON, today) == "Today"
    assert day_label(NOON - 24 * 60 * MINUTE, today) == "Yesterday"
    march_1 = int(datetime(2024, 3, 1, 9, 30).timestamp() * 1000)
    assert day_label(march_1, today) == "Fri 1 Mar"
    last_year = int(datetime(2023, 12, 24, 8, 0).timestamp() * 1000)
    assert day_label(last_year, today) == "24 Dec 2023"
    # At midnight the same message moves on: today's is yesterday's, yesterday's a date.
    assert day_label(NOON, date(2024, 3, 6)) == "Yesterday"
    assert day_label(NOON, date(2024, 3, 7)) == "Tue 5 Mar"
    assert day_label(NOON, date(2025, 1, 2)) == "5 Mar 2024"


def test_headers_show_only_the_clock():
    assert clock(NOON + 3 * MINUTE) == "12:03"
    assert clock(NOON - 24 * 60 * MINUTE + 25 * MINUTE) == "12:25"  # yesterday's: no "Yesterday"


def test_the_day_changes_at_the_next_local_midnight():
    assert ms_until_next_day(datetime(2024, 3, 5, 23, 59, 59)) == 1000
    assert ms_until_next_day(datetime(2024, 3, 5, 12, 0)) == 12 * 3600 * 1000
    assert ms_until_next_day(datetime(2024, 3, 5, 0, 0)) == 24 * 3600 * 1000


# Author colours and identicons -----------------------------------------------------------------

keys = st.binary(min_size=32, max_size=32)
channel = st.integers(0, 255)
bases = st.tuples(channel, channel, channel)


@given(keys)
def test_avatars_come_from_the_key_alone(key):
    assert 0 <= author_hue(key) < 1
    assert author_hue(key) == author_hue(bytes(key))
    grid = identicon(key)
    assert len(grid) == GRID and all(len(row) == GRID for row in grid)
    assert all(row == row[::-1] for row in grid)  # mirrored left to right
    assert any(any(row) for row in grid)  # never a blank tile
    assert avatar_rgb(key) == avatar_rgb(bytes(key))


def test_two_keys_get_different_avatars():
    """Two "bob"s: the nickname plays no part, the keys tell them apart."""
    assert identicon(ADA) != identicon(BOB) != identicon(EVE)
    assert len({author_hue(k) for k in (ADA, BOB, EVE)}) == 3
    grids = {identicon(bytes([i]) * 32) for i in range(256)}
    assert len(grids) > 200  # 15 bits each: collisions are rare


def test_contrast_is_the_wcag_ratio():
    assert round(contrast((0, 0, 0), (255, 255, 255)), 1) == 21.0
    assert contrast((255, 255, 255), (0, 0, 0)) == contrast((0, 0, 0), (255, 255, 255))
    assert contrast((119, 119, 119), (119, 119, 119)) == 1.0
    assert round(contrast((118, 118, 118), (255, 255, 255)), 2) == 4.54


@given(keys, bases)
def test_a_name_reads_on_any_background(key, base):
    """Light, dark, or the mid-grey where neither black nor white reaches far."""
    assert contrast(name_rgb(key, base), base) >= MIN_CONTRAST


def test_a_name_keeps_its_hue_on_light_and_dark_backgrounds():
    import colorsys

    for key in (ADA, BOB, EVE):
        light = name_rgb(key, (255, 255, 255))
        dark = name_rgb(key, (24, 25, 28))
        assert contrast(light, (255, 255, 255)) >= MIN_CONTRAST
        assert contrast(dark, (24, 25, 28)) >= MIN_CONTRAST
        assert sum(light) < sum(dark)  # darker on light, lighter on dark
        for rgb in (light, dark):
            hue = colorsys.rgb_to_hls(*(c / 255 for c in rgb))[0]
            assert min(abs(hue - author_hue(key)), 1 - abs(hue - author_hue(key))) < 0.03


# Nickname completion ---------------------------------------------------------------------------

def test_matches_ignore_case_and_repeat_once():
    assert nick_matches("AD", ["bob", "ada", "Adam", "ada", " ada "]) == ["ada", "Adam"]
    assert nick_matches("z", ["ada"]) == []


def test_tab_completes_cycles_and_adds_a_colon_at_the_start():
    c = NickCompleter(["ada", "Adam", "bob"])
    assert c.complete("ad", 2) == ("ada: ", 5)
    assert c.complete("ada: ", 5) == ("Adam: ", 6)
    assert c.complete("Adam: ", 6) == ("ada: ", 5)  # round again
    assert c.complete("ada: ", 5, backward=True) == ("Adam: ", 6)
    assert c.complete("thanks B", 8) == ("thanks bob ", 11)
    assert c.complete("hi @ad", 6) == ("hi @ada ", 8)
    assert c.complete("ad later", 2) == ("ada:  later", 5)
    assert c.complete("hi zz", 5) is None
    assert c.complete("", 0) is None
    assert c.complete("hi ", 3) is None  # no word to complete


def test_typing_after_a_completion_starts_a_new_one():
    c = NickCompleter(["ada", "adam"])
    text, cursor = c.complete("ad", 2)
    assert c.complete(text + "and b", cursor + 5) is None
    assert c.complete("adam: and ad", 12) == ("adam: and ada ", 14)


@given(st.lists(st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")),
                        min_size=1, max_size=8), max_size=6),
       st.text(st.characters(blacklist_categories=("Cs", "Zs", "Cc", "Zl", "Zp")),
               min_size=1, max_size=3))
@example(names=["@"], prefix="@")  # nicknames that start with "@" complete too
@example(names=["@ada"], prefix="@a")
def test_a_completion_is_always_one_of_the_names(names, prefix):
    c = NickCompleter(names)
    result = c.complete(prefix, len(prefix))
    expected = nick_matches(prefix, names)
    if not expected:
        assert result is None
        return
    text, cursor = result
    assert text[:cursor].rstrip(": ") in expected or text[:cursor][:-2] in expected
    seen = set()
    for _ in range(len(expected)):
        seen.add(text[:cursor - 2])
        text, cursor = c.complete(text, cursor)
    assert seen == set(expected)
