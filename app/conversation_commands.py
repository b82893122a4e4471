"""`hearth` conversation commands: edit, reply, thread, react, unreact, versions, mentions.
Each calls the `ws.conversation` method of the same name (app/conversation.py); no logic here beyond
parsing arguments and printing results."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from . import _text
from ._command import command, open_workspace, print_json, when
from .chat_commands import LIMIT, _print_messages
from .workspace import MIN_PREFIX

ID_HELP = f"the message's id (64 hex characters, or a unique prefix of at least {MIN_PREFIX})"
EMOJI_HELP = "an emoji, or its :shortcode: (:thumbs_up:, :+1:, :tada:)"


def cmd_edit(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        print(ws.conversation.edit(ws.resolve_id(args.id, "message"), args.text).id.hex())


def cmd_reply(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        reply = ws.conversation.reply(ws.resolve_id(args.id, "message"), args.text,
                         broadcast=args.also_channel)
        print(reply.id.hex())


def cmd_thread(args: argparse.Namespace) -> None:
    """A thread: its first message, then its replies, as `read` prints messages."""
    with open_workspace(args) as ws:
        _print_messages(ws, ws.conversation.thread(ws.resolve_id(args.id, "message")), args.json)


def cmd_react(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        print(ws.conversation.react(ws.resolve_id(args.id, "message"), args.emoji).id.hex())


def cmd_unreact(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        print(ws.conversation.unreact(ws.resolve_id(args.id, "message"), args.emoji).id.hex())


def cmd_versions(args: argparse.Namespace) -> None:
    """A message's texts, oldest first; the last is what it says now."""
    with open_workspace(args) as ws:
        versions = ws.conversation.versions(ws.resolve_id(args.id, "message"))
    if args.json:
        print_json([{"ts": v.ts, "text": v.text} for v in versions])
        return
    for n, v in enumerate(versions):
        label = "original" if n == 0 else f"edit {n}"
        print(f"{when(v.ts)}  {label}: {_text.block(v.text)}")


def cmd_mentions(args: argparse.Namespace) -> None:
    """Messages by others that mention my nickname, newest first."""
    with open_workspace(args) as ws:
        _print_messages(ws, ws.conversation.mentions(limit=args.limit), args.json, channel=True)


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str, *,
            json_flag: bool = False) -> argparse.ArgumentParser:
        return command(sub, common, name, handler, help, json_flag=json_flag)

    p = add("edit", cmd_edit, "replace the text of one of your messages")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("text")
    p = add("reply", cmd_reply, "reply in a message's thread")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("text")
    p.add_argument("--also-channel", action="store_true",
                   help="show the reply in the channel too, not only in the thread")
    p = add("thread", cmd_thread, "read a message's thread, oldest first", json_flag=True)
    p.add_argument("id", help=ID_HELP)
    p = add("react", cmd_react, "add your reaction to a message")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("emoji", help=EMOJI_HELP)
    p = add("unreact", cmd_unreact, "take your reaction back")
    p.add_argument("id", help=ID_HELP)
    p.add_argument("emoji", help=EMOJI_HELP)
    p = add("versions", cmd_versions, "a message's earlier texts, oldest first", json_flag=True)
    p.add_argument("id", help=ID_HELP)
    p = add("mentions", cmd_mentions, "messages that mention you, newest first",
            json_flag=True)
    p.add_argument("--limit", type=LIMIT, default=50, help="how many (default 50)")
