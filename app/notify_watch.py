"""Which arriving messages notify: a Node's MessagesArrived events (app/events.py) read on the
Node's thread into app.notify_rules' Incoming messages and decided there, one Decider for the
window (ui/notifications.py) and `hearth serve --notify` alike. What notifies is handed to a
sink as an Alert, on the Node's thread; the sink must not wait.

Only news notifies: not my own messages (from any of my computers), not edits, reactions or
deletions, not messages hidden by a moderator, and not history arriving from peers (dated
more than RECENT_MS before the watch began). More than MAX_A_BATCH at once in one
conversation make one notification that counts them. Which of an event's ids are such
messages is one query (storage.arrivals.new_messages), and of those only the MAX_EXAMINED
stored last are read whole, so history streaming in costs the Node little."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from storage.arrivals import new_messages

from . import notify_settings
from .errors import WorkspaceError
from .events import MessagesArrived, NodeEvent
from .notify_rules import Alert, Decider, Incoming, conversation_key

if TYPE_CHECKING:
    from .workspace import Workspace

log = logging.getLogger(__name__)

RECENT_MS = 10 * 60 * 1000
MAX_A_BATCH = 3
MAX_EXAMINED = 100  # of one event's new messages, those stored last
REASONS = ("mention", "keyword", "message")  # the strongest first


def local_minute(now: float) -> int:
    """Minutes after local midnight at `now`."""
    moment = time.localtime(now)
    return moment.tm_hour * 60 + moment.tm_min


class NotificationWatch:
    """Subscribed to a Node (its facade's `subscribe` and `run`) until `close()`."""

    def __init__(self, facade: Any, data: Path, workspace: bytes,
                 sink: Callable[[Alert], None], *, clock: Callable[[], float] = time.time,
                 minute: Callable[[float], int] = local_minute):
        self._run: Callable[[Callable[[Workspace], Any]], Future] = facade.run
        self._data = Path(data)
        self._workspace = workspace
        self._sink = sink
        self._clock = clock
        self._minute = minute
        self.decider = Decider()
        self.decided = 0  # messages decided on so far (notifying or not)
        self._since_ms = int(clock() * 1000) - RECENT_MS
        self._unsubscribe: Callable[[], None] | None = facade.subscribe(self._event)

    def close(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    @property
    def missed(self) -> int:
        """Notifications do not disturb holds back now (told once it is over)."""
        return self.decider.missed

    def check(self) -> Future:
        """Tell the missed ones if do not disturb is over (the window and `hearth serve`
        call it now and then; arrivals do too)."""
        return self._run(lambda ws: self._check())

    def _event(self, event: NodeEvent) -> None:  # the Node's thread
        if isinstance(event, MessagesArrived):
            self._run(lambda ws: self._arrived(ws, event))

    def _check(self) -> None:
        now = self._clock()
        settings = notify_settings.load(self._data, self._workspace)
        resumed = self.decider.resumed(settings, now, self._minute(now))
        if resumed is not None:
            self._sink(resumed)

    def _arrived(self, ws: Workspace, event: MessagesArrived) -> None:
        now = self._clock()
        settings = notify_settings.load(self._data, self._workspace)
        nick = ws.nickname()
        alerts: list[Alert] = []
        arrived = self.incoming(ws, event)
        for incoming in arrived:
            self.decided += 1
            found = self.decider.decide(settings, incoming, nick, now, self._minute(now))
            if found is not None:
                alerts.append(found)
        if len(alerts) > MAX_A_BATCH:
            alerts = [_counted(alerts, arrived[0])]
        resumed = self.decider.resumed(settings, now, self._minute(now))
        for found in ([resumed] if resumed else []) + alerts:
            self._sink(found)

    def incoming(self, ws: Workspace, event: MessagesArrived) -> list[Incoming]:
        """The new messages by others that `event` names, oldest first."""
        order = {object_id: n for n, object_id in enumerate(event.ids)}
        ids = sorted(new_messages(ws.replica, event.ids, self._since_ms, ws.key),
                     key=order.__getitem__)[-MAX_EXAMINED:]  # as stored, the last ones
        wanted = set(ids)
        channel = event.channel
        out: list[Incoming] = []
        if isinstance(channel, str):
            names = ws.nicknames()
            for object_id in ids:
                message = ws.replica.message(object_id)
                if message is None or not self._news(ws, message.author, message.ts):
                    continue
                out.append(Incoming(conversation_key(channel), "channel", channel,
                                    f"#{channel}", message.id,
                                    names.get(message.author) or message.author.hex()[:8],
                                    message.text, message.ts, message.reply_to))
            return out
        described = next((c for c in ws.private.channels() if c.id == channel), None)
        if described is None:
            return out
        with contextlib.suppress(WorkspaceError):
            for message in ws.private.read(channel, limit=len(wanted) + 50):
                if message.id in wanted and self._news(ws, message.author, message.ts):
                    kind = "dm" if described.dm else "private"
                    out.append(Incoming(
                        conversation_key(channel), kind, channel,
                        described.name if described.dm else f"{described.name} (private)",
                        message.id, message.nick or message.author.hex()[:8], message.text,
                        message.ts, message.reply_to))
        return out

    def _news(self, ws: Workspace, author: bytes, ts: int) -> bool:
        return author != ws.key and ts >= self._since_ms


def _counted(alerts: list[Alert], one: Incoming) -> Alert:
    """Many at once in one conversation: one notification, opening the newest, that counts
    them."""
    why = next(r for r in REASONS if any(a.reason == r for a in alerts))
    where = "(direct messages)" if one.kind == "dm" else f"in {one.place}"
    return replace(alerts[-1], title=f"{len(alerts)} new messages {where}", reason=why)
