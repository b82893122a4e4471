"""Shared fixtures of the app tests: the `hearth` command line, and two members' folders.

`hearth` (and `module_hearth`, one per module) runs `app.cli.main(argv)` in this process, which
is what `python -m app` runs, with what a fresh process would have: the test's environment,
the checkout as working directory, stdout and stderr captured as UTF-8 bytes with the error
handlers a real process uses, an empty stdin that is not a terminal, SystemExit and uncaught
exceptions turned into the exit status and traceback the interpreter would give, and warnings
and log records written to stderr as a process with no logging set up writes them. The commands
that run a server or a window (`serve`, `gui`, `screenshot`, `analytics collect`, and `hearth`
alone, which starts one of them) block and install signal handlers, so those still run as a
real process, whichever fixture a test uses.

`hearth_process` runs every command as a real `python -m app` process: the smoke tests
(test_cli_smoke.py) use it to prove the real entry point works, and tests/packaging runs the
built application the same way (its `Bundle` is a `Hearth`).
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import subprocess
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import create_workspace, join_member

ROOT = Path(__file__).resolve().parents[2]
CLI_TIMEOUT_S = 60  # generous: a passphrase export runs argon2id

# Commands that serve or open a window until stopped: never run in this process. "" is `hearth`
# with no command, which starts `gui` or `serve` once a workspace exists.
BLOCKING_COMMANDS = {"serve", "gui", "screenshot", "analytics collect", ""}


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
    """Runs `python -m hearth ...` from the checkout as a process, in a sandboxed environment.

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
        return [sys.executable, "-m", "hearth"]

    @property
    def cwd(self) -> Path:
        return ROOT

    def __call__(self, *args: str | bytes | os.PathLike, data: Path | None = None,
                 ok: bool = True, passphrase: str | None = None,
                 extra: Sequence[str] = ()) -> Run:
        argv: list[str | bytes] = [*map(_arg, args)]
        if data is not None:
            argv += ["--data", str(data)]
        argv += list(extra)
        env = dict(self.env)
        if passphrase is not None:
            env["HEARTH_PASSPHRASE"] = passphrase
        returncode, stdout, stderr = self.execute(argv, env)
        shown = [a.decode(errors="replace") if isinstance(a, bytes) else a for a in argv]
        run = Run(shown, returncode, stdout.decode("utf-8", "replace"),
                  stderr.decode("utf-8", "replace"))
        if ok:
            assert run.returncode == 0, f"{self.name} {shown} failed: {run.stderr}"
            assert "Traceback" not in run.stderr, run.stderr
        return run

    def execute(self, argv: list[str | bytes], env: dict[str, str]) -> tuple[int, bytes, bytes]:
        """Run the program with `argv`: (exit status, stdout, stderr)."""
        proc = subprocess.run([*self.command(), *argv], cwd=self.cwd, env=env,
                              capture_output=True, stdin=subprocess.DEVNULL,
                              timeout=CLI_TIMEOUT_S)
        return proc.returncode, proc.stdout, proc.stderr

    def channels(self, *names: str, data: Path | None = None) -> None:
        """`hearth channel create NAME --public` for each name: what a person runs before
        posting in a new channel (post, topic and join take only channels the computer knows).
        --public: a test's channels are nobody's private channel, even on a member's computer
        that has not synced yet (test_no_implicit_channels.py tests the question itself)."""
        for name in names:
            self("channel", "create", name, "--public", data=data)

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


class InProcessHearth(Hearth):
    """`Hearth`, but each command is `app.cli.main(argv)` called in this process (see the
    module's docstring); a command in BLOCKING_COMMANDS still runs as a process. `calls`
    counts how each command ran: {"in-process": n, "process": m}."""

    def __init__(self, fallback_data: Path):
        super().__init__(fallback_data)
        self.calls = {"in-process": 0, "process": 0}

    def execute(self, argv: list[str | bytes], env: dict[str, str]) -> tuple[int, bytes, bytes]:
        # As the interpreter decodes a process's arguments (the file system encoding, UTF-8,
        # with surrogateescape: a byte that is not UTF-8 becomes a lone surrogate).
        args = [os.fsdecode(a) if isinstance(a, bytes) else a for a in argv]
        if blocking(args):
            self.calls["process"] += 1
            return super().execute(argv, env)
        self.calls["in-process"] += 1
        return run_main(args, env, self.cwd)


def blocking(args: list[str]) -> bool:
    """Whether `hearth args` would serve or open a window (arguments argparse refuses do not:
    they end in a one-line error before any command runs, in this process too)."""
    from app.cli import build_parser

    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            parsed = build_parser().parse_args(args)
        except SystemExit:  # --help, --version, or a refusal: printed and exits at once
            return False
    if parsed.handler is None:
        return "" in BLOCKING_COMMANDS
    command = parsed.command
    if command == "analytics":
        command += " " + parsed.analytics_command
    return command in BLOCKING_COMMANDS


class _Output(io.BytesIO):
    """What a command wrote; it stays readable even if the command closed the stream."""

    def close(self) -> None:
        pass


def run_main(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, bytes, bytes]:
    """`python -m hearth *args` in this process: (exit status, stdout, stderr)."""
    from hearth import launcher

    out, err = _Output(), _Output()
    # PYTHONIOENCODING=utf-8 gives a process UTF-8 stdout with errors="strict"; stderr is
    # always "backslashreplace". stdin is /dev/null: empty, and not a terminal.
    stdout = io.TextIOWrapper(out, encoding="utf-8", errors="strict")
    stderr = io.TextIOWrapper(err, encoding="utf-8", errors="backslashreplace")
    stdin = io.TextIOWrapper(io.BytesIO(), encoding="utf-8")
    with (_environment(env), contextlib.chdir(cwd), _streams(stdin, stdout, stderr),
          _unconfigured_logging(stderr), _process_warnings(stderr)):
        try:
            status = launcher.main(args)
        except SystemExit as exc:
            status = exc.code
        except Exception:  # uncaught: the interpreter prints the traceback, exits with 1
            traceback.print_exc(file=stderr)
            status = 1
        finally:
            _exit_handlers()
    status = _exit_status(status, stderr)
    for stream in (stdout, stderr):
        if not stream.closed:
            stream.flush()
    return status, out.getvalue(), err.getvalue()


def _exit_status(code: object, stderr: io.TextIOWrapper) -> int:
    """What `sys.exit(code)` makes a process's exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    if not stderr.closed:
        print(code, file=stderr)
    return 1


def _exit_handlers() -> None:
    """What the app registers with atexit, run as a process's exit would run it: the signature
    helper process of storage (started by a large import) is stopped, not left to the next
    command or to the end of the test session."""
    verify = sys.modules.get("storage._verify")
    if verify is not None:
        verify.shutdown()


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """os.environ is exactly `env` for the call, and what it was before afterwards (whatever
    the command set, as `hearth screenshot` sets QT_QPA_PLATFORM)."""
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


@contextlib.contextmanager
def _streams(stdin: io.TextIOBase, stdout: io.TextIOBase, stderr: io.TextIOBase) -> Iterator[None]:
    """sys.stdin/stdout/stderr, and the sys.__stdxxx__ a process starts with (what, for one,
    shutil.get_terminal_size asks: with pipes there, --help is 80 columns wide, as in a
    process whose output is captured, not the width of the terminal running pytest)."""
    names = ("stdin", "stdout", "stderr", "__stdin__", "__stdout__", "__stderr__")
    saved = {name: getattr(sys, name) for name in names}
    for name, stream in zip(names, (stdin, stdout, stderr) * 2, strict=True):
        setattr(sys, name, stream)
    try:
        yield
    finally:
        for name, stream in saved.items():
            setattr(sys, name, stream)


@contextlib.contextmanager
def _unconfigured_logging(stderr: io.TextIOBase) -> Iterator[None]:
    """A process that never configured logging prints WARNING and above, the bare message, on
    stderr (logging.lastResort); pytest's own handlers would swallow them here."""
    handler = logging.StreamHandler(stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)
        handler.close()


# The warning filters a process starts with (python -W and -X dev change them; tests use neither).
_PROCESS_FILTERS = [
    ("default", DeprecationWarning, "__main__"),
    ("ignore", DeprecationWarning, ""),
    ("ignore", PendingDeprecationWarning, ""),
    ("ignore", ImportWarning, ""),
    ("ignore", ResourceWarning, ""),
]


@contextlib.contextmanager
def _process_warnings(stderr: io.TextIOBase) -> Iterator[None]:
    """Warnings shown as a fresh process shows them (on stderr), not collected by pytest."""
    with warnings.catch_warnings():
        warnings.resetwarnings()
        for action, category, module in reversed(_PROCESS_FILTERS):
            warnings.filterwarnings(action, category=category, module=module)

        def show(message, category, filename, lineno, file=None, line=None) -> None:
            if not stderr.closed:
                stderr.write(warnings.formatwarning(message, category, filename, lineno, line))

        warnings.showwarning = show
        yield


def _arg(value: str | bytes | os.PathLike) -> str | bytes:
    return value if isinstance(value, str | bytes) else os.fspath(value)


def personal_code(hearth: Hearth, inviter: Path, joiner: Path) -> str:
    """A personal code the member in data folder `inviter` makes for the identity of data
    folder `joiner` (made there now): `hearth identity show`, then `hearth invite --for KEY`."""
    key = hearth("identity", "show", data=joiner).line
    return hearth("invite", "--for", key, data=inviter).line


def carry(hearth: Hearth, source: Path, *targets: Path) -> None:
    """What data folder `source` holds, to each of `targets`, as a bundle (`hearth export`,
    then `hearth import`)."""
    bundle = source.with_name(source.name + ".hearth")
    bundle.unlink(missing_ok=True)
    hearth("export", str(bundle), data=source)
    for target in targets:
        hearth("import", str(bundle), data=target)


# Fixtures ----------------------------------------------------------------------------------------

@pytest.fixture
def team(hearth: Hearth, tmp_path: Path) -> tuple[Path, Path, Path]:
    """ada (who created the workspace), bob and dan, each computer holding what the others
    wrote (as after a sync)."""
    ada, bob, dan = tmp_path / "ada", tmp_path / "bob", tmp_path / "dan"
    hearth("init", "--nick", "ada", data=ada)
    for who in (bob, dan):
        hearth("join-workspace", personal_code(hearth, ada, who), "--nick", who.name, data=who)
        carry(hearth, who, ada)
    carry(hearth, ada, bob, dan)
    return ada, bob, dan


@pytest.fixture
def hearth(tmp_path: Path) -> InProcessHearth:
    """The command line, in this process (commands that serve run as a process)."""
    return InProcessHearth(tmp_path / "fallback-data-must-stay-unused")


@pytest.fixture(scope="module")
def module_hearth(tmp_path_factory: pytest.TempPathFactory) -> InProcessHearth:
    return InProcessHearth(tmp_path_factory.mktemp("fallback") / "fallback-data-must-stay-unused")


@pytest.fixture
def hearth_process(tmp_path: Path) -> Hearth:
    """The command line as a real `python -m app` process, every command."""
    return Hearth(tmp_path / "fallback-data-must-stay-unused")


@pytest.fixture
def alice(tmp_path: Path):
    """The Paths of alice, who created a workspace (tmp_path/alice; test_cli.py and
    test_doc_cli.py have an `alice` of their own: a data folder made with `hearth init`)."""
    return create_workspace(tmp_path, "alice", "alice")


@pytest.fixture
def bob(tmp_path: Path, alice):
    """The Paths of bob, who joined alice's workspace with a personal code (tmp_path/bob)."""
    return join_member(tmp_path, alice, "bob", "bob")

