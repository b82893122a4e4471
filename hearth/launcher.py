"""The `hearth` command: app.cli's command line, with the window's commands run from here.

`hearth` alone opens the window when there is a display (app.cli decides: a workspace to
serve, a welcome, or the window), `hearth gui` opens it, `hearth screenshot` renders its views;
every other command is app.cli's. ui/ is imported only inside the window's commands, so the
other commands start without Qt."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

from app import cli
from app._command import LOG_FORMAT, CLIError, paths_of, peer_addresses
from app.errors import NodeError, NodeLocked
from app.paths import DEFAULT_WORKSPACE, Paths


def main(argv: Sequence[str] | None = None) -> int:
    return cli.main(argv, window={"gui": cmd_gui, "screenshot": cmd_screenshot})


def cmd_gui(args: argparse.Namespace) -> None:
    """The window over a running Node (`hearth gui`, and `hearth` alone on a display)."""
    from app.node import Node
    from app.qt_check import problem
    from app.workspaces import opening

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
    """Render the window's views of a demonstration workspace to PNG files (offscreen)."""
    from pathlib import Path

    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from ui.screenshot import render

    for path in render(Path(args.out)):
        print(path)
