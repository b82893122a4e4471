"""`hearth status` and the history lines of `hearth serve` (issue #20): what this computer holds
of the workspace, what it keeps, and the history a running node is still fetching (read from
the sync-status.json it keeps in the workspace's folder)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from app import sync_status
from app.events import HistoryProgressed
from app.paths import Paths
from app.records import HistoryProgress

from .conftest import Hearth

COUNTS = re.compile(r"^workspace Acme: 3 channels, 1 document, ([\d,]+) objects held$")


@pytest.fixture
def folder(hearth: Hearth, tmp_path: Path) -> Path:
    """Acme: channels general, random and Design, and a document "Plan"."""
    data = tmp_path / "ada"
    hearth("init", "--nick", "ada", "--name", "Acme", data=data)
    hearth.channels("random", "Design", data=data)
    for channel in ("general", "random", "Design"):
        hearth("post", channel, f"hello {channel}", data=data)
    hearth("doc", "new", "Plan", data=data)
    return data


def _objects(hearth: Hearth, data: Path) -> int:
    match = COUNTS.match(hearth("status", data=data).stdout.splitlines()[0])
    assert match, hearth("status", data=data).stdout
    return int(match.group(1).replace(",", ""))


def test_status_prints_the_counts_what_is_kept_and_no_history(hearth: Hearth, folder: Path):
    lines = hearth("status", data=folder).stdout.splitlines()
    assert COUNTS.match(lines[0]), lines
    assert lines[1:] == ["keeping all channels and documents", "No history arriving."]

    held = _objects(hearth, folder)
    hearth("post", "random", "one more", data=folder)
    assert _objects(hearth, folder) == held + 1

    hearth("keep", "--only", "general", "--doc", "Plan", data=folder)
    assert hearth("status", data=folder).stdout.splitlines()[1:] == \
        ["keeping #general; documents: Plan", "No history arriving."]
    shown = hearth("status", "--json", data=folder).json()
    assert {k: shown[k] for k in ("workspace", "channels", "documents", "objects", "history")} \
        == {"workspace": "Acme", "channels": 3, "documents": 1, "objects": held + 1,
            "history": None}
    assert shown["kept"]["channels"] == ["general"] and not shown["kept"]["all"]


def _workspace_dir(data: Path) -> Path:
    return Paths.resolve(data, "default").workspace_dir


def test_status_says_what_history_a_running_node_is_still_fetching(
        hearth: Hearth, folder: Path):
    # What a Node of this process writes while history arrives: channel keys, shown by name.
    sync_status.write(_workspace_dir(folder),
                      HistoryProgress(412_000, 1_000_000, False, frozenset({"design", "general"})))
    assert hearth("status", data=folder).stdout.splitlines()[2] == \
        "Syncing history: 412,000 of 1,000,000 (still arriving: Design, general)"
    assert hearth("status", "--json", data=folder).json()["history"] == \
        {"here": 412_000, "total": 1_000_000, "channels": ["Design", "general"]}

    # Once the node that wrote it is gone, the file says nothing about now.
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    path = _workspace_dir(folder) / sync_status.FILE
    path.write_text(json.dumps(json.loads(path.read_text()) | {"pid": int(gone.stdout)}))
    assert hearth("status", data=folder).stdout.splitlines()[2] == "No history arriving."

    sync_status.remove(_workspace_dir(folder))
    assert hearth("status", data=folder).stdout.splitlines()[2] == "No history arriving."


def _serve_lines(*events: tuple[float, HistoryProgress]) -> list[str]:
    """What `hearth serve` prints for "history" events at these times (seconds)."""
    from app.sync_commands import ServeLog

    out: list[str] = []
    now = [0.0]
    shown = ServeLog(lambda: {}, out=out.append, clock=lambda: now[0])
    for at, progress in events:
        now[0] = 1_000_000.0 + at
        shown.event(HistoryProgressed(progress))
    return [re.sub(r"^\d\d:\d\d:\d\d  ", "", text) for text in out]


def test_serve_prints_history_at_most_every_two_seconds_and_when_it_is_over():
    arriving = frozenset({"general"})
    assert _serve_lines(
        *((n * 0.25, HistoryProgress(1000 * n, 1_000_000, False, arriving)) for n in range(21)),
        (5.2, HistoryProgress(1_000_000, 1_000_000, True)),
    ) == ["Syncing history: 8,000 of 1,000,000",  # 2 s after it began
          "Syncing history: 16,000 of 1,000,000",
          "History here: 1,000,000 objects"]
    # A catch-up over within 2 s prints nothing: its "in sync" line says it.
    assert _serve_lines(
        (0.0, HistoryProgress(10, 12, False, arriving)),
        (0.25, HistoryProgress(11, 12, False, arriving)),
        (1.9, HistoryProgress(12, 12, True)),
        (30.0, HistoryProgress(12, 14, False, arriving)),
        (30.5, HistoryProgress(14, 14, True)),
    ) == []
