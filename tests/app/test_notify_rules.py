"""The notification rules with no Node, Qt or D-Bus (app/notify_rules.py), and the settings
file they are kept in (app/notify_settings.py)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from app import notify_settings
from app.notify_rules import (
    MINUTES_A_DAY,
    Decider,
    Incoming,
    NotifyError,
    NotifySettings,
    Rule,
    Schedule,
    badge,
    check_keywords,
    conversation_key,
    do_not_disturb,
    level,
    parse_schedule,
    reason,
)

minutes = st.integers(0, MINUTES_A_DAY - 1)
WS = b"w" * 32


def _incoming(text: str, kind: str = "channel", channel: str | bytes = "general") -> Incoming:
    return Incoming(conversation_key(channel), kind, channel, "#general", b"m", "bob", text, 1)


@given(minutes, minutes, minutes)
def test_a_schedule_covers_the_minutes_from_start_to_end_across_midnight(start, end, minute):
    if start == end:
        return
    schedule = Schedule(start, end)
    # walking forward from the start, the end comes after `length` minutes
    length = (end - start) % MINUTES_A_DAY
    assert schedule.covers(minute) == ((minute - start) % MINUTES_A_DAY < length)


def test_an_evening_schedule_runs_over_midnight():
    schedule = parse_schedule("22:00-08:00")
    assert [schedule.covers(m) for m in (21 * 60 + 59, 22 * 60, 0, 7 * 60 + 59, 8 * 60)] == \
        [False, True, True, True, False]
    assert str(schedule) == "22:00-08:00"


@pytest.mark.parametrize("text", ["22:00", "24:00-08:00", "22:00-22:00", "٢٢:00-08:00", "x-y"])
def test_a_bad_schedule_is_refused(text):
    with pytest.raises(NotifyError):
        parse_schedule(text)


@given(st.floats(0, 1e10), minutes)
def test_do_not_disturb_now_until_and_by_schedule(now, minute):
    assert not do_not_disturb(NotifySettings(), now, minute)
    assert do_not_disturb(NotifySettings(paused=True), now, minute)
    assert do_not_disturb(NotifySettings(paused_until=now + 1), now, minute)
    assert not do_not_disturb(NotifySettings(paused_until=now), now, minute)
    schedule = Schedule(minute, (minute + 1) % MINUTES_A_DAY)
    assert do_not_disturb(NotifySettings(schedule=schedule), now, minute)


def test_levels_default_by_kind_and_end_at_their_time():
    assert level(NotifySettings(), "#general", "channel", 0) == "mentions"
    assert level(NotifySettings(), "p:00", "private", 0) == "mentions"
    assert level(NotifySettings(), "p:00", "dm", 0) == "all"
    muted = NotifySettings(rules={"#general": Rule("none", until=100.0)})
    assert level(muted, "#general", "channel", 99.0) == "none"
    assert level(muted, "#general", "channel", 100.0) == "mentions"


def test_what_notifies_at_each_level():
    keywords = NotifySettings(keywords=("deploy",))
    mute = NotifySettings(rules={"#general": Rule("none")}, keywords=("deploy",))
    every = NotifySettings(rules={"#general": Rule("all")})
    assert reason(keywords, _incoming("hi"), "ada", 0) is None
    assert reason(keywords, _incoming("@ada hi"), "ada", 0) == "mention"
    assert reason(keywords, _incoming("adam hi"), "ada", 0) is None  # not a mention of ada
    assert reason(keywords, _incoming("Deploy now"), "ada", 0) == "keyword"
    assert reason(keywords, _incoming("redeployed"), "ada", 0) is None
    assert reason(mute, _incoming("deploy now"), "ada", 0) is None
    assert reason(mute, _incoming("ada: deploy now"), "ada", 0) == "mention"
    assert reason(every, _incoming("hi"), "ada", 0) == "message"
    dm = _incoming("hi", "dm", b"\x01" * 32)
    assert reason(NotifySettings(), dm, "ada", 0) == "message"


def test_the_decider_holds_back_during_do_not_disturb_and_tells_once_after():
    decider = Decider()
    on = NotifySettings(paused=True)
    assert decider.decide(on, _incoming("ada: a"), "ada", 0, 0) is None
    assert decider.decide(on, _incoming("nothing"), "ada", 0, 0) is None  # would not notify
    assert decider.missed == 1
    assert decider.resumed(on, 0, 0) is None
    told = decider.resumed(NotifySettings(), 0, 0)
    assert told is not None and told.reason == "missed" and "1 notification " in told.body
    assert decider.resumed(NotifySettings(), 0, 0) is None and decider.missed == 0


def test_an_alert_names_the_conversation_and_author_and_starts_the_text():
    decider = Decider()
    found = decider.decide(NotifySettings(), _incoming("ada " + "x" * 300), "ada", 0, 0)
    assert found is not None and found.title == "bob mentioned you in #general"
    assert len(found.body) == 120 and found.body.endswith("…")
    assert found.channel == "general" and found.message == b"m"


def test_a_muted_badge_counts_nothing_but_keeps_the_mention():
    assert badge("none", 5, True) == (0, True)
    assert badge("none", 5, False) == (0, False)
    assert badge("mentions", 5, False) == (5, False)


def test_keywords_are_trimmed_and_deduplicated():
    assert check_keywords([" deploy ", "Deploy", "on   call"]) == ("deploy", "on call")
    with pytest.raises(NotifyError):
        check_keywords(["  "])


def test_settings_round_trip_and_a_bad_file_reads_as_the_defaults(tmp_path):
    notify_settings.set_level(tmp_path, WS, "#random", "none", until=50.0)
    notify_settings.save(tmp_path, WS, keywords=["deploy"], schedule=parse_schedule("22:00-08:00"))
    got = notify_settings.load(tmp_path, WS)
    assert got.rules == {"#random": Rule("none", 50.0)} and got.keywords == ("deploy",)
    assert str(got.schedule) == "22:00-08:00" and got.show_text
    assert notify_settings.load(tmp_path, b"o" * 32).rules == {}  # levels are per workspace
    notify_settings.set_level(tmp_path, WS, "#random", None)
    assert notify_settings.load(tmp_path, WS).rules == {}
    (tmp_path / notify_settings.FILE).write_text(json.dumps(
        {"keywords": "deploy", "paused": 1, "levels": {WS.hex(): {"#x": {"level": "loud"}}}}))
    assert notify_settings.load(tmp_path, WS) == NotifySettings()
    (tmp_path / notify_settings.FILE).write_text("{")
    assert notify_settings.load(tmp_path, WS) == NotifySettings()


@given(st.lists(st.tuples(st.sampled_from(["ada: hi", "hi", "deploy it", "adam"]),
                          st.booleans(), st.booleans()), max_size=40))
def test_every_notifying_message_is_raised_or_counted_once_as_missed(steps):
    """Whatever the order of messages and do not disturb turning on and off, each message
    that notifies is raised at once or told in exactly one "missed" count after."""
    decider = Decider()
    settings = NotifySettings(keywords=("deploy",))
    raised = told = notifying = 0
    for text, paused, check in steps:
        held = NotifySettings(keywords=settings.keywords, paused=paused)
        notifying += reason(held, _incoming(text), "ada", 0) is not None
        raised += decider.decide(held, _incoming(text), "ada", 0, 0) is not None
        missed = decider.resumed(held, 0, 0) if check else None
        if missed is not None:
            told += int(missed.body.split()[0])
    end = decider.resumed(settings, 0, 0)
    told += int(end.body.split()[0]) if end is not None else 0
    assert raised + told == notifying and decider.missed == 0
