"""`hearth keep`: which channels and documents this computer keeps. It calls the app.keeping
function of the same name (`kept`, `keep`, `keep_all`, `keep_only`); no logic here beyond
parsing arguments and printing the result."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from core import kinds
from storage import Kept

from . import _text, keeping
from ._command import CLIError, channel_arg, command, open_workspace, print_json
from .workspace import Workspace

ALWAYS = ("the workspace's own objects (members, admins, policies, nicknames), private "
          "channels and direct messages always sync")


def kept_text(ws: Workspace, kept: Kept) -> str:
    """"all channels and documents", or what is kept: "#general, #random; documents: Plan"."""
    if kept.all:
        return "all channels and documents"
    names = {kinds.channel_key(c.name): c.name for c in ws.channels()}
    channels = sorted(names.get(key, key) for key in kept.channels)
    titles = {d.id: d.title for d in ws.documents.all()} if kept.documents else {}
    documents = sorted(titles.get(d.hex(), d.hex()[:12]) for d in kept.documents)
    shown = ", ".join(f"#{_text.line(name)}" for name in channels) or "no channels"
    return shown + (f"; documents: {', '.join(map(_text.line, documents))}" if documents
                    else "; no documents")


def kept_json(ws: Workspace, kept: Kept) -> dict:
    names = {kinds.channel_key(c.name): c.name for c in ws.channels()}
    return {"all": kept.all, "channels": sorted(names.get(k, k) for k in kept.channels),
            "documents": [d.hex() for d in kept.documents]}


def cmd_keep(args: argparse.Namespace) -> None:
    channels, documents = args.channel, args.doc
    named = bool(channels or documents)
    if args.all and named:
        raise CLIError("--all keeps every channel and document: give it without names")
    if (args.drop or args.only) and not named:
        raise CLIError(f"name the channels (or --doc documents) to "
                       f"{'stop keeping' if args.drop else 'keep'}")
    with open_workspace(args) as ws:
        if args.all:
            kept = keeping.keep_all(ws)
        elif args.only:
            kept = keeping.keep_only(ws, channels, documents)
        elif named:
            kept = keeping.keep(ws, channels, documents, drop=args.drop)
        else:
            kept = keeping.kept(ws)
        if args.json:
            print_json(kept_json(ws, kept))
            return
        print(f"keeping {kept_text(ws, kept)}")
    if not kept.all:
        print(f"({ALWAYS})")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = command(sub, common, "keep", cmd_keep,
                "which channels and documents this computer keeps (default: all); "
                f"{ALWAYS}", json_flag=True)
    p.add_argument("channel", nargs="*", type=channel_arg, metavar="CHANNEL",
                   help="keep these channels too (their history is fetched at the next sync)")
    p.add_argument("--doc", action="append", default=[], metavar="DOC",
                   help="keep this document too: its id, a unique prefix of it or its title "
                   "(repeatable)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--drop", action="store_true",
                     help="stop keeping these (what is here stays; nothing new arrives)")
    how.add_argument("--only", action="store_true", help="keep these and no other")
    how.add_argument("--all", action="store_true", help="keep every channel and document again")
