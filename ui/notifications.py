"""The window's notifications (issue #32): what app.notify_watch decides, raised on the
desktop's notification service (app.desktop_notify: desktop-notifier over the session D-Bus,
on its own thread and loop), else as the tray icon's message where a tray exists, else as a
line in the status bar with the window marked in the task bar. `route` says which, and the
Notifications settings page shows it. A click on a notification opens its message (its
channel, private channel or direct messages, the message selected; a reply's thread).

Nothing notifies for the conversation the window shows while it is the active window. The
tray icon's tooltip counts what the title counts (app.channel_list, one answer). Owned by the
window (`window.notifications`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication, QSystemTrayIcon

from app.desktop_notify import DesktopNotifications, unmarked
from app.notify_rules import Alert
from app.notify_watch import NotificationWatch

from . import conversation_target
from .bridge import Inbox

if TYPE_CHECKING:
    from .main_window import MainWindow

SHOW_MS = 8000
CHECK_MS = 30_000  # how often the window looks whether do not disturb is over
ROUTES = {
    "desktop": "Notifications go to the desktop's notification service.",
    "tray": "No notification service answers on this session's bus: notifications show "
            "as the tray icon's messages.",
    "status": "No notification service answers on this session's bus and there is no tray: "
              "notifications show in the window's status bar, and the window is marked in "
              "the task bar.",
}


class WindowNotifications(QObject):
    notified = Signal(object)  # an app.notify_rules.Alert, however it was shown
    delivered = Signal(object)  # an Alert the notification service took (a click may come)
    clicked = Signal(object)  # the Alert whose notification was clicked
    routeKnown = Signal(str)  # one of ROUTES

    def __init__(self, window: MainWindow, icon: QIcon):
        super().__init__(window)
        self.window = window
        self._inbox = Inbox(self)
        self.route = "status"  # until the service answers (probe)
        self.tray: QSystemTrayIcon | None = None
        self._tray_alert: Alert | None = None  # what a click on the tray's message opens
        if QSystemTrayIcon.isSystemTrayAvailable():
            self.tray = QSystemTrayIcon(icon, window)
            self.tray.setToolTip("Hearth")
            self.tray.activated.connect(lambda *_: window.bring_forward())
            self.tray.messageClicked.connect(self._tray_clicked)
            self.tray.show()
            self.route = "tray"
        self.desktop = DesktopNotifications(
            on_clicked=lambda alert: self._inbox.post(lambda: self.clicked.emit(alert)))
        info = window.facade.info
        self.watch = NotificationWatch(
            window.facade, info.data, info.workspace_id,
            lambda alert: self._inbox.post(lambda: self.raise_alert(alert)))
        self.clicked.connect(self.open)
        self._check = QTimer(self, interval=CHECK_MS)
        self._check.timeout.connect(self.watch.check)
        self._check.start()
        self.probe()

    def probe(self) -> None:
        """Ask whether a notification service answers (again: one may have started)."""
        self._inbox.then(self.desktop.find_service(), done=self._probed, failed=lambda _: None)

    def _probed(self, service: str | None) -> None:
        self.route = "desktop" if service else "tray" if self.tray is not None else "status"
        self.routeKnown.emit(self.route)

    def raise_alert(self, alert: Alert) -> None:
        if self._reading(alert):
            return
        if self.route == "desktop":
            self._inbox.then(self.desktop.send(alert),
                             done=lambda taken: self.delivered.emit(alert) if taken
                             else self._fallback(alert),
                             failed=lambda _: self._fallback(alert))
        else:
            self._fallback(alert)
        self.notified.emit(alert)

    def _reading(self, alert: Alert) -> bool:
        """The active window shows the conversation this is about."""
        w = self.window
        if alert.channel is None or not w.isActiveWindow():
            return False
        shown = conversation_target.shown(w)
        if isinstance(alert.channel, bytes):
            return shown.kind in ("private", "dm") and w.private.channel_id == alert.channel
        return shown.kind == "channel" and w.channel == alert.channel

    def _fallback(self, alert: Alert) -> None:
        if self.route == "desktop":  # the service stopped answering: look again
            self.route = "tray" if self.tray is not None else "status"
            self.probe()
        if self.tray is not None and QSystemTrayIcon.supportsMessages():
            self._tray_alert = alert
            self.tray.showMessage(unmarked(alert.title), unmarked(alert.body),  # as on D-Bus
                                  QSystemTrayIcon.MessageIcon.Information, SHOW_MS)
        else:
            self.window.statusBar().showMessage(f"{alert.title}: {alert.body}", SHOW_MS)
            QApplication.alert(self.window)

    def _tray_clicked(self) -> None:
        if self._tray_alert is not None:
            self.clicked.emit(self._tray_alert)
        else:
            self.window.bring_forward()

    def open(self, alert: Alert) -> None:
        """Bring the window forward on the message the notification is about."""
        w = self.window
        w.bring_forward()
        if alert.message is None or alert.channel is None:
            return
        if isinstance(alert.channel, bytes):
            w.private.open(alert.channel)
            PrivateJump(w, alert.message)
        else:
            w.search.jump_to(alert.channel, alert.message)
        if alert.thread is not None:
            w.open_thread(alert.thread)

    def set_unread(self, count: int) -> None:
        """What the title counts, in the tray icon's tooltip."""
        if self.tray is not None:
            self.tray.setToolTip(f"Hearth: {count} unread" if count else "Hearth")

    def close(self) -> None:
        self._check.stop()
        self.watch.close()
        self.desktop.close()
        self._inbox.close()
        if self.tray is not None:
            self.tray.hide()


class PrivateJump(QObject):
    """Selects a message in the private channel being opened once its rows are in."""

    def __init__(self, window: MainWindow, message: bytes):
        super().__init__(window)
        self.window, self.message = window, message
        window.private.model.modelReset.connect(self._select)
        self._select()

    def _select(self) -> None:
        pane = self.window.private
        for row, shown in enumerate(pane.model.messages):
            if shown.id == self.message:
                index = pane.model.index(row)
                pane.view.setCurrentIndex(index)
                pane.view.scrollTo(index)
                pane.model.modelReset.disconnect(self._select)
                self.deleteLater()
                return
