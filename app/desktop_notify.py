"""Desktop notifications through the desktop's notification service: on Linux the freedesktop
one (org.freedesktop.Notifications on the session D-Bus), by desktop-notifier. It is asyncio
code, so it runs on a thread of its own with its own loop (not the Node's: the window keeps
it across workspace switches, and a slow bus never holds up sync). `send` and `find_service` may
be called from any thread and answer with futures; a click on a notification calls
`on_clicked(alert)` on that thread (the window hands it to the GUI thread: ui/bridge.Inbox).

Where no service answers (no session bus, or nothing owning the name), `find_service()` answers
None and `send` False: the caller falls back (the tray icon, a status-bar line, a printed
line), and says which it uses."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future

from desktop_notifier import DesktopNotifier

from .notify_rules import Alert

log = logging.getLogger(__name__)

APP_NAME = "Hearth"
SERVICE = "the desktop's notification service (org.freedesktop.Notifications)"
CALL_TIMEOUT_S = 5.0  # a service that does not answer a call within this is not there
STOP_TIMEOUT_S = 5.0


# Many notification services read a body as markup (<b>, <a href>, <img src>: the
# "body-markup" capability), so a peer's text could add links or images: the three characters
# that start markup are shown as look-alikes that start nothing, on every service.
_MARKUP = str.maketrans({"<": "\N{SINGLE LEFT-POINTING ANGLE QUOTATION MARK}",
                         ">": "\N{SINGLE RIGHT-POINTING ANGLE QUOTATION MARK}",
                         "&": "\N{FULLWIDTH AMPERSAND}"})


def unmarked(text: str) -> str:
    return text.translate(_MARKUP)


class DesktopNotifications:
    def __init__(self, on_clicked: Callable[[Alert], None] = lambda alert: None):
        self._on_clicked = on_clicked
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever,
                                        name="hearth-notifications", daemon=True)
        self._thread.start()
        self._notifier: DesktopNotifier | None = None  # made on the loop's thread
        self._closed = False

    def _submit(self, work) -> Future:
        if self._closed:
            future: Future = Future()
            future.set_result(None)
            work.close()
            return future
        return asyncio.run_coroutine_threadsafe(work, self._loop)

    def find_service(self) -> Future:
        """SERVICE when a notification service answers on this session's bus, else None."""
        return self._submit(self._service())

    def send(self, alert: Alert) -> Future:
        """Raise `alert`; the future answers whether the service took it."""
        return self._submit(self._send(alert))

    def _made(self) -> DesktopNotifier:
        if self._notifier is None:
            self._notifier = DesktopNotifier(app_name=APP_NAME, app_icon=None)
        return self._notifier

    async def _service(self) -> str | None:
        try:
            await asyncio.wait_for(self._made().get_capabilities(), CALL_TIMEOUT_S)
        except Exception as exc:  # no bus, no service, or one that does not answer
            log.info("no desktop notification service: %s", exc)
            self._notifier = None  # a service that starts later is found next time
            return None
        return SERVICE

    async def _send(self, alert: Alert) -> bool:
        if await self._service() is None:
            return False
        taken = False

        def dispatched() -> None:
            nonlocal taken
            taken = True

        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._made().send(
                unmarked(alert.title), unmarked(alert.body), on_dispatched=dispatched,
                on_clicked=lambda: self._on_clicked(alert)), CALL_TIMEOUT_S)
        return taken

    @staticmethod
    async def _cancel() -> None:
        waiting = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)

    def close(self) -> None:
        """Stop the loop and its thread (idempotent)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(Exception):  # sends still waiting on the bus end here
            asyncio.run_coroutine_threadsafe(self._cancel(), self._loop).result(STOP_TIMEOUT_S)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(STOP_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
