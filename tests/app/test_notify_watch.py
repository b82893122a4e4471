"""The watch over arriving messages (app/notify_watch.py) on real replicas, with no Node: what
bob wrote reaches alice's replica by `share`, Arrivals names it as the Node would, and the
watch decides. Only news notifies; a burst is one notification that counts it."""

from __future__ import annotations

import time
from concurrent.futures import Future

from app import notify_settings
from app.arrivals import Arrivals
from app.events import MessagesArrived
from app.notify_rules import Alert, conversation_key
from app.notify_watch import NotificationWatch
from app.workspace import Workspace
from tests.support import channels, share, two_members


class Here:
    """The part of a facade the watch uses, running work at once on this thread."""

    def __init__(self, ws: Workspace):
        self.ws = ws

    def run(self, fn) -> Future:
        future: Future = Future()
        future.set_result(fn(self.ws))
        return future

    def subscribe(self, callback):
        return lambda: None


def _arrived(tmp_path, posts: list[tuple[str, str]], *, clock: float | None = None,
             setup=None) -> list[Alert]:
    alice, bob = two_members(tmp_path)
    alerts: list[Alert] = []
    with Workspace.open(alice) as wa, Workspace.open(bob) as wb:
        channels(wa, "random")
        share(wa, wb)
        if setup is not None:
            setup(wa)
        watch = NotificationWatch(Here(wa), alice.data, wa.id, alerts.append,
                                  clock=(lambda: clock) if clock else time.time)
        ids = [wb.post(channel, text).id for channel, text in posts]
        ids.append(wb.conversation.react(ids[0], "\N{THUMBS UP SIGN}").id)  # never news
        share(wb, wa)
        for event in Arrivals(wa).changes(ids):
            if isinstance(event, MessagesArrived):
                watch._arrived(wa, event)
    return alerts


def test_history_older_than_the_watch_raises_nothing(tmp_path):
    later = time.time() + 3600  # the watch began an hour after these were written
    assert _arrived(tmp_path, [("general", "alice: old news")], clock=later) == []


def test_a_burst_is_one_notification_that_counts_it_and_opens_the_newest(tmp_path):
    def every(ws: Workspace) -> None:
        notify_settings.set_level(ws.paths.data, ws.id, conversation_key("random"), "all")
    alerts = _arrived(tmp_path, [("random", f"number {n}") for n in range(5)]
                      + [("general", "alice: and you?")], setup=every)
    assert [(a.title, a.body, a.reason) for a in alerts] == [
        ("5 new messages in #random", "number 4", "message"),
        ("bob mentioned you in #general", "alice: and you?", "mention")]
