"""`hearth gui`: the window over a running Node. The composition root starts it; ui/ is
imported only here, and only when a window is asked for."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable

from ._command import LOG_FORMAT, CLIError, errors, node_options, paths_of, peer_addresses
from .paths import DEFAULT_WORKSPACE, Paths


def display_available() -> bool:
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
                or os.environ.get("QT_QPA_PLATFORM") or sys.platform in ("darwin", "win32"))


def cmd_gui(args: argparse.Namespace) -> None:
    from .node import Node, NodeError, NodeLocked
    from .qt_check import problem
    from .workspaces import opening

    logging.basicConfig(level=logging.INFO, format=LOG_FORMAT, stream=sys.stderr)
    paths = paths_of(args)
    # Nothing is created before Qt is known to start: a missing system library is named
    # with its package, and Qt's own abort (a platform that does not load) leaves no trace.
    if missing := problem():
        raise CLIError(missing)
    from ui.app import application

    application()
    paths, first_run = opening(paths, default=args.workspace == DEFAULT_WORKSPACE)

    def make_node(target: Paths) -> Node:
        return Node(target, port=args.port, interfaces=args.interface or None,
                    mdns=not args.no_mdns, peers=peer_addresses(args.peer), ui="window")

    node = make_node(paths)
    try:
        node.start()
    except NodeLocked as exc:
        from ui.single_instance import ask_running_to_raise

        if ask_running_to_raise(paths.data):
            print("Hearth is already open on this data folder: its window was brought forward")
            return
        raise CLIError(str(exc)) from None
    except NodeError as exc:
        raise CLIError(str(exc)) from None
    from ui.app import run

    sys.exit(run(node, make_node, first_run=first_run))


def cmd_screenshot(args: argparse.Namespace) -> None:
    from pathlib import Path

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from ui.screenshot import render

    for path in render(Path(args.out)):
        print(path)


def register(sub: argparse._SubParsersAction, common: Callable) -> None:
    p = sub.add_parser("screenshot", help="render the window's views of a demonstration "
                       "workspace to PNG files (offscreen)",
                       description="render the window's views of a demonstration workspace "
                       "to PNG files (offscreen)")
    p.add_argument("--out", required=True, metavar="DIR", help="folder for the PNG files")
    p.set_defaults(handler=errors(cmd_screenshot))

    p = sub.add_parser("gui", help="open the window", description="open the window")
    common(p)
    node_options(p)
    p.set_defaults(handler=errors(cmd_gui))


