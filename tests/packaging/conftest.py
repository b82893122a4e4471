"""Shared by the package tests: the built application dist/hearth/hearth, run like the source
checkout's `hearth` (tests/app/conftest.py's `Hearth`, whose sandboxed environment it shares).

The tests need the bundle built from the current sources: without it, or when a source file is
newer than it, they are skipped at once (so `make test` stays quick and never tests a stale
build); `make package-test` brings it up to date first, then runs them.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.app.conftest import ROOT, Hearth, _arg

BUNDLE_DIR = ROOT / "dist" / "hearth"
EXE = BUNDLE_DIR / "hearth"
# What the bundle is built from (the Makefile's BUNDLE_SOURCES and the installed dependencies).
SOURCE_DIRS = ("hearth", "app", "core", "storage", "sync", "ui", "analytics", "packaging")
SOURCE_SUFFIXES = (".py", ".json", ".spec")
SOURCE_FILES = ("pyproject.toml", "constraints.txt")


def _sources() -> Iterator[Path]:
    for folder in SOURCE_DIRS:
        for path in (ROOT / folder).rglob("*"):
            if path.suffix in SOURCE_SUFFIXES and "__pycache__" not in path.parts:
                yield path
    yield from (ROOT / name for name in SOURCE_FILES)


def skip_reason() -> str | None:
    """Why the package tests cannot run now, or None when the bundle is there and current."""
    if not EXE.is_file():
        return f"{EXE.relative_to(ROOT)} is not built (`make package-test` builds it and runs these)"
    if os.environ.get("HEARTH_PACKAGE_FRESH") == "1":  # `make package-test` has just made it
        return None
    built = EXE.stat().st_mtime
    newer = [p for p in _sources() if p.exists() and p.stat().st_mtime > built]
    if newer:
        return (f"{EXE.relative_to(ROOT)} is older than {newer[0].relative_to(ROOT)} "
                f"(`make package-test` rebuilds it)")
    return None


def needs_bundle() -> list[pytest.MarkDecorator]:
    """The marks of every package test: `package`, and skipped without a current bundle."""
    reason = skip_reason()
    return [pytest.mark.package, pytest.mark.skipif(reason is not None, reason=reason or "")]


class Bundle(Hearth):
    """Runs dist/hearth/hearth the way `Hearth` runs `python -m app`: same sandboxed
    environment (HEARTH_DATA in the test's folder), same `Run` results, same `fails`."""

    def __init__(self, fallback_data: Path):
        super().__init__(fallback_data)
        self.env["QT_QPA_PLATFORM"] = "offscreen"

    name = "packaged hearth"

    def command(self) -> list[Any]:
        return [str(EXE)]

    @property
    def cwd(self) -> Path:
        # Run from elsewhere than the checkout: the bundle must not lean on the sources.
        return self.fallback_data.parent

    def argv(self, *args: str | bytes | os.PathLike) -> list[Any]:
        return [*self.command(), *map(_arg, args)]


@pytest.fixture
def bundle(tmp_path: Path) -> Bundle:
    return Bundle(tmp_path / "fallback-data-must-stay-unused")


@pytest.fixture
def source(tmp_path: Path) -> Hearth:
    """The source checkout's `hearth` (python -m app), in the same kind of sandbox."""
    hearth = Hearth(tmp_path / "fallback-data-must-stay-unused")
    hearth.env["QT_QPA_PLATFORM"] = "offscreen"
    return hearth
