"""The `hearth` command is the launcher (hearth/launcher.py): app.cli's command line, with the
window's commands run from there. `python -m app` is the command line without the window."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.app.conftest import ROOT


@pytest.mark.parametrize("command", ["gui", "screenshot"])
def test_python_m_app_opens_no_window_and_says_where_it_is(tmp_path: Path, command: str) -> None:
    data, shots = tmp_path / "data", tmp_path / "shots"
    args = ["--data", str(data)] if command == "gui" else ["--out", str(shots)]
    proc = subprocess.run([sys.executable, "-m", "app", command, *args], capture_output=True,
                          text=True, timeout=60, cwd=tmp_path,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin",
                               "HEARTH_DATA": str(tmp_path / "unused")})
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith(f"hearth: `python -m app` opens no window: run `hearth "
                                  f"{command}")
    assert not data.exists() and not shots.exists()


def test_the_launcher_runs_the_command_line(capsys: pytest.CaptureFixture[str]) -> None:
    from hearth.launcher import main

    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0 and capsys.readouterr().out.startswith("hearth ")
