"""The `hearth` command line. Each command maps to one method of the app's library API."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from . import (
    analytics_commands,
    chat_commands,
    conversation_commands,
    data_commands,
    doc_commands,
    download_commands,
    file_commands,
    gui_command,
    keep_commands,
    member_commands,
    moderation_commands,
    notify_commands,
    private_commands,
    relay_commands,
    sync_commands,
)
from ._command import PORT, CLIError, Parser, common_options, errors, seconds, whole_number
from .version import app_version

__all__ = ["PORT", "CLIError", "Parser", "build_parser", "main", "seconds", "whole_number"]

# Every command module, in the order `hearth --help` lists their commands: each has
# `register(subparsers, common_options)`. A new module is added here, or its commands do not exist.
COMMAND_MODULES = (chat_commands, file_commands, conversation_commands, moderation_commands,
                   doc_commands, sync_commands, keep_commands, download_commands, member_commands,
                   private_commands, notify_commands, analytics_commands, relay_commands,
                   data_commands, gui_command)


Handler = Callable[[argparse.Namespace], Any]
Window = Mapping[str, Handler]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="hearth",
        description="Hearth: local-first chat and documents, synced over your network.",
    )
    parser.add_argument("--version", action="version", version=f"hearth {app_version()}")
    common_options(parser, top=True)
    parser.set_defaults(handler=None)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in COMMAND_MODULES:
        module.register(sub, common_options)
    return parser


def main(argv: Sequence[str] | None = None, *, window: Window | None = None) -> int:
    """Run `hearth ARGV`. `window`: the window's commands by name ("gui", "screenshot"), which
    the launcher (hearth/launcher.py) hands in; without them `hearth` alone never opens the
    window, and `gui` and `screenshot` say where it is."""
    if list(sys.argv[1:] if argv is None else argv) == ["--verify-worker"]:
        from storage._verify import worker_main  # the packaged app's signature helper

        return worker_main()
    if list(sys.argv[1:] if argv is None else argv) == ["--slack-worker"]:
        from .slack_workers import worker_main as slack_worker  # an import's helper

        return slack_worker()
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.handler is None:
            return _start(parser, args, window)
        return _handler(args, window)(args) or 0
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


def _handler(args: argparse.Namespace, window: Window | None) -> Handler:
    if window is not None and args.command in window:
        return errors(window[args.command])
    return args.handler


def _start(parser: argparse.ArgumentParser, args: argparse.Namespace,
           window_commands: Window | None) -> int:
    """`hearth` alone: the window on the workspace (on a first run it creates one and welcomes
    the person), or, with no display (or no window to open), this computer's headless node
    or how to start one."""
    from .paths import PathError, Paths

    try:
        paths = Paths.resolve(args.data, args.workspace)
    except PathError as exc:
        raise CLIError(str(exc)) from None
    from .gui_command import display_available

    window = window_commands is not None and display_available()
    if not paths.replica.exists() and not window:
        print(WELCOME, end="")
        return 0
    serve = parser.parse_args(["gui" if window else "serve"])
    serve.data, serve.workspace = args.data, args.workspace
    return _handler(serve, window_commands)(serve) or 0


if __name__ == "__main__":
    sys.exit(main())
