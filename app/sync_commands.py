"""`hearth` commands for sharing a workspace: serve, sync, peers, invite, join-workspace,
leave-workspace, export and import. Each calls the library (app.node, app.sharing,
app.workspaces); no logic of its own."""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from sync.peers import PeerBook

from . import _text, sharing
from ._command import (
    LOG_FORMAT,
    CLIError,
    channel_arg,
    errors,
    hinted,
    node_options,
    paths_of,
    peer_addresses,
    print_json,
    seconds,
)
from .invite import InviteError

MAX_SYNC_S = 24 * 3600.0  # the longest `hearth sync --timeout`


def cmd_serve(args: argparse.Namespace) -> None:
    from .node import Node, NodeError  # imported here: other commands start faster

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    node = Node(paths_of(args), port=args.port, interfaces=args.interface or None,
                mdns=not args.no_mdns, peers=peer_addresses(args.peer))
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    try:
        node.start()
    except NodeError as exc:
        raise CLIError(str(exc)) from None
    try:
        print(f"serving workspace {node.workspace_id.hex()[:16]}… as "
              f"{node.key.hex()[:16]}… on port {node.port}", flush=True)
        stop.wait()
    finally:
        node.stop()


def cmd_sync(args: argparse.Namespace) -> None:
    (host, port), = peer_addresses([args.peer])
    if not args.once:
        raise CLIError("only `--once` is supported here; `hearth serve` keeps syncing")
    from sync.service import SyncFailed  # imported here: other commands start without aiohttp

    try:
        result = sharing.sync_once(paths_of(args), host, port, timeout=args.timeout)
    except SyncFailed as exc:
        raise CLIError(str(exc)) from None
    print(f"in sync with {host}:{port}: {result.objects_received} objects in, "
          f"{result.objects_sent} out, {result.rounds} rounds, {result.ms:.0f} ms")


def cmd_peers(args: argparse.Namespace) -> None:
    paths = paths_of(args)
    records = PeerBook(paths.workspace_dir / "peers.json").as_records()
    if args.json:
        print_json(records)
        return
    if not records:
        print(hinted("no known peers yet: run `hearth serve` (peers on this network are "
                     "found automatically) or add one with `hearth serve --peer HOST:PORT`",
                     args))
    for r in records:
        print(f"{_text.line(r['address'])}  key {_text.line((r['key'] or '?')[:16])}  "
              f"last seen {_when(r['last_seen'])}  last sync {_when(r['last_sync'])}"
              + (f" ({r['last_sync_ms']:.0f} ms)" if r.get("last_sync_ms") else ""))


def _when(seconds: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds)) if seconds else "never"


def cmd_invite(args: argparse.Namespace) -> None:
    print(sharing.invite(paths_of(args)).encode())


def cmd_join_workspace(args: argparse.Namespace) -> None:
    try:
        workspace_id = sharing.join_workspace(paths_of(args), args.code, nick=args.nick)
    except InviteError as exc:
        raise CLIError(str(exc)) from None
    print(workspace_id.hex())


def cmd_leave_workspace(args: argparse.Namespace) -> None:
    from .workspaces import leave_workspace

    data = paths_of(args).data
    leave_workspace(data, args.name)
    print(f"left {_text.line(args.name)}: its replica is removed from {_text.line(str(data))}")


def cmd_export(args: argparse.Namespace) -> None:
    count = sharing.export_bundle(paths_of(args), Path(args.file), channel=args.channel)
    print(f"{count} objects written to {args.file}")


def cmd_import(args: argparse.Namespace) -> None:
    counts = sharing.import_bundle(paths_of(args), Path(args.file))
    print(_text.json_text(counts, indent=None) if args.json else
          f"{counts['added']} added, {counts['duplicate']} already here, "
          f"{counts['rejected']} rejected")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    def add(name: str, handler: Callable, help: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help, description=help)
        common(parser)
        parser.set_defaults(handler=errors(handler))
        return parser

    node_options(add("serve", cmd_serve,
                         "run a headless node: sync with peers until stopped"))
    p = add("sync", cmd_sync, "reconcile with one peer")
    p.add_argument("--peer", required=True, metavar="HOST:PORT")
    p.add_argument("--once", action="store_true", help="reconcile once, then exit")
    p.add_argument("--timeout", type=seconds(MAX_SYNC_S), default=60.0,
                   help=f"seconds, at most {MAX_SYNC_S:g} (default 60)")
    p = add("peers", cmd_peers, "known peers with last-seen and last-sync figures")
    p.add_argument("--json", action="store_true", help="print JSON")
    add("invite", cmd_invite, "print an invite code for this workspace (it holds the secret)")
    p = add("join-workspace", cmd_join_workspace,
            "join a workspace from an invite code; its content arrives by sync")
    p.add_argument("code")
    p.add_argument("--nick", help="your nickname")
    p = add("leave-workspace", cmd_leave_workspace,
            "remove this computer's replica of a workspace (not one a running Hearth has open)")
    p.add_argument("name", metavar="NAME", help="the workspace's folder name")
    p = add("export", cmd_export, "write the workspace (or one channel) to a bundle file")
    p.add_argument("file")
    p.add_argument("--channel", type=channel_arg, help="only this channel (and what it needs)")
    p = add("import", cmd_import, "ingest a bundle file written by `hearth export`")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="print JSON")


