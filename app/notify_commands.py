"""`hearth notify`: this computer's notification settings (issue #32), as the window's
Settings > Notifications page and a conversation's Notifications menu set them. It calls the
library (app/notifying.py); no logic of its own."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from . import _text, notifying
from ._command import CLIError, command, errors, open_workspace, print_json
from .notify_rules import Alert, NotifyError, NotifySettings
from .notifying import LEVEL_NAMES, ConversationLevel, when


def _level_json(c: ConversationLevel) -> dict:
    return {"conversation": c.conversation.label, "kind": c.conversation.kind,
            "level": c.level, "own": c.own, "until": c.until}


def _level_text(c: ConversationLevel) -> str:
    until = f" {when(c.until)}" if c.until else ""
    how = "" if c.own else " (the default)"
    return f"{_text.line(c.conversation.label)}  {LEVEL_NAMES[c.level]}{until}{how}"


def dnd_text(held: NotifySettings) -> str:
    """"do not disturb: on until 18:00; daily 22:00-08:00"."""
    now = "on" if held.paused else f"on {when(held.paused_until)}" if (
        held.paused_until is not None and held.paused_until > time.time()) else "off"
    return f"do not disturb: {now}" + (f"; daily {held.schedule}" if held.schedule else "")


def _settings_json(held: NotifySettings, levels: list[ConversationLevel]) -> dict:
    return {"keywords": list(held.keywords), "show_text": held.show_text,
            "do_not_disturb": {"on": held.paused, "until": held.paused_until,
                               "schedule": str(held.schedule) if held.schedule else None},
            "levels": [_level_json(c) for c in levels if c.own]}


def cmd_notify(args: argparse.Namespace) -> None:
    chosen = "all" if args.all else "mentions" if args.mentions else "none" if args.none \
        else None
    if args.until is not None and chosen is None:
        raise CLIError("--until goes with a level: --all, --mentions or --none")
    if (chosen or args.default) and args.channel is None:
        raise CLIError("name the conversation: hearth notify CHANNEL --all|--mentions|--none")
    with open_workspace(args) as ws:
        if args.channel is not None:
            if chosen or args.default:
                until = None if args.until is None else notifying.parse_until(args.until,
                                                                              ws.clock())
                shown = notifying.set_level(ws, args.channel, chosen, until)
            else:
                shown = notifying.level_of(ws, args.channel)
            if args.json:
                print_json(_level_json(shown))
            else:
                print(_level_text(shown))
            if args.keywords is None and args.dnd is None and args.text is None:
                return
        if args.keywords is not None:
            notifying.set_keywords(ws, args.keywords)
        if args.dnd is not None:
            notifying.do_not_disturb(ws, args.dnd)
        if args.text is not None:
            notifying.set_show_text(ws, args.text == "show")
        held, levels = notifying.settings(ws), notifying.levels(ws)
    if args.channel is not None:
        return
    if args.json:
        print_json(_settings_json(held, levels))
        return
    for c in levels:
        if c.own:
            print(_level_text(c))
    print("keywords: " + (", ".join(_text.line(w) for w in held.keywords) or "none"))
    print(dnd_text(held))
    print(f"message text in notifications: {'shown' if held.show_text else 'hidden'}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = command(sub, common, "notify", cmd_notify,
                "notification settings on this computer: a conversation's level, keywords, "
                "do not disturb (with no option: what is set)", json_flag=True)
    p.add_argument("channel", nargs="?", metavar="CHANNEL",
                   help="a channel (#general), a private channel of yours, or direct messages "
                   "(@bob): its level, or with a level option, set it")
    level = p.add_mutually_exclusive_group()
    level.add_argument("--all", action="store_true", help="notify every message")
    level.add_argument("--mentions", action="store_true",
                       help="notify mentions of you and keywords (channels' default)")
    level.add_argument("--none", action="store_true",
                       help="mute: no unread count, no notification but for a mention of you")
    level.add_argument("--default", action="store_true",
                       help="back to the default (mentions; all for direct messages)")
    p.add_argument("--until", metavar="T",
                   help="the level holds until then: 30m, 2h, 1d or a time of day (18:00)")
    p.add_argument("--keywords", nargs="*", metavar="W",
                   help="words that notify wherever they are written (none: no keywords)")
    p.add_argument("--dnd", metavar="WHEN",
                   help="do not disturb: on, off, for 2h, until 08:00, or daily 22:00-08:00")
    p.add_argument("--text", choices=("show", "hide"),
                   help="show the start of the message in notifications, or hide it")
    p.set_defaults(handler=errors(cmd_notify, NotifyError))  # a setting that cannot be


SERVICE_TIMEOUT_S = 10.0  # more than desktop_notify.CALL_TIMEOUT_S
CHECK_EVERY_S = 30.0  # how often `hearth serve --notify` looks whether do not disturb is over


class ServeNotifications:
    """`hearth serve --notify`: the window's notifications for a headless or terminal user.
    Each is printed as a line ("14:02:11  bob mentioned you in #general: are you there?") and
    raised on the desktop's notification service when one answers on this session's bus
    (said once at the start). Alerts come from the Node's thread through `put` (the serve
    loop's queue); `shown` prints and raises them on the main thread."""

    def __init__(self, node, put: Callable[[object], None], say: Callable[[str], None]):
        from .desktop_notify import DesktopNotifications
        from .notify_watch import NotificationWatch

        self._say = say
        self.desktop = DesktopNotifications()
        self.service = self.desktop.find_service().result(SERVICE_TIMEOUT_S)
        self.watch = NotificationWatch(node.facade, node.paths.data, node.workspace_id, put)
        self._checked = time.monotonic()
        say("notifications: " + (f"through {self.service}" if self.service else
                                  "printed here (no notification service on this session's "
                                  "bus)"))

    def shown(self, alert: Alert) -> None:
        self._say(f"{_text.line(alert.title)}: {_text.line(alert.body)}")
        if self.service:
            self.desktop.send(alert)

    def tick(self) -> None:
        if time.monotonic() - self._checked >= CHECK_EVERY_S:
            self._checked = time.monotonic()
            self.watch.check()

    def close(self) -> None:
        self.watch.close()
        self.desktop.close()
