"""The data folder's lock: one running Node (or a leaving workspace) per data folder."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from .errors import NodeLocked


class DataLock:
    """An exclusive lock on a data folder (flock; released if the process dies). The file
    says who holds it: the pid, and on a second line the workspace it is held for."""

    def __init__(self, path: Path, workspace: str = ""):
        self.path = path
        self.workspace = workspace
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            lines = os.read(fd, 256).decode(errors="replace").splitlines()
            os.close(fd)
            pid = lines[0].strip() if lines and lines[0].strip() else "?"
            workspace = lines[1].strip() if len(lines) > 1 else ""
            raise NodeLocked(
                f"another Hearth (pid {pid}) is running on {self.path.parent}; "
                "commands like `hearth post` still work beside it",
                pid=pid, workspace=workspace) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{self.workspace}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None
