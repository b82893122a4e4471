"""`hearth gui` and `hearth screenshot`: the window's commands as the command line takes them.
They run in the launcher (hearth/launcher.py, the one place that imports ui/), which hands
them to `app.cli.main`; without it (`python -m app`) they say where the window is."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable

from ._command import CLIError, errors, node_options


def display_available() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") or sys.platform in ("darwin", "win32"))


def _no_window(args: argparse.Namespace) -> None:
    raise CLIError(f"`python -m app` opens no window: run `hearth {args.command}` "
                   "(from a source checkout, python -m hearth)")


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = sub.add_parser("screenshot", help="render the window's views of a demonstration "
                       "workspace to PNG files (offscreen)",
                       description="render the window's views of a demonstration workspace "
                       "to PNG files (offscreen)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the PNG files")
    p.set_defaults(handler=errors(_no_window))

    p = sub.add_parser("gui", help="open the window", description="open the window")
    common(p)
    node_options(p)
    p.set_defaults(handler=errors(_no_window))
