"""`hearth analytics ...`: switch the opt-in recorder, see what it holds, run a collector.
Each command calls the analytics library API of the same name."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

from analytics.recorder import WHAT_IS_COLLECTED, AnalyticsError, Recorder

from . import _text
from ._command import CLIError, errors, whole_number
from .paths import PathError, Paths


def _recorder(args: argparse.Namespace) -> Recorder:
    try:
        return Recorder(Paths.resolve(args.data, None).data)
    except PathError as exc:
        raise CLIError(str(exc)) from None



def cmd_enable(args: argparse.Namespace) -> None:
    _recorder(args).enable(args.collector)
    print("analytics on. " + WHAT_IS_COLLECTED)


def cmd_disable(args: argparse.Namespace) -> None:
    _recorder(args).disable()
    print("analytics off: the local spool is deleted, and the collector will be asked to "
          "delete what it has from this computer")


def cmd_status(args: argparse.Namespace) -> None:
    status = _recorder(args).status()
    if args.json:
        print(json.dumps({"enabled": status.enabled, "collector": status.collector,
                          "spooled": status.spooled,
                          "pending_deletions": status.pending_deletions}))
        return
    print(f"analytics {'on' if status.enabled else 'off'}; collector: "
          f"{_text.line(status.collector) or 'none set'}; {status.spooled} events waiting; "
          f"{status.pending_deletions} deletion requests waiting")


def cmd_collect(args: argparse.Namespace) -> None:
    from analytics.collector import run

    try:
        run(args.host, args.port, Path(args.out))
    except OSError as exc:
        raise CLIError(f"cannot collect on {args.host}:{args.port} into {args.out}: "
                       f"{exc.strerror or exc}") from None


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    parser = sub.add_parser("analytics", help="opt-in anonymized usage analytics",
                            description="opt-in anonymized usage analytics. " + WHAT_IS_COLLECTED)
    analytics_sub = parser.add_subparsers(dest="analytics_command", metavar="COMMAND",
                                          required=True)

    def add(name: str, handler: Callable, help: str) -> argparse.ArgumentParser:
        p = analytics_sub.add_parser(name, help=help, description=help)
        common(p)
        p.set_defaults(handler=errors(handler, AnalyticsError))
        return p

    p = add("enable", cmd_enable, "turn usage analytics on (for this data folder)")
    p.add_argument("--collector", metavar="URL", help="where to send events, http://HOST:PORT")
    add("disable", cmd_disable, "turn analytics off, delete the spool, ask for deletion")
    p = add("status", cmd_status, "whether analytics are on and what is waiting to be sent")
    p.add_argument("--json", action="store_true", help="print JSON")
    p = add("collect", cmd_collect, "run a collector server that stores events it receives")
    p.add_argument("--port", type=whole_number(0, 65535), required=True,
                   help="port to listen on, 0 to 65535 (0: any free port, printed at start)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the event files")


