"""`hearth` commands for private channels and direct messages: channel create, channel add,
channel remove, dm. Each calls the `ws.private` method of its name (app/private.py); `hearth
post`, `read` and `channels` take private channels too (app/chat_commands.py). No logic here
beyond parsing arguments and printing results."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import _text
from ._command import (
    PERSON_HELP,
    CLIError,
    channel_arg,
    command,
    open_workspace,
    print_json,
    whole_number,
)
from .chat_commands import CHANNEL_HELP, MAX_LIMIT, _print_messages
from .errors import LookalikeChannel, MayBePrivate
from .names import NickBook
from .private import PrivateChannel
from .workspace import SHORT_KEY, Workspace


def _mine(ws: Workspace, name: str) -> PrivateChannel:
    channel = ws.private.resolve(name)
    if channel is None:
        raise CLIError(f"you are in no private channel #{_text.line(name)}")
    return channel


def cmd_create(args: argparse.Namespace) -> None:
    """ws.create_channel (a public channel, made by joining it), or with --private
    ws.private.create; each refusal of the library with the flag that answers it."""
    with open_workspace(args) as ws:
        if not args.private:
            if args.member:
                raise CLIError("--member is for a private channel (add --private); anyone "
                               "may join a public one")
            try:
                print(ws.create_channel(args.name, public=args.public, force=args.force)
                      .id.hex())
            except MayBePrivate as exc:
                raise CLIError(f"{exc} with --public") from None
            except LookalikeChannel as exc:
                raise CLIError(f"{exc}; add --force if you mean it") from None
            return
        if args.public or args.force:
            raise CLIError("--public and --force are for a public channel, not --private")
        if ws.private.resolve(args.name) is not None:
            raise CLIError(f"you are in a private channel #{_text.line(args.name)} already")
        members = [ws.resolve_person(m) for m in args.member]
        print(ws.private.create(args.name, members).hex())


def _changer(add: bool) -> Callable[[argparse.Namespace], None]:
    def handler(args: argparse.Namespace) -> None:
        with open_workspace(args) as ws:
            channel = _mine(ws, args.name)
            key = ws.resolve_person(args.person)
            who = f"{NickBook(ws.replica.nicknames()).nick(key)} ({key.hex()[:SHORT_KEY]})"
            if add:
                ws.private.add_member(channel.id, key)
            else:
                ws.private.remove_member(channel.id, key)
        print(f"added {_text.line(who)} to #{_text.line(channel.name)}: they read its history"
              if add else f"took {_text.line(who)} out of #{_text.line(channel.name)}: its "
              "new key is sealed to everyone else, so they read nothing written from now on")
    return handler


def cmd_members(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        channel = _mine(ws, args.name)
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([{"key": k.hex(), "nick": book.nicks.get(k), "creator": k == channel.creator}
                    for k in channel.members])
        return
    for key in channel.members:
        creator = "  (created it)" if key == channel.creator else ""
        print(f"{book.nick(key)}  {key.hex()}{creator}")


def cmd_dm(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        key = ws.resolve_person(args.person)
        if args.text is not None:
            print(ws.private.direct_message(key, args.text).id.hex())
            return
        channel = ws.private.dm_channel(key)
        messages = ws.private.read(channel, limit=args.limit) if channel else []
        _print_messages(ws, messages, args.json)


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str, *, json_flag: bool = False,
            parent: argparse._SubParsersAction | None = None) -> argparse.ArgumentParser:
        return command(parent or sub, common, name, handler, help, json_flag=json_flag)

    channel = sub.add_parser("channel", help="make channels, and manage private ones",
                             description="make a channel; a private one's name and messages "
                             "are encrypted with a key sealed to its members")
    ch_sub = channel.add_subparsers(dest="channel_command", metavar="COMMAND", required=True)
    p = add("create", cmd_create, "make a public channel (join it; one that exists is "
            "joined), or with --private one only its members read; `hearth post`, `topic` and "
            "`join` take only channels this computer knows", parent=ch_sub)
    p.add_argument("name", type=channel_arg, metavar="NAME", help=CHANNEL_HELP)
    p.add_argument("--private", action="store_true",
                   help="only its members read its name and messages")
    p.add_argument("--public", action="store_true",
                   help="make it public even though this computer cannot tell yet whether "
                   "NAME is a private channel you are in (its key, or anything from the "
                   "workspace, has not arrived: without --public that is refused). The name "
                   "of a private channel this computer opens is never made public")
    p.add_argument("--force", action="store_true",
                   help="make it even if NAME looks like another channel's name")
    p.add_argument("--member", action="append", default=[], metavar="NICK",
                   help=f"a member of it besides you (repeatable): {PERSON_HELP}")
    for name, adding, help in (
            ("add", True, "add someone to a private channel (its creator or an admin)"),
            ("remove", False, "take someone out of a private channel (its creator or an "
             "admin): a new key for the others")):
        p = add(name, _changer(adding), help, parent=ch_sub)
        p.add_argument("name", metavar="NAME", help="the private channel")
        p.add_argument("person", metavar="NICK", help=f"the person: {PERSON_HELP}")
    p = add("members", cmd_members, "who is in a private channel", json_flag=True,
            parent=ch_sub)
    p.add_argument("name", metavar="NAME", help="the private channel")
    p = add("dm", cmd_dm, "send someone a direct message, or read yours with them",
            json_flag=True)
    p.add_argument("person", metavar="NICK", help=f"the person: {PERSON_HELP}")
    p.add_argument("text", nargs="?", help="the message (leave it out to read)")
    p.add_argument("--limit", type=whole_number(1, MAX_LIMIT), default=50,
                   help=f"how many messages to read, 1 to {MAX_LIMIT} (default 50)")
