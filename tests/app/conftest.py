"""Shared fixtures of the app tests: run the real `hearth` command line as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 60  # generous: a passphrase export runs argon2id


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def line(self) -> str:
        """The single line printed on stdout."""
        lines = self.stdout.splitlines()
        assert len(lines) == 1, f"expected one line from {self.args}, got {self.stdout!r}"
        return lines[0]


class Hearth:
    """Runs `python -m app ...` from the checkout, with a sandboxed environment.

    HEARTH_DATA points at a folder of the test, so a command that ignores --data can never
    touch the real user data folder; HEARTH_PASSPHRASE is only set when a test asks for it.
    """

    def __init__(self, fallback_data: Path):
        self.fallback_data = fallback_data
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("HEARTH_")}
        self.env["HEARTH_DATA"] = str(fallback_data)
        self.env["PYTHONIOENCODING"] = "utf-8"

    name = "hearth"  # how failures name the program

    def command(self) -> list[Any]:
        """The program, before its arguments."""
        return [sys.executable, "-m", "app"]

    @property
    def cwd(self) -> Path:
        return ROOT

    def __call__(self, *args: str | bytes | os.PathLike, data: Path | None = None,
                 ok: bool = True, passphrase: str | None = None,
                 extra: Sequence[str] = ()) -> Run:
        command = self.command()
        argv: list[Any] = [*command, *map(_arg, args)]
        if data is not None:
            argv += ["--data", str(data)]
        argv += list(extra)
        env = dict(self.env)
        if passphrase is not None:
            env["HEARTH_PASSPHRASE"] = passphrase
        proc = subprocess.run(argv, cwd=self.cwd, env=env, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=CLI_TIMEOUT_S)
        shown = [a.decode(errors="replace") if isinstance(a, bytes) else a
                 for a in argv[len(command):]]
        run = Run(shown, proc.returncode, proc.stdout.decode("utf-8", "replace"),
                  proc.stderr.decode("utf-8", "replace"))
        if ok:
            assert run.returncode == 0, f"{self.name} {shown} failed: {run.stderr}"
            assert "Traceback" not in run.stderr, run.stderr
        return run

    def fails(self, *args: str | bytes | os.PathLike, data: Path | None = None,
              passphrase: str | None = None) -> str:
        """Run a command that must be refused: one line on stderr, non-zero exit, no trace."""
        run = self(*args, data=data, ok=False, passphrase=passphrase)
        assert run.returncode != 0, f"hearth {run.args} should fail, printed {run.stdout!r}"
        assert "Traceback" not in run.stderr, run.stderr
        lines = run.stderr.strip().splitlines()
        assert len(lines) == 1, f"expected a one-line error, got {run.stderr!r}"
        assert lines[0].startswith("hearth"), lines[0]
        return lines[0]


def _arg(value: str | bytes | os.PathLike) -> str | bytes:
    return value if isinstance(value, str | bytes) else os.fspath(value)


@pytest.fixture
def hearth(tmp_path: Path) -> Hearth:
    return Hearth(tmp_path / "fallback-data-must-stay-unused")


@pytest.fixture(scope="module")
def module_hearth(tmp_path_factory: pytest.TempPathFactory) -> Hearth:
    return Hearth(tmp_path_factory.mktemp("fallback") / "fallback-data-must-stay-unused")
