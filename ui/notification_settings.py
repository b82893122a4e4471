"""Notification settings in the window (issue #32): the Settings dialog's Notifications page
(how notifications are shown here, the start of the text shown or not, keywords, do not
disturb now or on a daily schedule, and the conversations with a level of their own), and the
Notifications menu of a channel, private channel or direct messages in the sidebar (all
messages, mentions only, nothing; muted for an hour or until tomorrow; the default again).
Every change goes through app/notifying.py, as `hearth notify` does."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QPoint, Qt, QTime, Signal
from PySide6.QtGui import QActionGroup
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMenu,
    QTimeEdit,
    QVBoxLayout,
    QWidget,
)

from app import notifying
from app.notify_rules import NotifySettings, Schedule
from app.notifying import LEVEL_NAMES, ConversationLevel, when

from .bridge import NodeBridge
from .notifications import ROUTES

if TYPE_CHECKING:
    from .main_window import MainWindow

LEVEL_ACTIONS = (("all", "All messages"), ("mentions", "Mentions only"),
                 ("none", "Nothing (mute)"))
PAUSES = (("Off", None), ("For 1 hour", 3600), ("For 8 hours", 8 * 3600),
          ("Until tomorrow 08:00", "08:00"), ("Until I turn it off", "on"))
PrivateRole = Qt.ItemDataRole.UserRole  # as ui/sidebar.py's: a private channel's id


class NotificationMenus(QObject):
    """A conversation's Notifications menu (the sidebar's channel menu adds it; the private
    channels' and direct messages' lists get a menu of their own here). `levels` is every
    conversation's level, re-read with the channel list."""

    changed = Signal()  # a level was set

    def __init__(self, window: MainWindow):
        super().__init__(window)
        self.window = window
        self.bridge = window.bridge
        self.levels: dict[str | bytes, ConversationLevel] = {}
        window.channels.modelReset.connect(self.load)
        for rows in (window.sidebar.private_list, window.sidebar.dm_list):
            rows.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
            rows.customContextMenuRequested.connect(partial(self._private_menu, rows))

    def load(self) -> None:
        self.bridge.then(self.bridge.facade.run(notifying.levels), done=self._loaded)

    def _loaded(self, levels: list[ConversationLevel]) -> None:
        self.levels = {c.conversation.channel: c for c in levels}

    def menu(self, channel: str | bytes, parent: QWidget) -> QMenu:
        menu = QMenu("Notifications", parent, objectName="notificationsMenu")
        now = self.levels.get(channel)
        levels = QActionGroup(menu, exclusive=True)  # drawn as a choice of one
        for level, label in LEVEL_ACTIONS:
            action = menu.addAction(label, partial(self.set, channel, level))
            action.setCheckable(True)
            levels.addAction(action)
            action.setChecked(now is not None and now.level == level)
        menu.addSeparator()
        menu.addAction("Mute for 1 hour",
                       lambda: self.set(channel, "none", time.time() + 3600))
        menu.addAction("Mute until tomorrow 08:00",
                       lambda: self.set(channel, "none",
                                        notifying.parse_until("08:00", time.time())))
        default = menu.addAction("Back to the default", partial(self.set, channel, None))
        default.setEnabled(now is None or now.own)
        if now is not None and now.until:
            menu.addSection(f"{LEVEL_NAMES[now.level].capitalize()} {when(now.until)}")
        return menu

    def set(self, channel: str | bytes, level: str | None, until: float | None = None) -> None:
        def done(_: object) -> None:
            self.load()
            self.window.channels.refresh()
            self.changed.emit()
        self.bridge.then(self.bridge.facade.run(
            lambda ws: notifying.set_level(ws, channel, level, until)), done=done)

    def _private_menu(self, rows: QListWidget, position: QPoint) -> None:
        item = rows.itemAt(position)
        if item is not None:
            holder = QMenu(rows)
            holder.addMenu(self.menu(item.data(PrivateRole), holder))
            holder.popup(rows.viewport().mapToGlobal(position))


class NotificationSettings(QWidget):
    """The Settings dialog's Notifications page."""

    saved = Signal(str)  # what was changed

    def __init__(self, bridge: NodeBridge, dialog: QWidget):
        super().__init__(objectName="settingsNotifications")
        self.bridge = bridge
        window = dialog.parent()
        self.notes = getattr(window, "notifications", None)  # the window's WindowNotifications
        self.route = QLabel(wordWrap=True, objectName="notifyRoute")
        self.show_text = QCheckBox("Show the start of the message in notifications",
                                   objectName="notifyShowText")
        self.keywords = QLineEdit(objectName="notifyKeywords",
                                  placeholderText="words that notify, separated by commas")
        self.pause = QComboBox(objectName="notifyPause")
        for label, value in PAUSES:
            self.pause.addItem(label, value)
        self.pause_state = QLabel(objectName="notifyPauseState")
        self.scheduled = QCheckBox("Every day from", objectName="notifySchedule")
        self.start = QTimeEdit(QTime(22, 0), objectName="notifyFrom", displayFormat="HH:mm")
        self.end = QTimeEdit(QTime(8, 0), objectName="notifyTo", displayFormat="HH:mm")
        self.levels = QListWidget(objectName="notifyLevels")
        self.error = QLabel(objectName="notifyError", wordWrap=True)
        form = QFormLayout()
        form.addRow("Keywords", self.keywords)
        pause = QHBoxLayout()
        pause.addWidget(self.pause)
        pause.addWidget(self.pause_state, 1)
        form.addRow("Do not disturb", pause)
        daily = QHBoxLayout()
        for part in (self.scheduled, self.start, QLabel("to"), self.end):
            daily.addWidget(part)
        daily.addStretch(1)
        form.addRow("", daily)
        layout = QVBoxLayout(self)
        layout.addWidget(self.route)
        layout.addWidget(self.show_text)
        layout.addLayout(form)
        layout.addWidget(QLabel(
            "Channels and private channels notify mentions of you and your keywords; direct "
            "messages notify every message. Right-click a conversation in the sidebar to "
            "change its level: a muted one shows no unread count, but still marks and "
            "notifies a mention of you. These settings are this computer's: they are never "
            "synced.", wordWrap=True))
        layout.addWidget(QLabel("Conversations with a level of their own:"))
        layout.addWidget(self.levels, 1)
        layout.addWidget(self.error)
        if self.notes is not None:
            self._show_route(self.notes.route)
            self.notes.routeKnown.connect(self._show_route)
            self.notes.probe()
        else:
            self._show_route("status")
        if hasattr(dialog, "saved"):  # the Settings dialog tells the window what was saved
            self.saved.connect(dialog.saved)
        self.reload(connect=True)

    def _show_route(self, route: str) -> None:
        self.route.setText(ROUTES[route])

    def reload(self, *, connect: bool = False) -> None:
        def loaded(found: tuple[NotifySettings, list[ConversationLevel]]) -> None:
            self._loaded(*found)
            if connect:
                self._connect()
        self.bridge.then(self.bridge.facade.run(
            lambda ws: (notifying.settings(ws), notifying.levels(ws))), done=loaded)

    def _loaded(self, held: NotifySettings, levels: list[ConversationLevel]) -> None:
        self.show_text.setChecked(held.show_text)
        self.keywords.setText(", ".join(held.keywords))
        on = held.paused or (held.paused_until is not None and held.paused_until > time.time())
        self.pause_state.setText(
            ("On until you turn it off" if held.paused else f"On {when(held.paused_until)}")
            if on else "")
        if not on:
            self.pause.setCurrentIndex(0)
        self.scheduled.setChecked(held.schedule is not None)
        if held.schedule is not None:
            self.start.setTime(QTime(held.schedule.start // 60, held.schedule.start % 60))
            self.end.setTime(QTime(held.schedule.end // 60, held.schedule.end % 60))
        self.levels.clear()
        for c in levels:
            if c.own:
                until = f" {when(c.until)}" if c.until else ""
                self.levels.addItem(f"{c.conversation.label}: {LEVEL_NAMES[c.level]}{until}")
        if not self.levels.count():
            self.levels.addItem("None: every conversation has its default")

    def _connect(self) -> None:
        self.show_text.toggled.connect(
            lambda shown: self._apply(lambda ws: notifying.set_show_text(ws, shown),
                                      "notification text"))
        self.keywords.editingFinished.connect(self._keywords)
        self.pause.activated.connect(self._pause)
        self.scheduled.toggled.connect(lambda _: self._schedule())
        self.start.editingFinished.connect(self._schedule)
        self.end.editingFinished.connect(self._schedule)

    def _apply(self, change: Callable, what: str) -> None:
        self.error.clear()
        self.bridge.then(self.bridge.facade.run(change),
                         done=lambda _: (self.saved.emit(what), self.reload()),
                         failed=self.error.setText)

    def _keywords(self) -> None:
        words = [w for w in self.keywords.text().split(",") if w.strip()]
        self._apply(lambda ws: notifying.set_keywords(ws, words), "keywords")

    def _pause(self, index: int) -> None:
        value = self.pause.itemData(index)
        if value is None:
            change = partial(notifying.pause)
        elif value == "on":
            change = partial(notifying.pause, on=True)
        elif isinstance(value, str):
            change = partial(notifying.pause, until=notifying.parse_until(value, time.time()))
        else:
            change = partial(notifying.pause, until=time.time() + value)
        self._apply(change, "do not disturb")

    def _schedule(self) -> None:
        start = self.start.time().hour() * 60 + self.start.time().minute()
        end = self.end.time().hour() * 60 + self.end.time().minute()
        if self.scheduled.isChecked() and start == end:
            self.error.setText("The schedule's start and end must differ.")
            return
        schedule = Schedule(start, end) if self.scheduled.isChecked() else None
        self._apply(lambda ws: notifying.set_schedule(ws, schedule), "do not disturb schedule")
