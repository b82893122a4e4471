"""`hearth` moderation commands: mod role, mod hide, mod unhide, mod log, block, unblock,
blocked. Each calls the `ws.moderation` method of its name (app/moderation.py: `hearth mod hide`
is `ws.moderation.hide`); no logic here beyond parsing arguments and printing results."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from storage.records import ModAction

from . import _text
from ._command import (
    PERSON_HELP,
    channel_arg,
    command,
    open_workspace,
    print_json,
    when,
    whole_number,
)
from .chat_commands import CHANNEL_HELP, _channel
from .moderation import MODERATOR, NONE, ModerationLog
from .names import NickBook
from .workspace import MIN_PREFIX, SHORT_KEY

MAX_LOG = 100_000
TARGET_HELP = (f"a post's id (64 hex characters, or a unique prefix of at least {MIN_PREFIX}), "
               f"or a member: {PERSON_HELP}")


def _person(book: NickBook, key: bytes) -> str:
    warning = book.warning(key)
    return f"{book.nick(key)} ({key.hex()[:SHORT_KEY]}{f', {warning}' if warning else ''})"


def cmd_role(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        channel = _channel(ws, args.channel)
        role = MODERATOR if args.moderator else NONE
        print(ws.moderation.set_role(channel, ws.resolve_person(args.person), role, args.reason).id.hex())


def _hider(hidden: bool) -> Callable[[argparse.Namespace], None]:
    def handler(args: argparse.Namespace) -> None:
        with open_workspace(args) as ws:
            channel = _channel(ws, args.channel)
            target = ws.moderation.target(channel, args.target)
            act = ws.moderation.hide if hidden else ws.moderation.unhide
            print(act(channel, target.id, args.reason).id.hex())
    return handler


def _entry_json(action: ModAction, log: ModerationLog) -> dict:
    return {"id": action.id.hex(), "channel": action.channel, "action": action.action,
            "author": action.author.hex(), "nick": log.names.get(action.author),
            "ts": action.ts, "target": action.target.hex(),
            "target_kind": "post" if action.post else "member",
            "target_nick": None if action.post else log.names.get(action.target),
            "reason": action.reason, "counts": action.counts}


def _what(action: ModAction, log: ModerationLog, book: NickBook) -> str:
    """What an entry did, after who did it."""
    if action.action in (MODERATOR, NONE):
        who = _person(book, action.target)
        return (f"made {who} a moderator" if action.action == MODERATOR
                else f"took {who}'s moderator role away")
    verb = "hid" if action.action == "hide" else "showed again"
    if action.post:
        excerpt = log.excerpts.get(action.target)
        quoted = f" ({_text.line(excerpt[:60])})" if excerpt else ""
        return f"{verb} post {action.target.hex()[:12]}{quoted}"
    return f"{verb} {_person(book, action.target)}'s posts"


def cmd_log(args: argparse.Namespace) -> None:
    """The moderation log, oldest first: who did what, where, and why."""
    with open_workspace(args) as ws:
        channel = _channel(ws, args.channel) if args.channel else None
        log = ws.moderation.log(channel, limit=args.limit)
    if args.json:
        print_json([_entry_json(a, log) for a in log.actions])
        return
    if not log.actions:
        print("no moderation yet" + (f" in #{_text.line(channel)}" if channel else ""))
        return
    book = NickBook(log.names)
    for a in log.actions:
        counts = "" if a.counts else "  (does not count: no longer a moderator)"
        reason = f": {_text.line(a.reason)}" if a.reason else ""
        print(f"{when(a.ts)}  #{_text.line(a.channel)}  {_person(book, a.author)} "
              f"{_what(a, log, book)}{reason}{counts}")
        print(f"    id {a.id.hex()}")


def _blocker(block: bool) -> Callable[[argparse.Namespace], None]:
    def handler(args: argparse.Namespace) -> None:
        with open_workspace(args) as ws:
            key = ws.resolve_person(args.person)
            (ws.moderation.block if block else ws.moderation.unblock)(key)
            who = _person(NickBook(ws.replica.nicknames()), key)
        print(f"blocked {who} on this computer: their posts are hidden and what they send is "
              "no longer stored" if block else
              f"unblocked {who}: what is still held of theirs shows again")
    return handler


def cmd_blocked(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        blocked = ws.moderation.blocked()
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([{"key": b.key.hex(), "nick": book.nicks.get(b.key), "since": b.ts}
                    for b in blocked])
        return
    if not blocked:
        print("nobody is blocked on this computer")
    for b in blocked:
        print(f"{book.nick(b.key)}  {b.key.hex()}  since {when(b.ts)}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str, *, json_flag: bool = False,
            parent: argparse._SubParsersAction | None = None) -> argparse.ArgumentParser:
        return command(parent or sub, common, name, handler, help, json_flag=json_flag)

    mod = sub.add_parser("mod", help="moderation: moderators, hiding posts and members, the log",
                         description="moderation: moderators per channel (named by admins) "
                         "hide posts and members there for everyone but the moderators; "
                         "every action is signed, with a reason, in the moderation log")
    mod_sub = mod.add_subparsers(dest="mod_command", metavar="COMMAND", required=True)
    p = add("role", cmd_role, "make someone a moderator of a channel, or not (admins)",
            parent=mod_sub)
    p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
    p.add_argument("person", metavar="NICK", help=f"the person: {PERSON_HELP}")
    role = p.add_mutually_exclusive_group(required=True)
    role.add_argument("--moderator", action="store_true", help="make them a moderator")
    role.add_argument("--none", action="store_true", help="take their moderator role away")
    p.add_argument("--reason", default="", help="why (optional, at most 256 characters)")
    for name, hidden, help in (
            ("hide", True, "hide a post, or a member's posts, in a channel (moderators)"),
            ("unhide", False, "show again what a hide hid (moderators)")):
        p = add(name, _hider(hidden), help, parent=mod_sub)
        p.add_argument("channel", type=channel_arg, help=CHANNEL_HELP)
        p.add_argument("target", metavar="ID|NICK", help=TARGET_HELP)
        p.add_argument("--reason", required=True, help="why (1 to 256 characters)")
    p = add("log", cmd_log, "the moderation log, oldest first", json_flag=True, parent=mod_sub)
    p.add_argument("channel", nargs="?", type=channel_arg,
                   help="only this channel's (default: every channel's)")
    p.add_argument("--limit", type=whole_number(1, MAX_LOG), default=100,
                   help=f"how many of the newest, 1 to {MAX_LOG} (default 100)")
    p = add("block", _blocker(True), "never show someone's posts on this computer, and stop "
            "storing what they send")
    p.add_argument("person", metavar="NICK", help=f"the person: {PERSON_HELP}")
    p = add("unblock", _blocker(False), "lift a block: show what is still held of theirs")
    p.add_argument("person", metavar="NICK", help=f"the person: {PERSON_HELP}")
    add("blocked", cmd_blocked, "who is blocked on this computer", json_flag=True)
