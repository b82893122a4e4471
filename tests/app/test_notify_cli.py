"""`hearth notify` as a person runs it, and `hearth channels` counting what the window's
sidebar and title count: a muted channel no unread, but its mention marked."""

from __future__ import annotations

from pathlib import Path

from .conftest import Hearth, carry, personal_code


def test_levels_keywords_and_do_not_disturb(hearth: Hearth, tmp_path: Path):
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    hearth("channel", "create", "random", data=ada)
    assert hearth("notify", "general", data=ada).line == "#general  mentions only (the default)"
    assert hearth("notify", "#random", "--none", data=ada).line == "#random  nothing (muted)"
    set_ = hearth("notify", "general", "--all", "--until", "2h", "--json", data=ada).json()
    assert set_["level"] == "all" and set_["own"] and set_["until"] is not None
    hearth("notify", "--keywords", "deploy", "on call", "--dnd", "22:00-08:00", "--text", "hide",
           data=ada)
    shown = hearth("notify", "--json", data=ada).json()
    assert shown["keywords"] == ["deploy", "on call"] and shown["show_text"] is False
    assert shown["do_not_disturb"]["schedule"] == "22:00-08:00"
    assert [(c["conversation"], c["level"]) for c in shown["levels"]] == [
        ("#general", "all"), ("#random", "none")]
    text = hearth("notify", data=ada).stdout
    assert "keywords: deploy, on call" in text and "daily 22:00-08:00" in text
    hearth("notify", "--dnd", "off", "--keywords", data=ada)
    assert hearth("notify", data=ada).stdout.splitlines()[-3:] == [
        "keywords: none", "do not disturb: off", "message text in notifications: hidden"]
    assert hearth("notify", "random", "--default", "--json", data=ada).json()["own"] is False


def test_what_cannot_be_is_refused_and_nothing_is_written(hearth: Hearth, tmp_path: Path):
    ada = tmp_path / "ada"
    hearth("init", "--nick", "ada", data=ada)
    assert "no channel, private channel or direct messages named 'genral'" in hearth.fails(
        "notify", "genral", "--none", data=ada)
    assert "a time of day is HH:MM" in hearth.fails("notify", "--dnd", "22:00-25:00", data=ada)
    assert "a time is a duration" in hearth.fails(
        "notify", "general", "--none", "--until", "soon", data=ada)
    assert "--until goes with a level" in hearth.fails("notify", "general", "--until", "2h",
                                                       data=ada)
    assert "name the conversation" in hearth.fails("notify", "--none", data=ada)
    assert "a keyword cannot be empty" in hearth.fails("notify", "--keywords", " ", data=ada)
    assert not (ada / "notifications.json").exists()


def test_channels_counts_unread_as_levels_make_them(hearth: Hearth, tmp_path: Path):
    ada, bob = tmp_path / "ada", tmp_path / "bob"
    hearth("init", "--nick", "ada", data=ada)
    hearth("channel", "create", "random", data=ada)
    hearth("join-workspace", personal_code(hearth, ada, bob), "--nick", "bob", data=bob)
    carry(hearth, ada, bob)
    hearth("join", "random", data=bob)
    for text in ("one", "two", "ada: three"):
        hearth("post", "random", text, data=bob)
    hearth("post", "general", "hello", data=bob)
    hearth("dm", "ada", "psst", data=bob)
    carry(hearth, bob, ada)
    hearth("notify", "random", "--none", data=ada)
    listed = {row["name"]: (row["unread"], row["mention"], row["muted"])
              for row in hearth("channels", "--json", data=ada).json()}
    assert listed == {"general": (1, False, False), "random": (0, True, True),
                      "bob": (1, False, False)}
    text = hearth("channels", data=ada).stdout
    assert "#random  2 members, 3 messages, mentions you, muted" in text
    assert "#general  2 members, 1 messages, 1 unread" in text
    assert "@bob  direct messages, 1 unread" in text
