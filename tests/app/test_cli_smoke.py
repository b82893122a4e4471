"""The real entry point: `python -m app` as a process, once per command family.

Every other CLI test calls `app.cli.main` in the test's own process (tests/app/conftest.py);
these prove that the installed command line works the same as a process of its own: exit
statuses, stdout and stderr, and argument decoding are those of a real interpreter. Where a
command's output is deterministic, the process and the in-process runner must print exactly the
same bytes.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from .conftest import Hearth, InProcessHearth, personal_code
from .test_sync_cli import digest, serving, texts

HEX64 = re.compile(r"^[0-9a-f]{64}$")


@pytest.fixture(scope="module")
def folder(module_hearth: InProcessHearth, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A workspace with a message and a document, for the commands that only read."""
    data = tmp_path_factory.mktemp("smoke")
    module_hearth("init", "--nick", "sam", data=data)
    module_hearth("post", "general", "hello from sam", data=data)
    doc = module_hearth("doc", "new", "Notes", data=data).line
    module_hearth("doc", "write", doc, "--text", "some notes", data=data)
    return data


# What both runners are given: (arguments, whether the command succeeds). {data} is `folder`,
# {empty} a folder with nothing in it.
SAME_OUTPUT = {
    "version": (["--version"], True),
    "help": (["--help"], True),
    "read json": (["read", "general", "--json", "--data", "{data}"], True),
    "read text": (["read", "general", "--data", "{data}"], True),
    "doc list": (["doc", "list", "--json", "--data", "{data}"], True),
    "analytics status": (["analytics", "status", "--json", "--data", "{data}"], True),
    "argparse refusal": (["read", "general", "--limit", "0", "--data", "{data}"], False),
    "unknown command": (["frobnicate"], False),
    "before init": (["whoami", "--data", "{empty}"], False),
    "no passphrase, no terminal": (["identity", "export", "{empty}/out", "--data", "{data}"],
                                   False),
    "not UTF-8": ([b"post", b"bad\xffname", b"hi", "--data", "{data}"], False),
}


@pytest.mark.parametrize("case", SAME_OUTPUT.keys())
def test_a_process_and_the_in_process_runner_print_the_same(
        hearth_process: Hearth, hearth: InProcessHearth, folder: Path, tmp_path: Path,
        case: str) -> None:
    template, succeeds = SAME_OUTPUT[case]
    args = [a.format(data=folder, empty=tmp_path / "empty") if isinstance(a, str) else a
            for a in template]
    real = hearth_process(*args, ok=succeeds)
    here = hearth(*args, ok=succeeds)
    assert hearth.calls == {"in-process": 1, "process": 0}
    assert (here.returncode, here.stdout, here.stderr) == \
        (real.returncode, real.stdout, real.stderr)
    if not succeeds:
        assert real.returncode != 0 and "Traceback" not in real.stderr
        assert len(real.stderr.strip().splitlines()) == 1, real.stderr
        assert real.stderr.startswith("hearth"), real.stderr


def test_version_as_a_process(hearth_process: Hearth) -> None:
    assert re.fullmatch(r"hearth \d+\.\d+\.\d+\S*", hearth_process("--version").line)


def test_chat_commands_as_a_process(hearth_process: Hearth, tmp_path: Path) -> None:
    data = tmp_path / "alice"
    workspace = hearth_process("init", "--nick", "alice", data=data).line
    assert HEX64.match(workspace)
    post = hearth_process("post", "general", "hello, process", data=data).line
    messages = hearth_process("read", "general", "--json", data=data).json()
    assert [(m["id"], m["text"], m["nick"]) for m in messages] == [
        (post, "hello, process", "alice")]
    assert hearth_process("whoami", "--json", data=data).json()["workspace"] == workspace
    assert not hearth_process.fallback_data.exists(), "a command wrote outside --data"


def test_an_error_exits_non_zero_in_one_line_as_a_process(hearth_process: Hearth,
                                                          tmp_path: Path) -> None:
    assert "init" in hearth_process.fails("post", "general", "hi", data=tmp_path / "empty")
    run = hearth_process("read", "general", "--limit", "0", data=tmp_path / "empty", ok=False)
    assert run.returncode == 2 and "--limit" in run.stderr and run.stdout == ""


def test_doc_commands_as_a_process(hearth_process: Hearth, tmp_path: Path) -> None:
    data = tmp_path / "alice"
    hearth_process("init", "--nick", "alice", data=data)
    doc = hearth_process("doc", "new", "Plans", data=data).line
    assert HEX64.match(doc)
    commit = hearth_process("doc", "write", "Plans", "--text", "line one\nline two\n",
                            data=data).line
    assert HEX64.match(commit)
    assert hearth_process("doc", "show", doc, data=data).stdout == "line one\nline two\n"


def test_sharing_commands_as_processes(hearth_process: Hearth, tmp_path: Path) -> None:
    """invite and join-workspace, export and import, serve and sync --once."""
    a, b = tmp_path / "a", tmp_path / "b"
    hearth_process("init", "--nick", "alice", data=a)
    code = personal_code(hearth_process, a, b)
    hearth_process("join-workspace", code, "--nick", "bob", data=b)
    hearth_process("post", "general", "bundled", data=a)

    bundle = tmp_path / "a.bundle"
    count = int(hearth_process("export", bundle, data=a).line.split()[0])
    counts = hearth_process("import", bundle, "--json", data=b).json()
    assert counts["added"] > 0 and counts["added"] + counts["duplicate"] == count
    assert "bundled" in texts(hearth_process, b)

    hearth_process("post", "general", "synced", data=a)
    with serving(hearth_process, a) as serve:
        line = hearth_process("sync", "--peer", serve.address, "--once", data=b).line
        assert line.startswith(f"in sync with {serve.address}")
        assert serve.terminate() == 0
    assert digest(a) == digest(b)
    assert "synced" in texts(hearth_process, b)


def test_analytics_commands_as_a_process(hearth_process: Hearth, tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert hearth_process("analytics", "status", "--json", data=data).json()["enabled"] is False
    on = hearth_process("analytics", "enable", "--collector", "http://127.0.0.1:9", data=data)
    assert on.stdout.startswith("analytics on.")
    status = hearth_process("analytics", "status", "--json", data=data).json()
    assert status["enabled"] is True and status["collector"] == "http://127.0.0.1:9"
    assert hearth_process("analytics", "disable", data=data).stdout.startswith("analytics off")
    assert hearth_process("analytics", "status", "--json", data=data).json()["enabled"] is False
