"""A real session D-Bus for notification tests, with a notification service of the test's own
on it: `dbus-daemon --session` started for the test, and an org.freedesktop.Notifications
server written with dbus-fast (the library desktop-notifier talks through) that records every
Notify call and can emit ActionInvoked, as a click on a notification does.

(No `from __future__ import annotations` here: dbus-fast reads the D-Bus signatures from the
methods' annotations.)"""

import asyncio
import signal
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from dbus_fast.aio import MessageBus
from dbus_fast.service import ServiceInterface, method
from dbus_fast.service import signal as dbus_signal

from tests.support import wait_until

NAME = "org.freedesktop.Notifications"
PATH = "/org/freedesktop/Notifications"
START_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Notified:
    id: int
    app: str
    summary: str
    body: str
    actions: tuple[str, ...]


class _Notifications(ServiceInterface):
    def __init__(self) -> None:
        super().__init__(NAME)
        self.calls: list[Notified] = []
        self._next = 0

    @method()
    def Notify(self, app_name: "s", replaces_id: "u", app_icon: "s", summary: "s",  # noqa: F821, N802
               body: "s", actions: "as", hints: "a{sv}", expire_timeout: "i") -> "u":  # noqa: F821, F722
        self._next += 1
        self.calls.append(Notified(self._next, app_name, summary, body, tuple(actions)))
        return self._next

    @method()
    def CloseNotification(self, id: "u") -> None:  # noqa: F821, N802, A002
        pass

    @method()
    def GetCapabilities(self) -> "as":  # noqa: F722, N802
        return ["body", "actions"]

    @method()
    def GetServerInformation(self) -> "ssss":  # noqa: F821, N802
        return ["hearth-test", "hearth", "1", "1.2"]

    @dbus_signal()
    def ActionInvoked(self, id: "u", action_key: "s") -> "us":  # noqa: F821, N802, A002
        return [id, action_key]

    @dbus_signal()
    def NotificationClosed(self, id: "u", reason: "u") -> "uu":  # noqa: F821, N802, A002
        return [id, reason]


class NotificationServer:
    """The test's notification service on `address`, on a thread of its own."""

    def __init__(self, address: str):
        self.interface = _Notifications()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._bus: MessageBus = self._call(self._start(address))

    async def _start(self, address: str) -> MessageBus:
        bus = await MessageBus(bus_address=address).connect()
        bus.export(PATH, self.interface)
        await bus.request_name(NAME)
        return bus

    def _call(self, work):
        return asyncio.run_coroutine_threadsafe(work, self._loop).result(START_TIMEOUT_S)

    @property
    def calls(self) -> list[Notified]:
        return list(self.interface.calls)

    def click(self, notified: Notified) -> None:
        """What a click on the notification's body sends: ActionInvoked(id, "default")."""
        async def emit() -> None:
            self.interface.ActionInvoked(notified.id, "default")
        self._call(emit())

    def wait_for(self, count: int, what: str = "notifications") -> list[Notified]:
        return wait_until(lambda: self.calls if len(self.calls) >= count else None, what=what)

    def close(self) -> None:
        async def stop() -> None:
            self._bus.disconnect()
        self._call(stop())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(START_TIMEOUT_S)


@pytest.fixture
def session_bus(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A session D-Bus of the test's own; DBUS_SESSION_BUS_ADDRESS names it."""
    daemon = subprocess.Popen(["/usr/bin/dbus-daemon", "--session", "--print-address",
                               "--nofork"], stdout=subprocess.PIPE, text=True)
    try:
        assert daemon.stdout is not None
        address = daemon.stdout.readline().strip()
        assert address, "dbus-daemon printed no address"
        monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", address)
        yield address
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(START_TIMEOUT_S)


@pytest.fixture
def notification_service(session_bus: str) -> Iterator[NotificationServer]:
    """The session bus with the test's notification service on it."""
    server = NotificationServer(session_bus)
    yield server
    server.close()

