"""`hearth attach`, `hearth storage` and `hearth pin`: files attached to messages
(app/attachments.py).
`hearth download` is app/download_commands.py's (it needs the network)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

from . import preferences
from ._command import (
    CLIError,
    channel_arg,
    command,
    open_workspace,
    print_json,
    whole_number,
)
from .units import quota_label, size_label

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 2**20, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def size_arg(text: str) -> int:
    """A size such as 500M, 10G or 2TiB (a bare number is MiB), in whole MiB."""
    found = _SIZE.match(text)
    if not found:
        raise argparse.ArgumentTypeError(f"{text!r} is not a size (like 500M, 10G or 1T)")
    mb = int(float(found.group(1)) * _UNITS[found.group(2).lower()] // 2**20)
    if not 0 <= mb <= preferences.MAX_MB:
        raise argparse.ArgumentTypeError(f"{text!r} is out of range")
    return mb


def cmd_attach(args: argparse.Namespace) -> None:
    """Post files to a channel (a private channel of mine by its name, or a direct message by
    @nick): prints the new message's id."""
    with open_workspace(args) as ws:
        files = [Path(f) for f in args.files]
        private = ws.private.resolve(args.channel)
        if private is not None:
            obj = ws.files.attach_private(private.id, files, args.text)
        else:
            obj = ws.files.attach(args.channel, files, args.text)
        print(obj.id.hex())


def cmd_storage(args: argparse.Namespace) -> None:
    """What attached files take here; --quota and --auto-download change the preferences
    (a smaller quota evicts others' files at once, least recently opened first)."""
    with open_workspace(args) as ws:
        freed = 0
        if args.quota is not None or args.auto_download is not None:
            try:
                freed = ws.files.set_preferences(storage_quota_mb=args.quota,
                                                 auto_download_mb=args.auto_download)
            except preferences.PreferenceError as exc:
                raise CLIError(str(exc)) from None
        usage = ws.files.usage()
        auto = preferences.load(ws.paths.data).auto_download_mb
    if args.json:
        print_json({"total": usage.total, "mine": usage.mine, "pinned": usage.pinned,
                    "others": usage.others, "quota": usage.quota, "files": usage.files,
                    "auto_download": auto * 2**20, "freed": freed})
        return
    print(f"files here: {usage.files}, {size_label(usage.total)} of a {quota_label(usage.quota)} quota")
    print(f"  my uploads:    {size_label(usage.mine)} (kept)")
    print(f"  pinned:        {size_label(usage.pinned)} (kept)")
    print(f"  others' files: {size_label(usage.others)} (evicted beyond the quota, least "
          "recently opened first)")
    print(f"files up to {quota_label(auto * 2**20)} in your channels arrive without asking")
    if freed:
        print(f"freed {size_label(freed)}")


def cmd_pin(args: argparse.Namespace) -> None:
    """Keep a message's file on this computer whatever the quota (--unpin: let the quota
    evict it again, least recently opened first)."""
    with open_workspace(args) as ws:
        message_id = ws.resolve_id(args.id, "message")
        ws.files.pin(message_id, args.index, not args.unpin)
        name = ws.files.ref(message_id, args.index).attachment.name
    print(f"{'unpinned' if args.unpin else 'pinned'}: {name}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = command(sub, common, "attach", cmd_attach,
                "post files (up to 4, each up to 4 GiB) to a channel; prints the message id")
    p.add_argument("channel", type=channel_arg,
                   help="the channel's name, or a private channel's or @person's")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--text", default="", help="a message to go with the files")
    p = command(sub, common, "storage", cmd_storage,
                "what attached files take here, and the quota for others' files",
                json_flag=True)
    p.add_argument("--quota", type=size_arg, metavar="SIZE",
                   help="how much attached files may take here (like 500M or 10G); others' "
                   "files beyond it are evicted now")
    p.add_argument("--auto-download", type=size_arg, metavar="SIZE",
                   help="fetch files up to this size in your channels without asking")
    p = command(sub, common, "pin", cmd_pin,
                "keep a message's file on this computer whatever the quota")
    p.add_argument("id", help="the message's id (64 hex characters, or a unique prefix)")
    p.add_argument("--index", type=whole_number(0, 3), default=0,
                   help="which of the message's files, from 0 (default 0)")
    p.add_argument("--unpin", action="store_true", help="let the quota evict it again")
