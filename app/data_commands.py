"""`hearth` commands for bringing data in and taking it out: import-slack, slack-claim,
slack-confirm, slack-users (app/slack_import.py), archive (app/archive.py), backup and
restore (app/backup.py). Each calls the library; no logic here beyond parsing
arguments and printing results."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from . import _text
from ._command import (
    PERSON_HELP,
    channel_arg,
    command,
    open_workspace,
    passphrase,
    paths_of,
    print_json,
)
from .archive import FORMATS, write_archive
from .backup import backup, backup_summary, peek, restore
from .paths import DEFAULT_WORKSPACE
from .slack_import import claim, claims, confirm, import_slack, read_mapping
from .workspace import SHORT_KEY


def _progress(doing: str = "importing", unit: str = "messages", *,
              last_always: bool = True) -> Callable[[int, int], None]:
    """Progress on stderr by tenths, on a terminal; the last one also elsewhere when
    `last_always`."""
    shown = [-1]

    def report(done: int, total: int) -> None:
        tenth = done * 10 // total if total else 10
        if tenth != shown[0] and sys.stderr.isatty() or \
                (last_always and tenth == 10 and shown[0] != 10):
            shown[0] = tenth
            print(f"\r{doing}: {done}/{total} {unit}", end="" if tenth < 10 else "\n",
                  file=sys.stderr, flush=True)
    return report


def cmd_import_slack(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        mapping = read_mapping(ws, args.map) if args.map else None
        summary = import_slack(ws, Path(args.export), mapping=mapping,
                               progress=None if args.quiet else _progress())
    print(_text.line(summary.line()))


def cmd_claim(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        obj = claim(ws, args.user)
    print(f"claimed Slack user {_text.line(obj.body['user'])}: the member who imported their "
          f"messages or an admin confirms it (`hearth slack-confirm`) ({obj.hex[:SHORT_KEY]})")


def cmd_confirm(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        key = ws.resolve_person(args.person)
        done = confirm(ws, key, args.user)
    obj = done.confirmation
    print(f"confirmed: Slack user {_text.line(obj.body['user'])}'s messages show as "
          f"{key.hex()[:SHORT_KEY]}'s"
          + (f"; added to {', '.join('#' + _text.line(c) for c in done.channels)}"
             if done.channels else ""))


def cmd_users(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        rows = claims(ws)
        nicks = ws.nicknames()
    if args.json:
        print_json([{"user": u, "name": n, "member": k.hex() if k else None} for u, n, k in rows])
        return
    for uid, name, key in rows:
        shown = f"{nicks.get(key) or '?'} ({key.hex()[:SHORT_KEY]})" if key else "(unclaimed)"
        print(f"{_text.line(uid)}  {_text.line(name)}  {_text.line(shown)}")


def cmd_archive(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        archive = write_archive(ws, Path(args.out), args.format, channels=args.channel,
                                include_private=args.include_private)
    count = sum(len(c.messages) for c in archive.channels)
    private = sum(c.private for c in archive.channels)
    print(f"archived {_text.counted(count, 'message')} in "
          f"{_text.counted(len(archive.channels), 'channel')} and "
          f"{_text.counted(len(archive.documents), 'document')} as {args.format} to "
          f"{_text.line(str(args.out))}")
    if args.include_private:
        print(f"it holds {private} private channels and direct messages: anyone who has the "
              "archive reads them")


def cmd_backup(args: argparse.Namespace) -> None:
    info = backup(paths_of(args), Path(args.file), passphrase(confirm=True),
                  files=not args.without_files,
                  progress=_progress("backing up files", "chunks", last_always=False))
    print(f"backed up workspace {_text.line(info.workspace)} ({backup_summary(info)}, the "
          f"identity, the secret and the settings), sealed whole under your passphrase, to "
          f"{_text.line(str(args.file))}")


def cmd_restore(args: argparse.Namespace) -> None:
    if getattr(args, "data", None) is None:
        from ._command import CLIError

        raise CLIError("restore needs --data DIR: a new data folder to restore into")
    given = getattr(args, "workspace", None)
    workspace = given if given not in (None, DEFAULT_WORKSPACE) else None
    peek(Path(args.file))  # a file that is no backup is refused before the passphrase is asked
    done = restore(Path(args.file), Path(args.data), passphrase(confirm=False),
                   workspace=workspace)
    fetch = (f"; the bytes of {_text.counted(done.incomplete, 'file')} it lacks come from "
             "peers" if done.incomplete else "")
    print(f"restored workspace {_text.line(done.paths.workspace)} ({backup_summary(done.info)}) "
          f"into {_text.line(str(done.paths.data))}: it syncs on as the same member "
          f"(`hearth serve`){fetch}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = command(sub, common, "import-slack", cmd_import_slack,
                "import a Slack workspace export (a zip or its folder): channels, messages, "
                "threads, reactions; private channels and DMs as private channels")
    p.add_argument("export", metavar="EXPORT", help="the export's zip file or folder")
    p.add_argument("--map", metavar="USERS.json",
                   help='Slack users who are members here: {"U123": "nick or key", ...}')
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p = command(sub, common, "slack-claim", cmd_claim,
                "say you are a Slack user whose messages were imported")
    p.add_argument("user", metavar="USER", help="their Slack id (U123) or name as imported")
    p = command(sub, common, "slack-confirm", cmd_confirm,
                "confirm a member's Slack claim (the importer or an admin): the user's "
                "imported messages show as theirs")
    p.add_argument("person", metavar="PERSON", help=PERSON_HELP)
    p.add_argument("user", metavar="USER", help="the Slack id (U123) or name as imported")
    p = command(sub, common, "archive", cmd_archive,
                "write an open archive of what this computer can read: a SQLite database "
                "(sqlite-utils, Datasette), Slack's export layout (json: Mattermost, Zulip, "
                "import-slack read it) or static web pages (html)")
    p.add_argument("out", metavar="OUT", help="the file or folder to write (must not exist; "
                   "json writes a zip when OUT ends in .zip)")
    p.add_argument("--format", choices=FORMATS, default="sqlite", help="default: sqlite")
    p.add_argument("--channel", action="append", type=channel_arg, default=[], metavar="C",
                   help="only this channel (repeatable; default: every channel and document)")
    p.add_argument("--include-private", action="store_true",
                   help="private channels and direct messages too (the archive is then as "
                   "private as they are)")
    p = command(sub, common, "backup", cmd_backup,
                "back up this workspace (a consistent snapshot, safe while a node runs), the "
                "identity and the secret, the settings and the attached files' bytes, to a new "
                "file sealed whole under a passphrase (HEARTH_PASSPHRASE or asked)")
    p.add_argument("file", metavar="FILE", help="the backup file to write (must not exist)")
    p.add_argument("--without-files", action="store_true",
                   help="leave out the attached files' bytes this computer stores (a small "
                   "backup; after a restore, peers serve them again)")
    p = command(sub, common, "restore", cmd_restore,
                "restore a backup into a new data folder (--data DIR)")
    p.add_argument("file", metavar="FILE", help="a file `hearth backup` wrote (its passphrase: "
                   "HEARTH_PASSPHRASE or asked)")
    command(sub, common, "slack-users", cmd_users,
            "Slack users whose messages were imported, and who claimed them", json_flag=True)
