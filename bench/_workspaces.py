"""Two members of one workspace on this computer, for the sync benchmarks."""

from __future__ import annotations

from pathlib import Path

from app import joining, sharing
from app.paths import Paths
from app.workspace import Workspace


def two_members(root: Path) -> tuple[Paths, Paths]:
    a = Paths.resolve(root / "a", "default")
    b = Paths.resolve(root / "b", "default")
    Workspace.init(a, "alice").close()
    sharing.join_workspace(b, sharing.invite_for(a, joining.identity_key(b)), nick="bob")
    return a, b
