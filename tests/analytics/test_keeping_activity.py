"""What this computer keeps and how fetching history went become schema-6 events
(app/activity.py): a channels_kept per change of the kept set, saying whether all is kept and
how many channels and documents, as buckets; a history_fetched per finished fetch, with its
objects and seconds as buckets and whether all is kept. Nothing names a channel or a document,
and no exact number is sent."""

from __future__ import annotations

import json

from analytics.events import validate
from analytics.recorder import Recorder
from app import keeping
from app.activity import Activity
from app.documents import Documents
from app.records import Kept
from app.workspace import Workspace
from tests.support import channels, create_workspace

NICK = "zorro-keeper"
CHANNELS = [f"project-xylophone-{n}" for n in range(1, 8)]
TITLES = ["Pier budget 2027", "Minutes of the harbour board"]


def spooled(recorder: Recorder) -> list[str]:
    taken = recorder.take_batch(1000)
    return taken[1] if taken else []


def bare(event: dict) -> dict:
    return {k: v for k, v in event.items() if k not in ("ts", "pid")}


def kept_event(every: bool, channels: int, documents: int) -> dict:
    return {"event": "channels_kept", "schema": 6, "all": every, "channels": channels,
            "documents": documents}


def test_each_change_of_what_is_kept_is_counted_in_buckets_and_names_nothing(tmp_path):
    paths = create_workspace(tmp_path, "a", NICK)
    recorder = Recorder(paths.data)
    recorder.enable()
    activity = Activity(recorder, lambda ids: [])
    with Workspace.open(paths) as ws:
        channels(ws, *CHANNELS)
        documents = [Documents(ws).new(title) for title in TITLES]
        known = len(ws.channels())  # the workspace's first channel and the seven joined
        changes = [
            keeping.keep_only(ws, CHANNELS[:1]),
            keeping.keep(ws, CHANNELS[1:5], TITLES[:1]),
            keeping.keep(ws, CHANNELS[5:], TITLES[1:]),
            keeping.keep_only(ws),
            keeping.keep_all(ws),
            keeping.keep(ws, CHANNELS[:1], drop=True),  # from all: every other one stays
        ]
        for kept in changes:
            activity.kept_changed(kept)
        secrets = [NICK, *CHANNELS, *TITLES, ws.id.hex()[:32], ws.key.hex()[:32],
                   *(d.id[:32] for d in documents),
                   *(c for kept in changes for c in kept.channels),
                   *(d.hex()[:32] for kept in changes for d in kept.documents)]
    assert known == 8 and [len(k.channels) for k in changes] == [1, 5, 7, 0, 0, 7]
    assert [len(k.documents) for k in changes] == [0, 1, 2, 0, 0, 2]

    texts = spooled(recorder)
    for text in texts:
        for secret in secrets:
            assert secret.lower() not in text.lower(), f"{secret!r} leaked into {text}"
    events = [bare(validate(json.loads(text))) for text in texts]
    assert events == [kept_event(False, 1, 0), kept_event(False, 2, 1),
                      kept_event(False, 6, 2), kept_event(False, 0, 0),
                      kept_event(True, 0, 0), kept_event(False, 6, 2)]


def test_keeping_all_says_all_whatever_lists_come_with_it(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.enable()
    activity = Activity(recorder, lambda ids: [])
    activity.kept_changed(Kept(True, ("general", "design"), (b"\x01" * 32,)))
    activity.kept_changed(Kept(False, tuple(f"c{n}" for n in range(40)),
                               tuple(bytes([n]) * 32 for n in range(21))))
    assert [bare(json.loads(text)) for text in spooled(recorder)] == [
        kept_event(True, 0, 0), kept_event(False, 21, 21)]


def test_each_finished_history_fetch_is_counted_in_buckets(tmp_path):
    recorder = Recorder(tmp_path)
    recorder.enable()
    activity = Activity(recorder, lambda ids: [])
    fetches = [  # (objects, seconds, kept_all) as the Node says them, and the event's buckets
        ((0, 0.2, True), (0, 0)),
        ((57, 0.999, False), (1, 0)),
        ((12_345, 2.5, True), (10_000, 1)),
        ((654_321, 31.7, True), (100_000, 30)),
        ((3_141_592, 271.8, False), (1_000_000, 100)),
        ((250, -0.5, False), (100, 0)),  # a clock that went back
    ]
    for args, _ in fetches:
        activity.history_fetched(*args)
    texts = spooled(recorder)
    for text in texts:
        for exact in ("57", "12345", "2.5", "654321", "31.7", "3141592", "271.8", "-0.5"):
            assert f":{exact}," not in text and f":{exact}}}" not in text, text
    assert [bare(validate(json.loads(text))) for text in texts] == [
        {"event": "history_fetched", "schema": 6, "objects": objects, "seconds": seconds,
         "kept_all": kept_all} for (_, _, kept_all), (objects, seconds) in fetches]


def test_nothing_is_recorded_nor_any_secret_made_while_analytics_are_off(tmp_path):
    recorder = Recorder(tmp_path)
    activity = Activity(recorder, lambda ids: [])
    activity.kept_changed(Kept(False, ("general",), ()))
    activity.history_fetched(1000, 4.0, True)
    assert not (recorder.folder / "install.key").exists()
    recorder.enable()
    recorder.disable()
    activity.kept_changed(Kept())
    activity.history_fetched(1000, 4.0, False)
    assert spooled(recorder) == []
