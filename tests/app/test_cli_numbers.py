"""Every numeric option of `hearth` is parsed and range-checked (issue #12, item 14): an absurd
value is one line on stderr and a non-zero exit, never a traceback from SQLite or a socket."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli import build_parser

from .conftest import Hearth

ABSURD = ["1e20", "100000000000000000000", "-1", "0x10", "nan", "inf", "", "\u0663", "1_0",
          " ", "99999999999999999999999999999999999999999", "1e99999", "--", "10s"]

# command, the option, what it is, a value in range (so the command itself is set up right)
NUMERIC = {
    "read --limit": (["read", "general"], "--limit", "1"),
    "search --limit": (["search", "hello"], "--limit", "1"),
    "sync --timeout": (["sync", "--peer", "127.0.0.1:9", "--once"], "--timeout", None),
    "serve --port": (["serve", "--no-mdns"], "--port", None),
    "gui --port": (["gui", "--no-mdns"], "--port", None),
    "analytics collect --port": (["analytics", "collect", "--out", "{tmp}/events"], "--port",
                                 None),
}
OUT_OF_RANGE = {
    "--limit": ["0", "-3", "1.5", "100001", str(2**63), str(2**64)],
    "--port": ["65536", "70000", "-1", "80.0", str(2**16 + 80)],
    "--timeout": ["0", "-5", "1e300", "86401", "infinity", "-inf", "NaN"],
}


@pytest.fixture(scope="module")
def folder(module_hearth: Hearth, tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = tmp_path_factory.mktemp("numbers")
    module_hearth("init", "--nick", "sam", data=data)
    module_hearth("post", "general", "hello there", data=data)
    return data


@pytest.mark.parametrize("case", NUMERIC.keys())
def test_absurd_numbers_are_one_line_errors(module_hearth: Hearth, folder: Path, tmp_path: Path,
                                            case: str) -> None:
    args, option, _ = NUMERIC[case]
    args = [a.format(tmp=tmp_path) for a in args]
    for value in [*ABSURD, *OUT_OF_RANGE[option]]:
        line = module_hearth.fails(*args, f"{option}={value}", data=folder)
        assert option in line and "must be" in line, (case, value, line)
    assert not (tmp_path / "events").exists(), "a refused collect started anyway"


@pytest.mark.parametrize("case", ["read --limit", "search --limit"])
def test_numbers_in_range_still_work(module_hearth: Hearth, folder: Path, case: str) -> None:
    args, option, good = NUMERIC[case]
    for value in (good, "100000", " 7 ", "+2"):
        found = module_hearth(*args, option, value, "--json", data=folder).json()
        found = found["messages"] if case.startswith("search") else found
        assert [m["text"] for m in found] == ["hello there"]


def test_every_numeric_option_is_checked() -> None:
    """No option takes a bare int or float: each has a type that checks its range."""
    def walk(parser):
        for action in parser._actions:
            if action.type in (int, float):
                yield f"{parser.prog} {'/'.join(action.option_strings) or action.dest}"
            choices = getattr(action, "choices", None)
            for sub in choices.values() if isinstance(choices, dict) else ():  # subcommands
                if hasattr(sub, "_actions"):
                    yield from walk(sub)
    assert list(walk(build_parser())) == []
