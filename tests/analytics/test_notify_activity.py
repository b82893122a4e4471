"""Notification settings changes become schema-7 events (app/notifying.py): the level chosen and
the kind of conversation, do not disturb on or scheduled, keyword alerts or the text shown on or
off. Nothing names the conversation, the times or the words; nothing is recorded while
analytics are off."""

from __future__ import annotations

import json

from analytics.events import validate
from analytics.recorder import Recorder
from app import notifying
from app.workspace import Workspace
from tests.support import channels, create_workspace

NICK = "zorro-listener"
CHANNEL = "project-xylophone"
KEYWORDS = ["harbour-budget", "on call tonight"]


def _spooled(recorder: Recorder) -> list[dict]:
    taken = recorder.take_batch(1000)
    return [json.loads(line) for line in taken[1]] if taken else []


def _bare(event: dict) -> dict:
    return {k: v for k, v in event.items() if k not in ("ts", "pid")}


def test_each_settings_change_is_counted_and_names_nothing(tmp_path):
    paths = create_workspace(tmp_path, "a", NICK)
    recorder = Recorder(paths.data)
    with Workspace.open(paths) as ws:
        channels(ws, CHANNEL)
        notifying.set_level(ws, CHANNEL, "none")  # off: not recorded
        assert _spooled(recorder) == []
        recorder.enable()
        notifying.set_level(ws, CHANNEL, "none", until=ws.clock() + 3600)
        notifying.set_level(ws, f"#{CHANNEL}", None)
        notifying.set_keywords(ws, KEYWORDS)
        notifying.set_show_text(ws, False)
        notifying.do_not_disturb(ws, "22:00-08:00")
        notifying.do_not_disturb(ws, "2h")
        notifying.do_not_disturb(ws, "off")
    lines = _spooled(recorder)
    assert [_bare(e) for e in lines] == [
        {"event": "notify_level_set", "schema": 7, "level": "none", "kind": "channel",
         "timed": True},
        {"event": "notify_level_set", "schema": 7, "level": "default", "kind": "channel",
         "timed": False},
        {"event": "notify_option_set", "schema": 7, "option": "keywords", "on": True},
        {"event": "notify_option_set", "schema": 7, "option": "show_text", "on": False},
        {"event": "notify_dnd_set", "schema": 7, "paused": False, "scheduled": True},
        {"event": "notify_dnd_set", "schema": 7, "paused": True, "scheduled": True},
        {"event": "notify_dnd_set", "schema": 7, "paused": False, "scheduled": True},
        {"event": "notify_dnd_set", "schema": 7, "paused": False, "scheduled": False},
    ]
    for line in lines:
        assert validate(line) == line
    # Every field but the hour of the event (which at 08:00 or 22:00 UTC says that much and no
    # more) is free of the names, the words and the schedule's times.
    text = json.dumps([_bare(line) for line in lines])
    for secret in (NICK, CHANNEL, *KEYWORDS, "22:00", "08:00"):
        assert secret not in text
