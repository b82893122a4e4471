"""docs/cli.md, generated from the argument parser: `python -m app.cli_reference > docs/cli.md`
(tests/app/test_cli_reference.py keeps the two equal)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator

from .cli import build_parser

WIDTH = 100  # columns of the help text, whatever the terminal that generates it

HEADER = """# Hearth command reference

Every command and option of `hearth`, as `hearth COMMAND --help` prints it. Generated from the
argument parser (`python -m app.cli_reference > docs/cli.md`); a test keeps this page equal to it.
"""


def _commands(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _commands(sub, f"{path} {name}")


def reference() -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(WIDTH)
    try:
        parts = [HEADER]
        for path, parser in _commands(build_parser(), "hearth"):
            parts.append(f"## {path}\n\n```text\n{parser.format_help().rstrip()}\n```\n")
        return "\n".join(parts)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


if __name__ == "__main__":
    print(reference(), end="")
