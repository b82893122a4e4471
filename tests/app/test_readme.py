"""README.md documents every `hearth` command, and its set-up is exactly two commands."""

from __future__ import annotations

import argparse
import re
import shlex
from contextlib import ExitStack
from pathlib import Path

import pytest

from app.cli import build_parser
from tests.support import wait_until

from .conftest import ROOT, Hearth
from .test_sync_cli import serving

README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide.md"


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
    text = GUIDE.read_text(encoding="utf-8")
    words = r"\s+".join(map(re.escape, command.split()))
    documented = re.search(rf"\bhearth\s+{words}(?![\w-])", text) is not None
    assert documented, f"docs/guide.md does not document `hearth {command}`"


def test_the_readme_is_short() -> None:
    """A newcomer reads it in minutes: what Hearth is, set-up, a quick start, links."""
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200
    assert len((ROOT / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8").splitlines()) <= 300


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


def section_commands(title: str) -> list[tuple[str, list[str]]]:
    """A README section's commands as (their comment, argv after `hearth`)."""
    block = re.search(r"^```sh\n(.*?)^```", _section(README.read_text(encoding="utf-8"), title),
                      re.M | re.S)
    assert block, f"the README's '{title}' shows no commands"
    out = []
    for line in block.group(1).splitlines():
        command, _, comment = line.partition("#")
        argv = shlex.split(command)
        assert argv[0] == "hearth", line
        out.append((comment.strip(), argv[1:]))
    return out


def _steps(title: str) -> list[tuple[str, list[str]]]:
    """A README section's commands as (who, argv after `hearth`); who is the comment's first
    word."""
    return [(comment.split()[0].rstrip(":,"), argv) for comment, argv in section_commands(title)]


def _quick_start() -> list[tuple[str, list[str]]]:
    return _steps("Quick start: two people on one network")


def test_the_quick_start_runs_as_written(hearth: Hearth, tmp_path: Path) -> None:
    """Each line of the README's quick start, run by the person its comment names in a data
    folder of their own on 127.0.0.1 (the README's --peer form, since a test cannot rely on
    multicast): bob reads ada's message and ada receives bob's."""
    steps = _quick_start()
    assert ("ada", ["serve"]) in steps and ("bob", ["serve"]) in steps
    data = {"ada": tmp_path / "ada", "bob": tmp_path / "bob"}
    code = ""
    with ExitStack() as running:
        ada_serve = None
        for who, argv in steps:
            peer = [] if ada_serve is None else ["--peer", ada_serve.address]
            if argv == ["serve"]:
                serve = running.enter_context(serving(hearth, data[who], *peer))
                ada_serve = serve if who == "ada" else ada_serve
            elif argv[0] == "join-workspace":
                hearth(*[code if a == "CODE" else a for a in argv], *peer, data=data[who])
            elif who == "bob" and argv[0] == "read":
                wait_until(lambda read=argv: "hello from ada" in hearth(*read, data=data["bob"]).stdout,
                           what="bob to read ada's message")
            else:
                run = hearth(*argv, data=data[who])
                if argv[0] == "invite":
                    code = run.stdout.split()[-1]
                    assert code.startswith("hearth-"), run.stdout
        wait_until(lambda: "hi ada" in hearth("read", "general", data=data["ada"]).stdout,
                   what="ada to receive bob's message")


def test_working_from_different_networks_runs_as_written(hearth: Hearth, tmp_path: Path) -> None:
    """The README's relay section, each line run by whom its comment names: a relay on
    127.0.0.1, ada (an admin, serving) names it, grace joins with a personal code while no
    member's node is reachable to her (no --peer, no mDNS) and reads ada's message through the
    relay alone."""
    from tests.sync.relaying import relay_process

    steps = _steps("Working from different networks")
    assert [who for who, _ in steps] == ["relay", "ada", "grace", "ada", "grace", "grace"]
    data = {"ada": tmp_path / "ada", "grace": tmp_path / "grace"}
    hearth("init", "--nick", "ada", data=data["ada"])
    hearth("channel", "create", "general", data=data["ada"])
    hearth("post", "general", "hello from the office", data=data["ada"])
    words: dict[str, str] = {}
    with ExitStack() as running:
        for who, argv in steps:
            argv = [words.get(a, a) for a in argv]
            if who == "relay":
                assert argv[:2] == ["relay", "serve"], argv
                relay = running.enter_context(relay_process(tmp_path / argv[argv.index("--data") + 1]))
                words |= {"relay.example.org:7655": f"127.0.0.1:{relay.port}",
                          "KEY": relay.key.hex()}
            elif argv == ["serve"]:
                running.enter_context(serving(hearth, data[who]))
            else:
                out = hearth(*argv, data=data[who]).stdout
                if argv[:2] == ["identity", "show"]:
                    words["GRACE_KEY"] = out.split()[-1]
                elif argv[0] == "invite":
                    words["CODE"] = out.split()[-1]
                    assert words["CODE"].startswith("hearth-"), out
                    running.enter_context(serving(hearth, data["ada"]))  # ada's app is open
        wait_until(lambda: "hello from the office" in hearth("read", "general",
                                                             data=data["grace"]).stdout,
                   what="grace to read ada's message through the relay", timeout=60)
