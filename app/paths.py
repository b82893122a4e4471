"""Where Hearth keeps things: one data folder, one identity, one folder per workspace."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

import platformdirs

DEFAULT_WORKSPACE = "default"
# In a data folder whose first start made the default workspace before its welcome was
# answered: the next start shows the welcome again, and joining from it leaves no stray.
WELCOME_PENDING = ".welcome-pending"
_WORKSPACE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


class PathError(ValueError):
    """A data folder or workspace name that cannot be used."""


def default_data_dir() -> Path:
    override = os.environ.get("HEARTH_DATA")
    return Path(override) if override else Path(platformdirs.user_data_dir("hearth", "Hearth"))


@dataclass(frozen=True)
class Paths:
    data: Path
    workspace: str

    @classmethod
    def resolve(cls, data: str | os.PathLike | None, workspace: str | None) -> Paths:
        name = workspace or DEFAULT_WORKSPACE
        if not _WORKSPACE_NAME.match(name):
            raise PathError(
                f"workspace name {name!r} must be 1-64 letters, digits, '.', '_' or '-'"
            )
        root = Path(data).expanduser() if data else default_data_dir()
        if root.exists() and not root.is_dir():
            raise PathError(f"data folder {root} is not a folder")
        return cls(root, name)

    @property
    def identity(self) -> Path:
        return self.data / "identity.key"

    @property
    def workspace_dir(self) -> Path:
        return self.data / "workspaces" / self.workspace

    @property
    def replica(self) -> Path:
        return self.workspace_dir / "replica.sqlite3"

    @property
    def secret(self) -> Path:
        return self.workspace_dir / "secret.key"


def workspaces(data: Path) -> list[str]:
    """Names of the workspaces that have a replica in the data folder, sorted."""
    root = Path(data) / "workspaces"
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir()
                  if _WORKSPACE_NAME.match(p.name) and (p / "replica.sqlite3").exists())


def write_atomic(path: Path, data: bytes) -> None:
    """Write `path` whole or not at all (a temporary file beside it, then a rename)."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
