"""README.md documents every `hearth` command, and its set-up is exactly two commands."""

from __future__ import annotations

import argparse
import re

import pytest

from app.cli import build_parser

from .conftest import ROOT

README = ROOT / "README.md"


def _commands(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[str]:
    """Every command and sub-command registered in the parser, e.g. 'post', 'admin grant'."""
    found: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                path = (*prefix, name)
                nested = _commands(sub, path)
                found.extend(nested or [" ".join(path)])
    return found


def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README.md has no '## {title}' section"
    return match.group(1)


def test_the_parser_has_the_expected_commands() -> None:
    commands = _commands(build_parser())
    for expected in ["init", "post", "read", "admin grant", "identity export",
                     "identity import"]:
        assert expected in commands
    assert "admin" not in commands and "identity" not in commands  # only their leaves


@pytest.mark.parametrize("command", _commands(build_parser()))
def test_every_command_is_documented(command: str) -> None:
    text = README.read_text(encoding="utf-8")
    words = r"\s+".join(map(re.escape, command.split()))
    documented = re.search(rf"\bhearth\s+{words}(?![\w-])", text) is not None
    assert documented, f"README.md does not document `hearth {command}`"


def test_set_up_is_make_run_and_make_test() -> None:
    section = _section(README.read_text(encoding="utf-8"), "Set-up")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", section, re.M | re.S)
    assert blocks, "the set-up section shows no commands"
    commands = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    assert [c for c in commands if c] == ["make run", "make test"]
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    for target in ("run", "test"):
        assert re.search(rf"^{target}:", makefile, re.M), f"Makefile has no `{target}` target"


def test_the_pictures_and_links_the_readme_shows_are_in_the_repository() -> None:
    """The README shows screenshots of the window made by `hearth screenshot`, and never
    points outside the repository for its own pages."""
    text = README.read_text(encoding="utf-8")
    images = re.findall(r"!\[[^\]]*\]\(([^)]+)\)", text)
    assert len(images) >= 3, "the README shows no screenshots of the window"
    for path in images + re.findall(r"\]\((docs/[^)]+)\)", text):
        assert (ROOT / path).is_file(), f"README.md shows {path}, which is not in the repository"
        assert not path.startswith(("..", "/")), path
