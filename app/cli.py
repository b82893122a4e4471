"""The `hearth` command line. Each command maps to one method of the app's library API."""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import Any, NoReturn

from .paths import DEFAULT_WORKSPACE


def app_version() -> str:
    try:
        return version("hearth")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0.0.0+unknown"


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


def _common(parser: argparse.ArgumentParser, *, top: bool = False) -> None:
    # Subcommands repeat the options with SUPPRESS defaults, so `hearth --data D post ...`
    # and `hearth post --data D ...` both work and neither resets the other.
    parser.add_argument("--data", metavar="DIR", default=None if top else argparse.SUPPRESS,
                        help="data folder (default: the platform's user data folder)")
    parser.add_argument("--workspace", metavar="NAME",
                        default=DEFAULT_WORKSPACE if top else argparse.SUPPRESS,
                        help=f"workspace name (default: {DEFAULT_WORKSPACE})")


def build_parser() -> argparse.ArgumentParser:
    from . import (  # noqa: F401  (they register their commands)
        analytics_commands,
        chat_commands,
        doc_commands,
        gui_command,
        sync_commands,
    )

    parser = Parser(
        prog="hearth",
        description="Hearth: local-first chat and documents, synced over your network.",
    )
    parser.add_argument("--version", action="version", version=f"hearth {app_version()}")
    _common(parser, top=True)
    parser.set_defaults(handler=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for register in COMMANDS:
        register(sub, _common)
    return parser


# Command modules append their `register(subparsers, add_common)` here.
COMMANDS: list[Callable[[argparse._SubParsersAction, Callable], None]] = []


def main(argv: Sequence[str] | None = None) -> int:
    if list(sys.argv[1:] if argv is None else argv) == ["--verify-worker"]:
        from storage._verify import worker_main  # the packaged app's signature helper

        return worker_main()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.handler is None:
            return _start(parser, args)
        return args.handler(args) or 0
    except CLIError as exc:
        from ._text import line  # a reason may quote a name or title a peer chose

        print(f"hearth: {line(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `hearth read ... | head`: the reader left; not an error
        sys.stderr.close()
        return 0


WELCOME = """Welcome to Hearth.

Start a workspace:          hearth init --nick YOUR_NAME
or join one from a code:    hearth join-workspace CODE --nick YOUR_NAME
then run `hearth` again to stay in sync with the people on your network.
`hearth --help` lists every command.
"""


def _start(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """`hearth` alone: the window on the workspace (on a first run it creates one and welcomes
    the person), or, with no display, this computer's headless node or how to start one."""
    from .paths import PathError, Paths

    try:
        paths = Paths.resolve(args.data, args.workspace)
    except PathError as exc:
        raise CLIError(str(exc)) from None
    from .gui_command import display_available

    window = display_available()
    if not paths.replica.exists() and not window:
        print(WELCOME, end="")
        return 0
    serve = parser.parse_args(["gui" if window else "serve"])
    serve.data, serve.workspace = args.data, args.workspace
    return serve.handler(serve) or 0


if __name__ == "__main__":
    sys.exit(main())
