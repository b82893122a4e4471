"""What a running Node says about fetching history, for `hearth status` in another process.

The Node writes `sync-status.json` in the workspace's folder (atomically, at most a few times
a second) while history arrives and once it is over, and removes it when it stops. A file whose
writer is gone reads as nothing: it says nothing about now.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

from .paths import write_atomic
from .records import HistoryProgress

FILE = "sync-status.json"
MAX_BYTES = 1 << 20


def write(folder: Path, progress: HistoryProgress) -> None:
    data = {"pid": os.getpid(), "here": progress.here, "total": progress.total,
            "done": progress.done, "channels": sorted(progress.channels)}
    write_atomic(Path(folder) / FILE, json.dumps(data).encode())


def remove(folder: Path) -> None:
    with contextlib.suppress(OSError):
        os.unlink(Path(folder) / FILE)


def read(folder: Path) -> HistoryProgress | None:
    """The running Node's last word, or None (no Node running, or nothing said)."""
    path = Path(folder) / FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        pid = int(data["pid"])
        os.kill(pid, 0)  # raises when its writer is gone
        return HistoryProgress(int(data["here"]), int(data["total"]), bool(data["done"]),
                               frozenset(str(c) for c in data["channels"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None

