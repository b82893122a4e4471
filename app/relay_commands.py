"""`hearth relay`: run a relay (`serve`, `status`) and name the workspace's relays (`add`,
`remove`, `list`; app.relays). No logic here beyond parsing arguments and printing results."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from relay.server import CONNECTED_FILE, DB_FILE, RelayServer
from relay.store import DEFAULT_RETENTION_S, RelayStore
from sync.peers import AddressError, parse_address
from sync.relay_client import RelayAddress

from . import _text, relays
from ._command import (
    LOG_FORMAT,
    PORT,
    CLIError,
    command,
    errors,
    open_workspace,
    print_json,
    seconds,
    when,
    whole_number,
)
from .file_commands import size_arg
from .paths import default_data_dir
from .units import quota_label, size_label

DEFAULT_PORT = 7655


def relay_folder(args: argparse.Namespace) -> Path:
    """`--data DIR` is the relay's own folder (default: `relay` in the data folder)."""
    return Path(args.data).expanduser() if args.data else default_data_dir() / "relay"


def cmd_serve(args: argparse.Namespace) -> None:
    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    folder = relay_folder(args)
    try:
        asyncio.run(_serve(folder, args.host, args.port, args.quota << 20,
                           args.retention_days * 86400))
    except OSError as exc:
        raise CLIError(f"cannot serve: {exc}") from None
    except KeyboardInterrupt:
        pass


async def _serve(folder: Path, host: str, port: int, quota: int, retention_s: int) -> None:
    server = RelayServer(folder, quota=quota, retention_s=retention_s)
    try:
        port = await server.start(host, port)
        print(f"relay listening on {host}:{port}", flush=True)
        print(f"key {server.key.hex()}", flush=True)
        print(f"(admins: hearth relay add HOST:{port} {server.key.hex()})", flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(signum, stop.set)
        await stop.wait()
    finally:
        await server.close()


def cmd_status(args: argparse.Namespace) -> None:
    folder = relay_folder(args)
    if not (folder / DB_FILE).exists():
        raise CLIError(f"no relay in {folder} (start one with `hearth relay serve`)")
    store = RelayStore(folder / DB_FILE)
    try:
        spaces = store.spaces()
    finally:
        store.close()
    try:
        connected = json.loads((folder / CONNECTED_FILE).read_text())
    except (OSError, ValueError):
        connected = {}
    rows: list[dict[str, Any]] = [{"space": s.space.hex(), "epoch": s.epoch, "envelopes": s.count, "bytes": s.bytes,
             "quota": s.quota, "connected": int(connected.get(s.space.hex(), 0))}
            for s in spaces]
    if args.json:
        print_json(rows)
        return
    if not rows:
        print("no workspaces yet")
    for row in rows:
        print(f"{row['space'][:16]}  epoch {row['epoch']}  {row['envelopes']} envelopes  "
              f"{size_label(row['bytes'])} of {quota_label(row['quota'])}  "
              f"{row['connected']} connected")


def cmd_add(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        relay = relays.add_relay(ws, args.address, args.key)
    print(f"relay {_text.line(relay.hostport)} added: members dial it once they have synced")


def cmd_remove(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        relay = relays.remove_relay(ws, args.relay)
    print(f"relay {_text.line(relay.hostport)} removed")


def cmd_sync(args: argparse.Namespace) -> None:
    """One round with each relay the workspace names (or the one given), then exit."""
    given = None
    if args.address is not None:
        if args.key is None:
            raise CLIError("give the relay's KEY after HOST:PORT")
        host, port = parse_address(args.address)
        given = [RelayAddress(host, port, relays.parse_key(args.key))]
    with open_workspace(args) as ws:
        states = relays.sync_once(ws, given, timeout=args.timeout)
    failed = 0
    for state in states:
        where = _text.line(state.address.hostport)
        if state.last_sync:
            print(f"{where}: synced ({state.uploaded} up, {state.downloaded} down)")
        else:
            failed += 1
            print(f"{where}: {_text.line(state.error or 'no answer')}")
    if failed:
        raise CLIError(f"{failed} of {len(states)} relays did not sync")


def cmd_list(args: argparse.Namespace) -> None:
    with open_workspace(args) as ws:
        named = relays.named(ws)
        nicks = ws.replica.nicknames()
    if args.json:
        print_json([{"address": r.hostport, "key": r.key.hex(), "by": r.by.hex(),
                     "at_ms": r.at_ms} for r in named])
        return
    if not named:
        print("no relays (an admin adds one with `hearth relay add HOST:PORT KEY`)")
    for r in named:
        by = nicks.get(r.by) or r.by.hex()[:12]
        print(f"{_text.line(r.hostport)}  key {r.key.hex()}  (added by {_text.line(by)}, "
              f"{when(r.at_ms)})")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    parser = sub.add_parser("relay", help="run a relay, or name the relays this workspace "
                            "syncs through", description="A relay stores and forwards sealed "
                            "envelopes it cannot read, so members on different networks sync.")
    inner = parser.add_subparsers(dest="relay_command", metavar="COMMAND", required=True)
    p = command(inner, common, "serve", cmd_serve,
                "run a relay here (--data is the relay's folder); prints its address and key")
    p.add_argument("--port", type=PORT, default=DEFAULT_PORT, help=f"default {DEFAULT_PORT}; "
                   "0 picks a free one")
    p.add_argument("--host", default="0.0.0.0", help="address to listen on")  # noqa: S104
    p.add_argument("--quota", type=size_arg, default=1024, metavar="SIZE",
                   help="space per workspace, like 500M or 10G (default 1G)")
    p.add_argument("--retention-days", type=whole_number(1, 36500),
                   default=DEFAULT_RETENTION_S // 86400,
                   help="envelopes older than this go (default 90)")
    command(inner, common, "status", cmd_status,
            "the relay in --data: workspaces, envelopes, bytes, members connected",
            json_flag=True)
    p = command(inner, common, "add", cmd_add,
                "(admins) name a relay for every member to sync through")
    p.add_argument("address", metavar="HOST:PORT")
    p.add_argument("key", metavar="KEY", help="the key `hearth relay serve` printed")
    p = command(inner, common, "remove", cmd_remove, "(admins) take back a relay")
    p.add_argument("relay", metavar="RELAY", help="its key (or a prefix) or HOST:PORT")
    command(inner, common, "list", cmd_list, "the relays this workspace syncs through",
            json_flag=True)
    p = command(inner, common, "sync", cmd_sync,
                "sync once through the workspace's relays (or the one given), then exit")
    p.set_defaults(handler=errors(cmd_sync, AddressError))
    p.add_argument("address", nargs="?", metavar="HOST:PORT")
    p.add_argument("key", nargs="?", metavar="KEY")
    p.add_argument("--timeout", type=seconds(600), default=30.0,
                   help="seconds to wait for each relay (default 30)")
