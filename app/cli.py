"""The `hearth` command line. Each command maps to one method of the app's library API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from importlib.metadata import PackageNotFoundError, version

from .paths import DEFAULT_WORKSPACE


def app_version() -> str:
    try:
        return version("hearth")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0.0.0+unknown"


class CLIError(Exception):
    """A problem to report to the person as one line, with a non-zero exit."""


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

    parser = argparse.ArgumentParser(
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
        print(f"hearth: {exc}", file=sys.stderr)
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
