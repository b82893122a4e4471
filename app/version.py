"""The installed Hearth's version (`hearth --version`, the app_started analytics event)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def app_version() -> str:
    try:
        return version("hearth")
    except PackageNotFoundError:  # running from a checkout that was never installed
        return "0.0.0+unknown"
