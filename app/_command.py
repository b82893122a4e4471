"""What every `hearth` command shares: one-line errors, checked numbers, the common options,
opening the workspace, hints, and printing JSON. No command logic lives here.

A hint is a command in backquotes (`` `hearth serve` ``) in what a command prints or refuses
with. `hinted` repeats the `--data` and `--workspace` the person gave in each, so it runs as
shown; `errors` does that for every refusal. A message only ever suggests what the person
runs here (a command for someone else says so in words, outside backquotes)."""

from __future__ import annotations

import argparse
import getpass
import math
import os
import re
import shlex
import sys
from collections.abc import Callable
from datetime import datetime
from typing import Any, NoReturn

from core.errors import InvalidObject
from core.identity import IdentityError
from storage import StorageError
from sync.peers import AddressError, parse_address

from . import _text
from .paths import DEFAULT_WORKSPACE, PathError, Paths
from .workspace import Workspace, WorkspaceError

PASSPHRASE_ENV = "HEARTH_PASSPHRASE"
PERSON_HELP = "a key (64 hex characters, or a unique prefix of 8 or more), or a nickname"
LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # serve and gui


class CLIError(Exception):
    """A problem to report to the person as one line, with a non-zero exit."""


class Parser(argparse.ArgumentParser):
    """argparse, but a mistake in the arguments is one line ("hearth read: argument --limit:
    ...") and exit 2, like every other refusal; `--help` still shows the usage."""

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        # Python 3.11 drops a "--" given as an option's own value (`--limit=--`), and the
        # option then arrives as [] without its type ever seeing it: take it as the value.
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            value = self._get_value(action, "--")
            self._check_value(action, value)
            return value
        return super()._get_values(action, arg_strings)

    def error(self, message: str) -> NoReturn:
        from ._text import line

        self.exit(2, f"{line(self.prog)}: {line(message)} (see `{line(self.prog)} --help`)\n")


def whole_number(lo: int, hi: int) -> Callable[[str], int]:
    """An argparse type: a whole number from `lo` to `hi`, else a one-line refusal (never an
    OverflowError from SQLite or a socket deeper down)."""
    def parse(text: str) -> int:
        number = text.strip()
        digits = number[1:] if number[:1] in ("-", "+") else number
        value = int(number) if digits.isascii() and digits.isdigit() and len(digits) <= 30 \
            else None
        if value is None or not lo <= value <= hi:
            raise argparse.ArgumentTypeError(
                f"must be a whole number from {lo} to {hi}, not {text[:40]!r}")
        return value
    parse.__name__ = "whole number"
    return parse


_DECIMAL = re.compile(r"\s*[+-]?(?:\d{1,30}(?:\.\d{0,30})?|\.\d{1,30})(?:[eE][+-]?\d{1,4})?\s*")


def seconds(hi: float) -> Callable[[str], float]:
    """An argparse type: a duration in seconds, a plain decimal number more than 0 and at
    most `hi` (no nan, inf, hexadecimal or non-ASCII digits)."""
    def parse(text: str) -> float:
        value = float(text) if _DECIMAL.fullmatch(text) and text.isascii() else math.nan
        if not 0 < value <= hi:  # also false for nan
            raise argparse.ArgumentTypeError(
                f"must be a number of seconds above 0 and at most {hi:g}, not {text[:40]!r}")
        return value
    parse.__name__ = "seconds"
    return parse


PORT = whole_number(0, 65535)


def common_options(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    # Subcommands repeat the options with SUPPRESS defaults, so `hearth --data D post ...`
    # and `hearth post --data D ...` both work and neither resets the other.
    parser.add_argument("--data", metavar="DIR", default=None if top else argparse.SUPPRESS,
                        help="data folder (default: the platform's user data folder)")
    parser.add_argument("--workspace", metavar="NAME",
                        default=DEFAULT_WORKSPACE if top else argparse.SUPPRESS,
                        help=f"workspace name (default: {DEFAULT_WORKSPACE})")


def channel_arg(text: str) -> str:
    """An argparse type for a channel name: `#random` and `random` are one channel (a
    single leading '#' is how channels are written, not part of the name)."""
    text = text.strip()
    return text[1:] if text.startswith("#") else text


channel_arg.__name__ = "channel name"


def given_options(args: argparse.Namespace) -> str:
    """" --data DIR --workspace NAME" as the person gave them (shell-quoted), for hints;
    "" for those left to their defaults."""
    parts = []
    data = getattr(args, "data", None)
    if data is not None:
        parts += ["--data", shlex.quote(os.fspath(data))]
    workspace = getattr(args, "workspace", None)
    if workspace is not None and workspace != DEFAULT_WORKSPACE:
        parts += ["--workspace", shlex.quote(workspace)]
    return "".join(f" {part}" for part in parts)


_HINT = re.compile(r"`(hearth(?: [^`]*)?)`")


def hinted(text: str, args: argparse.Namespace) -> str:
    """`text` with the person's --data and --workspace added to every `hearth ...` command it
    suggests (not to `--help`, which needs neither)."""
    options = given_options(args)
    if not options:
        return text
    return _HINT.sub(lambda m: m.group(0) if "--help" in m.group(1)
                     else f"`{m.group(1)}{options}`", text)


def paths_of(args: argparse.Namespace) -> Paths:
    try:
        return Paths.resolve(args.data, args.workspace)
    except PathError as exc:
        raise CLIError(str(exc)) from None


def errors(handler: Callable[[argparse.Namespace], Any],
           *also: type[Exception]) -> Callable[[argparse.Namespace], Any]:
    """Turn every expected failure (and the `also` errors of a command family) into one line
    for the person, never a traceback. The hints in the app's own refusals (CLIError,
    WorkspaceError) repeat the person's --data and --workspace (`hinted`)."""
    expected: tuple[type[Exception], ...] = (WorkspaceError, StorageError, IdentityError,
                                             InvalidObject, PathError, *also)

    def run(args: argparse.Namespace) -> Any:
        try:
            return handler(args)
        except (CLIError, WorkspaceError) as exc:
            raise CLIError(hinted(str(exc), args)) from None
        except expected as exc:
            raise CLIError(str(exc)) from None
        except UnicodeError:
            raise CLIError("an argument is not valid text (check the terminal's encoding)") \
                from None
    return run


def command(sub: argparse._SubParsersAction, common: Callable, name: str,
            handler: Callable[[argparse.Namespace], Any], help: str, *,
            json_flag: bool = False) -> argparse.ArgumentParser:
    """Register `hearth NAME` (under `sub`): the common options, --json if it prints records,
    and the handler wrapped in `errors`."""
    parser = sub.add_parser(name, help=help, description=help)
    common(parser)
    if json_flag:
        parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(handler=errors(handler))
    return parser


def open_workspace(args: argparse.Namespace) -> Workspace:
    return Workspace.open(paths_of(args))


def print_json(value: Any) -> None:
    """JSON output: readable Unicode, but nothing a terminal would act on (see app._text)."""
    print(_text.json_text(value))


def when(ts: int) -> str:
    return datetime.fromtimestamp(ts / 1000).strftime("%Y-%m-%d %H:%M")


def passphrase(confirm: bool) -> str:
    value = os.environ.get(PASSPHRASE_ENV)
    if value is not None:
        return value
    if not sys.stdin.isatty():
        raise CLIError(f"no passphrase: set {PASSPHRASE_ENV} or run in a terminal")
    value = getpass.getpass("Passphrase: ")
    if confirm and getpass.getpass("Passphrase again: ") != value:
        raise CLIError("the passphrases differ")
    return value


def peer_addresses(values: list[str]) -> list[tuple[str, int]]:
    try:
        return [parse_address(v) for v in values]
    except AddressError as exc:
        raise CLIError(str(exc)) from None


def node_options(parser: argparse.ArgumentParser) -> None:
    """How a running node syncs: what `serve` and `gui` share."""
    parser.add_argument("--port", type=PORT, default=0,
                        help="port to listen on, 0 to 65535 (default 0: any free port)")
    parser.add_argument("--interface", action="append", default=[], metavar="IP",
                        help="listen and advertise only on this address (repeatable)")
    parser.add_argument("--no-mdns", action="store_true",
                        help="do not advertise or browse mDNS")
    parser.add_argument("--peer", action="append", default=[], metavar="HOST:PORT",
                        help="also connect to this peer (repeatable)")
