"""The preferences of a data folder (light, dark or the system's appearance; how large a file
is fetched without asking, and how much others' files may take here), kept in
`preferences.json` beside the identity. A file that is missing, unreadable or holds
something else reads as the defaults, so a bad file never keeps the window from opening."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, cast

from .paths import write_atomic

APPEARANCES = ("system", "light", "dark")
FILE = "preferences.json"
MAX_BYTES = 64 * 1024


class PreferenceError(ValueError):
    """A preference value that does not exist."""


MAX_MB = 1 << 30  # a size preference's bound (a pebibyte, in MiB)


@dataclass(frozen=True)
class Preferences:
    appearance: str = "system"  # one of APPEARANCES
    auto_download_mb: int = 25  # attached files up to this size are fetched without asking
    storage_quota_mb: int = 10240  # others' files are evicted beyond this (app.attachments)


def _size(value: object, default: int) -> int:
    return value if type(value) is int and 0 <= value <= MAX_MB else default


def load(data: Path) -> Preferences:
    path = Path(data) / FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            return Preferences()
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Preferences()
    if not isinstance(stored, dict):
        return Preferences()
    appearance = stored.get("appearance")
    defaults = Preferences()
    return Preferences(appearance if appearance in APPEARANCES else "system",
                       _size(stored.get("auto_download_mb"), defaults.auto_download_mb),
                       _size(stored.get("storage_quota_mb"), defaults.storage_quota_mb))


def save(data: Path, **changes: str | int) -> Preferences:
    """Change preferences by name (written whole, atomically); answers what is stored now."""
    if "appearance" in changes and changes["appearance"] not in APPEARANCES:
        raise PreferenceError(f"appearance must be one of {', '.join(APPEARANCES)}, "
                              f"not {changes['appearance']!r}")
    for name in ("auto_download_mb", "storage_quota_mb"):
        if name in changes and _size(changes[name], -1) == -1:
            raise PreferenceError(f"{name} must be a whole number of MiB from 0 to {MAX_MB}")
    prefs = replace(load(data), **cast(dict[str, Any], changes))  # checked above
    folder = Path(data)
    folder.mkdir(parents=True, exist_ok=True)
    write_atomic(folder / FILE, json.dumps(asdict(prefs)).encode())
    return prefs
