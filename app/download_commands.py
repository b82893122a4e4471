"""`hearth download`: fetch an attached file from the peers that can be reached, then write it
under its own name (made safe) into a folder.

Beside a Node running on the data folder (`hearth serve` or the window), that Node fetches it:
this command leaves it a request file and reads its answers (app/download_requests.py).
Otherwise the command runs a Node of its own for as long as the fetch takes, dialling the known
peers, the --peer ones and, unless --no-mdns, those found on the network."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path

from ._command import CLIError, command, paths_of, peer_addresses, seconds, whole_number
from .paths import Paths
from .workspace import Workspace

MAX_DOWNLOAD_S = 24 * 3600.0  # the longest --timeout
STATUS_POLL_S = 0.2  # how often a running Node's answer is read
TAKE_TIMEOUT_S = 10.0  # a running Node looks for requests every app.download_requests.REQUESTS_CHECK_S


def cmd_download(args: argparse.Namespace) -> None:
    paths = paths_of(args)
    with Workspace.open(paths) as ws:
        message_id = ws.resolve_id(args.id, "message")
        ref = ws.files.ref(message_id, args.index)
        complete = ws.files.complete(ref.list, ref.attachment.size)
    if not complete:
        _fetch(paths, message_id, args)
    with Workspace.open(paths) as ws:
        print(ws.files.save(message_id, args.index, Path(args.out)))


def _fetch(paths: Paths, message_id: bytes, args: argparse.Namespace) -> None:
    from .errors import NodeError, NodeLocked
    from .node import Node  # imported here: other commands start faster

    node = Node(paths, port=0, mdns=not args.no_mdns, peers=peer_addresses(args.peer),
                reconcile_interval=None, ui="cli")
    try:
        node.start()
    except NodeLocked:
        _through_running_node(paths, message_id, args.index, args.timeout)
        return
    except NodeError as exc:
        raise CLIError(str(exc)) from None
    try:
        node.download(message_id, args.index).result(args.timeout)
    except FutureTimeout:
        raise CLIError(f"timed out after {args.timeout:g} s fetching the file (what arrived "
                       "is kept: run it again to go on)") from None
    except NodeError as exc:
        raise CLIError(f"cannot download: {exc}") from None
    finally:
        node.stop()


def _through_running_node(paths: Paths, message_id: bytes, index: int, timeout: float, *,
                          clock: Callable[[], float] = time.monotonic) -> None:
    from .download_requests import download_status, request_download

    status = request_download(paths, message_id, index)
    started = clock()
    try:
        while True:
            said = download_status(status)
            if said is not None and (said.get("done") or said.get("error")):
                break
            if said is None and clock() - started > TAKE_TIMEOUT_S:
                raise CLIError("the Hearth running on this data folder did not take the "
                               "download (stop it, or update it, and try again)")
            if clock() - started > timeout:
                raise CLIError(f"timed out after {timeout:g} s fetching the file (what "
                               "arrived is kept: run it again to go on)")
            time.sleep(STATUS_POLL_S)
    finally:
        status.unlink(missing_ok=True)
    if said.get("error"):
        raise CLIError(f"cannot download: {said['error']}")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = command(sub, common, "download", cmd_download,
                "fetch a message's attached file from reachable peers and save it")
    p.add_argument("id", help="the message's id (64 hex characters, or a unique prefix)")
    p.add_argument("--index", type=whole_number(0, 3), default=0,
                   help="which of the message's files, from 0 (default 0)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="the folder to write it into (under its own name, made safe)")
    p.add_argument("--peer", action="append", default=[], metavar="HOST:PORT",
                   help="also fetch from this peer (repeatable)")
    p.add_argument("--no-mdns", action="store_true",
                   help="do not look for peers on the network with mDNS")
    p.add_argument("--timeout", type=seconds(MAX_DOWNLOAD_S), default=600.0,
                   help=f"seconds, at most {MAX_DOWNLOAD_S:g} (default 600)")
