"""`hearth` commands for members and invites: invite (--uses, --expires, --for, --list,
--revoke), join-workspace, workspace members. Each calls the `ws.members` method of its
name (app/membership.py; joining in app/joining.py); no logic here beyond parsing arguments and
printing results."""

from __future__ import annotations

import argparse
import re
import time
from collections.abc import Callable

from . import _text, joining
from ._command import (
    PERSON_HELP,
    CLIError,
    command,
    open_workspace,
    paths_of,
    peer_addresses,
    print_json,
    when,
    whole_number,
)
from .invite import InviteError
from .membership import InviteRecord, MemberRecord
from .names import NickBook
from .workspace import SHORT_KEY, parse_key

MAX_USES = 1_000_000
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
MAX_EXPIRY_S = 366 * 86400
_DURATION = re.compile(r"(\d{1,7})([smhd])")


def duration(text: str) -> int:
    """An argparse type: 30s, 10m, 24h or 7d (at most a year), in seconds."""
    match = _DURATION.fullmatch(text.strip().lower())
    value = int(match[1]) * _UNITS[match[2]] if match else 0
    if not 0 < value <= MAX_EXPIRY_S:
        raise argparse.ArgumentTypeError(
            f"must be a duration such as 30s, 10m, 24h or 7d (at most 366d), not {text[:40]!r}")
    return value


duration.__name__ = "duration"


def _invite_json(invite: InviteRecord, book: NickBook, now_ms: int) -> dict:
    return {"id": invite.id.hex(), "creator": invite.creator.hex(),
            "creator_nick": book.nicks.get(invite.creator), "created": invite.created_ms,
            "uses": invite.uses, "used": invite.used, "expires": invite.expires_ms or None,
            "revoked": invite.revoked_ms, "state": invite.state(now_ms)}


def _limits(invite: InviteRecord) -> str:
    uses = f"used {invite.used} of {invite.uses}" if invite.uses else f"used {invite.used}"
    expiry = f", expires {when(invite.expires_ms)}" if invite.expires_ms else ""
    return uses + expiry


def cmd_invite(args: argparse.Namespace) -> None:
    if args.list:
        with open_workspace(args) as ws:
            invites, now = ws.members.invites(), ws.replica.now_ms()
            book = NickBook(ws.replica.nicknames())
        if args.json:
            print_json([_invite_json(i, book, now) for i in invites])
            return
        if not invites:
            print("no invites yet: make one with `hearth invite`")
        for i in invites:
            print(f"{i.id.hex()[:12]}  {i.state(now):8}  by {book.nick(i.creator)} "
                  f"{when(i.created_ms)}  {_limits(i)}")
        return
    if args.revoke:
        with open_workspace(args) as ws:
            ws.members.revoke_invite(args.revoke)
        print("revoked: that invite admits no one from now on")
        return
    if args.key:
        code = joining.invite_for(paths_of(args), parse_key(args.key))
        print(code)
        return
    expires_ms = int((time.time() + args.expires) * 1000) if args.expires else 0
    code, invite_id = joining.invite(paths_of(args), uses=args.uses or 0, expires_ms=expires_ms)
    if args.json:
        print_json({"code": code, "id": invite_id.hex(), "uses": args.uses or 0,
                    "expires": expires_ms or None})
        return
    print(code)


def cmd_join_workspace(args: argparse.Namespace) -> None:
    try:
        workspace_id = joining.join_workspace(paths_of(args), args.code, nick=args.nick,
                                              peers=peer_addresses(args.peer))
    except InviteError as exc:
        raise CLIError(str(exc)) from None
    print(workspace_id.hex())


def _member_json(m: MemberRecord, book: NickBook) -> dict:
    return {"key": m.key.hex(), "nick": m.nick, "admin": m.admin, "since": m.since_ms,
            "admitted_by": m.admitted_by.hex() if m.admitted_by else None,
            "admitted_by_nick": book.nicks.get(m.admitted_by) if m.admitted_by else None,
            "invite": m.invite.hex() if m.invite else None}


def cmd_members(args: argparse.Namespace) -> None:
    """Every member: nickname, key, role, who admitted them and when."""
    with open_workspace(args) as ws:
        members = ws.members.all()
        book = NickBook(ws.replica.nicknames())
        me = ws.key
    if args.json:
        print_json([_member_json(m, book) for m in members])
        return
    for m in members:
        role = "admin" if m.admin else "member"
        mine = " (you)" if m.key == me else ""
        how = (f"admitted by {book.nick(m.admitted_by)} "
               f"{'with an invite' if m.invite else 'with a personal code'}"
               if m.admitted_by else "created the workspace")
        print(f"{_text.line(m.nick or '?')}{mine}  {m.key.hex()[:SHORT_KEY]}  {role}  "
              f"since {when(m.since_ms)}, {how}")


def cmd_remove(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        key = ws.resolve_person(args.person)
        who = f"{NickBook(ws.replica.nicknames()).nick(key)} ({key.hex()[:SHORT_KEY]})"
        ws.members.remove(key, args.reason)
        epoch = ws.members.view().epoch
    print(f"removed {_text.line(who)}: their sessions are refused, what they write from now "
          f"on counts nowhere, and the workspace moved to epoch {epoch}, whose secret they "
          "never get")


def cmd_removed(args: argparse.Namespace) -> None:
    """Everyone removed: who removed them, when and why."""
    with open_workspace(args) as ws:
        removed = ws.members.removed()
        book = NickBook(ws.replica.nicknames())
    if args.json:
        print_json([{"key": r.key.hex(), "nick": r.nick, "by": r.by.hex(),
                     "by_nick": book.nicks.get(r.by), "at": r.at_ms, "reason": r.reason,
                     "removal": r.removal.hex()} for r in removed])
        return
    if not removed:
        print("nobody has been removed")
    for r in removed:
        reason = f": {_text.line(r.reason)}" if r.reason else ""
        print(f"{_text.line(r.nick or '?')}  {r.key.hex()[:SHORT_KEY]}  removed by "
              f"{book.nick(r.by)} {when(r.at_ms)}{reason}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str, *, json_flag: bool = False,
            parent: argparse._SubParsersAction | None = None) -> argparse.ArgumentParser:
        return command(parent or sub, common, name, handler, help, json_flag=json_flag)

    p = add("invite", cmd_invite, "make an invite code (it holds no secret; any member's "
            "node admits with it), list or revoke invites", json_flag=True)
    p.add_argument("--uses", type=whole_number(1, MAX_USES), metavar="N",
                   help="admit at most N people (default: any number)")
    p.add_argument("--expires", type=duration, metavar="DURATION",
                   help="stop admitting after 30s, 10m, 24h, 7d... (default: never)")
    p.add_argument("--for", dest="key", metavar="KEY",
                   help="a personal code for this identity key (`hearth identity show` "
                   "on their computer): it admits them alone, with no member online")
    p.add_argument("--list", action="store_true", help="list the invites and their state")
    p.add_argument("--revoke", metavar="CODE|ID", help="revoke an invite by its code or id")
    p = add("join-workspace", cmd_join_workspace,
            "join a workspace from an invite code; its content arrives by sync")
    p.add_argument("code")
    p.add_argument("--nick", help="your nickname")
    p.add_argument("--peer", action="append", default=[], metavar="HOST:PORT",
                   help="a member's computer to join through (repeatable; an invite code "
                   "needs one, a personal code none)")
    workspace = sub.add_parser("workspace", help="the workspace's members",
                               description="the workspace's members, each known by a signed "
                               "admission: who admitted them and when")
    ws_sub = workspace.add_subparsers(dest="workspace_command", metavar="COMMAND",
                                      required=True)
    add("members", cmd_members, "every member: nickname, key, role, who admitted them",
        json_flag=True, parent=ws_sub)
    p = add("remove", cmd_remove, "remove a member (admins): their sessions are refused, "
            "what they write from now on counts nowhere, and a new epoch's secret goes to "
            "everyone else", parent=ws_sub)
    p.add_argument("person", metavar="NICK|KEY", help=f"the member: {PERSON_HELP}")
    p.add_argument("--reason", default="", help="why (optional, at most 256 characters)")
    add("removed", cmd_removed, "everyone removed: by whom, when and why", json_flag=True,
        parent=ws_sub)
