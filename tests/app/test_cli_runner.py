"""The in-process command line runner of tests/app/conftest.py: nothing leaks from one call to
the next, what a process would show (a traceback, a warning, a log record) still shows, and
the commands that serve still run as processes."""

from __future__ import annotations

import logging
import os
import sys
import threading
import warnings
from pathlib import Path

import pytest

from app import joining, sharing
from app.paths import Paths
from app.workspace import Workspace
from core import kinds
from core.objects import build
from storage import _verify

from .conftest import InProcessHearth

CALLS = 200


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _describe(fds: set[str]) -> list[str]:
    out = []
    for fd in sorted(fds):
        try:
            out.append(f"{fd} -> {os.readlink(f'/proc/self/fd/{fd}')}")
        except OSError:
            out.append(f"{fd} (closed since)")
    return out


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc/self/fd")
def test_200_calls_leak_no_file_descriptor_thread_handler_or_setting(
        hearth: InProcessHearth, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    helpers = []  # a count of the signature helper processes started (not the helpers:
    start_helper = _verify._Helper.__init__  # holding one would hold its pipes open)

    def counted(helper: _verify._Helper) -> None:
        helpers.append(None)
        start_helper(helper)

    monkeypatch.setattr(_verify._Helper, "__init__", counted)
    data = tmp_path / "data"
    hearth("init", "--nick", "alice", data=data)
    hearth("doc", "new", "Notes", data=data)
    # A bundle large enough that importing it starts storage's signature helper process.
    big = tmp_path / "big"
    hearth("init", "--nick", "bob", data=big)
    with Workspace.open(Paths.resolve(big, "default")) as ws:
        stream = kinds.channel_stream(ws.id, "general")
        raws = [build(ws.identity, "post/text", stream=stream,
                      body={"channel": "general", "text": f"bulk {n}"},
                      ts=1_700_000_000_000 + n).raw for n in range(600)]
        for start in (0, 300):  # batches too small to start the helper here
            ws.replica.ingest(raws[start:start + 300])
    bundle = tmp_path / "big.bundle"
    hearth("export", bundle, data=big)
    hearth("read", "general", data=data)  # every module the loop uses is imported by now

    before = {
        "fds": _open_fds(), "threads": threading.active_count(), "env": dict(os.environ),
        "cwd": os.getcwd(), "handlers": list(logging.getLogger().handlers),
        "streams": (sys.stdin, sys.stdout, sys.stderr, sys.__stdout__),
        "warning filters": list(warnings.filters),
    }
    commands = [
        lambda n: hearth("post", "general", f"message {n}", data=data),
        lambda n: hearth("read", "general", "--json", "--limit", "5", data=data).json(),
        lambda n: hearth("whoami", "--json", data=data).json(),
        lambda n: hearth("search", "message", "--json", data=data),
        lambda n: hearth("doc", "write", "Notes", "--text", f"version {n}", data=data),
        lambda n: hearth.fails("read", "general", "--limit", "0", data=data),
        lambda n: hearth.fails("delete", "ab" * 32, data=data),
        lambda n: hearth.fails("whoami", data=tmp_path / "nothing"),
    ]
    for n in range(CALLS - 2):
        commands[n % len(commands)](n)
    for n in range(2):  # into a fresh member each time: the helper process starts, and stops
        target = tmp_path / f"fresh{n}"
        code = sharing.invite_for(Paths.resolve(big, "default"),
                                  joining.identity_key(Paths.resolve(target, "default")))
        hearth("join-workspace", code, "--nick", f"fresh{n}", data=target)
        assert hearth("import", bundle, "--json", data=target).json()["added"] >= 600
    assert hearth.calls["process"] == 0
    assert hearth.calls["in-process"] >= CALLS

    leaked = _open_fds() - before["fds"]
    assert not leaked, f"file descriptors left open: {_describe(leaked)}"
    assert threading.active_count() == before["threads"], threading.enumerate()
    assert dict(os.environ) == before["env"]
    assert os.getcwd() == before["cwd"]
    assert logging.getLogger().handlers == before["handlers"]
    assert (sys.stdin, sys.stdout, sys.stderr, sys.__stdout__) == before["streams"]
    assert list(warnings.filters) == before["warning filters"]
    assert len(helpers) == 2 and _verify._helper is None  # started by each import, stopped


def test_what_a_process_would_print_is_not_lost(hearth: InProcessHearth, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A bug in a command: its traceback, warnings and log records reach stderr and its exit
    status is 1, so `hearth(...)` and `hearth.fails(...)` fail the test as with a process."""
    data = tmp_path / "data"
    hearth("init", "--nick", "alice", data=data)

    def broken(paths):
        logging.getLogger("app.somewhere").warning("careful: %s", "logged")
        logging.getLogger("app.somewhere").info("not shown: below WARNING")
        warnings.warn("this is deprecated-ish", UserWarning, stacklevel=1)
        raise RuntimeError("a bug in the command")

    monkeypatch.setattr(Workspace, "open", broken)
    run = hearth("whoami", data=data, ok=False)
    assert run.returncode == 1
    assert "Traceback (most recent call last)" in run.stderr
    assert "RuntimeError: a bug in the command" in run.stderr
    assert "careful: logged" in run.stderr and "not shown" not in run.stderr
    assert "UserWarning: this is deprecated-ish" in run.stderr
    with pytest.raises(AssertionError, match="failed"):
        hearth("whoami", data=data)
    with pytest.raises(AssertionError, match="Traceback"):
        hearth.fails("whoami", data=data)


def test_exit_codes_are_those_of_a_process(hearth: InProcessHearth, tmp_path: Path) -> None:
    assert hearth("--version").returncode == 0
    assert hearth("read", "general", "--limit", "0", ok=False).returncode == 2  # argparse
    assert hearth("whoami", data=tmp_path / "none", ok=False).returncode == 2  # CLIError
    assert hearth.calls == {"in-process": 3, "process": 0}


def test_commands_that_serve_run_as_a_process(hearth: InProcessHearth, tmp_path: Path) -> None:
    error = hearth.fails("serve", "--no-mdns", "--interface", "127.0.0.1",
                         data=tmp_path / "nothing")
    assert "no workspace" in error
    assert hearth.calls == {"in-process": 0, "process": 1}
    # Refused by argparse, it serves nothing: that may run here.
    assert "--port" in hearth.fails("serve", "--port", "70000", data=tmp_path / "nothing")
    assert "--port" in hearth.fails("analytics", "collect", "--port", "-1", "--out",
                                    tmp_path / "events")
    assert hearth.calls == {"in-process": 2, "process": 1}
