"""docs/cli.md is the parser's own help: a command or option added without regenerating the page
fails here (`python -m app.cli_reference > docs/cli.md`)."""

from __future__ import annotations

from pathlib import Path

from app.cli_reference import reference

PAGE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_the_cli_reference_is_generated_from_the_parser() -> None:
    assert PAGE.read_text(encoding="utf-8") == reference(), (
        "docs/cli.md is out of date: python -m app.cli_reference > docs/cli.md")


def test_every_command_has_a_section() -> None:
    page = PAGE.read_text(encoding="utf-8")
    for command in ("init", "post", "serve", "doc new", "doc merge", "mod hide", "admin revoke",
                    "channel create", "keep"):
        assert f"\n## hearth {command}\n" in page
